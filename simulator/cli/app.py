"""The `rescue-sim` entry point: registers each command module; heavy imports happen inside commands."""

from __future__ import annotations

import typer

from simulator.cli._common import HelpGroup

app = typer.Typer(
    cls=HelpGroup,
    name="rescue-sim",
    help="Relation-aware multi-party emotional support simulator.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)


_registered = False


def _register() -> None:
    """Attach the command modules to `app`; safe to call more than once (tests build the app repeatedly)."""
    global _registered
    if _registered:
        return
    from simulator.cli import personas_cmd

    app.add_typer(personas_cmd.app, name="personas", help="Case cards: list, show, check, graph, import RESCUE data.")
    from simulator.cli import bench_cmd

    app.command("bench")(bench_cmd.bench)
    from simulator.cli import judge_cmd, leaderboard_cmd

    app.command("judge")(judge_cmd.judge)
    app.command("leaderboard")(leaderboard_cmd.leaderboard)
    _register_gold()
    from simulator.cli import models_cmd, play_cmd, run_cmd, show_cmd

    app.command("run")(run_cmd.run)
    app.command("play")(play_cmd.play)
    app.command("show")(show_cmd.show)
    app.command("models")(models_cmd.models)
    from simulator.cli import fidelity_cmd

    app.command("fidelity")(fidelity_cmd.fidelity)
    from simulator.cli import stress_cmd

    app.command("stress")(stress_cmd.stress)
    from simulator.cli import sensitivity_cmd

    app.command("sensitivity")(sensitivity_cmd.sensitivity)
    from simulator.cli import compare_cmd

    app.command("compare")(compare_cmd.compare)
    from simulator.cli import export_cmd, ratings_cmd, report_cmd

    app.command("export")(export_cmd.export)
    app.command("report")(report_cmd.report)
    from simulator.cli import import_inspect_cmd

    app.command("import-inspect")(import_inspect_cmd.import_inspect)
    app.add_typer(ratings_cmd.app, name="ratings", help="Human ratings: import them, judge-human agreement.")
    from simulator.cli import serve_cmd

    app.command("serve")(serve_cmd.serve)
    from simulator.cli._examples import add_examples

    add_examples(app)
    _registered = True


def _register_gold() -> None:
    """`gold sessions` and `gold labels`: the tracker and the judge measured against RESCUE's human annotations.
    Their old names, `validate` and `judge-validate`, run the same commands, hidden from --help."""
    from simulator.cli import gold_labels_cmd, gold_sessions_cmd

    gold = typer.Typer(cls=HelpGroup, no_args_is_help=True, add_completion=False, rich_markup_mode="rich")
    gold.command("sessions")(gold_sessions_cmd.gold_sessions)
    gold.command("labels")(gold_labels_cmd.gold_labels)
    app.add_typer(gold, name="gold", help="Measure the tracker and the judge against RESCUE's human-verified gold.")
    app.command("validate", hidden=True)(gold_sessions_cmd.gold_sessions)
    app.command("judge-validate", hidden=True)(gold_labels_cmd.gold_labels)


def check_own_judges() -> None:
    """Exit 2 with one line when `import judges` is not rescue-sim's: PyPI's `judges` (an unrelated LLM-judge
    library) has the same import name, and pip puts both distributions' files into one `site-packages/judges/`."""
    try:
        import judges
    except ImportError as exc:
        if exc.name != "judges":
            raise  # rescue-sim's own judges failed to import: that traceback is the one to read
        found, reason = None, "it is not installed"
    else:
        if getattr(judges, "__rescue_sim__", False):
            return
        found = getattr(judges, "__file__", None)
        reason = "it is not rescue-sim's"
    where = f" at {found}" if found else ""
    typer.echo(
        f"error: the `judges` package{where} cannot be used ({reason}); PyPI's `judges` shares rescue-sim's import "
        "name: install rescue-sim in its own virtual environment",
        err=True,
    )
    raise SystemExit(2)


def main() -> None:
    from simulator.llm.tokenizers import use_shipped_tokenizers

    check_own_judges()
    use_shipped_tokenizers()  # tiktoken reads the shipped files: nothing is fetched at run time
    _register()
    app()


if __name__ == "__main__":
    main()
