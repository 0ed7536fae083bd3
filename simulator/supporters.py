"""Supporters, the system under test: anything that, given the session so far, decides to speak or pass.

Forms accepted by `--supporter` (see `parse_supporter_spec`): a litellm model id (`openai/gpt-4o-mini`,
`local/qwen2.5-1.5b`), an OpenAI-compatible endpoint `http://host:port/v1#model-name`, a Python callable
`package.module:function`, `human`, and the baselines `silent` and `scripted`.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import yaml
from pydantic import BaseModel, ConfigDict, Field, create_model

from personas.case import Case
from personas.common.errors import UserError
from personas.graph import RelationSnapshot
from personas.common.prompts import render_prompt
from personas.taxonomy import SUPPORTER_NAME, strategies_for, target_kind
from simulator.llm.structured import soft_max_length as _soft_max
from simulator.llm.types import ModelClient, Prompt
from simulator.records import SupporterDecision, Turn
from simulator.transcript import last_line, shared_context

PROMPTS = Path(__file__).parent / "prompts"
ACCEPTED_FORMS = (
    "a litellm model id (provider/model, e.g. openai/gpt-4o-mini or local/qwen2.5-1.5b); "
    "an OpenAI-compatible endpoint URL#model (e.g. http://localhost:8000/v1#my-bot); "
    "a Python callable package.module:function; human; silent; scripted"
)


class SupporterSpecError(UserError):
    pass


class SessionView(BaseModel):
    """A read-only view of the session for supporters: what an outsider in the room could know."""

    model_config = ConfigDict(frozen=True)

    case: Case
    turns: tuple[Turn, ...]
    observer: RelationSnapshot | None = Field(default=None, description="Latest tracker view (outsider view).")
    member_turns: int
    max_turns: int

    @property
    def last_turn(self) -> Turn | None:
        return self.turns[-1] if self.turns else None

    def public_turns(self) -> list[Turn]:
        """Turns without members' private inner states (supporters must not read minds)."""
        return [t.model_copy(update={"inner": None}) for t in self.turns]


class Supporter(Protocol):
    spec: str
    structured: bool  # True when the supporter labels its own strategy

    async def decide(self, view: SessionView) -> SupporterDecision: ...


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


def _finish(
    view: SessionView,
    *,
    speak: bool,
    targets: list[str],
    strategy: str | None,
    text: str,
    close: bool = False,
    rationale: str = "",
    call: Any = None,
) -> SupporterDecision:
    """Normalise a decision: valid targets, target kind, and a strategy label that belongs to the group."""
    case = view.case
    after = view.turns[-1].index if view.turns else 0
    if not speak:
        return SupporterDecision(after_turn=after, speak=False, call=call, rationale=rationale)
    valid = [*case.member_names, case.group_label]
    targets = [t for t in dict.fromkeys(targets) if t in valid] or [case.group_label]
    if strategy is not None and strategy not in strategies_for(case.group):
        raise ValueError(f"strategy {strategy!r} is not a {case.group} strategy")
    return SupporterDecision(
        after_turn=after,
        speak=True,
        targets=targets,
        target_kind=target_kind(targets, case.member_names, case.group),
        strategy=strategy,
        text=" ".join(text.split()),
        close_session=close,
        rationale=rationale,
        call=call,
    )


@dataclass
class SilentSupporter:
    """Never speaks: the floor of any leaderboard (what the room does on its own)."""

    spec: str = "silent"
    structured: bool = True

    async def decide(self, view: SessionView) -> SupporterDecision:
        return _finish(view, speak=False, targets=[], strategy=None, text="", rationale="silent baseline")


@dataclass
class ScriptedSupporter:
    """A rule-based baseline over the observer state and the taxonomy; lines come from `prompts/scripted.yaml`.

    Speaks after every `every`-th member turn: safeguard a member at risk, else counterbalance a member silent
    for `quiet_after` member turns, else the strategy the current pattern calls for.
    """

    spec: str = "scripted"
    structured: bool = True
    every: int = 2
    quiet_after: int = 3

    async def decide(self, view: SessionView) -> SupporterDecision:
        case, turns = view.case, view.turns
        since = 0
        for t in reversed(turns):
            if t.kind == "supporter":
                break
            since += 1
        if since < self.every:
            return _finish(view, speak=False, targets=[], strategy=None, text="", rationale="waiting")
        lines = _scripted_lines()[case.group]
        member_turns = [t for t in turns if t.kind == "member"]
        obs = view.observer
        at_risk = list(turns[-1].tracker.at_risk) if turns and turns[-1].tracker else []
        if at_risk:
            who = at_risk[0]
            return self._say(view, "safeguard", [who], lines, who=who)
        recent = {t.speaker for t in member_turns[-self.quiet_after :]}
        quiet = [n for n in case.member_names if n not in recent]
        if len(member_turns) >= self.quiet_after and quiet:
            return self._say(view, "counterbalance", [quiet[0]], lines, who=quiet[0])
        pattern = obs.pattern if obs else case.relation_pattern
        strategy = lines["by_pattern"].get(pattern, "track")
        last = member_turns[-1].speaker if member_turns else case.member_names[0]
        target = [case.group_label] if strategy in ("track", "reframe", "detach", "goal_align", "boundary") else [last]
        return self._say(view, strategy, target, lines, who=last)

    def _say(self, view: SessionView, strategy: str, targets: list[str], lines: dict, who: str) -> SupporterDecision:
        others = [n for n in view.case.member_names if n != who]
        text = lines["lines"][strategy].format(who=who, other=others[0] if others else who, group=view.case.group_label)
        return _finish(view, speak=True, targets=targets, strategy=strategy, text=text, rationale="scripted rule")


def _scripted_lines() -> dict:
    global _SCRIPTED
    if _SCRIPTED is None:
        _SCRIPTED = yaml.safe_load((PROMPTS / "scripted.yaml").read_text(encoding="utf-8"))
    return _SCRIPTED


_SCRIPTED: dict | None = None


def decision_schema(case: Case) -> type[BaseModel]:
    return _decision_schema(tuple([*case.member_names, case.group_label]), case.group)


@functools.lru_cache(maxsize=256)
def _decision_schema(targets: tuple[str, ...], group: str) -> type[BaseModel]:
    return create_model(
        "SupporterReply",
        speak=(bool, ...),
        targets=(list[Literal[targets]], Field(max_length=len(targets))),  # type: ignore[valid-type]
        strategy=(Literal[tuple(strategies_for(group))], ...),  # type: ignore[valid-type]
        text=(str, _soft_max(300)),
        close_session=(bool, False),
    )


@dataclass
class ModelSupporter:
    """A model deciding in structured mode: speak or pass, targets, strategy label and text in one call."""

    client: ModelClient
    model: str
    spec: str
    structured: bool = True
    window: int = 16
    seed: int = 0

    async def decide(self, view: SessionView) -> SupporterDecision:
        case = view.case
        completion = await self.client.complete(
            Prompt(
                context=shared_context(case, view.public_turns(), self.window),
                instructions=render_prompt(
                    "supporter",
                    PROMPTS,
                    supporter=SUPPORTER_NAME,
                    group_kind="couples" if case.group == "couple" else "family",
                    last_line=last_line(view.turns),
                    names=", ".join(case.member_names),
                    group_label=case.group_label,
                ),
            ),
            role="supporter",
            model=self.model,
            schema=decision_schema(case),
            max_tokens=220,
            temperature=0.5,
            seed=self.seed + len(view.turns) * 31,
        )
        r = completion.parsed
        r.text = clean_supporter_text(r.text)
        if r.speak and not r.text:
            return _finish(
                view,
                speak=False,
                targets=[],
                strategy=None,
                text="",
                rationale="chose to speak but said nothing",
                call=completion.call,
            )
        return _finish(
            view,
            speak=r.speak,
            targets=list(r.targets),
            strategy=r.strategy,
            text=r.text,
            close=r.close_session,
            call=completion.call,
        )


def targets_from_text(text: str, case: Case) -> list[str]:
    """Whom a free-text turn addresses: names used as a vocative ("Theo, ..." / "..., Theo?"), else every
    member it names, else the whole group."""
    names = case.member_names
    vocative = [
        n
        for n in names
        if re.search(rf"(?:^|[.!?]\s+){re.escape(n)}\s*,", text) or re.search(rf",\s*{re.escape(n)}\s*[.!?]", text)
    ]
    if vocative:
        return vocative
    named = [n for n in names if re.search(rf"\b{re.escape(n)}\b", text)]
    return named or [case.group_label]


@dataclass
class FreeTextSupporter:
    """A deployed bot that only answers in text (an OpenAI-compatible endpoint). It is asked to reply every
    `every` member turns; targets are read from the names it uses; its strategy is left for the judges."""

    client: ModelClient
    model: str
    spec: str
    structured: bool = False
    every: int = 2
    window: int = 16
    seed: int = 0

    async def decide(self, view: SessionView) -> SupporterDecision:
        case = view.case
        since = 0
        for t in reversed(view.turns):
            if t.kind == "supporter":
                break
            since += 1
        if since < self.every:
            return _finish(view, speak=False, targets=[], strategy=None, text="", rationale="free-text cadence")
        completion = await self.client.complete(
            Prompt(
                context=shared_context(case, view.public_turns(), self.window),
                instructions=f"You are the counsellor ({SUPPORTER_NAME}). Reply with what you say next to the room, "
                "one to three sentences.",
                prefill=f'{SUPPORTER_NAME}: "',
                stop=('"',),
            ),
            role="supporter",
            model=self.model,
            max_tokens=160,
            temperature=0.5,
            seed=self.seed + len(view.turns) * 31,
        )
        text = clean_supporter_text(completion.text)
        return _finish(
            view,
            speak=bool(text),
            targets=targets_from_text(text, case),
            strategy=None,
            text=text,
            call=completion.call,
        )


@dataclass
class CallableSupporter:
    """Wraps `fn(view)` (sync or async) returning a SupporterDecision, a dict of its fields, a string to say
    to the whole group, or None to pass."""

    fn: Callable[[SessionView], Any]
    spec: str
    structured: bool = True

    async def decide(self, view: SessionView) -> SupporterDecision:
        out = self.fn(view)
        if inspect.isawaitable(out):
            out = await out
        if out is None:
            return _finish(view, speak=False, targets=[], strategy=None, text="")
        if isinstance(out, str):
            return _finish(view, speak=bool(out.strip()), targets=[view.case.group_label], strategy=None, text=out)
        if isinstance(out, SupporterDecision):
            out = out.model_dump(exclude={"after_turn", "target_kind", "call"})
        if isinstance(out, dict):
            return _finish(
                view,
                speak=out.get("speak", True),
                targets=list(out.get("targets") or []),
                strategy=out.get("strategy"),
                text=out.get("text", ""),
                close=out.get("close_session", False),
                rationale=out.get("rationale", ""),
            )
        raise TypeError(f"{self.spec} returned {type(out).__name__}; return a SupporterDecision, dict, str or None")


HUMAN = "human"


@dataclass
class HumanSupporter:
    """Marker for `play`: the engine asks the person at the terminal through a LangGraph interrupt."""

    spec: str = HUMAN
    structured: bool = True

    async def decide(self, view: SessionView) -> SupporterDecision:  # pragma: no cover - the engine interrupts instead
        raise RuntimeError("the human supporter is driven by the engine's interrupt, not called directly")


_MODULE_FN = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


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
    if spec.startswith(("http://", "https://")):
        url, _, model = spec.partition("#")
        if not model:
            raise SupporterSpecError(f"--supporter {spec}: add the model name after '#', e.g. {url}#my-bot")
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
                f"--supporter {spec}: cannot import {module_name!r} ({err}); check PYTHONPATH"
            ) from None
        fn = getattr(module, fn_name, None)
        if not callable(fn):
            raise SupporterSpecError(f"--supporter {spec}: {module_name} has no callable {fn_name!r}")
        return CallableSupporter(fn=fn, spec=spec)
    if "/" in spec and " " not in spec:
        return ModelSupporter(client=client, model=spec, spec=spec, seed=seed)
    raise SupporterSpecError(f"--supporter {spec!r} is not a known form; accepted: {ACCEPTED_FORMS}")
