"""The judge's reply schema, built per session from the rubric, so the model client validates every rule.

Each scored entry is `{"ev": [{"t": turn, "q": quote}], "why": reason, "score" | "label" [+ "strength"]}`, in
that order (evidence and reasoning before the score; a grammar-constrained local model generates it in order).
Lean limits (`EntryLimits.shared`) put one `ev` and `why` on each rated object (an intervention, the session, a
member) before its dimensions, which then hold only their score or label.
Evidence offers only the turns the scored item may cite (`judges.scoring._facts`: a member's own turns, an
intervention's window) as the schema's enum, while validation accepts any turn of the transcript, so a citation
out of scope is caught per entry by the judge (re-asked, then unsupported) rather than failing the reply.
Turn numbers, scores and labels are enums: a turn that does not exist, a score out of range or a label outside
the case group's taxonomy fails validation, so the client re-asks, and after its attempts the call fails. A
missing dimension or intervention is a missing required key: invalid, never filled in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from judges.scoring._facts import ANY_TURN, Scope, scope_of, speakers_of
from judges.scoring._records import DimensionScore, Evidence
from judges.scoring._render import as_data
from judges.scoring._rubric import Dimension, Level, Rubric
from personas.taxonomy import strategies_for
from simulator.llm.structured import soft_max_words
from simulator.llm.types import is_local
from simulator.records import SessionRecord, Turn
from simulator.transcript import sentences

QUOTE_MAX = 60  # characters per evidence quote
WHY_MAX = 120  # characters of reasoning per entry
EVIDENCE_MAX = 2  # evidence items per entry
ENTRY_TOKENS = 120  # generous bound on the tokens of one entry at these limits (max_tokens is derived from it)
REPLY_OVERHEAD_TOKENS = 64


@dataclass(frozen=True)
class EntryLimits:
    """How much one scored entry may say, and how it cites. Every character a judge writes costs generation
    time, and a small local model fills whatever room it is given (two 60-character quotes, speaker tags
    included, in every entry): about 90 tokens an entry, 27 entries a session, at 10 tokens/s on two cores.

    `cite_openings`: evidence is chosen, not typed: one of the transcript's sentence openings, `[turn] words`
    (an enum, so the grammar of a local model can only write words that are in the turn it cites). Measured on
    the embedded 1.5B judge with free quotes: 20 of 27 entries cited speaker tags or another turn's words, were
    re-asked, and failed again."""

    quote_max: int = QUOTE_MAX
    why_max: int = WHY_MAX
    evidence_max: int = EVIDENCE_MAX
    entry_tokens: int = ENTRY_TOKENS
    cite_openings: bool = False
    why_words: int | None = None  # a word cap instead of `why_max` characters: the reason ends on a whole word
    shared: bool = False  # one `ev` and `why` per rated object, before its dimensions, instead of one per entry


# Measured on the embedded 1.5B judge (dana-and-theo, 4 turns): with an `ev` and `why` in every entry it wrote
# the same citation and the same reason in all 6 entries of an intervention (about 50 tokens each, 6 times); one
# shared citation and reason say what it said, in a sixth of the tokens.

FULL = EntryLimits()
LEAN_WHY_WORDS = 14  # a lean judge's reason, in words (pairwise verdicts too)
LEAN = EntryLimits(
    quote_max=40,
    why_max=100,
    evidence_max=1,
    entry_tokens=16,
    cite_openings=True,
    why_words=LEAN_WHY_WORDS,
    shared=True,
)
SHARED_TOKENS = 48  # the shared `ev` and `why` of one rated object at LEAN limits
_CITATION = re.compile(r"^\[(\d+)\]\s+(.*)$", re.DOTALL)


def sentence_openings(record: SessionRecord, max_chars: int) -> list[str]:
    """`[turn] first words` of every sentence of every turn, cut at a word boundary within `max_chars`."""
    out: dict[str, None] = {}
    for t in record.turns:
        for sentence in sentences(t.text):
            words, opening = sentence.split(), ""
            for w in words:
                if len(opening) + len(w) + 1 > max_chars:
                    break
                opening = f"{opening} {w}".strip()
            opening = opening or sentence[:max_chars]
            if opening.strip(_EDGE):
                out[f"[{t.index}] {opening}"] = None
    return list(out)


def read_citation(item: Any) -> tuple[int, str]:
    """(turn, quote) of an evidence item: `{"t", "q"}` or a chosen `[turn] words` opening."""
    if isinstance(item, str):
        m = _CITATION.match(item)
        return (int(m.group(1)), m.group(2)) if m else (-1, item)
    return item["t"], item["q"]


def limits_for(model: str) -> EntryLimits:
    """Lean entries for embedded `local/` judges, full ones for every other model."""
    return LEAN if is_local(model) else FULL


class _Entry(BaseModel):
    """Base of every scored entry; label entries with a strength scale check it against the neutral label."""

    model_config = ConfigDict(extra="ignore")
    neutral_label: ClassVar[str | None] = None
    strength_floor: ClassVar[int | None] = None

    @model_validator(mode="after")
    def _strength_matches_label(self) -> _Entry:
        strength = getattr(self, "strength", None)
        if strength is None or self.neutral_label is None:
            return self
        if (self.label == self.neutral_label) != (strength == self.strength_floor):
            raise ValueError(f"strength must be {self.strength_floor} exactly when the label is {self.neutral_label!r}")
        return self


def _lit(values: list[Any] | tuple[Any, ...]) -> Any:
    return Literal[tuple(values)]  # type: ignore[valid-type]


def _object(name: str, entries: list[tuple[str, Any]]) -> type[BaseModel]:
    """A model whose JSON keys are `entries` keys (as aliases, so any member name or id is a valid key)."""
    fields = {f"f{i}": (tp, Field(alias=key)) for i, (key, tp) in enumerate(entries)}
    return create_model(name, __config__=ConfigDict(extra="ignore"), **fields)  # type: ignore[call-overload]


def _soft_enum(values: list[Any], shown: list[Any]) -> Any:
    """A value from `values` (validated), offered to the model as one of `shown` only (its JSON schema's enum: a
    local model's grammar and a strict provider keep to it). A reply outside `shown` still parses, so the reader
    can mark that one entry out of scope instead of failing the whole reply."""
    if not shown or shown == values:
        return _lit(values)
    return Annotated[_lit(values), Field(json_schema_extra={"enum": shown})]


@dataclass
class SchemaBuilder:
    """Builds reply models for one session; entry models are shared between items that may cite the same turns."""

    record: SessionRecord
    rubric: Rubric
    limits: EntryLimits = FULL

    def __post_init__(self) -> None:
        self.members = self.record.case.member_names
        self.rated_members = speakers_of(self.record)
        self.strategies = list(strategies_for(self.record.case.group))
        self.turn_ids = [t.index for t in self.record.turns] or [0]
        self.openings = sentence_openings(self.record, self.limits.quote_max) if self.limits.cite_openings else []
        self._evidence: dict[tuple[int, ...] | None, tuple[str, Any]] = {}
        self._entries: dict[tuple[str, bool, str], type[BaseModel]] = {}

    def evidence(self, scope: Scope = ANY_TURN) -> tuple[str, Any]:
        """(name suffix, type) of one evidence item citing a turn in `scope`: `{"t", "q"}`, or a chosen opening."""
        key = scope.turns
        if key in self._evidence:
            return self._evidence[key]
        suffix = "" if key is None else f"_s{sum(k is not None for k in self._evidence)}"
        if self.openings:
            shown = [o for o in self.openings if scope.allows(read_citation(o)[0])]
            kind: Any = _soft_enum(self.openings, shown)
        else:
            kind = create_model(
                f"Ev{suffix}",
                __config__=ConfigDict(extra="ignore"),
                t=(
                    _soft_enum(self.turn_ids, [t for t in self.turn_ids if scope.allows(t)]),
                    Field(description="Turn number."),
                ),
                q=(
                    str,
                    Field(min_length=1, max_length=self.limits.quote_max, description="Short quote from that turn."),
                ),
            )
        self._evidence[key] = (suffix, kind)
        return suffix, kind

    def entry(self, dim: Dimension, claim: bool = False, scope: Scope = ANY_TURN) -> type[BaseModel]:
        claimed = claim and dim.kind == "taxonomy_strategy"
        suffix, _ = self.evidence(scope) if not self.limits.shared else ("", None)
        key = (dim.id, claimed, suffix)
        if key in self._entries:
            return self._entries[key]
        fields: dict[str, Any] = {} if self.limits.shared else dict(self._ev_why(scope))
        if dim.kind == "scale":
            fields["score"] = (_lit(list(range(dim.min, dim.max + 1))), ...)  # type: ignore[arg-type]
        elif dim.kind == "label":
            fields["label"] = (_lit(dim.labels(self.members)), ...)
            if dim.strength is not None:
                fields["strength"] = (_lit(list(range(dim.strength.min, dim.strength.max + 1))), ...)
        else:
            if claimed:
                fields["ok"] = (bool, Field(description="The stated strategy fits the turn."))
            fields["label"] = (_lit(self.strategies), ...)
        name = f"{dim.id}{'_stated' if claimed else ''}{suffix}"
        model = create_model(name, __base__=_Entry, **fields)  # type: ignore[call-overload]
        model.neutral_label = dim.neutral
        model.strength_floor = dim.strength.min if dim.strength is not None else None
        self._entries[key] = model
        return model

    def _ev_why(self, scope: Scope) -> list[tuple[str, Any]]:
        """The evidence and reason fields, in the order they are written: before any score."""
        why = (
            soft_max_words(self.limits.why_words)
            if self.limits.why_words
            else Field(min_length=1, max_length=self.limits.why_max)
        )
        ev = Field(min_length=1, max_length=self.limits.evidence_max)
        _, item = self.evidence(scope)
        return [("ev", Annotated[list[item], ev]), ("why", Annotated[str, why])]  # type: ignore[valid-type]

    def _dims(self, level: Level, name: str, claim: bool = False, scope: Scope = ANY_TURN) -> type[BaseModel]:
        dims = [(d.id, self.entry(d, claim, scope)) for d in self.rubric.at(level)]
        if not self.limits.shared:
            return _object(name, dims)
        return _object(f"{name}{self.evidence(scope)[0]}", [*self._ev_why(scope), *dims])

    def intervention(self, turn: Turn) -> type[BaseModel]:
        """All intervention-level dimensions for one supporter turn, citing only its window."""
        claim = bool(turn.decision and turn.decision.strategy)
        scope = scope_of(self.record, "intervention", turn=turn)
        return self._dims("intervention", f"T{turn.index}{'Stated' if claim else ''}", claim, scope)

    def reply(self, interventions: list[Turn], *, session: bool) -> type[BaseModel]:
        """The whole-call reply: `interventions` keyed `t<turn>`, then `session` and `members` (those who spoke,
        each citing only their own turns) when asked."""
        parts: list[tuple[str, Any]] = []
        if interventions and self.rubric.at("intervention"):
            turns = [(f"t{t.index}", self.intervention(t)) for t in interventions]
            parts.append(("interventions", _object("Interventions", turns)))
        if session and self.rubric.at("session"):
            parts.append(("session", self._dims("session", "Session")))
        if session and self.rubric.at("member") and self.rated_members:
            members = [
                (m, self._dims("member", f"M{i}", scope=scope_of(self.record, "member", member=m)))
                for i, m in enumerate(self.rated_members)
            ]
            parts.append(("members", _object("Members", members)))
        return _object("Judgment", parts)


def entry_count(rubric: Rubric, n_interventions: int, n_members: int, *, session: bool) -> tuple[int, int]:
    """(scored entries, rated objects) of one reply: objects are interventions, the session and members that
    have dimensions to rate."""
    n, objects = n_interventions * len(rubric.at("intervention")), n_interventions if rubric.at("intervention") else 0
    if session:
        n += len(rubric.at("session")) + n_members * len(rubric.at("member"))
        objects += bool(rubric.at("session")) + (n_members if rubric.at("member") else 0)
    return n, objects


def max_tokens_for(counts: tuple[int, int], limits: EntryLimits = FULL) -> int:
    """Output bound for a reply with (entries, objects) at the schema's length limits."""
    entries, objects = counts
    return REPLY_OVERHEAD_TOKENS + entries * limits.entry_tokens + (objects * SHARED_TOKENS if limits.shared else 0)


_QUOTES = "\"'“”‘’«»"
# How judge_transcript renders a line, `[3] Therapist (to Theo): "...`: models often quote the rendering itself.
_RENDERED_PREFIX = re.compile(r"^\s*(?:\[\d+\]\s*)?[^\W\d][\w .'-]{0,40}?(?:\s*\((?:to|To)\b[^)]*\))?\s*:\s*")
_EDGE = " .,;:!?…" + _QUOTES


def _norm(text: str) -> str:
    text = text.replace("’", "'").replace("‘", "'").replace("“", '"').replace("”", '"')
    return " ".join(text.lower().split())


def quote_found(quote: str, text: str, limit: int = QUOTE_MAX) -> bool:
    """Whether a judge's quote is really in the turn it cites, as the judge was shown that turn.

    Accepted: the words themselves (case, spacing and curly quotes ignored), the words with the rendering's
    turn number, speaker tag and quote marks around them, and a quote cut off at the schema's length limit
    (`limit`; its last, partial word dropped). Anything else is unsupported evidence.
    """
    shown = _norm(as_data(text))
    candidates = [quote]
    stripped = _RENDERED_PREFIX.sub("", quote, count=1)
    if stripped != quote:
        candidates.append(stripped)
    for cand in candidates:
        q = _norm(cand).strip(_EDGE)
        if not q:
            continue
        if q in shown:
            return True
        if len(cand) >= limit - 2 and " " in q:  # cut at the limit: the last word may be partial
            head = q.rsplit(" ", 1)[0].strip(_EDGE)
            if len(head) >= 12 and head in shown:
                return True
    return False


_quote_found = quote_found  # older name, kept for callers inside judges/


def read_entries(
    data: dict[str, Any],
    dims: list[Dimension],
    *,
    item: str,
    level: Level,
    record: SessionRecord,
    turn: Turn | None = None,
    member: str | None = None,
    limits: EntryLimits = FULL,
) -> list[DimensionScore]:
    """Validated reply entries (JSON keys, as dumped by alias) -> DimensionScore records."""
    texts = {t.index: t.text for t in record.turns}
    scope = scope_of(record, level, turn=turn, member=member)
    stated = turn.decision.strategy if turn is not None and turn.decision is not None else None
    out = []
    for dim in dims:
        e = {"ev": data["ev"], "why": data["why"], **data[dim.id]} if limits.shared else data[dim.id]
        out.append(
            DimensionScore(
                item=item,
                dimension=dim.id,
                level=level,
                turn=turn.index if turn is not None else None,
                member=member,
                evidence=[
                    Evidence(
                        turn=t,
                        quote=q,
                        quote_found=quote_found(q, texts.get(t, ""), limits.quote_max),
                        in_scope=scope.allows(t),
                    )
                    for t, q in map(read_citation, e["ev"])
                ],
                reasoning=e["why"],
                score=e.get("score"),
                label=e.get("label"),
                strength=e.get("strength"),
                supporter_label=stated if dim.kind == "taxonomy_strategy" else None,
                supporter_label_ok=e.get("ok") if dim.kind == "taxonomy_strategy" else None,
            )
        )
    return out
