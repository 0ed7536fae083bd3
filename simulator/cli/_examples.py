"""One worked example per command, shown at the end of its `--help` (kept here so they read as a set)."""

from __future__ import annotations

import typer

EXAMPLES: dict[str, str] = {
    "run": "rescue-sim run --case dana-and-theo --turns 4",
    "play": "rescue-sim play --case herrera-family",
    "show": "rescue-sim show runs/dana-and-theo-local-qwen2-5-coder-1-5b-1a2b3c4d",
    "models": "rescue-sim models --check",
    "judge": "rescue-sim judge runs/pre-release --judges openai/gpt-4o,anthropic/claude-sonnet-4-5",
    "leaderboard": "rescue-sim leaderboard runs/pre-release --ratings",
    "gold sessions": "rescue-sim gold sessions --data RESCUE-bench/data/benchmark_191.jsonl --dry-run",
    "gold labels": "rescue-sim gold labels --data RESCUE-bench/data/benchmark_191.jsonl --limit 20",
    "bench": "rescue-sim bench --data RESCUE-bench/data/benchmark_191.jsonl --model local/qwen2.5-coder-1.5b --dry-run",
    "fidelity": "rescue-sim fidelity runs/pre-release",
    "stress": "rescue-sim stress simulator/perturbations/examples/smoke.yaml --dry-run",
    "compare": "rescue-sim compare runs/pre-release --limit 8",
    "export": "rescue-sim export runs/a --select random --n 50 --format label-studio --out rate/batch1.json",
    "report": "rescue-sim report runs/pre-release",
    "serve": "rescue-sim serve runs --rate rate/batch1.jsonl",
    "import-inspect": "rescue-sim import-inspect logs/2026-01-01T00-00-00_rescue-session_abc.eval --out runs/inspect-a",
    "sensitivity": "rescue-sim sensitivity --model local/qwen2.5-coder-1.5b --dry-run",
    "personas list": "rescue-sim personas list",
    "personas show": "rescue-sim personas show nguyen-family",
    "personas check": "rescue-sim personas check my-cards/",
    "personas import-rescue": "rescue-sim personas import-rescue RESCUE-bench/data/benchmark_191.jsonl --out cases/",
    "personas graph": "rescue-sim personas graph nguyen-family --png graph.png",
    "ratings import": "rescue-sim ratings import label-studio-export.json --run runs/a",
    "ratings show": "rescue-sim ratings show runs/a",
    "ratings plan": "rescue-sim ratings plan runs/a --target-width 0.5",
}


def add_examples(app: typer.Typer, prefix: str = "") -> None:
    """Give every registered command (and those of its sub-apps) its example as the help epilog."""
    for command in app.registered_commands:
        name = command.name or (command.callback.__name__.replace("_", "-") if command.callback else "")
        example = EXAMPLES.get(f"{prefix}{name}")
        if example and not command.epilog:
            command.epilog = f"Example: {example}"
    for group in app.registered_groups:
        if group.typer_instance is not None and group.name:
            add_examples(group.typer_instance, f"{prefix}{group.name} ")
