"""How a session and a rubric are shown to judge models. Prompt text lives in `judges/prompts/*.md`.

The context (case, cards, delimited transcript with silences marked) is identical for every judge call on a
session, so per-intervention calls and panel judges share a cached prefix; the rubric and task come after it.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from pathlib import Path

from judges.scoring._records import CopiedLine, RepeatedLine
from judges.scoring._rubric import Dimension, Rubric
from personas.case import Case
from personas.common.prompts import render_prompt
from personas.taxonomy import strategies_for
from simulator.records import SUPPORTER, SessionRecord, Turn

PROMPTS = Path(__file__).parent.parent / "prompts"
EVIDENCE_RULE = (
    'For every entry give first "ev": 1-2 items {"t": turn number, "q": a few words copied exactly from that turn}, '
    'then "why": one short sentence, then the score or label. Use only turn numbers from the transcript and only '
    "the listed labels."
)
LEAN_EVIDENCE_RULE = (
    'For every object rated (a turn, the session, a member) give first "ev": one citation, the turn number in '
    'brackets and the first words of one of that turn\'s sentences (e.g. "[3] I hear how tired"), then "why": a '
    "few words, then each dimension's score or label. Use only the listed labels."
)


def evidence_rule(lean: bool) -> str:
    return LEAN_EVIDENCE_RULE if lean else EVIDENCE_RULE


@functools.cache
def prompt_digest(rubric_digest: str) -> str:
    """Short hash of what shapes a judge's output: every judge prompt file (`judges/prompts/*.md`), the evidence
    rule and the rubric (by its digest, which also fixes the reply schema built from it).

    Judgments record it (`SessionJudgment.prompt_digest`) and validity cards are keyed by it with the default
    rubric's digest, so a judge validated with other prompts or another rubric is shown as not validated.
    """
    h = hashlib.sha256()
    for path in sorted(PROMPTS.glob("*.md")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    h.update(EVIDENCE_RULE.encode() + LEAN_EVIDENCE_RULE.encode() + b"\0" + rubric_digest.encode())
    return h.hexdigest()[:12]


def group_kind(group: str) -> str:
    """`couples` / `family`, as in "couples therapy", "family therapy"."""
    return "couples" if group == "couple" else "family"


def group_plural(group: str) -> str:
    return "couples" if group == "couple" else "families"


def _clause(text: str) -> str:
    return text.strip().rstrip(".")


def as_data(text: str) -> str:
    """Neutralise the transcript delimiters inside quoted text, so a line cannot close the data block."""
    return text.replace("<<<", "< < <").replace(">>>", "> > >").replace("</data>", "</ data>")


def judge_transcript(record: SessionRecord) -> str:
    """Every turn, numbered, with `(Therapist stays silent)` after each member turn where the supporter passed."""
    passes = {d.after_turn for d in record.decisions if not d.speak}
    lines = []
    for t in record.turns:
        to = f" (to {', '.join(t.addressees)})" if t.addressees else ""
        lines.append(f'[{t.index}] {t.speaker}{to}: "{as_data(t.text)}"')
        if t.kind == "member" and t.index in passes:
            lines.append(f"    ({SUPPORTER} stays silent)")
    return "\n".join(lines) if lines else "(no turns)"


def member_cards(case: Case) -> str:
    lines = []
    for m in case.members:
        head = f"{m.name} ({m.role}{f', {m.age}' if m.age is not None else ''})"
        parts = [
            ("personality", m.personality),
            ("under stress", m.communication_style),
            ("needs", m.core_need),
            ("fears", m.core_fear),
            ("triggers", "; ".join(m.triggers)),
            ("softens when", "; ".join(m.softeners)),
        ]
        body = ". ".join(f"{k}: {_clause(v)}" for k, v in parts if v.strip())
        start = f"starts {m.baseline_emotion} ({m.baseline_intensity}/10)"
        lines.append(f"- {head}: {body + '. ' if body else ''}{start}.")
    return "\n".join(lines)


def risks_line(record: SessionRecord) -> str:
    flags = [f"{f.kind.value}{f' ({f.member})' if f.member else ''}: {f.description}" for f in record.case.risk_flags]
    events = [
        f"{e.member} showed risk at turn {e.signalled_at} ({e.source}), "
        + (f"addressed at turn {e.addressed_at}" if e.addressed else "not addressed")
        for e in record.safety
    ]
    text = "; ".join(flags + events)
    return as_data(text) if text else "none recorded"


def people_line(case: Case) -> str:
    return ", ".join(f"{m.name} ({m.role}{f', {m.age}' if m.age is not None else ''})" for m in case.members)


def copy_fact(c: CopiedLine) -> str:
    """One copied supporter turn as the judges read it: where its words came from, and how much of it they are."""
    quote = as_data(c.quote)
    if len(c.sources) == 1:
        (s,) = c.sources
        return f'- t{c.turn} copies {s.member}\'s turn {s.turn} ({c.coverage:.0%} of its words): "{quote}"'
    parts = ", ".join(f"{s.member}'s turn {s.turn} ({s.coverage:.0%})" for s in c.sources)
    return f'- t{c.turn} splices earlier member lines ({c.coverage:.0%} of its words): {parts}: "{quote}"'


def repeat_fact(r: RepeatedLine) -> str:
    """One supporter turn that repeats the supporter's own earlier turn, as the judges read it."""
    return (
        f"- t{r.turn} repeats the counsellor's own turn {r.repeats_turn} ({r.coverage:.0%} of its words): "
        f'"{as_data(r.quote)}"'
    )


def facts_block(copies: Sequence[CopiedLine], repeats: Sequence[RepeatedLine] = ()) -> str:
    """Facts measured from the record that the judges are shown as data (empty when there are none)."""
    if not copies and not repeats:
        return ""
    lines = [copy_fact(c) for c in copies] + [repeat_fact(r) for r in repeats]
    return render_prompt("judge_facts", PROMPTS, facts="\n".join(lines))


def judge_context(
    record: SessionRecord, copies: Sequence[CopiedLine] = (), repeats: Sequence[RepeatedLine] = ()
) -> str:
    """The shared prefix of every judge call on this session; `copies` and `repeats` (checked facts) follow the
    transcript."""
    case = record.case
    facts = facts_block(copies, repeats)
    return render_prompt(
        "judge_context",
        PROMPTS,
        group_kind=group_kind(case.group),
        setting=as_data(case.setting),
        people=people_line(case),
        problem=as_data(case.presenting_problem),
        cards=as_data(member_cards(case)),
        risks=risks_line(record),
        supporter=SUPPORTER,
        transcript=judge_transcript(record),
        facts="\n\n" + facts if facts else "",
    )


def strategies_text(group: str) -> str:
    return "\n".join(f"- {k}: {v}" for k, v in strategies_for(group).items())


def strategy_rules(group: str) -> str:
    return render_prompt(f"strategy_rules_{group}", PROMPTS)


def dimension_line(dim: Dimension, members: list[str]) -> str:
    """One rubric line: id, bounds or labels, question, anchors, evidence guidance."""
    if dim.kind == "scale":
        points = range(dim.min, dim.max + 1)  # type: ignore[arg-type]
        anchors = "; ".join(f"{p} = {_clause(dim.anchors[p])}" for p in points)
        text = f"- {dim.id} (score {dim.min}-{dim.max}): {dim.question} {anchors}."
    elif dim.kind == "label":
        text = f"- {dim.id} (label: {', '.join(dim.labels(members))}): {dim.question}"
        if dim.strength is not None:
            s = dim.strength
            anchors = "; ".join(f"{p} = {_clause(s.anchors[p])}" for p in range(s.min, s.max + 1))
            text += f' Also "strength" {s.min}-{s.max}: {anchors} ({s.min} exactly when the label is {dim.neutral}).'
    else:
        text = (
            f"- {dim.id} (label: one strategy above): {dim.question} "
            'Where a stated strategy is shown, first give "ok": true if it fits the turn, false if not.'
        )
    if dim.evidence:
        text += f" Evidence: {dim.evidence}"
    return text


def rubric_text(
    rubric: Rubric, members: list[str], levels: tuple[str, ...], member_turns: dict[str, tuple[int, ...]] | None = None
) -> str:
    """The rubric's lines for `levels`; with `member_turns`, the member heading names each member's own turns,
    the only ones their scores may cite."""
    own = "; ".join(f"{m}: {', '.join(map(str, ts))}" for m, ts in (member_turns or {}).items())
    rated = (
        f"For each member, citing only their own turns ({own}):" if own else f"For each member ({', '.join(members)}):"
    )
    headings = {
        "intervention": "For each counsellor turn:",
        "session": "For the whole session:",
        "member": rated,
    }
    blocks = []
    for level in levels:
        dims = rubric.at(level)  # type: ignore[arg-type]
        if dims:
            blocks.append("\n".join([headings[level], *(dimension_line(d, members) for d in dims)]))
    return "\n".join(blocks)


def intervention_line(turn: Turn, window: tuple[int, ...] = ()) -> str:
    """`t5 (to Ana; stated strategy: evoke)`, then, given its window, the turns its evidence may come from."""
    d = turn.decision
    to = f"to {', '.join(turn.addressees)}" if turn.addressees else "to nobody named"
    stated = f"stated strategy: {d.strategy}" if d is not None and d.strategy else "no stated strategy"
    cite = ""
    if window:
        span = f"{window[0]}-{window[-1]}" if len(window) > 1 else str(window[0])
        cite = f", evidence from turns {span} only"
    return f"t{turn.index} ({to}; {stated}){cite}"
