"""Supporters, the system under test: anything that, given the session so far, decides to speak or pass.

Forms accepted by `--supporter` (see `parse_supporter_spec`): a litellm model id (`openai/gpt-4o-mini`,
`local/qwen2.5-coder-1.5b`), an OpenAI-compatible endpoint `http://host:port/v1#model-name`, a Python callable
`package.module:function`, `human`, and the baselines `silent` and `scripted`.

The quality ladder (`simulator/data/ladder.yaml`) adds degradations of any model id M, the same model with
different counselling instructions (`prompts/ladder/<style>.md`): `sides:M` takes one member's side and blames
the others, `lecture:M` gives advice and instructions only, `generic:M` reflects warmly to whoever spoke last.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import yaml
from pydantic import BaseModel, Field, create_model

from personas.common.errors import Param, ParameterError
from personas.common.prompts import render_prompt
from personas.taxonomy import SUPPORTER_NAME, strategies_for, target_kind
from simulator.llm.structured import soft_max_length as _soft_max
from simulator.llm.structured import soft_max_words
from simulator.llm.types import ModelClient, ModelError, Prompt
from simulator.records import SupporterDecision, Turn
from simulator.transcript import in_member_voice, last_line, shared_context
from simulator.turn_checks import repeat_of, tagged_speaker, words
from simulator.view import Intake, SessionView

PROMPTS = Path(__file__).parent / "prompts"
ACCEPTED_FORMS = (
    "a litellm model id (provider/model, e.g. openai/gpt-4o-mini or local/qwen2.5-coder-1.5b); "
    "an OpenAI-compatible endpoint URL#model (e.g. http://localhost:8000/v1#my-bot); "
    "a Python callable package.module:function; human; silent; scripted; "
    "a ladder degradation of a model id: sides:M, lecture:M, generic:M"
)
LADDER_STYLES = ("sides", "lecture", "generic")  # prompts/ladder/<style>.md


def supporter_prompt_name(style: str | None) -> str:
    """The prompt file (under PROMPTS, without .md) a model supporter of this ladder style is instructed by."""
    if style is None:
        return "supporter"
    if style not in LADDER_STYLES:
        raise SupporterSpecError(f"unknown ladder style {style!r}; use one of {', '.join(LADDER_STYLES)}")
    return f"ladder/{style}"


class SupporterSpecError(ParameterError):
    """A supporter spec of no known form, or one that cannot be built; names the `supporter` it was given as."""


# the parameter a spec comes in as (`RunConfig.supporter`; a command's --supporter)
SUPPORTER = Param("supporter")


class InvalidDecision(ValueError):
    """Supporter output that breaks the decision contract; the engine re-asks, then records it as invalid."""

    def __init__(self, reason: str, raw: str, call: Any = None):
        self.reason, self.raw, self.call = reason, raw, call
        super().__init__(reason)


class Supporter(Protocol):
    """Decides after every member turn. `reask` is None on the first try, else why the last answer was invalid."""

    spec: str
    structured: bool  # True when the supporter labels its own strategy

    async def decide(self, view: SessionView, reask: str | None = None) -> SupporterDecision: ...


# a speaker tag (`Therapist:`) or the supporter addressing itself (`Therapist, ...`), which small models produce
_SPEAKER_PREFIX = re.compile(
    rf"^\s*(?:{SUPPORTER_NAME}|Counsell?or|Supporter)\s*(?:\([^)]*\))?\s*[:,]\s*", re.IGNORECASE
)


def clean_supporter_text(text: str) -> str:
    """Strip a speaker tag and wrapping quotes that models like to add (`Therapist: 'Hi'` -> `Hi`)."""
    text = _SPEAKER_PREFIX.sub("", text.strip())
    for q in ('"', "'"):
        if len(text) >= 2 and text[0] == q and text[-1] == q:
            text = text[1:-1]
    return " ".join(text.split())


def pass_decision(
    view: SessionView, *, rationale: str = "", call: Any = None, raw: str | None = None
) -> SupporterDecision:
    return SupporterDecision(after_turn=view.after_turn, speak=False, rationale=rationale, call=call, raw=raw)


def finish_decision(
    view: SessionView,
    *,
    speak: bool,
    targets: list[str],
    strategy: str | None,
    text: str,
    close: bool = False,
    rationale: str = "",
    call: Any = None,
    raw: str | None = None,
) -> SupporterDecision:
    """Check a decision against the contract and return it as given; raise InvalidDecision otherwise.

    Nothing is repaired: an unknown target, an empty target list, a group label mixed with names, a repeated
    target, an off-group strategy label, "speak" with nothing said or words written for a member (their speaker
    tag, `Dana (to Therapist): '...'`, which the 1.5B wrote as a counsellor) are invalid output, not something to
    guess.
    """
    intake = view.intake
    raw = (
        raw
        if raw is not None
        else repr({"speak": speak, "targets": targets, "strategy": strategy, "text": text, "close_session": close})
    )

    def invalid(reason: str) -> InvalidDecision:
        return InvalidDecision(reason, raw, call)

    if not speak:
        return pass_decision(view, rationale=rationale, call=call, raw=raw)
    text = " ".join(text.split())
    if not text:
        raise invalid("chose to speak but said nothing; give the words, or pass (speak: false)")
    if (member := tagged_speaker(text, intake.member_names)) is not None:
        raise invalid(f"the text writes a line for {member} (their speaker tag); say only the counsellor's own words")
    valid = [*intake.member_names, intake.group_label]
    unknown = [t for t in targets if t not in valid]
    if unknown:
        raise invalid(f"unknown target(s) {unknown}; targets must be from {valid}")
    if not targets:
        raise invalid(f"no target; name at least one of {valid}")
    if len(set(targets)) != len(targets):
        raise invalid(f"target repeated in {targets}")
    if intake.group_label in targets and len(targets) > 1:
        raise invalid(f"{intake.group_label!r} already means everyone; use it alone or name members")
    if strategy is not None and strategy not in strategies_for(intake.group):
        raise invalid(f"strategy {strategy!r} is not a {intake.group} strategy; use one of the codebook")
    return SupporterDecision(
        after_turn=view.after_turn,
        speak=True,
        targets=list(targets),
        target_kind=target_kind(list(targets), list(intake.member_names), intake.group),
        strategy=strategy,
        text=text,
        close_session=close,
        rationale=rationale,
        call=call,
        raw=raw,
    )


@dataclass
class SilentSupporter:
    """Never speaks: the floor of any leaderboard (what the room does on its own)."""

    spec: str = "silent"
    structured: bool = True

    async def decide(self, view: SessionView, reask: str | None = None) -> SupporterDecision:
        return pass_decision(view, rationale="silent baseline")


@dataclass
class ScriptedSupporter:
    """A rule-based baseline; lines and rules come from `prompts/scripted.yaml`.

    Speaks after every `every`-th member turn: safeguard a member whose words match a risk phrase, else
    counterbalance a member silent for `quiet_after` member turns, else the next strategy of a fixed rotation.
    With `--supporter-knows oracle` it reads the tracker's at-risk list and pattern instead, as a ceiling.
    """

    spec: str = "scripted"
    structured: bool = True
    every: int = 2
    quiet_after: int = 3

    async def decide(self, view: SessionView, reask: str | None = None) -> SupporterDecision:
        transcript = view.transcript
        since = 0
        for t in reversed(transcript):
            if t.kind == "supporter":
                break
            since += 1
        if since < self.every:
            return pass_decision(view, rationale="waiting")
        rules = _scripted_lines()
        lines = rules[view.intake.group]
        member_turns = [t for t in transcript if t.kind == "member"]
        at_risk = self._at_risk(view, rules["risk_phrases"])
        if at_risk:
            return self._say(view, "safeguard", [at_risk[0]], lines, who=at_risk[0])
        recent = {t.speaker for t in member_turns[-self.quiet_after :]}
        quiet = [n for n in view.member_names if n not in recent]
        if len(member_turns) >= self.quiet_after and quiet:
            return self._say(view, "counterbalance", [quiet[0]], lines, who=quiet[0])
        oracle = view.oracle
        if oracle is not None and oracle.observer is not None:
            strategy = lines["by_pattern"].get(oracle.observer.pattern, "track")
        else:
            spoken = sum(t.kind == "supporter" for t in transcript)
            strategy = lines["rotation"][spoken % len(lines["rotation"])]
        last = member_turns[-1].speaker if member_turns else view.member_names[0]
        whole = strategy in ("track", "reframe", "detach", "goal_align", "boundary")
        return self._say(view, strategy, [view.group_label] if whole else [last], lines, who=last)

    @staticmethod
    def _at_risk(view: SessionView, phrases: list[str]) -> list[str]:
        if view.oracle is not None and view.oracle.tracker is not None:
            return list(view.oracle.tracker.at_risk)
        recent = [t for t in view.transcript if t.kind == "member"][-3:]
        return list(dict.fromkeys(t.speaker for t in recent if any(p in t.text.lower() for p in phrases)))

    def _say(self, view: SessionView, strategy: str, targets: list[str], lines: dict, who: str) -> SupporterDecision:
        others = [n for n in view.member_names if n != who]
        text = lines["lines"][strategy].format(who=who, other=others[0] if others else who, group=view.group_label)
        return finish_decision(
            view, speak=True, targets=targets, strategy=strategy, text=text, rationale="scripted rule"
        )


def _scripted_lines() -> dict:
    global _SCRIPTED
    if _SCRIPTED is None:
        _SCRIPTED = yaml.safe_load((PROMPTS / "scripted.yaml").read_text(encoding="utf-8"))
    return _SCRIPTED


_SCRIPTED: dict | None = None


def decision_schema(intake: Intake, style: str | None = None) -> type[BaseModel]:
    return _decision_schema(tuple([*intake.member_names, intake.group_label]), intake.group, style)


# The text's length in words, as the members' fields have it (soft_max_words): a 300-character cap made the grammar
# close the text mid-sentence ("...and also making sure that"); past TEXT_WORDS it may go on only to end its
# sentence, TEXT_FINISH_WORDS more at most (56 words: about the old 300 characters).
TEXT_WORDS = 40
TEXT_FINISH_WORDS = 16


# How a rung's line must open. On the 1.5B about half the `sides` and `generic` lines were a member's own complaint
# ("It's hurting me too", rung_bench.py), and a line forced to open on a name alone went on in the ally's voice
# ("Theo, I know you want to be good for me"). `sides` opens as its prompt's example does, on a member it sides
# against and then the ally in the third person ("Theo, Dana"); `generic` on a stock reflection. `lecture` is left
# free (its advice was seldom in a member's voice); every rung still draws again on a member's voice.
def _rung_lead(members: Sequence[str], style: str | None) -> tuple[str, ...]:
    if style == "generic":
        return ("It sounds like you",)
    if style == "sides" and all(re.fullmatch(r"\w+", n) for n in members):
        return tuple(f"{other}, {members[0]}" for other in members[1:])
    return ()


@functools.lru_cache(maxsize=256)
def _decision_schema(targets: tuple[str, ...], group: str, style: str | None = None) -> type[BaseModel]:
    # `sides` states its verdict before its words, so the text is written after the blame (the 1.5B, asked for the
    # text alone, wrote sympathy for the member it was to blame: tests/benchmarks/rung_bench.py)
    verdict = {"verdict": (str, _soft_max(120))} if style == "sides" else {}
    lead = _rung_lead(targets[:-1], style)  # the last target is the group label
    return create_model(
        "SupporterReply",
        speak=(bool, ...),
        targets=(list[Literal[targets]], Field(min_length=1, max_length=len(targets))),  # type: ignore[valid-type]
        strategy=(Literal[tuple(strategies_for(group))], ...),  # type: ignore[valid-type]
        **verdict,
        text=(str, soft_max_words(TEXT_WORDS, allow_empty=True, finish=TEXT_FINISH_WORDS, lead=lead)),
        close_session=(bool, False),
    )


RUNG_DRAWS = 3  # draws of a ladder rung's line until it is the counsellor the rung names
SIDES_DRAWS = RUNG_DRAWS  # the name the records' field description and older benches use
_RUNG_NOTES = {
    "voice": "\n\nYour last line was said as if you were one of them, about yourself. You are the counsellor: "
    "speak to {others} about them, never about yourself.",
    "blame": "\n\nYour last line did not put the blame on {others}. Say to {others}, as the counsellor, what they did "
    "wrong and that they must stop.",
    "repeat": "\n\nYour last line repeated words already said in this session. Say something new to {others}, about "
    "what they did in this session, in words nobody has used yet.",
}


def said_before(view: SessionView) -> tuple[str, ...]:
    """Every line said so far, latest first: what a counsellor line may not copy (the embedded model's decoding bans
    their word runs; a hosted model is told in its prompt). The 1.5B counsellor re-said a member's line word for
    word (README command 1, turn 6) and the `sides` rung its own earlier line in 13 of 18 turns."""
    return tuple(dict.fromkeys(t.text for t in reversed(view.transcript) if t.text))


def _public_turn(t: Any) -> Turn:
    return Turn(index=t.index, speaker=t.speaker, kind=t.kind, addressees=list(t.addressees), text=t.text)


def _reask_note(reask: str | None) -> str:
    return f"\n\nYour previous answer was invalid: {reask}. Answer again, correctly." if reask else ""


@dataclass
class ModelSupporter:
    """A model deciding in structured mode: speak or pass, targets, strategy label and text in one call."""

    client: ModelClient
    model: str
    spec: str
    structured: bool = True
    window: int = 16
    seed: int = 0
    style: str | None = None  # a ladder degradation (LADDER_STYLES); None: the project's counsellor prompt

    def instructions(self, view: SessionView) -> str:
        """The instructions of one decision (without a re-ask note): the counsellor prompt or the ladder rung's."""
        intake = view.intake
        names = list(intake.member_names)
        return render_prompt(
            supporter_prompt_name(self.style),
            PROMPTS,
            supporter=SUPPORTER_NAME,
            group_kind="couples" if intake.group == "couple" else "family",
            last_line=last_line(view.transcript),
            names=", ".join(names),
            group_label=intake.group_label,
            ally=names[0],
            others=" and ".join(names[1:]) or names[0],
        )

    async def decide(self, view: SessionView, reask: str | None = None) -> SupporterDecision:
        decision = await self._draw(view, reask, 0)
        if self.style is None:  # the supporter under test is never redrawn: its lines are what is measured
            return decision
        # A rung is of known quality only if it does what its name says. rung_bench.py, on the 1.5B: about half the
        # `sides` and `generic` lines were a member's own complaint ("It's hurting me too"), and `sides` often
        # sympathised instead of blaming. Such a line is drawn again with a note; the last draw is kept whatever
        # it reads as.
        spent: list = []
        for attempt in range(1, RUNG_DRAWS + 1):
            off, checks = await self._off_rung(view, decision)
            spent += checks
            if off is None or attempt == RUNG_DRAWS:
                break
            spent.append(decision.call)
            note = _RUNG_NOTES[off].format(others=", ".join(decision.targets))
            decision = await self._draw(view, reask, attempt, note)
        return decision.model_copy(update={"draws": attempt, "draw_calls": [c for c in spent if c is not None]})

    async def _off_rung(self, view: SessionView, decision: SupporterDecision) -> tuple[str | None, list]:
        """Why a rung's line is not the counsellor the rung names ("voice", "repeat", "blame"), or None; and the
        calls asked."""
        if not decision.speak:
            return None, []
        if in_member_voice(decision.text):
            return "voice", []
        if repeat_of(decision.text, [_public_turn(t) for t in view.transcript]) is not None:
            return "repeat", []
        if self.style != "sides":
            return None, []
        blames, checks = await self._blames_a_target(view, decision)
        return (None if blames else "blame"), checks

    async def _blames_a_target(self, view: SessionView, decision: SupporterDecision) -> tuple[bool, list]:
        from simulator.members import appraise, is_yes

        names = list(view.intake.member_names)
        said = Turn(index=view.after_turn + 1, speaker=SUPPORTER_NAME, kind="supporter",
                    addressees=list(decision.targets), text=decision.text)  # fmt: skip
        calls = []
        if not decision.speak:
            return False, calls
        for name in names[1:]:
            answer = await appraise(self.client, "blamed", said, name, names, role="supporter", model=self.model)
            calls.append(answer.call)
            if is_yes(answer.text):
                return True, calls
        return False, calls

    async def _draw(self, view: SessionView, reask: str | None, attempt: int, note: str = "") -> SupporterDecision:
        intake = view.intake
        try:
            completion = await self.client.complete(
                Prompt(
                    context=shared_context(intake, view.transcript, self.window),
                    instructions=self.instructions(view) + _reask_note(reask) + note,
                    avoid=said_before(view),
                ),
                role="supporter",
                model=self.model,
                schema=decision_schema(intake, self.style),
                max_tokens=220,
                temperature=0.5,
                seed=self.seed + len(view.transcript) * 31 + (997 if reask else 0) + 7919 * attempt,
            )
        except ModelError as err:
            if err.raw is None:  # the provider failed: a model failure, not an answer
                raise
            raise InvalidDecision(err.reason, err.raw) from None
        r = completion.parsed
        if r.speak and len(words(r.text)) >= TEXT_WORDS + TEXT_FINISH_WORDS:
            # the grammar closed the text on its last allowed word, full stop added: a cut line, not a sentence
            raise InvalidDecision(
                f"the text ran to the {TEXT_WORDS + TEXT_FINISH_WORDS}-word limit and was cut; say it in one or two "
                "short, complete sentences",
                completion.text,
            )
        return finish_decision(
            view,
            speak=r.speak,
            targets=list(r.targets),
            strategy=r.strategy,
            text=clean_supporter_text(r.text),
            close=r.close_session,
            rationale=getattr(r, "verdict", ""),
            call=completion.call,
            raw=completion.text,
        )


def targets_from_text(text: str, intake: Intake) -> list[str]:
    """Whom a free-text turn addresses: names used as a vocative ("Theo, ..." / "..., Theo?"), else every
    member it names, else the whole group."""
    names = intake.member_names
    vocative = [
        n
        for n in names
        if re.search(rf"(?:^|[.!?]\s+){re.escape(n)}\s*,", text) or re.search(rf",\s*{re.escape(n)}\s*[.!?]", text)
    ]
    if vocative:
        return vocative
    named = [n for n in names if re.search(rf"\b{re.escape(n)}\b", text)]
    return named or [intake.group_label]


@dataclass
class FreeTextSupporter:
    """A deployed bot that only answers in text (an OpenAI-compatible endpoint). It is asked at every gate, so
    its timing is its own (an empty reply is a pass); targets are read from the names it uses; its strategy is
    left for the judges."""

    client: ModelClient
    model: str
    spec: str
    structured: bool = False
    window: int = 16
    seed: int = 0

    async def decide(self, view: SessionView, reask: str | None = None) -> SupporterDecision:
        intake = view.intake
        completion = await self.client.complete(
            Prompt(
                context=shared_context(intake, view.transcript, self.window),
                instructions=f"You are the counsellor ({SUPPORTER_NAME}). Reply with what you say next to the room, "
                "one to three sentences, or reply with nothing to stay quiet and let them go on." + _reask_note(reask),
                prefill=f'{SUPPORTER_NAME}: "',
                stop=('"',),
            ),
            role="supporter",
            model=self.model,
            max_tokens=160,
            temperature=0.5,
            seed=self.seed + len(view.transcript) * 31 + (997 if reask else 0),
        )
        text = clean_supporter_text(completion.text)
        if not text:
            return pass_decision(view, rationale="empty reply", call=completion.call, raw=completion.text)
        return finish_decision(
            view,
            speak=True,
            targets=targets_from_text(text, intake),
            strategy=None,
            text=text,
            call=completion.call,
            raw=completion.text,
        )


@dataclass
class CallableSupporter:
    """Wraps `fn(view)` or `fn(view, reask)` (sync or async) returning a SupporterDecision, a dict of its fields,
    a string to say to the whole group, or None to pass."""

    fn: Callable[..., Any]
    spec: str
    structured: bool = True

    async def decide(self, view: SessionView, reask: str | None = None) -> SupporterDecision:
        out = self.fn(view, reask) if reask is not None and _takes_two(self.fn) else self.fn(view)
        if inspect.isawaitable(out):
            out = await out
        raw = _raw(out)
        if out is None:
            return pass_decision(view, raw=raw)
        if isinstance(out, str):
            if not out.strip():
                return pass_decision(view, raw=raw)
            return finish_decision(view, speak=True, targets=[view.group_label], strategy=None, text=out, raw=raw)
        if isinstance(out, SupporterDecision):
            out = out.model_dump(exclude={"after_turn", "target_kind", "call"})
        if isinstance(out, dict):
            return finish_decision(
                view,
                speak=bool(out.get("speak", True)),
                targets=list(out.get("targets") or []),
                strategy=out.get("strategy"),
                text=str(out.get("text", "")),
                close=bool(out.get("close_session", False)),
                rationale=str(out.get("rationale", "")),
                raw=raw,
            )
        raise InvalidDecision(
            f"{self.spec} returned {type(out).__name__}; return a SupporterDecision, dict, str or None", raw
        )


def _takes_two(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)


def _raw(out: Any) -> str:
    if isinstance(out, BaseModel):
        return out.model_dump_json()
    try:
        return json.dumps(out, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        return repr(out)


HUMAN = "human"


@dataclass
class HumanSupporter:
    """Marker for `play`: the engine asks the person at the terminal through a LangGraph interrupt."""

    spec: str = HUMAN
    structured: bool = True

    async def decide(self, view: SessionView, reask: str | None = None) -> SupporterDecision:  # pragma: no cover
        raise RuntimeError("the human supporter is driven by the engine's interrupt, not called directly")


_MODULE_FN = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


def supporter_model(spec: str) -> str | None:
    """The model id a supporter spec calls (a ladder rung calls the model it degrades); None for endpoints given
    by URL, callables and supporters that call no model."""
    spec = spec.strip()
    style, sep, model = spec.partition(":")
    if sep and style in LADDER_STYLES:
        return model
    if "/" in spec and " " not in spec and not spec.startswith(("http://", "https://")) and not _MODULE_FN.match(spec):
        return spec
    return None


def parse_supporter_spec(
    spec: str, client: ModelClient, *, seed: int = 0, api_bases: dict[str, str] | None = None
) -> Supporter:
    """Build a supporter from its `--supporter` spec. For endpoint URLs, `api_bases` receives model -> URL."""
    spec = spec.strip()
    if spec == "silent":
        return SilentSupporter()
    if spec == "scripted":
        return ScriptedSupporter()
    if spec == HUMAN:
        return HumanSupporter()
    style, sep, model = spec.partition(":")
    if sep and style in LADDER_STYLES:
        if "/" not in model or " " in model or model.startswith(("http://", "https://")):
            raise SupporterSpecError(
                SUPPORTER,
                f" {spec}: a ladder rung degrades a model id (provider/model), e.g. {style}:openai/gpt-4o-mini",
            )
        return ModelSupporter(client=client, model=model, spec=spec, seed=seed, style=style)
    if spec.startswith(("http://", "https://")):
        url, _, model = spec.partition("#")
        if not model:
            raise SupporterSpecError(SUPPORTER, f" {spec}: add the model name after '#', e.g. {url}#my-bot")
        model_id = f"hosted_vllm/{model}"  # litellm's lean path for OpenAI-compatible servers
        if api_bases is not None:
            api_bases[model_id] = url
        return FreeTextSupporter(client=client, model=model_id, spec=spec, seed=seed)
    if _MODULE_FN.match(spec):
        module_name, fn_name = spec.split(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as err:
            raise SupporterSpecError(
                SUPPORTER, f" {spec}: cannot import {module_name!r} ({err}); check PYTHONPATH"
            ) from None
        fn = getattr(module, fn_name, None)
        if not callable(fn):
            raise SupporterSpecError(SUPPORTER, f" {spec}: {module_name} has no callable {fn_name!r}")
        return CallableSupporter(fn=fn, spec=spec)
    if "/" in spec and " " not in spec:
        return ModelSupporter(client=client, model=spec, spec=spec, seed=seed)
    raise SupporterSpecError(SUPPORTER, f" {spec!r} is not a known form; accepted: {ACCEPTED_FORMS}")
