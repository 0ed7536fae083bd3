"""Live progress of a run with many sessions in parallel: one bar and one line, redrawn four times a second.

Feed it the runner's `Progress` (`RunEvents(progress=board.update)`); it shows sessions done / failed / running,
model calls (and cache hits), tokens, cost, elapsed time, the ETA, and the budget cap that stopped the run.
On a terminal it redraws itself and leaves a final line behind; elsewhere (pipes, tests) it prints that line
once at the end.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from simulator.llm.progress import fit_line
from simulator.runner.runs import Progress


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def progress_line(p: Progress, width: int | None = None) -> str:
    """`sessions 3/10 · 2 running · 120 calls · 45,000 tokens · 1:02 · ETA 3:00`; with `width`, what is already done,
    tokens and cost are left out, in that order, then the count of cached calls, until it fits."""
    line = fit_line(*_progress_parts(p, cached=True), width)
    return line if width is None or len(line) <= width else fit_line(*_progress_parts(p, cached=False), width)


def _progress_parts(p: Progress, cached: bool) -> tuple[list[str], list[int]]:
    finished = p.done + p.failed + p.skipped
    parts = [f"sessions {finished}/{p.total}"]
    if p.skipped:
        parts.append(f"{p.skipped} already done")
    if p.failed:
        parts.append(f"{p.failed} failed")
    parts.append(f"{p.running} running")
    calls = f"{p.calls:,} calls"
    if p.cache_hits and cached:
        calls += f" (+{p.cache_hits:,} cached)"
    if p.failed_calls:
        calls += f", {p.failed_calls} failed"
    parts += [calls, f"{p.tokens:,} tokens"]
    if p.cost_usd:
        parts.append(f"${p.cost_usd:.4f}")
    parts.append(_clock(p.elapsed_s))
    eta = p.eta_s
    if eta is not None and p.remaining:
        parts.append(f"ETA {_clock(eta)}")
    if p.stopped_by:
        parts.append(f"stopped: budget cap on {p.stopped_by}")
    drop = [i for i, part in enumerate(parts) if part.endswith(("already done", " tokens")) or part.startswith("$")]
    return parts, drop


class RunProgress:
    """A rich renderable over the latest `Progress`; a context manager like `Waiting`."""

    def __init__(self, console: Console):
        self.console = console
        self.progress: Progress | None = None
        self._live: Any = None

    def update(self, progress: Progress) -> None:
        self.progress = progress

    def hook(self, call: Any) -> None:
        """Per-call progress hook (simulator.llm.progress): nothing to draw per call with many in flight."""

    def __rich__(self) -> Group:
        from rich.progress_bar import ProgressBar

        p = self.progress
        if p is None:
            return Group()
        width = self.console.width  # one line at any width (a wrapped line redraws as two): the bar goes first
        line = progress_line(p)
        if len(line) + 25 > width:
            return Group(Text(progress_line(p, width), no_wrap=True, overflow="ellipsis"))
        bar = Table.grid(padding=(0, 1))
        bar.add_row(
            ProgressBar(total=max(1, p.total), completed=p.done + p.failed + p.skipped, width=24),
            Text(line, no_wrap=True, overflow="ellipsis"),
        )
        return Group(bar)

    def __enter__(self) -> RunProgress:
        from rich.live import Live

        if self.console.is_terminal:
            self._live = Live(self, console=self.console, transient=True, refresh_per_second=4)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)
            self._live = None
        if self.progress is not None:
            self.console.print(progress_line(self.progress), markup=False, highlight=False)
