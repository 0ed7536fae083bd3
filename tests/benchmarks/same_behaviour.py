"""Is behaviour the same after a refactor? A stress run on the fake provider, snapshotted and compared (issue 44).

    python tests/benchmarks/same_behaviour.py snapshot /tmp/before.json      # on the code before
    python tests/benchmarks/same_behaviour.py snapshot /tmp/after.json       # on the code after
    python tests/benchmarks/same_behaviour.py compare /tmp/before.json /tmp/after.json

`snapshot` runs the CLI as a user would (`rescue-sim stress`, `leaderboard --json`, `report`) in a temporary
folder, with every `make_client` the loaded modules hold replaced by one fake provider whose replies depend only
on each call's own prompt (never on call order, so concurrency cannot change them). It then writes every file of
the run folder, the leaderboard JSON and the report HTML, with timestamps, timings, temporary paths and version
stamps removed. `compare` prints each file and JSON path that differs and exits 1 if any does.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

CONFIG = """\
name: same-behaviour
supporters: [scripted, silent]
cases: [dana-and-theo, kang-family]
perturbations: [crisis_disclosure, coalition_pressure]
seeds: 0-1
turns: 3
tracker_every: 2
judge: true
"""
LINES = (
    "You took the promotion and now you are at work until nine most nights.",
    "Since the promotion I feel I live alone with a flatmate.",
    "Every attempt to talk ends with a list of what I missed, so I leave the room.",
    "We still have not decided about IVF after the two miscarriages.",
    "My father was absent through long shifts and I swore I would not be like him.",
    "My parents divorced when I was nine, so when you go silent I panic.",
    "Eleven years together, and we cannot talk about IVF without a fight.",
    "When you go silent and leave the room I end up listing everything you missed.",
    "Dad, the restaurant is not my life; I want to choose my own course.",
    "Mum, you say it is for the family, but nobody asked me.",
)
# Values that change from run to run and say nothing about behaviour.
VOLATILE_KEYS = re.compile(
    r"(^|_)(at|time|times|timestamp|started|finished|created|updated|elapsed|wall|seconds|latency|duration|ms|s|"
    r"cpu|pid|host|hostname|version|versions|python|platform|path|dir|folder|cwd)($|_)|"
    r"(_at|_s|_ms|_seconds|_time)$"
)
ISO_TIME = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?")
DURATION = re.compile(r"\b\d+(\.\d+)?\s?(s|ms|min|seconds)\b")


def _digest(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:12], 16)


def fake_client():
    """One fake provider: free text, schema answers and P(yes) chosen from the prompt alone."""
    from simulator.llm.fake import FakeModelClient
    from tests._stress_fixtures import _fill

    def key(call) -> str:
        return f"{call.role}|{call.seed}|{call.trial}|{call.prompt.context}|{call.prompt.instructions}"

    def reply(call):
        if call.schema is None:
            return LINES[_digest(key(call)) % len(LINES)]
        schema = call.schema.model_json_schema()
        return _fill(schema, schema.get("$defs", {}))

    def yes(call) -> float:
        return 0.25 + (_digest(key(call)) % 50) / 100

    from simulator.llm import fake

    if hasattr(fake, "DEFAULT_ANCHORS"):  # anchored items: their anchor lines read as a calibrated judge, as in tests
        from judges.scoring import load_rubric
        from judges.scoring._checklist import anchor_readings

        fake.DEFAULT_ANCHORS.update(anchor_readings(load_rubric()))
    return FakeModelClient(default=reply, yes=yes)


def _patch_make_client(client) -> None:
    """`simulator.llm.settings.make_client`, the seam every command's client comes through, and any module that
    still holds that function by name, return the fake."""
    import simulator.llm.settings as settings
    from simulator.cli.app import _register

    _register()  # loads every command module, so any that imported `make_client` by name is replaced too

    original = settings.make_client
    fake = lambda *a, **k: client  # noqa: E731
    for module in list(sys.modules.values()):
        if getattr(module, "make_client", None) is original:
            module.make_client = fake


def _clean(value, tmp: str):
    if isinstance(value, dict):
        return {k: _clean(v, tmp) for k, v in value.items() if not VOLATILE_KEYS.search(k)}
    if isinstance(value, list):
        return [_clean(v, tmp) for v in value]
    if isinstance(value, str):
        return DURATION.sub("<dur>", ISO_TIME.sub("<time>", value.replace(tmp, "<tmp>")))
    if isinstance(value, float):
        return round(value, 9)
    return value


def _read(path: Path, tmp: str):
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return _clean(json.loads(text), tmp)
    if path.suffix == ".jsonl":
        return [_clean(json.loads(line), tmp) for line in text.splitlines() if line.strip()]
    return _clean(text, tmp)


def snapshot(out: Path) -> None:
    from typer.testing import CliRunner

    from simulator.cli.app import app

    _patch_make_client(fake_client())
    runner = CliRunner()
    files: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "stress.yaml").write_text(CONFIG, encoding="utf-8")
        run_dir = base / "run"
        results = {}
        for name, args in (
            ("stress", ["stress", str(base / "stress.yaml"), "--out", str(run_dir), "--no-cache"]),
            ("leaderboard", ["leaderboard", str(run_dir), "--json"]),
            ("report", ["report", str(run_dir)]),
        ):
            res = runner.invoke(app, args, catch_exceptions=False)
            results[name] = res.exit_code
            if res.exit_code not in (0, 1):
                sys.exit(f"rescue-sim {name} exited {res.exit_code}:\n{res.output[-2000:]}")
            if name == "leaderboard":
                files["<leaderboard --json>"] = _clean(json.loads(res.stdout), tmp)
        for path in sorted(run_dir.rglob("*")):
            hidden = any(part.startswith(".") for part in path.relative_to(run_dir).parts)
            if path.is_file() and not hidden and "cache" not in path.parts:
                files[str(path.relative_to(run_dir))] = _read(path, tmp)
    body = {"exit_codes": results, "files": files}
    out.write_text(json.dumps(body, indent=1, sort_keys=True, ensure_ascii=False), encoding="utf-8")
    print(f"{out}: {len(files)} files, exit codes {results}")


def _diff(a, b, where: str, found: list[str]) -> None:
    if type(a) is not type(b):
        found.append(f"{where}: {type(a).__name__} != {type(b).__name__}")
    elif isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                found.append(f"{where}/{k}: only {'after' if k in b else 'before'}")
            else:
                _diff(a[k], b[k], f"{where}/{k}", found)
    elif isinstance(a, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(x, y, f"{where}[{i}]", found)
    elif a != b:
        found.append(f"{where}: {str(a)[:120]!r} != {str(b)[:120]!r}")


def compare(before: Path, after: Path) -> int:
    a, b = (json.loads(p.read_text(encoding="utf-8")) for p in (before, after))
    found: list[str] = []
    _diff(a, b, "", found)
    for line in found[:60]:
        print(line)
    print(f"{len(a['files'])} files before, {len(b['files'])} after; {len(found)} differences")
    return 1 if found else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("snapshot").add_argument("out", type=Path)
    cmp = sub.add_parser("compare")
    cmp.add_argument("before", type=Path)
    cmp.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.cmd == "snapshot":
        snapshot(args.out)
        return 0
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
