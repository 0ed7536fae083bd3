"""Leaderboard tables for stress runs: critical safety failures and judge flip rates beside the means, and
per-perturbation pass rates with pass^k. Rendered after the main leaderboard tables, each within 80 columns."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich import box
from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:
    from judges import Leaderboard


def _share(n: int, of: int) -> str:
    return f"{n}/{of} ({n / of:.0%})" if of else "-"


def stress_tables(board: Leaderboard, header=lambda d: d) -> list[Table]:
    """[safety and stability per supporter, perturbations]; tables with nothing to show are left out."""
    tables: list[Table] = []
    rows = board.rows
    trials = any(r.judge_trials >= 2 for r in rows)
    if rows and (board.perturbations or trials or any(r.critical_sessions for r in rows)):
        t = Table(
            title="Safety and judge stability (stress)",
            title_justify="left",
            box=box.SIMPLE_HEAD,
            caption="critical: completed sessions with any critical safety failure (safety stop, unaddressed "
            "risk, failed critical check, or a turn judged harmful). judge moved: judgments left out because a "
            "prompt-injection probe moved the judges."
            + (" flip: share of items whose repeated judgments disagree." if trials else ""),
            caption_justify="left",
        )
        t.add_column("", no_wrap=True)
        for r in rows:
            t.add_column(escape(r.supporter if r.knows == "intake" else f"{r.supporter} ({r.knows})"), justify="right")
        t.add_row("critical", *(_share(r.critical_sessions, r.critical_of) for r in rows))
        t.add_row("judge moved", *(str(r.judge_compromised) for r in rows))
        t.add_row("invalid decisions", *(f"{r.invalid_decisions}/{r.decisions}" for r in rows))
        for d in board.dimensions:
            cells = []
            for r in rows:
                s = r.dimension(d)
                mean = "-" if s is None or s.value.mean is None else s.value.render(2)
                flip = r.judge_flip_rate.get(d)
                cells.append(mean + (f" · flip {flip:.0%}" if flip is not None else ""))
            t.add_row(escape(header(d)), *cells)
        tables.append(t)
    if board.perturbations:
        p = Table(
            title="Perturbations: behavioural checks",
            title_justify="left",
            box=box.SIMPLE_HEAD,
            caption="passed: of checks decided (pass or fail); pass^k: chance that k trials of one case and seed "
            "all pass; open: checks neither passed nor failed, by reason: not said (the directed member never "
            "said the stressor: a simulator fault), not played (the session ended first), unsupported evidence, "
            "model errors, failed sessions. faults: sessions with a simulator fault (the room malfunctioned, a "
            "stressor not said included), "
            + ("put back into" if board.include_faults else "left out of")
            + " passed and pass^k. * safety-critical.",
            caption_justify="left",
        )
        for col in ("perturbation", "supporter", "passed", "pass^k", "open", "faults"):
            p.add_column(col, justify="left" if col in ("perturbation", "supporter") else "right", overflow="fold")
        for row in sorted(board.perturbations, key=lambda x: (x.perturbation, x.supporter)):
            decided = row.passed + row.failed
            reasons = (
                (row.not_said, "not said"),
                (row.not_delivered, "not played"),
                (row.unsupported, "unsupported"),
                (row.errors, "error"),
                (row.failed_sessions, "failed session"),
            )
            open_ = ", ".join(f"{n} {why}" for n, why in reasons if n)
            p.add_row(
                escape(row.perturbation) + ("*" if row.critical else ""),
                escape(row.supporter),
                f"{row.passed}/{decided}" + (f" {row.pass_rate:.0%}" if row.pass_rate is not None else ""),
                "-" if row.pass_hat_k is None else f"{row.pass_hat_k:.2f} k={row.k}",
                open_ or "-",
                str(row.simulator_faults) if row.simulator_faults else "-",
            )
        tables.append(p)
    return tables
