"""Member turns: a persona first takes in how the last turn landed, updates how it feels, then speaks.

The order follows the SAGE recipe (arXiv 2505.02847). Simulated clients are known to turn compliant after a
few supporter turns, so softening is bounded here in code as well as asked for in the prompt: one turn can
lower intensity or tension, or raise warmth, by at most MAX_SOFTEN_STEP points.

Each turn also picks a move (personas.taxonomy.MEMBER_MOVES) in its self-report. Softening moves are only on
offer when the supporter has spoken since this member last did, and need a `cue` (the supporter's words that
fit one of the member's softeners); an unearned one is re-asked, and if it stays unearned the state may not
soften at all that turn. Both parts of the turn pass the fidelity checks (simulator.turn_checks) before they are
accepted: a failing part is re-asked with the reason (REASKS times, a fresh seed each time, and FAULT_REASKS
more while every draw would make the session a simulator fault); if it still fails, the attempt with the fewest
failed checks is kept (between equals, one that repeats nothing) and the turn records them as flags.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Literal

import yaml
from pydantic import BaseModel, Field, create_model

from personas.case import Case, Member
from personas.common.prompts import PROMPTS_DIR, render_prompt
from personas.taxonomy import MEMBER_MOVES, SOFTENING_MOVES
from simulator.director import beat_direction, beat_opener, brought_up
from simulator.llm.structured import max_words, soft_max_words
from simulator.llm.types import CallRecord, Completion, ModelClient, ModelError, Prompt
from simulator.records import Beat, Feeling, FidelityCheck, FidelityFlag, InnerState, Reask, Turn
from simulator.transcript import last_line, said_phrase, shared_context
from simulator.turn_checks import (
    FAULTING,
    LANGUAGE_NAMES,
    REPEATS,
    check_line,
    check_state,
    grounding,
    invented_figures,
    read_out,
    reask_note,
    repeated_texts,
    room_lexicon,
    session_language,
    softening_cause,
    whole_line,
)

MAX_SOFTEN_STEP = 2.0
REASKS = 1  # re-asks per part of a turn (self-report, line) after failed fidelity checks
# ... and this many more while every draw so far would make the session a simulator fault (FAULTING): a re-ask
# that mends one flag may bring another (issue 42's held-out nguyen run: Thuy's wrong address re-asked, kept
# ungrounded; yilmaz: Kemal's "her" to Ayse, re-asked, still there)
FAULT_REASKS = 1
DIRECTED_REASKS = 3  # ... for a directed line that must carry its stressor's wordings (a stress test needs it said)
RESEED = 104_729  # seed offset per re-ask, so a re-asked call samples afresh (and misses the call cache)
# Word caps of the self-report fields: ceilings above the 10 words (3 for the emotion) the prompt asks for, so
# fields end at a word boundary on their own (a character cap cut them mid-word). The embedded model still ran
# to a cap of 12-14 words in half its replies, cut mid-sentence there; past its cap a field may now take up to
# FINISH_WORDS more to end its sentence (soft_max_words(finish=...)). Its sentences ran to 20-25 words.
WORD_CAPS = {"landed": 12, "cue": 14, "emotion": 6, "reason": 12}
# What a counsellor turn's words did to a member (READINGS), right after that turn, decided by asking the member
# model about the line alone, one question at a time (`appraise`, APPRAISALS): blamed or criticised them ->
# `set_off`; else showed understanding of them -> `softened`; else `missed`. Inside its role-play self-report the
# 1.5B member read blame and warmth alike (set_off after 1 of 3 blaming lines and 1 of 3 attuned ones, softened
# after 2 of 3 of each; tests/benchmarks/reading_bench.py).
READINGS = ("softened", "set_off", "missed")
# How far a self-report moves at least after a counsellor turn, by its reading, in the reading's direction (it
# may move further). Told the numbers of each reading, the embedded model still copied its current ones into
# almost every report (Theo: intensity 6, felt heard 5 after four blaming turns running), so they are bounds in
# code; a member can still flare up for reasons of its own (a stage direction) whatever the reading.
REACTION = {
    "softened": {"felt_heard": 2, "intensity": -1, "warmth": 1, "tension": -1},
    "set_off": {"felt_heard": -2, "intensity": 2, "warmth": -1, "tension": 1},
    "missed": {"felt_heard": -1, "intensity": 0, "warmth": 0, "tension": 0},
}
FINISH_WORDS = 16


def state_schema(case: Case, speaker: str, *, can_soften: bool = True, reading: str | None = None) -> type[BaseModel]:
    """The self-report schema for one member: the other members' names and the moves on offer as enums
    (grammar-friendly). Without a supporter turn to answer to, softening moves and the `cue` are left out. Right
    after one, its `reading` (one of READINGS, decided by the appraisals) is written first, before the numbers;
    when the reading is `softened` no `cue` is asked: the member's own appraisal already found the counsellor's
    words understanding, which is what the cue had to show."""
    return _state_schema(tuple(n for n in case.member_names if n != speaker), can_soften, reading)


def moves_on_offer(can_soften: bool) -> tuple[str, ...]:
    return tuple(m for m in MEMBER_MOVES if can_soften or m not in SOFTENING_MOVES)


def move_menu(can_soften: bool, shift: int) -> tuple[str, ...]:
    """The moves on offer as the prompt lists them, rotated by `shift` (seed + turn): a small model under a
    grammar takes the first plausible move it was shown, and with `defend` always first the embedded model
    defended in 29 of 36 turns whatever the supporter did."""
    return _rotated(moves_on_offer(can_soften), shift)


def _rotated(options: tuple[str, ...], shift: int) -> tuple[str, ...]:
    k = shift % len(options)
    return options[k:] + options[:k]


@functools.lru_cache(maxsize=256)
def _state_schema(others: tuple[str, ...], can_soften: bool, reading: str | None = None) -> type[BaseModel]:
    feeling = create_model(
        "FeelingReply",
        member=(Literal[others], ...),  # type: ignore[valid-type]
        warmth=(int, Field(ge=0, le=10)),
        tension=(int, Field(ge=0, le=10)),
    )
    fields: dict = {"landed": (str, soft_max_words(WORD_CAPS["landed"], finish=FINISH_WORDS))}
    if reading:
        fields["reading"] = (Literal[reading], ...)  # type: ignore[valid-type]
    if can_soften and reading != "softened":  # after understanding, the appraisal is the softening's cause
        fields["cue"] = (str, soft_max_words(WORD_CAPS["cue"], allow_empty=True, finish=FINISH_WORDS))
    fields.update(
        emotion=(str, soft_max_words(WORD_CAPS["emotion"])),
        intensity=(int, Field(ge=0, le=10)),
        # felt heard *by the counsellor*: asked only after a counsellor turn, carried over otherwise (the 1.5B
        # reported 10 before the counsellor had said a word)
        **({"felt_heard": (int, Field(ge=0, le=10))} if reading else {}),
        toward=(list[feeling], Field(min_length=len(others), max_length=len(others))),  # type: ignore[valid-type]
        reason=(str, soft_max_words(WORD_CAPS["reason"], finish=FINISH_WORDS)),
        move=(Literal[moves_on_offer(can_soften)], ...),  # type: ignore[valid-type]
    )
    return create_model("MemberStateReply", **fields)


def state_word_caps() -> dict[str, int]:
    """The most words each self-report field may have (cap plus FINISH_WORDS), as the schema's grammar allows:
    what the cut-off check measures a field against, live and when auditing a saved record."""
    return _word_caps(_state_schema(("",), True))


@functools.lru_cache(maxsize=64)
def _word_caps(schema: type[BaseModel]) -> dict[str, int]:
    props = schema.model_json_schema()["properties"]
    return {k: n for k, v in props.items() if (n := max_words(v)) is not None}


def current_state(case: Case, name: str, turns: Sequence[Turn]) -> InnerState:
    """A member's latest self-report, or the card's baseline before they have spoken."""
    for t in reversed(turns):
        if t.speaker == name and t.inner is not None:
            return t.inner
    m = case.member(name)
    toward = [
        Feeling(member=vp.target, warmth=vp.warmth, tension=vp.tension) for vp in case.viewpoints if vp.source == name
    ]
    return InnerState(
        landed="", emotion=m.baseline_emotion, intensity=m.baseline_intensity, felt_heard=5, toward=toward
    )


def follow_reading(previous: InnerState, proposed: InnerState, reading: str) -> InnerState:
    """`proposed` moved at least as far as REACTION[reading] says from `previous`, in that direction, in 0-10."""
    step = REACTION[reading]

    def bound(old: float, new: float, by: int) -> float:
        moved = max(new, old + by) if by > 0 else min(new, old + by) if by < 0 else new
        return max(0, min(10, moved))

    before = {f.member: f for f in previous.toward}
    toward = [
        f
        if (old := before.get(f.member)) is None
        else Feeling(
            member=f.member,
            warmth=bound(old.warmth, f.warmth, step["warmth"]),
            tension=bound(old.tension, f.tension, step["tension"]),
        )
        for f in proposed.toward
    ]
    return proposed.model_copy(
        update={
            "felt_heard": int(bound(previous.felt_heard, proposed.felt_heard, step["felt_heard"])),
            "intensity": int(bound(previous.intensity, proposed.intensity, step["intensity"])),
            "toward": toward,
        }
    )


@functools.cache
def _appraisal() -> dict:
    return yaml.safe_load((PROMPTS_DIR / "member_appraisal.yaml").read_text(encoding="utf-8"))


# The questions of personas/prompts/member_appraisal.yaml, asked in this order, and the reading a yes decides.
APPRAISALS = {"blamed": "set_off", "understood": "softened"}


def appraisal_questions() -> tuple[str, ...]:
    """Every question of personas/prompts/member_appraisal.yaml (APPRAISALS and the ladder's checks): the readings
    a checklist judge item may ask in the room's form (`reads:` in a rubric)."""
    return tuple(_appraisal()["questions"])


def appraisal_prompt(question: str, said: Turn, name: str, member_names: Sequence[str]) -> Prompt:
    """The labelled-list prompt `appraise` continues for one of APPRAISALS: the examples, then `said` and the
    question about `name`."""
    spec = _appraisal()
    q = spec["questions"][question]
    pair = spec["names"] if not set(spec["names"]) & set(member_names) else spec["spare_names"]
    swap = dict(zip(spec["names"], pair, strict=True))

    def named(text: str) -> str:
        for old, new in swap.items():
            text = text.replace(old, new)
        return text

    lines = []
    for ex in q["examples"]:
        for who in pair:
            answer = "yes" if who in [swap[b] for b in ex["applies_to"]] else "no"
            lines.append(
                f'Counsellor to {named(ex["to"])}: "{named(ex["line"])}"\n{q["ask"].format(name=who)} {answer}\n'
            )
    to = " and ".join(said.addressees) or "the room"
    query = f'\nCounsellor to {to}: "{said.text}"\n{q["ask"].format(name=name)}'
    return Prompt(context=q["instructions"], instructions="Continue the list.", prefill="\n".join(lines) + query,
                  stop=("\n",))  # fmt: skip


async def appraise(
    client: ModelClient,
    question: str,
    said: Turn,
    name: str,
    member_names: Sequence[str],
    *,
    role: str = "member",
    model: str | None = None,
) -> Completion:
    """One of APPRAISALS about the counsellor turn `said` and the member `name`: the completion, its text "yes"
    or "no" first. Greedy: the answer is a reading of the line, not a mood. `role`/`model`: who pays for the
    call when it is not the room asking (the `sides` rung checking its own line)."""
    return await client.complete(
        appraisal_prompt(question, said, name, member_names),
        role=role,
        model=model,
        max_tokens=3,
        temperature=0.0,
        seed=0,
    )


def is_yes(text: str) -> bool:
    return text.strip().lower().startswith("yes")


def guard_softening(previous: InnerState, proposed: InnerState, max_step: float = MAX_SOFTEN_STEP) -> InnerState:
    """Cap how far one turn can soften a person; escalation is not capped (people flare up fast).

    `max_step` 0 blocks softening altogether (an unearned softening move)."""
    capped = False

    def soften_down(old: float, new: float) -> float:
        nonlocal capped
        if old - new > max_step:
            capped = True
            return old - max_step
        return new

    def soften_up(old: float, new: float) -> float:
        nonlocal capped
        if new - old > max_step:
            capped = True
            return old + max_step
        return new

    before = {f.member: f for f in previous.toward}
    toward = []
    for f in proposed.toward:
        old = before.get(f.member)
        if old is None:
            toward.append(f)
            continue
        toward.append(
            Feeling(
                member=f.member, warmth=soften_up(old.warmth, f.warmth), tension=soften_down(old.tension, f.tension)
            )
        )
    for name, old in before.items():  # a member the model forgot keeps their previous values
        if name not in {f.member for f in toward}:
            toward.append(old)
    intensity = int(soften_down(previous.intensity, proposed.intensity))
    note = " [softening capped]" if max_step > 0 else " [softening blocked: not earned]"
    reason = proposed.reason + (note if capped else "")
    return proposed.model_copy(update={"toward": toward, "intensity": intensity, "reason": reason.strip()})


def describe_state(state: InnerState) -> str:
    toward = "; ".join(f"toward {f.member}: warmth {f.warmth:g}/10, tension {f.tension:g}/10" for f in state.toward)
    return f"{state.emotion} ({state.intensity}/10); felt heard by the counsellor {state.felt_heard}/10; {toward}"


def member_sheet(member: Member, state: InnerState) -> str:
    """The private persona sheet: only this member's prompts see it, after the shared prefix."""
    return render_prompt(
        "member_sheet",
        name=member.name,
        role=member.role,
        age=member.age if member.age is not None else "age unknown",
        personality=member.personality or "not described; infer it from how they have spoken",
        style=member.communication_style or "as in the transcript",
        need=member.core_need or "unknown",
        fear=member.core_fear or "unknown",
        triggers="; ".join(member.triggers) or "unknown",
        softeners="; ".join(member.softeners) or "being really heard",
        private="; ".join(member.private_knowledge) or "nothing in particular",
        current=describe_state(state),
    )


def clean_utterance(text: str) -> str:
    text = text.strip().strip('"').strip()
    return " ".join(text.split())


def spoken(c: Completion) -> tuple[str, str, str | None]:
    """A drawn line as the member says it (`whole_line`): its words, the unfinished words dropped after its last
    full sentence, and how it ended for the cut-off check. The embedded 1.5B runs past "one or two short
    sentences" to the length limit; re-asked, it did again, and the draw kept was cut mid-sentence (3 of 12 member
    lines on issue 42's fresh cards: "... finding a balance that works for"). The dropped words are recorded on
    the turn (`Turn.dropped`); the call keeps finish_reason `length`."""
    return whole_line(clean_utterance(c.text), c.call.finish_reason)


async def _attempts(
    part: str,
    ask: Callable[[int, Sequence[FidelityFlag]], Awaitable[Completion]],
    check: Callable[[Completion], list[FidelityFlag]],
    reasks: int = REASKS,
) -> tuple[Completion, list[FidelityFlag], list[Reask]]:
    """Ask, check, re-ask with the reasons (`reasks` times, then up to FAULT_REASKS more while every draw would
    fault the session); keep the attempt with the fewest failed checks.

    A model error on the first attempt propagates (the turn fails); on a re-ask it ends the re-asking, and the
    earlier attempt is kept with its flags."""
    tried: list[tuple[Completion, list[FidelityFlag]]] = []
    failures: list[Reask] = []
    first = await ask(0, ())
    tried.append((first, check(first)))
    for attempt in range(1, reasks + FAULT_REASKS + 1):
        if not tried[-1][1] or (attempt > reasks and min(_faulting(f) for _, f in tried) == 0):
            break
        try:
            nxt = await ask(attempt, tried[-1][1])
        except ModelError as err:
            call = CallRecord(model=err.model, role="member", latency_s=err.latency_s, attempts=err.attempts)
            failures.append(Reask(part=part, attempt=attempt + 1, text=err.raw or "", failure=err.reason, calls=[call]))
            break
        tried.append((nxt, check(nxt)))
    # fewest checks that make a fault of a kept line (README command 1 kept Dana's re-asked "I missed you too,
    # Theo", said to the counsellor, over her first draw, in role but `ungrounded`: one flag each, the later won);
    # then fewest failed checks; between equals, one that repeats no earlier turn, then the later
    best = min(
        range(len(tried)),
        key=lambda i: (_faulting(tried[i][1]), len(tried[i][1]), _repeats(tried[i][1]), -i),
    )
    reasks = [
        Reask(part=part, attempt=i + 1, text=c.text, flags=f, calls=[c.call])
        for i, (c, f) in enumerate(tried)
        if i != best
    ]
    return tried[best][0], tried[best][1], reasks + failures


def _repeats(flags: Sequence[FidelityFlag]) -> int:
    return sum(f.check in REPEATS for f in flags)


def _faulting(flags: Sequence[FidelityFlag]) -> int:
    return sum(f.check in FAULTING or f.check in REPEATS for f in flags)


def _with_reask(instructions: str, flags: Sequence[FidelityFlag]) -> str:
    return instructions + ("\n\n" + reask_note(flags) if flags else "")


def _allowed(allow: Collection[FidelityCheck], flags: list[FidelityFlag]) -> list[FidelityFlag]:
    return [f for f in flags if f.check not in allow]


@dataclass(frozen=True)
class _TurnBrief:
    """What one member turn knows: the room so far, who speaks to whom, and the directions it was given. Passed
    to each step of `member_turn`, so the steps read as plain functions rather than closures over its locals."""

    client: ModelClient
    case: Case
    turns: Sequence[Turn]
    speaker: str
    addressees: Sequence[str]
    seed: int
    directive: str | None
    allow: Collection[FidelityCheck]
    said_if: Sequence[str]
    opening: str | None
    beat: Beat | None  # with its `opener` when the line begins with the card's words
    previous: InnerState  # the speaker's latest self-report, or the card's baseline
    context: str  # the shared prefix every member prompt starts with
    sheet: str  # this member's private persona sheet
    language: str  # the session's language

    @property
    def said(self) -> Turn | None:
        """The counsellor turn this member answers, when the counsellor spoke last."""
        last = self.turns[-1] if self.turns else None
        return last if last is not None and last.kind == "supporter" and last.text else None

    @property
    def others(self) -> str:
        return ", ".join(n for n in self.case.member_names if n != self.speaker)

    @property
    def to(self) -> str:
        return ", ".join(self.addressees)

    def direction(self, directive: str) -> str:
        """A stage direction for the end of a prompt, nearest the reply: placed in the sheet, small models let the
        instructions after it (speak about your own side, in English, to whoever the floor chose) override it."""
        return "\n\n" + render_prompt("member_directive", name=self.speaker, directive=directive)


async def _read_counsellor(brief: _TurnBrief, said: Turn) -> tuple[list[Completion], str, dict[str, bool]]:
    """What the counsellor's words did to the speaker (APPRAISALS asked in order: blamed, else understood, else
    missed), and whether each other member felt blamed by them too: a line that blames one member may be
    answered by the member it sided with, who was not blamed. Returns the appraisal calls, the reading and who
    felt blamed."""
    appraisals: list[Completion] = []
    reading = None
    for question, meaning in APPRAISALS.items():
        appraisals.append(await appraise(brief.client, question, said, brief.speaker, brief.case.member_names))
        if is_yes(appraisals[-1].text):
            reading = meaning
            break
    reading = reading or "missed"
    felt_blamed = {brief.speaker: reading == "set_off"}
    for name in brief.case.member_names:
        if name != brief.speaker:
            appraisals.append(await appraise(brief.client, "blamed", said, name, brief.case.member_names))
            felt_blamed[name] = is_yes(appraisals[-1].text)
    return appraisals, reading, felt_blamed


def _state_instructions(brief: _TurnBrief, schema: type[BaseModel], reading: str | None, can_soften: bool) -> str:
    """The self-report's instructions: the sheet, the step (what the counsellor's words did, when it just spoke)
    with the moves on offer, then the stage direction."""
    cue_rule = (
        'cue = the counsellor\'s words that did something from the "What can soften" list, or "" '
        "(soften and repair_attempt need one);"
        if "cue" in schema.model_fields  # the schema decides whether a cue is asked
        else ""
    )
    moves = ", ".join(move_menu(can_soften, brief.seed + len(brief.turns)))
    said = brief.said
    if said is None:
        step = render_prompt(
            "member_state",
            name=brief.speaker,
            last_line=last_line(brief.turns),
            others=brief.others,
            cue_rule=cue_rule,
            moves=moves,
        )
    else:  # the counsellor just spoke: what its words did to this person decides the step
        step = render_prompt(
            "member_state_counsellor",
            name=brief.speaker,
            addressees=", ".join(said.addressees) or "the room",
            said=said.text,
            verdict=_appraisal()["verdicts"][reading].format(name=brief.speaker),
            reading=reading,
            intensity=brief.previous.intensity,
            heard=brief.previous.felt_heard,
            others=brief.others,
            cue_rule=cue_rule,
            moves=moves,
        )
    return brief.sheet + "\n\n" + step + (brief.direction(brief.directive) if brief.directive else "")


async def _ask_state(
    brief: _TurnBrief, instructions: str, schema: type[BaseModel], attempt: int, flags: Sequence[FidelityFlag]
) -> Completion:
    """One try at the self-report, as structured output; a re-ask carries the reasons and a fresh seed."""
    return await brief.client.complete(
        Prompt(context=brief.context, instructions=_with_reask(instructions, flags)),
        role="member",
        schema=schema,
        max_tokens=300,
        temperature=0.7,
        seed=brief.seed + RESEED * attempt,
    )


def _check_state_reply(brief: _TurnBrief, schema: type[BaseModel], c: Completion) -> list[FidelityFlag]:
    r = c.parsed
    flags = check_state(
        {k: getattr(r, k, "") for k in ("landed", "cue", "emotion", "reason")},
        intensity=r.intensity,
        move=r.move,
        speaker=brief.speaker,
        turns=brief.turns,
        language=brief.language,
        word_caps=_word_caps(schema),
        reading=getattr(r, "reading", None),
    )
    return _allowed(brief.allow, flags)


async def _self_report(
    brief: _TurnBrief, reading: str | None
) -> tuple[Completion, list[FidelityFlag], list[Reask], InnerState]:
    """Steps (1)+(2): the self-report with a move, checked and re-asked; its state moved at least as far as the
    reading says and softened no further than earned. Returns the call kept, its flags, the re-asks and the state."""
    can_soften = softening_cause(brief.turns, brief.speaker) is not None and reading != "set_off"
    schema = state_schema(brief.case, brief.speaker, can_soften=can_soften, reading=reading)
    instructions = _state_instructions(brief, schema, reading, can_soften)
    ask = functools.partial(_ask_state, brief, instructions, schema)
    check = functools.partial(_check_state_reply, brief, schema)
    state_call, state_flags, reasks = await _attempts("state", ask, check)
    reply, previous = state_call.parsed, brief.previous
    proposed = InnerState(
        landed=reply.landed,
        emotion=reply.emotion,
        intensity=reply.intensity,
        felt_heard=getattr(reply, "felt_heard", previous.felt_heard),
        toward=[Feeling(member=f.member, warmth=f.warmth, tension=f.tension) for f in reply.toward],
        reason=reply.reason,
    )
    if reading:
        proposed = follow_reading(previous, proposed, reading)
    unearned = any(f.check == FidelityCheck.UNEARNED_SOFTENING for f in state_flags)
    inner = guard_softening(previous, proposed, 0.0 if unearned else MAX_SOFTEN_STEP)
    return state_call, state_flags, reasks, inner


def _speak_instructions(brief: _TurnBrief, inner: InnerState, move: str) -> str:
    """The line's instructions: the sheet, how the member feels and the move it picked, then the stage direction,
    or the director's beat when no stressor directs the turn."""
    if brief.beat is not None and not brief.directive:
        direction = brief.direction(
            beat_direction(brief.beat, brief.speaker, brief.addressees, brief.case.member_names)
        )
    else:
        direction = brief.direction(brief.directive) if brief.directive else ""
    speak = render_prompt(
        "member_speak",
        name=brief.speaker,
        emotion=inner.emotion,
        intensity=inner.intensity,
        landed=inner.landed or "-",
        move=move,
        addressee=brief.to,
        language=LANGUAGE_NAMES.get(brief.language, brief.language),
    )
    return brief.sheet + "\n\n" + speak + direction


async def _ask_line(
    brief: _TurnBrief, instructions: str, line_tries: int, attempt: int, flags: Sequence[FidelityFlag]
) -> Completion:
    """One try at the line, continuing a prefill: a beat's line begins with its `opener` on every try; the last
    re-ask of a directed line that left the direction out begins with the stressor's own words (`opening`). An
    empty line is a model error."""
    start = f"{brief.beat.opener} " if brief.beat is not None and brief.beat.opener and not brief.directive else ""
    if brief.opening and attempt >= line_tries and any(f.check == FidelityCheck.DIRECTION_IGNORED for f in flags):
        start = brief.opening.strip() + " "
    call = await brief.client.complete(
        Prompt(
            context=brief.context,
            instructions=_with_reask(instructions, flags),
            prefill=f'{brief.speaker} (to {brief.to}): "{start}',
            stop=('"', "\n"),
            avoid=(*repeated_texts(flags, brief.turns), *invented_figures(flags), *room_lexicon().counsellor_avoid),
        ),
        role="member",
        max_tokens=72,
        temperature=0.8,
        seed=brief.seed + 1 + RESEED * attempt,
    )
    if not clean_utterance(call.text):
        raise ModelError(call.call.model, f"{brief.speaker}'s line came back empty")
    return call.model_copy(update={"text": start + call.text}) if start else call


def _check_spoken_line(brief: _TurnBrief, c: Completion) -> list[FidelityFlag]:
    """The fidelity checks on a line, plus: a beat's line must bring up something of the case (`ungrounded`) and
    not read out its stage direction (`copied_tag`), a directed line must say one of `said_if`
    (`direction_ignored`)."""
    (text, _, finish), speaker = spoken(c), brief.speaker
    flags = check_line(
        text,
        speaker=speaker,
        case=brief.case,
        turns=brief.turns,
        addressees=brief.addressees,
        language=brief.language,
        finish_reason=finish,
        given=(brief.directive,) if brief.directive else (),
    )
    beat = brief.beat if not brief.directive else None

    def flag(check: FidelityCheck, detail: str) -> None:
        flags.append(FidelityFlag(check=check, detail=detail, evidence=text[:120]))

    if beat is not None:
        scaffold = beat_direction(beat.model_copy(update={"text": "..."}), speaker, brief.addressees, ())
        if said := read_out(text, scaffold):  # the direction's own wording, the card's words it hands over left out
            flag(
                FidelityCheck.COPIED_TAG,
                f"the line reads out its private stage direction ('{said}'); say only what {speaker} would say to "
                f"{brief.to}",
            )
        if grounding(text, brief.case) is None:
            about = ", ".join(beat.words[:4]) or beat.text[:80]
            flag(
                FidelityCheck.UNGROUNDED,
                f"the line brings up nothing of {speaker}'s own situation; bring up {about} in {speaker}'s own words",
            )
    if brief.directive and brief.said_if and said_phrase(brief.said_if, text) is None:
        examples = "; ".join(f'"{w}"' for w in brief.said_if[:4])
        flag(
            FidelityCheck.DIRECTION_IGNORED,
            f"the line leaves out the stage direction; say it plainly in this line, in words such as {examples}",
        )
    return _allowed(brief.allow, flags)


async def _draw_line(
    brief: _TurnBrief, inner: InnerState, move: str
) -> tuple[Completion, list[FidelityFlag], list[Reask]]:
    """Step (3): the line, checked and re-asked (more often for a directed line that must carry its wordings)."""
    line_tries = DIRECTED_REASKS if brief.directive and brief.said_if else REASKS
    ask = functools.partial(_ask_line, brief, _speak_instructions(brief, inner, move), line_tries)
    check = functools.partial(_check_spoken_line, brief)
    return await _attempts("line", ask, check, line_tries)


async def member_turn(
    client: ModelClient,
    case: Case,
    turns: Sequence[Turn],
    speaker: str,
    addressees: Sequence[str],
    *,
    seed: int,
    window: int,
    directive: str | None = None,
    allow: Collection[FidelityCheck] = (),
    said_if: Sequence[str] = (),
    opening: str | None = None,
    beat: Beat | None = None,
) -> Turn:
    """Play one member turn: (1)+(2) self-report with a move, as structured output, (3) the line, continuing a
    prefill. Each part is checked (simulator.turn_checks) and re-asked with the reason when it fails.

    `directive` is a private stage direction for this turn (a perturbation: "hint that you have thought about
    not being here any more"); it reaches only this member's prompts and is recorded on the turn, never shown
    to the supporter. `allow` names fidelity checks this turn is exempt from, because the direction asks for
    what they catch (a stressor that is a language switch). `said_if`: wordings of which a directed line must
    contain one, else it is re-asked with them as examples (a 1.5B member often leaves a direction out); its
    last re-ask starts with `opening` when one is given.

    `beat`: what the director (simulator.director) gave this member to bring up, when no stressor directs the
    turn; it reaches only this member's line prompt, and a line that brings up nothing of the case is re-asked
    with it (`ungrounded`). A piece the member has not yet brought up begins their line with its own words in
    their voice where the rule can turn it (`Beat.opener`, simulator.director.beat_opener; English sessions),
    since the 1.5B said a beat handed to it in a third of its lines.
    """
    member = case.member(speaker)
    previous = current_state(case, speaker, turns)
    if beat is not None and not directive and session_language(case) == "en":
        own = [t.text for t in turns if t.speaker == speaker and t.kind == "member"]
        opener = None if brought_up(beat, own) else beat_opener(beat, speaker, addressees, case)
        beat = beat.model_copy(update={"opener": opener}) if opener else beat
    brief = _TurnBrief(
        client=client,
        case=case,
        turns=turns,
        speaker=speaker,
        addressees=addressees,
        seed=seed,
        directive=directive,
        allow=allow,
        said_if=said_if,
        opening=opening,
        beat=beat,
        previous=previous,
        context=shared_context(case, turns, window, codebook=False),
        sheet=member_sheet(member, previous),
        language=session_language(case),
    )
    appraisals, reading, felt_blamed = [], None, {}
    if brief.said is not None:
        appraisals, reading, felt_blamed = await _read_counsellor(brief, brief.said)
    state_call, state_flags, reasks, inner = await _self_report(brief, reading)
    reply = state_call.parsed
    speak_call, line_flags, line_reasks = await _draw_line(brief, inner, reply.move)
    text, dropped, _ = spoken(speak_call)
    return Turn(
        index=len(turns) + 1,
        speaker=speaker,
        kind="member",
        addressees=list(addressees),
        text=text,
        dropped=dropped or None,
        inner=inner,
        directive=directive,
        beat=beat if not directive else None,
        calls=[*(a.call for a in appraisals), state_call.call, speak_call.call],
        move=reply.move,
        cue=getattr(reply, "cue", ""),
        reading=getattr(reply, "reading", None),
        felt_blamed=felt_blamed,
        flags=state_flags + line_flags,
        reasks=reasks + line_reasks,
    )
