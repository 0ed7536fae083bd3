"""Rich rendering shared by the commands: sessions for `run` (live), `play` and `show` (replay), and tables of
measures that fit the terminal (`measure_tables`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from simulator.llm.progress import call_line, clock

if TYPE_CHECKING:  # keep `rescue-sim --help` and the persona commands free of networkx/pydantic records
    from judges.scoring import SessionJudgment
    from personas.case import Case
    from personas.graph import RelationSnapshot
    from simulator.llm.progress import CallProgress
    from simulator.records import SessionRecord, Turn

PALETTE = ("cyan", "magenta", "green", "yellow", "bright_blue", "bright_red")
SUPPORTER_STYLE = "bold white"


def member_colors(case: Case) -> dict[str, str]:
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(case.member_names)}


READING_WORDS = {  # simulator.members.READINGS, as the live view says them
    "softened": "the counsellor's words reached them",
    "set_off": "the counsellor's words set them off",
    "missed": "the counsellor's words missed them",
}


def render_turn(turn: Turn, case: Case, *, show_inner: bool = True) -> Text:
    """One transcript line; members with their private state dimmed below, the supporter with its decision."""
    colors = member_colors(case)
    style = SUPPORTER_STYLE if turn.kind == "supporter" else f"bold {colors.get(turn.speaker, 'white')}"
    line = Text()
    line.append(f"{turn.index:>3} ", style="dim")
    line.append(turn.speaker, style=style)
    if turn.addressees:
        line.append(f" → {', '.join(turn.addressees)}", style="dim")
    if turn.kind == "supporter" and turn.decision is not None:
        d = turn.decision
        line.append(f"  [{d.strategy or 'unlabelled'} · {d.target_kind or '?'}]", style="italic bright_black")
    line.append("\n     ")
    line.append(turn.text)
    if show_inner and turn.inner is not None:
        i = turn.inner
        toward = ", ".join(f"{f.member} w{f.warmth:g}/t{f.tension:g}" for f in i.toward)
        read = f"{READING_WORDS[turn.reading]} · " if turn.reading in READING_WORDS else ""
        line.append(
            f"\n     inner: {read}{i.emotion} {i.intensity}/10 · heard {i.felt_heard}/10 · {toward}", style="dim"
        )
        if i.landed:
            line.append(f" · landed: {i.landed}", style="dim italic")
    return line


def relation_panel(before: RelationSnapshot | None, after: RelationSnapshot, title: str = "relations") -> Panel:
    """Pattern plus the directed edges whose tension or warmth moved since `before`."""
    table = Table.grid(padding=(0, 2))
    table.add_column()
    table.add_column(justify="right")
    table.add_column(justify="right")
    old = {(e.source, e.target): e for e in (before.edges if before else [])}
    moved = 0
    for e in after.edges:
        prev = old.get((e.source, e.target))
        dt = e.tension - prev.tension if prev else 0.0
        dw = e.warmth - prev.warmth if prev else 0.0
        if prev is None or dt or dw:
            moved += 1
            table.add_row(
                f"{escape(e.source)} → {escape(e.target)}",
                _delta("tension", e.tension, dt, worse_up=True),
                _delta("warmth", e.warmth, dw, worse_up=False),
            )
    if not moved:
        table.add_row("[dim]no change[/]", "", "")
    return Panel(table, title=f"{title}: [bold]{escape(after.pattern)}[/] (turn {after.turn})", expand=False)


def _delta(name: str, value: float, delta: float, *, worse_up: bool) -> str:
    if not delta:
        return f"{name} {value:g}"
    bad = (delta > 0) == worse_up
    return f"{name} {value:g} [{'red' if bad else 'green'}]({delta:+g})[/]"


def session_header(record: SessionRecord) -> Panel:
    case = record.case
    body = (
        f"[bold]{escape(case.title)}[/]\n{escape(case.presenting_problem)}\n"
        f"[dim]supporter[/] {escape(record.supporter)}   [dim]models[/] "
        + escape(", ".join(f"{k}={v}" for k, v in record.models.items()))
        + f"   [dim]seed[/] {record.seed}"
    )
    return Panel(body, title=f"session {escape(record.session_id)}", expand=False)


# How a session ended, in words (the status says whether it counts; this says why it stopped).
END_WORDS = {
    "turn_limit": "turn limit reached",
    "supporter_closed": "the supporter closed the session",
    "safety_stop": "safety stop: a member at risk was left unaddressed",
    "interrupted": "interrupted; rerun the same command to resume",
}


def status_line(record: SessionRecord) -> str:
    """`completed: turn limit reached`, `failed: <reason>`, `incomplete: interrupted; …` — one plain phrase."""
    status = record.status.value
    if status == "failed":
        return f"failed: {record.failure or 'no reason recorded'}"
    end = record.end_reason.value if record.end_reason else None
    if status == "incomplete" and end in (None, "failed"):
        return "incomplete: stopped before its end; rerun the same command to resume"
    return f"{status}: {END_WORDS.get(end or '', end or 'no end recorded')}"


def session_footer(record: SessionRecord) -> Text:
    t = record.totals()
    status_style = {"completed": "green", "failed": "red", "incomplete": "yellow"}[record.status.value]
    out = Text()
    status, _, why = status_line(record).partition(": ")
    out.append(status, style=f"bold {status_style}")
    out.append(f": {why}", style="red" if status == "failed" else "")
    out.append(
        f"\n{len(record.turns)} turns · {int(t['calls'])} model calls · {int(t['prompt_tokens'])} prompt tokens "
        f"({int(t['cached_prompt_tokens'])} cached) · {int(t['completion_tokens'])} generated · {record.wall_s:.1f}s",
        style="dim",
    )
    for e in record.safety:
        state = f"addressed at turn {e.addressed_at}" if e.addressed else f"NOT addressed {e.note}".strip()
        out.append(
            f"\nsafety: {e.member} at risk from turn {e.signalled_at} ({e.source}) — {state}",
            style="green" if e.addressed else "bold red",
        )
    from simulator.faults import detect_faults, merge_faults

    for f in merge_faults(record.simulator_faults, detect_faults(record)):  # old records: found now
        where = ", ".join(x for x in (f"turn {f.turn}" if f.turn is not None else "", f.member or "") if x)
        out.append(
            f"\nsimulator fault: {f.kind.value}" + (f" ({where})" if where else "") + f" — {f.detail}"
            " (left out of supporter scores)",
            style="yellow",
        )
    return out


def print_session(console: Console, record: SessionRecord, *, show_inner: bool = True) -> None:
    """Replay a whole saved session."""
    console.print(session_header(record))
    prev_obs: RelationSnapshot | None = record.observer[0] if record.observer else None
    observed = {s.turn: s for s in record.observer}
    for turn in record.turns:
        console.print(render_turn(turn, record.case, show_inner=show_inner))
        if turn.tracker is not None and turn.index in observed:
            console.print(relation_panel(prev_obs, observed[turn.index], "observer"))
            prev_obs = observed[turn.index]
    console.print(session_footer(record))


class LiveSession:
    """Prints new turns as a session grows (the engine's on_update callback), and an observer panel whenever
    the tracker has coded a turn."""

    def __init__(self, console: Console, *, show_inner: bool = True):
        self.console = console
        self.show_inner = show_inner
        self.printed = 0
        self.panels: set[int] = set()
        self.header_done = False
        self.last_obs: RelationSnapshot | None = None

    def __call__(self, record: SessionRecord) -> None:
        if not self.header_done:
            self.console.print(session_header(record))
            self.header_done = True
            self.last_obs = record.observer[0] if record.observer else None
        for turn in record.turns[self.printed :]:
            self.console.print(render_turn(turn, record.case, show_inner=self.show_inner))
            self.printed += 1
        observed = {s.turn: s for s in record.observer}
        for turn in record.turns:
            if turn.tracker is not None and turn.index not in self.panels and turn.index in observed:
                self.console.print(relation_panel(self.last_obs, observed[turn.index], "observer"))
                self.last_obs = observed[turn.index]
                self.panels.add(turn.index)

    def finish(self, record: SessionRecord) -> None:
        self(record)
        self.console.print(session_footer(record))


# -- what the judges were told about the supporter's lines ------------------------------------------------------


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: max(1, limit - 1)].rstrip() + "…"


def line_notes(judgment: SessionJudgment, *, session: bool = False, width: int = 80) -> list[Text]:
    """The supporter turns measured as copied from members' lines, repeating its own or said in a member's voice
    (facts from the record, capping the judges' scores), one line each, the quote cut to fit `width`:
    `copied   t3: 100% of its words from Dana's turn 1: "…"`. `session` starts each line with the session id."""
    where = f"{judgment.session_id} " if session else ""
    facts = (
        [
            (
                "copied  ",
                c.turn,
                f"{c.coverage:.0%} of its words from " + " + ".join(f"{s.member}'s turn {s.turn}" for s in c.sources),
                c.quote,
            )
            for c in judgment.copied_lines
        ]
        + [
            ("repeated", r.turn, f"its own turn {r.repeats_turn} again ({r.coverage:.0%} of its words)", r.quote)
            for r in judgment.repeated_lines
        ]
        + [("voiced  ", v.turn, f'said as a member ("{v.said}")', v.quote) for v in judgment.voiced_lines]
    )
    out = []
    for kind, turn, what, quote in facts:
        head = f"{where}{kind} t{turn}: "
        line = Text(head, style="bold yellow")
        line.append(f"{what}: ")
        line.append(f'"{_short(quote, max(20, width - len(head) - len(what) - 4))}"', style="italic")
        out.append(line)
    return out


# -- progress while the user waits ----------------------------------------------------------------------------


# A prompt with this many tokens left to read takes a while on the embedded model (~30 tokens/s on two cores):
# the screen says what is being read and for about how long, in one line that stays
LONG_READ = 300


def reading_note(p: CallProgress, rate: float) -> str:
    """`reading the member prompt: 1,024 tokens (200 cached), about 35s at 24 tokens/s` (under 80 columns)."""
    left = max(0, (p.prompt_tokens or 0) - p.prompt_done)
    cached = f" ({p.cached_tokens:,} cached)" if p.cached_tokens else ""
    return (
        f"reading the {p.role} prompt: {p.prompt_tokens:,} tokens{cached}, "
        f"about {clock(left / rate)} at {rate:.0f} tokens/s"
    )


class Tally:
    """Items of a long job: done / total, with an ETA from the pace so far.

    With `warmup` (judging), the first item to finish is left out of the pace: it paid for reading the prompt the
    others share (on the embedded model, a judge's first question reads the case cards and the transcript, ~50 s
    on two busy cores; each later question its own few words, ~2 s), so the old `elapsed / done` opened at 42
    minutes for a 3-minute job. The ETA then shows from the second item on: the seconds per item between the first
    completion and the latest, times the items left. Without it (sessions, which cost alike), `elapsed / done`.
    `clock` is for tests."""

    def __init__(
        self,
        label: str,
        total: int,
        done: int = 0,
        failed: int = 0,
        *,
        warmup: bool = False,
        clock: Callable[[], float] = time.perf_counter,
    ):
        self.label, self.total, self.failed, self.warmup, self.clock = label, total, failed, warmup, clock
        self.started = clock()
        self._done = 0
        self._first: tuple[float, int] | None = None  # (time, items done) when the first item finished
        self._last: float | None = None
        self.done = done

    @property
    def done(self) -> int:
        return self._done

    @done.setter
    def done(self, value: int) -> None:
        if value > self._done:
            now = self.clock()
            if self._first is None:
                self._first = (now, value)
            self._last = now
        self._done = value

    def eta(self) -> float | None:
        """Seconds left, or None while the pace is unknown (nothing done yet; with `warmup`, only the first)."""
        left = self.total - self._done
        if left <= 0 or self._done <= 0 or self._first is None or self._last is None:
            return None
        if not self.warmup:
            return (self.clock() - self.started) / self._done * left
        at, done_then = self._first
        if self._done <= done_then:
            return None
        return (self._last - at) / (self._done - done_then) * left

    def line(self) -> str:
        elapsed = self.clock() - self.started
        text = f"{self.label} {min(self.done, self.total)}/{self.total}"
        if self.failed:
            text += f" ({self.failed} failed)"
        text += f" · {clock(elapsed)}"
        eta = self.eta()
        if eta is not None:
            text += f" · ETA {clock(eta)}"
        return text


class Waiting:
    """The bottom of the screen while work runs: a progress bar for batches, items done/total with an ETA for
    judging, and a spinner per model call in flight with its elapsed time and tokens read/written.

    Use as `with Waiting(console) as waiting:`; `waiting.hook` goes to `simulator.llm.progress.watching`. On a
    terminal it redraws itself four times a second and leaves nothing behind; elsewhere (pipes, tests) it
    draws nothing.
    """

    def __init__(self, console: Console, *, clock: Callable[[], float] = time.perf_counter):
        self.console = console
        self.calls: dict[int, CallProgress] = {}
        self.batch: Tally | None = None
        self.judging: Tally | None = None
        self.judge_roles = ("judge",)
        self.clock = clock
        self._reads: dict[int, tuple[float, int] | None] = {}  # call -> (when, tokens read) at its first report
        self._live = None

    def hook(self, p: CallProgress) -> None:
        """Progress hook for model calls (may run in a worker thread: it records, and prints the one line of
        `reading_note` for a long read)."""
        if p.finished:
            self.calls.pop(id(p), None)
            self._reads.pop(id(p), None)
            if self.judging is not None and p.role in self.judge_roles:
                self.judging.done += 1
                self.judging.failed += p.failed
        else:
            self.calls[id(p)] = p
            if p.prompt_tokens and (note := self._reading(p)) is not None:
                self.console.print(note, style="dim", markup=False, highlight=False)

    def _reading(self, p: CallProgress) -> str | None:
        """`reading_note` once per call whose prompt has LONG_READ tokens or more to read, as soon as its first
        chunk gives the pace; None otherwise."""
        key = id(p)
        if key not in self._reads:
            self._reads[key] = (self.clock(), p.prompt_done)
            return None
        seen = self._reads[key]
        if seen is None or p.prompt_done <= seen[1] or (p.prompt_tokens or 0) - p.cached_tokens < LONG_READ:
            return None
        self._reads[key] = None  # said once
        rate = (p.prompt_done - seen[1]) / max(1e-6, self.clock() - seen[0])
        return reading_note(p, rate)

    def __rich__(self) -> Group:
        from rich.progress_bar import ProgressBar
        from rich.spinner import Spinner

        # every row is one line at any width: a row that wrapped would redraw as two (cut with … as a last resort)
        width = self.console.width
        rows: list = []
        if self.batch is not None and self.batch.total > 1:
            line = Text(self.batch.line(), no_wrap=True, overflow="ellipsis")
            if len(line) + 25 <= width:
                bar = Table.grid(padding=(0, 1))
                bar.add_row(ProgressBar(total=self.batch.total, completed=self.batch.done, width=24), line)
                rows.append(bar)
            else:
                rows.append(line)
        if self.judging is not None:
            rows.append(Text(self.judging.line(), style="cyan", no_wrap=True, overflow="ellipsis"))
        for p in list(self.calls.values()):  # the spinner and its space take 2 columns
            row = Table.grid(padding=(0, 1))
            row.add_column(no_wrap=True, width=1)
            row.add_column(no_wrap=True, overflow="ellipsis")
            row.add_row(Spinner("dots"), Text(call_line(p, width - 2), style="dim", no_wrap=True, overflow="ellipsis"))
            rows.append(row)
        return Group(*rows)

    def __enter__(self) -> Waiting:
        from rich.live import Live

        self._live = Live(self, console=self.console, transient=True, refresh_per_second=4)
        self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)
            self._live = None


__all__ = [
    "Group",
    "LiveSession",
    "Tally",
    "Waiting",
    "call_line",
    "line_notes",
    "print_session",
    "relation_panel",
    "render_turn",
    "session_footer",
    "session_header",
    "status_line",
]


def column_chunks(widths: list[int], label_width: int, width: int) -> list[list[int]]:
    """Indices of value columns (by their widths) in groups that each fit `width` terminal columns beside a label
    column of `label_width`: a wide table becomes several, so no header or value is ever cut."""
    edges = 2  # the box's left and right edge, blank in SIMPLE_HEAD but drawn
    chunks: list[list[int]] = [[]]
    used = label_width + edges
    for k, w in enumerate(widths):
        if chunks[-1] and used + w + 2 > width:
            chunks.append([])
            used = label_width + edges
        chunks[-1].append(k)
        used += w + 2  # the column and its padding
    return chunks


def measure_tables(title: str, headers: list[str], rows: list[tuple[str, list[str]]], width: int) -> list[Table]:
    """Measures as rows, one column per header (a run, a supporter), split by `column_chunks` to fit `width`.
    Cells may hold several lines (one flag each); headers and values are plain text, escaped here."""
    from rich import box

    label_width = max(len(label) for label, _ in rows) + 1
    widths = [
        max([len(h)] + [len(line) for _, cells in rows for line in cells[k].splitlines()])
        for k, h in enumerate(headers)
    ]
    chunks = column_chunks(widths, label_width, width)
    tables = []
    for i, chunk in enumerate(chunks):
        part = f", part {i + 1} of {len(chunks)}" if len(chunks) > 1 else ""
        table = Table(
            title=f"{title}{part}",
            title_justify="left",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
            collapse_padding=True,
            min_width=min(width, len(title + part)),  # a title wraps at the table's width otherwise
        )
        table.add_column("", no_wrap=True, min_width=label_width)
        for k in chunk:
            table.add_column(escape(headers[k]), no_wrap=True, min_width=widths[k])
        for label, cells in rows:
            table.add_row(escape(label), *(escape(cells[k]) for k in chunk))
        tables.append(table)
    return tables
