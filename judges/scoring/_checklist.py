"""Checklist judging: every dimension scored from short yes/no items, each read as the model's P(yes).

A small judge asked for a long structured verdict (quotes, reasons, 1-5 scores) mostly reports its own
uncertainty and position bias; asked one narrow question whose answer is a word, it reads the room. So each
rubric dimension lists binary, observable items (`checklist:` in the rubric), instantiated per member, pair of
members, strategy or case risk, and each is asked as its own short call: the case and the transcript up to the
turn it concerns (as data), then the question last. Items about one turn share that prefix, so the embedded
model's prefix cache reads the transcript once per turn. The answer is never sampled where log-probabilities
exist: `ModelClient.yes_probability` returns P(yes) / (P(yes) + P(no)).

A dimension's score is then arithmetic on those probabilities (`score_dimension`): scales, the weighted mean of
the items' yes-shares (direction applied) mapped linearly onto min..max; labels, the label whose strongest item
says yes above 0.5, else the neutral label, with a strength from that probability; strategies, the most
probable strategy. A failed item leaves its dimension unscored (recorded, never filled in).

An item that names a rule (`rule:`, judges/scoring/_rules.py) is not asked: the rule answers it about its turn, P(yes)
1.0 or 0.0 (`method: rule`), and the scoring treats that answer like any other.

An anchored item (`anchors:`) is asked three times about its turn: about the turn's line, and about a known-no and a
known-yes line each read in the turn's place (same room, same turn). Its P(yes) is where the line sits between the
two (`anchored_p`), so a room whose pain tilts every reading towards yes tilts the anchors too.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from judges.scoring._facts import apply_line_caps, copied_lines, repeated_lines, speakers_of, voiced_lines
from judges.scoring._records import (
    AnchorReading,
    CopiedLine,
    DimensionScore,
    ItemAnswer,
    JudgeFailure,
    JudgeVerdict,
    JudgmentStatus,
)
from judges.scoring._render import PROMPTS, as_data, judge_context, prompt_digest
from judges.scoring._rubric import MEMBER_LABEL, OTHERS_LABEL, ChecklistItem, Dimension, Rubric
from judges.scoring._rules import apply_rule
from personas.common.prompts import render_prompt
from personas.taxonomy import GROUP_TARGET_LABELS, strategies_for
from simulator.llm.types import CallRecord, ModelClient, ModelError, Prompt, YesProbability, is_local
from simulator.records import SUPPORTER, SessionRecord

CHECKLIST_PROMPTS = PROMPTS / "checklist"
SAMPLES = 5  # answers sampled per question where a provider gives no log-probabilities
CONTEXTS_AT_ONCE = 8  # turns asked about concurrently on hosted models (the embedded model: one, prefix kept warm)
ANCHOR_P = 0.9  # an anchored item's yes line reads this P(yes) after calibration, its no line 1 - ANCHOR_P
MIN_ANCHOR_GAP = 0.5  # log-odds: anchors read closer than this cannot place a line between them (the item fails)
ANCHOR_KEY = "anchor:"  # answers to an anchor's questions are keyed (turn, ANCHOR_KEY + its line, question)
# An `alone` item's questions (and its anchors') quote their line and are asked without the room: keyed (None,
# ALONE_KEY, question), so an anchor is read once per session, not once per turn.
ALONE_KEY = "alone"
# The form measured in tests/benchmarks/README.md, issue 43 (e): this context, then the item's question as it stands
# (it quotes the line), without the item prompt's frame, which read the anchors closer together on the 1.5B.
ALONE_CONTEXT = "You read lines a counsellor said in couples and family counselling sessions."


@dataclass(frozen=True)
class Ask:
    """One instantiated item of one dimension about one scored object (a turn, the session, a member)."""

    dim: str
    unit: str  # `t<turn>`, `session` or `member:<name>`
    item: ChecklistItem
    turn: int | None  # the supporter turn asked about; None: the whole session
    member: str | None
    other: str | None
    strategy: str | None
    questions: tuple[str, ...]  # one, or both member orders of a comparison
    anchors: tuple[tuple[str, tuple[str, ...]], ...] = ()  # anchored items: (no line, its questions), (yes line, ...)


def _fill(item: ChecklistItem, record: SessionRecord, **values: str) -> str:
    case = record.case
    text = item.question
    base = {
        "pattern": case.relation_pattern.replace("_", " "),
        "risks": as_data("; ".join(f.description for f in case.risk_flags) or _events(record)),
        **values,
    }
    for key, value in base.items():
        text = text.replace("{" + key + "}", value)
    return text


def _events(record: SessionRecord) -> str:
    """The session's safety events, where the case lists no risk (`{risks}` then names them)."""
    return "; ".join(f"{e.member} showed risk at turn {e.signalled_at}" for e in record.safety)


def addressee_phrase(targets: Sequence[str], group: str) -> str:
    """Whom a turn addresses, as `{addressee}` reads: `Dana`, `Dana and Theo`, `the couple as a whole`."""
    label = GROUP_TARGET_LABELS.get(group)  # type: ignore[call-overload]
    if any(t == label for t in targets):
        return f"the {'couple' if group == 'couple' else 'family'} as a whole"
    names = [n.strip() for t in targets for n in t.split("&") if n.strip()]
    return " and ".join(names)


def _instances(
    dim: Dimension,
    item: ChecklistItem,
    record: SessionRecord,
    unit: str,
    turn: int | None,
    rated: str | None,
    addressee: str | None = None,
) -> list[Ask]:
    """The asks one item makes about one scored object: per member, pair (both orders), strategy.

    `addressee` fills `{addressee}` (None: whom `turn` addresses in the record; an item naming it is skipped for
    a turn that addresses nobody)."""
    ph = item.placeholders()
    if "risks" in ph and not record.case.risk_flags and not record.safety:
        return []
    said = ""
    if "line" in ph:
        shown = next((t for t in record.turns if t.index == turn), None)
        said = as_data(" ".join(shown.text.split())) if shown is not None else ""
        if not said:
            return []
    if "addressee" in ph and addressee is None:
        shown = next((t for t in record.turns if t.index == turn), None)
        addressee = addressee_phrase(shown.addressees, record.case.group) if shown is not None else ""
        if not addressee:
            return []
    members = record.case.member_names
    if "other" in ph:
        pairs = [(rated, o) for o in members if o != rated] if rated else list(itertools.combinations(members, 2))
    elif "member" in ph:
        pairs = [(m, None) for m in ([rated] if rated else members)]
    else:
        pairs = [(None, None)]
    strategies = list(strategies_for(record.case.group).items()) if "strategy" in ph else [(None, "")]

    def asked(member: str | None, other: str | None, values: dict[str, str]) -> tuple[str, ...]:
        if member is None:
            return (_fill(item, record, **values),)
        if other is None:
            return (_fill(item, record, member=member, **values),)
        return (  # a comparison: both orders, averaged (position bias)
            _fill(item, record, member=member, other=other, **values),
            _fill(item, record, member=other, other=member, **values),
        )

    out = []
    for (member, other), (strategy, definition) in itertools.product(pairs, strategies):
        values = {"strategy": strategy or "", "definition": definition, "addressee": addressee or "", "line": said}
        anchors = tuple(
            (text, asked(member, other, {**values, "line": as_data(text)}))
            for text in ((item.anchors.no_line, item.anchors.yes_line) if item.anchors is not None else ())
        )
        out.append(Ask(dim.id, unit, item, turn, member, other, strategy, asked(member, other, values), anchors))
    return out


def plan_asks(record: SessionRecord, rubric: Rubric) -> list[Ask]:
    """Every ask of a checklist judgment of this session, in rubric order."""
    turns = [t for t in record.turns if t.kind == "supporter"]
    asks: list[Ask] = []
    for dim in rubric.active:
        if dim.level == "intervention":
            for t in turns:
                for item in dim.items:
                    asks += _instances(dim, item, record, f"t{t.index}", t.index, None)
            continue
        objects = [("session", None)] if dim.level == "session" else [(f"member:{m}", m) for m in speakers_of(record)]
        for unit, rated in objects:
            for item in dim.items:
                if (item.level or "session") == "intervention":
                    for t in turns:
                        asks += _instances(dim, item, record, unit, t.index, rated)
                else:
                    asks += _instances(dim, item, record, unit, None, rated)
    return asks


def turn_asks(record: SessionRecord, dim: Dimension, turn: int, *, addressee: str | None = None) -> list[Ask]:
    """The asks an intervention dimension makes about one supporter turn (as `plan_asks` does for each turn);
    `addressee` puts another target in `{addressee}` (validate asks each candidate)."""
    return [a for item in dim.items for a in _instances(dim, item, record, f"t{turn}", turn, None, addressee)]


def checklist_digest(rubric: Rubric) -> str:
    """What produced a checklist judgment's numbers: the judge prompts, the rubric, its active items and the item
    prompt. Judgments record it and validity cards are keyed by it (a verdict card never matches it)."""
    item_prompt = hashlib.sha256((CHECKLIST_PROMPTS / "item.md").read_bytes()).hexdigest()[:12]
    return prompt_digest(f"{rubric.digest}+checklist:{rubric.items_digest}+item:{item_prompt}")


def model_asks(asks: Sequence[Ask]) -> list[Ask]:
    """The asks a judge model answers: all but those a rule answers."""
    return [a for a in asks if a.item.rule is None]


def checklist_questions(record: SessionRecord, rubric: Rubric) -> int:
    """How many distinct questions a checklist judgment of this session asks the model (for progress displays); an
    item a rule answers asks none, an anchored item its anchors' questions too."""
    asked = set()
    for a in model_asks(plan_asks(record, rubric)):
        own, anchors = _answer_keys(a)
        asked.update(own, *anchors)
    return len(asked)


Key = tuple[int | None, str, str]  # (turn, context, question); context: "" its turn's, a reading, or an anchor's


def _answer_keys(a: Ask) -> tuple[list[Key], list[list[Key]]]:
    """The keys an ask's answers are stored under: its own questions', and each anchor's questions'."""
    if a.item.alone:
        return [(None, ALONE_KEY, q) for q in a.questions], [[(None, ALONE_KEY, q) for q in qs] for _, qs in a.anchors]
    own = [(a.turn, a.item.reads or "", q) for q in a.questions]
    return own, [[(a.turn, ANCHOR_KEY + text, q) for q in questions] for text, questions in a.anchors]


def _upto(record: SessionRecord, turn: int) -> SessionRecord:
    return record.model_copy(update={"turns": [t for t in record.turns if t.index <= turn]})


def turn_context(
    record: SessionRecord, copies: Sequence[CopiedLine], turn: int | None, *, line: str | None = None
) -> tuple[str, str]:
    """(shared prefix, what the question is about): the transcript up to the turn, or the whole session; `line`
    reads in the turn's place (an anchor: the turn's own copy notes are left out with its words)."""
    if turn is None:
        return judge_context(record, copies), "the whole session"
    upto = _upto(record, turn)
    shown = [c for c in copies if c.turn <= turn]
    if line is not None:
        upto = upto.model_copy(
            update={"turns": [t.model_copy(update={"text": line}) if t.index == turn else t for t in upto.turns]}
        )
        shown = [c for c in shown if c.turn < turn]
    about = f"{SUPPORTER}'s turn [{turn}], the last turn of the transcript"
    return judge_context(upto, shown), about


def _weighted(pairs: list[tuple[float, float]]) -> float | None:
    total = sum(w for w, _ in pairs)
    return sum(w * p for w, p in pairs) / total if total > 0 else None


def score_dimension(
    dim: Dimension, unit: str, answers: list[ItemAnswer], members: list[str], stated: str | None = None
) -> DimensionScore | str:
    """A dimension's score from its item answers, or why there is none."""
    level = dim.level
    turn = int(unit[1:]) if unit.startswith("t") else None
    member = unit.split(":", 1)[1] if unit.startswith("member:") else None
    base: dict[str, Any] = {"item": unit, "dimension": dim.id, "level": level, "turn": turn, "member": member}
    base.update(evidence=[], answers=answers)
    if not answers:
        return "no checklist item applies (add items to the rubric or judge with --judge-mode verdict)"
    if dim.kind == "scale":
        share = good_share(answers)
        if share is None:
            return "every item weighs 0"
        assert dim.min is not None and dim.max is not None
        value = dim.min + (dim.max - dim.min) * share
        return DimensionScore(
            **base,
            reasoning=f"checklist: {len(answers)} answers, weighted good share {share:.2f}",
            score=min(dim.max, max(dim.min, int(value + 0.5))),
            value=round(value, 4),
        )
    support: dict[str, list[tuple[float, float]]] = {}
    for a in answers:
        if dim.kind == "taxonomy_strategy":
            targets = [a.strategy or ""]
        elif a.supports == MEMBER_LABEL:
            targets = [a.member or ""]
        elif a.supports == OTHERS_LABEL:
            targets = [m for m in members if m != a.member]
        else:
            targets = [a.supports or ""]
        for t in targets:
            support.setdefault(t, []).append((a.weight, a.p_yes))
    # a label rests on its strongest item (a turn that blames one member takes a side even if it does not say so
    # twice); an item weighing 0 is ignored
    evidence = {
        label: max(p for w, p in pairs if w > 0) for label, pairs in support.items() if any(w > 0 for w, _ in pairs)
    }
    if not evidence:
        return "every item weighs 0"
    if dim.kind == "taxonomy_strategy":
        label = max(evidence, key=lambda k: evidence[k])
        return DimensionScore(
            **base,
            reasoning=f"checklist: most probable strategy {label} ({evidence[label]:.2f})",
            label=label,
            value=round(evidence[label], 4),
            supporter_label=stated,
            supporter_label_ok=(evidence[stated] > 0.5) if stated in evidence else None,
        )
    candidates = {k: v for k, v in evidence.items() if k != dim.neutral}
    top = max(candidates, key=lambda k: candidates[k]) if candidates else None
    strength = None
    if top is not None and candidates[top] > 0.5:
        label, value = top, candidates[top]
        if dim.strength is not None:
            span = dim.strength.max - dim.strength.min - 1
            strength = dim.strength.min + 1 + int((value - 0.5) / 0.5 * span + 0.5)
            strength = min(dim.strength.max, strength)
    else:
        label = dim.neutral or (top or "")
        value = 1.0 - (candidates[top] if top is not None else 0.0)
        strength = dim.strength.min if dim.strength is not None else None
    return DimensionScore(
        **base,
        reasoning=f"checklist: {label} ({value:.2f})" + (f"; strongest other {top}" if label != top and top else ""),
        label=label,
        strength=strength,
        value=round(value, 4),
    )


def _q_of(a: ItemAnswer) -> float:
    return a.p_yes if a.direction == "yes_good" else 1.0 - a.p_yes


def good_share(answers: Sequence[ItemAnswer]) -> float | None:
    """A scale's weighted mean of its items' yes-shares, direction applied (instances of one item averaged
    first); None when every item weighs 0."""
    by_item: dict[str, list[ItemAnswer]] = {}
    for a in answers:
        by_item.setdefault(a.item, []).append(a)
    return _weighted([(group[0].weight, sum(_q_of(a) for a in group) / len(group)) for group in by_item.values()])


async def ask_questions(
    client: ModelClient,
    model: str,
    context: str,
    about: str | None,
    questions: Sequence[str],
    *,
    seed: int,
    trial: int = 0,
) -> tuple[dict[str, YesProbability | str], list[CallRecord]]:
    """Each question's P(yes) (or why it failed) on one shared prefix, asked one after another so the prefix stays
    in the model's cache; the calls made. `about` None: the question as it stands, without the item prompt's frame
    (an `alone` item's question quotes its line)."""
    if getattr(client, "yes_probability", None) is None:
        raise TypeError(f"{type(client).__name__} cannot read answer probabilities (no yes_probability)")
    got: dict[str, YesProbability | str] = {}
    calls: list[CallRecord] = []
    for q in questions:
        framed = q if about is None else render_prompt("item", CHECKLIST_PROMPTS, about=about, question=q)
        prompt = Prompt(context=context, instructions=framed)
        got[q] = await _yes(client, prompt, model, seed=seed, trial=trial, calls=calls)
    return got, calls


async def _yes(
    client: ModelClient, prompt: Prompt, model: str, *, seed: int, trial: int, calls: list[CallRecord]
) -> YesProbability | str:
    """One question's P(yes) as the judge, or why it failed (after the client's retries); the call kept."""
    try:
        answer = await client.yes_probability(  # type: ignore[attr-defined]
            prompt, role="judge", model=model, samples=SAMPLES, seed=seed, trial=trial
        )
    except ModelError as err:
        return err.reason
    calls.append(answer.call)
    return answer


async def ask_readings(
    client: ModelClient,
    model: str,
    record: SessionRecord,
    asks: Sequence[Ask],
    *,
    seed: int,
    trial: int = 0,
) -> tuple[dict[tuple[int | None, str, str], YesProbability | str], list[CallRecord]]:
    """P(yes) (or why it failed) of every item that reads a line (`reads:`), asked as the room asks it: its
    labelled example lines, then the turn's line alone and the question about the member (all share the examples
    as a prefix). Keyed (turn, reading, question)."""
    from simulator.members import appraisal_prompt

    turns = {t.index: t for t in record.turns}
    got: dict[tuple[int | None, str, str], YesProbability | str] = {}
    calls: list[CallRecord] = []
    for a in asks:
        reading = a.item.reads
        key = (a.turn, reading or "", a.questions[0])
        if reading is None or a.turn is None or a.member is None or key in got:
            continue
        prompt = appraisal_prompt(reading, turns[a.turn], a.member, record.case.member_names)
        got[key] = await _yes(client, prompt, model, seed=seed, trial=trial, calls=calls)
    return got, calls


def rule_answer(a: Ask, record: SessionRecord) -> ItemAnswer:
    """An ask answered by its item's rule about its turn: P(yes) 1.0 or 0.0, `method: rule`."""
    assert a.item.rule is not None and a.turn is not None, "a rule answers an intervention item (the rubric checks)"
    turn = next(t for t in record.turns if t.index == a.turn)
    return _answer(a, 1.0 if apply_rule(a.item.rule, record, turn) else 0.0, "rule")


def anchor_readings(rubric: Rubric) -> dict[str, float]:
    """What a judge already calibrated reads for each anchor line of the rubric's active items (1 - ANCHOR_P for a
    no line, ANCHOR_P for a yes line): `anchored_p` then leaves its readings as they are. Tests give it to the fake
    judges (simulator.llm.fake.DEFAULT_ANCHORS)."""
    out: dict[str, float] = {}
    for dim in rubric.active:
        for item in dim.items:
            if item.anchors is not None:
                out[item.anchors.no_line] = round(1 - ANCHOR_P, 6)
                out[item.anchors.yes_line] = ANCHOR_P
    return out


def _logit(p: float) -> float:
    p = min(0.99, max(0.01, p))  # a sampled 0/5 or 5/5 stays finite
    return math.log(p / (1 - p))


def anchored_p(p: float, no: float, yes: float) -> float | None:
    """Where a reading `p` sits between the same judge's readings of a known-no and a known-yes line read in the
    same place, as a probability: linear in log-odds, the no line at 1 - ANCHOR_P, the yes line at ANCHOR_P, their
    midpoint at 0.5. None when the anchors read under MIN_ANCHOR_GAP log-odds apart: there, this judge cannot
    tell a plain yes from a plain no."""
    lo, hi = _logit(no), _logit(yes)
    if hi - lo < MIN_ANCHOR_GAP:
        return None
    position = (_logit(p) - lo) / (hi - lo)
    return round(1 / (1 + math.exp(-_logit(ANCHOR_P) * (2 * position - 1))), 6)


def item_answer(
    a: Ask,
    results: Sequence[YesProbability | str | None],
    anchors: Sequence[Sequence[YesProbability | str | None]] = (),
) -> ItemAnswer | str:
    """One ask's answer (its questions' P(yes) averaged: both orders of a comparison), or why it failed; an anchored
    ask's `anchors` are its no line's results and its yes line's, and its P(yes) is calibrated on them."""
    every = [*results, *itertools.chain(*anchors)]
    ok = [r for r in every if isinstance(r, YesProbability)]
    if len(ok) < len(every) or len(anchors) != len(a.anchors):
        bad = next((r for r in every if not isinstance(r, YesProbability)), None)
        return f"item {a.item.id} ({a.questions[0][:60]}): {bad or 'not asked'}"

    def mean(rs: Sequence[YesProbability | str | None]) -> float:
        return round(sum(r.p_yes for r in rs if isinstance(r, YesProbability)) / len(rs), 6)

    method = "samples" if any(r.method == "samples" for r in ok) else "logprobs"
    k = max(r.k for r in ok)
    if not anchors:
        return _answer(a, mean(results), method, k=k)
    reading = AnchorReading(raw=mean(results), no=mean(anchors[0]), yes=mean(anchors[1]))
    p = anchored_p(reading.raw, reading.no, reading.yes)
    if p is None:
        return (
            f"item {a.item.id} ({a.questions[0][:60]}): the judge did not tell its anchor lines apart "
            f"(P(yes) {reading.no:.2f} for the no line, {reading.yes:.2f} for the yes line)"
        )
    return _answer(a, p, method, k=k, anchored=reading)


def _answer(a: Ask, p_yes: float, method: str, k: int = 1, anchored: AnchorReading | None = None) -> ItemAnswer:
    """The answer record of an ask: what was asked (its item, turn and members) and how it was answered."""
    return ItemAnswer(
        item=a.item.id,
        question=a.questions[0],
        turn=a.turn,
        member=a.member,
        other=a.other,
        strategy=a.strategy,
        direction=a.item.direction,
        supports=a.item.supports,
        weight=a.item.weight,
        p_yes=p_yes,
        method=method,
        k=k,
        anchored=anchored,
    )


async def answer_asks(
    client: ModelClient,
    model: str,
    record: SessionRecord,
    asks: Sequence[Ask],
    *,
    seed: int,
    trial: int = 0,
    copies: Sequence[CopiedLine] | None = None,
) -> tuple[list[ItemAnswer | str], list[CallRecord]]:
    """Each ask's answer (or why it failed), in order, and the calls made: rule items by their rule, `reads:` items
    in the room's form, `alone:` items (and their anchors) on the quoted line with no room, the rest on their turn's
    context, an anchored item's anchors each on its own context (the turn's line replaced). Contexts go turn by turn,
    each turn's own before its anchors, so the embedded model's prefix cache reads the transcript once."""
    if getattr(client, "yes_probability", None) is None:
        raise TypeError(f"{type(client).__name__} cannot read answer probabilities (no yes_probability)")
    copies = copied_lines(record) if copies is None else copies
    by_context: dict[tuple[int | None, str], list[str]] = {}  # (turn, context) -> its questions
    for a in model_asks(asks):
        if a.item.reads is not None:
            continue
        own, anchors = _answer_keys(a)
        for turn, context, q in itertools.chain(own, *anchors):
            bucket = by_context.setdefault((turn, context), [])
            if q not in bucket:
                bucket.append(q)
    order = sorted(by_context, key=lambda k: (k[0] is None, k[0] or 0, k[1] != ""))  # stable: first-asked order kept
    got: dict[Key, YesProbability | str] = {}
    calls: list[CallRecord] = []
    gate = asyncio.Semaphore(1 if is_local(model) else CONTEXTS_AT_ONCE)

    async def one_context(turn: int | None, context: str) -> None:
        if context == ALONE_KEY:
            prefix, about = ALONE_CONTEXT, None
        else:
            prefix, about = turn_context(record, copies, turn, line=context.removeprefix(ANCHOR_KEY) or None)
        async with gate:
            answers, made = await ask_questions(
                client, model, prefix, about, by_context[(turn, context)], seed=seed, trial=trial
            )
        got.update({(turn, context, q): r for q, r in answers.items()})
        calls.extend(made)

    async def lines_read() -> None:
        async with gate:
            answers, made = await ask_readings(
                client, model, record, [a for a in model_asks(asks) if a.item.reads is not None], seed=seed, trial=trial
            )
        got.update(answers)
        calls.extend(made)

    await asyncio.gather(*(one_context(t, context) for t, context in order), lines_read())
    out: list[ItemAnswer | str] = []
    for a in asks:
        if a.item.rule is not None:
            out.append(rule_answer(a, record))
            continue
        own, anchors = _answer_keys(a)
        out.append(item_answer(a, [got.get(k) for k in own], [[got.get(k) for k in keys] for keys in anchors]))
    return out, calls


async def judge_checklist(
    record: SessionRecord,
    client: ModelClient,
    model: str,
    rubric: Rubric,
    *,
    trial: int = 0,
) -> JudgeVerdict:
    """One judge model's checklist verdict on one session: every item asked once (or answered by its rule), every
    dimension scored."""
    copies, repeats = copied_lines(record), repeated_lines(record)
    asks = plan_asks(record, rubric)
    answered, calls = await answer_asks(
        client, model, record, asks, seed=record.seed + 31 * trial, trial=trial, copies=copies
    )
    grouped: dict[tuple[str, str], list[ItemAnswer | str]] = {}
    for a, answer in zip(asks, answered, strict=True):
        grouped.setdefault((a.unit, a.dim), []).append(answer)
    for dim in rubric.active:  # dimensions without applicable items are reported, not skipped silently
        units = (
            [f"t{t.index}" for t in record.turns if t.kind == "supporter"]
            if dim.level == "intervention"
            else ["session"]
            if dim.level == "session"
            else [f"member:{m}" for m in speakers_of(record)]
        )
        for unit in units:
            grouped.setdefault((unit, dim.id), [])
    stated_of = {t.index: t.decision.strategy for t in record.turns if t.decision}
    dims = {d.id: d for d in rubric.active}
    scores: list[DimensionScore] = []
    failures: list[JudgeFailure] = []
    for (unit, dim_id), dim_answers in grouped.items():
        dim = dims[dim_id]
        failed = [a for a in dim_answers if isinstance(a, str)]
        answers = [a for a in dim_answers if not isinstance(a, str)]
        if failed:
            failures.append(JudgeFailure(unit=f"{unit}/{dim_id}", reason=f"{len(failed)} item(s) failed: {failed[0]}"))
            continue
        turn = int(unit[1:]) if unit.startswith("t") else None
        stated = stated_of.get(turn) if turn is not None else None
        result = score_dimension(dim, unit, answers, record.case.member_names, stated)
        if isinstance(result, str):
            failures.append(JudgeFailure(unit=f"{unit}/{dim_id}", reason=result))
        else:
            scores.append(result)
    capped = [
        sc.model_copy(update={"value": float(sc.score)})
        if sc.capped_from is not None and sc.value is not None and sc.score is not None and sc.value > sc.score
        else sc
        for sc in apply_line_caps(scores, rubric, copies, repeats, voiced_lines(record))
    ]
    if not asks and not failures:
        status = JudgmentStatus.OK
    elif not capped and failures:
        status = JudgmentStatus.FAILED
    else:
        status = JudgmentStatus.PARTIAL if failures else JudgmentStatus.OK
    return JudgeVerdict(judge=model, status=status, scores=capped, failures=failures, calls=calls)
