"""Rubrics as data: what a judge scores, loaded from YAML into a validated `Rubric`.

A rubric is a list of dimensions. Each dimension has an `id`, a `level` (`intervention`: every supporter turn;
`session`: the whole session; `member`: each member) and a `kind`:

- `scale`: an integer score from `min` to `max`, with an anchored description for every point; `copy_cap` caps
  it when a supporter turn copies a member's line, `repeat_cap` when it repeats the supporter's own earlier line
  (see `judges.scoring._facts`);
- `label`: one of `allowed` (the token `$members` expands to the case's member names), optionally with a
  `strength` scale; `neutral` names the "nothing to report" label (strength must be its minimum exactly then);
- `taxonomy_strategy`: one of the RESCUE support strategies of the case's group (intervention level only).

The built-in rubric is `rubrics/default.yaml`. A user file (`--rubric FILE`) adds dimensions, or overrides a
built-in one field by field when it repeats its id (`enabled: false` drops it).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from personas.common.errors import UserError
from personas.common.yamlfile import YamlFileError, load_yaml

RUBRICS_DIR = Path(__file__).parent.parent / "rubrics"
DEFAULT_RUBRIC = RUBRICS_DIR / "default.yaml"
MEMBERS_TOKEN = "$members"

Level = Literal["intervention", "session", "member"]
Kind = Literal["scale", "label", "taxonomy_strategy"]
LEVELS: tuple[Level, ...] = ("intervention", "session", "member")


class RubricError(UserError, ValueError):
    """A rubric file that cannot be used; `str()` is one line naming the file, the dimension and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


def _check_anchors(lo: int, hi: int, anchors: dict[int, str], where: str) -> None:
    if lo >= hi:
        raise ValueError(f"{where}min must be below max (got {lo} and {hi})")
    missing = [p for p in range(lo, hi + 1) if not (anchors.get(p) or "").strip()]
    extra = sorted(p for p in anchors if not lo <= p <= hi)
    if missing:
        raise ValueError(f"{where}anchors: every point needs a description; missing {', '.join(map(str, missing))}")
    if extra:
        raise ValueError(f"{where}anchors: points outside {lo}-{hi}: {', '.join(map(str, extra))}")


class Strength(_Strict):
    """A strength scale attached to a label (e.g. how strongly the supporter took a side)."""

    min: int = Field(description="Lowest strength; the only valid strength for the neutral label.")
    max: int = Field(description="Highest strength.")
    anchors: dict[int, str] = Field(description="One description per point from min to max.")

    @model_validator(mode="after")
    def _check(self) -> Strength:
        _check_anchors(self.min, self.max, self.anchors, "strength.")
        return self


ItemLevel = Literal["intervention", "session"]
PLACEHOLDERS = ("member", "other", "pattern", "risks", "strategy", "definition", "addressee", "line")
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
MEMBER_LABEL, OTHERS_LABEL = "$member", "$others"


class ItemAnchors(_Strict):
    """Two lines whose answer is known, read in place of the turn's line to calibrate an item on the judge itself.

    A small judge's P(yes) drifts with the room: in a family grieving a betrayal, "Thank you for being honest" read
    0.54-0.59 on "does this line insult, shame, threaten or endanger anyone?". The same question about a line that
    plainly says no and one that plainly says yes, asked in the same room at the same turn, measures that drift; the
    turn's line is then placed between them (`judges.scoring._checklist.anchored_p`)."""

    no_line: str = Field(min_length=1, description="A line whose answer is plainly no in any room.")
    yes_line: str = Field(min_length=1, description="A line whose answer is plainly yes in any room.")


class ChecklistItem(_Strict):
    """One binary, observable question a checklist judge asks; its score is the model's P(yes), or 1.0 or 0.0 for an
    item answered by a rule (`rule`, judges/scoring/_rules.py), which is never sent to the model.

    Placeholders instantiate it: `{member}` once per member (member dimensions: the rated member), `{member}` and
    `{other}` once per pair, asked in both orders and averaged (position bias), `{pattern}` and `{risks}` from the
    case card and the session's safety events (an item about risks is skipped when there are none), `{strategy}`
    and `{definition}` once per strategy of the case group's taxonomy, `{addressee}` with whom the turn asked about
    addresses (a member, members, or the whole group), so an item about the target can name it (`validate` asks it
    of each candidate), `{line}` with the words of the turn asked about (as data): a small judge answers a question
    about a line it is shown in the question far better than one about "the turn" (tests/fixtures/known_answers.yaml)."""

    id: str = Field(pattern=r"^[a-z][a-z0-9_]{0,39}$", description="Unique within its dimension.")
    question: str = Field(min_length=1, description="A yes/no question about what the transcript shows.")
    direction: Literal["yes_good", "yes_bad"] = Field(
        default="yes_good", description="Scales: whether a yes raises (`yes_good`) or lowers the score."
    )
    weight: float = Field(default=1.0, ge=0, description="Weight in the dimension's weighted mean (0: ignored).")
    level: ItemLevel | None = Field(
        default=None,
        description="`intervention`: asked of every supporter turn (a session dimension averages them); `session`: "
        "asked once of the whole transcript. Default: the dimension's level (member dimensions: session).",
    )
    supports: str | None = Field(
        default=None,
        description="Labels: the label a yes speaks for: one of the allowed labels, `$member` (the member the "
        "question names) or `$others` (every other member).",
    )
    enabled: bool = Field(default=True, description="`false` in a user rubric drops a built-in item.")
    reads: str | None = Field(
        default=None,
        description="Ask it in the room's form instead: one question of personas/prompts/member_appraisal.yaml "
        "(`blamed`, `understood`, ...) about the turn's line alone, after that file's labelled example lines; "
        "the question names {member} and is the record's account of what was asked.",
    )
    rule: str | None = Field(
        default=None,
        description="Answer it by a rule over the record instead of the model (judges/scoring/_rules.py: "
        "`third_person`): P(yes) 1.0 or 0.0, recorded as `method: rule`, no model call. About one turn as a whole "
        "(intervention level; no {member}, {other}, {strategy} or {addressee}); the question stays the record's "
        "account of what was answered.",
    )

    alone: bool = Field(
        default=False,
        description="Ask it of the quoted {line} alone, without the room (no cards, no transcript): a small judge "
        "reads the danger a room talks about into any line said there (tests/benchmarks/README.md, issue 43 (e)). "
        "Items whose only placeholder is {line}; what only the room shows is left to other items and rules.",
    )
    anchors: ItemAnchors | None = Field(
        default=None,
        description="Calibrate it on two known lines (`no_line`, `yes_line`) read in the turn's place, same room, same turn: "
        "the recorded P(yes) is where the turn's line sits between them (anchors read 0.1 and 0.9). Items quoting "
        "{line} only; a judge that cannot tell the anchors apart fails the item.",
    )

    @model_validator(mode="after")
    def _check(self) -> ChecklistItem:
        if self.anchors is not None and ("line" not in self.placeholders() or self.rule or self.reads):
            raise ValueError("anchors: only an item the model answers about a quoted {line} can be anchored")
        if self.alone and (self.placeholders() != {"line"} or self.rule or self.reads):
            raise ValueError("alone: only an item the model answers about a quoted {line}, and nothing else, can be "
                             "asked of the line alone")  # fmt: skip
        if self.reads is not None:
            from simulator.members import appraisal_questions

            if self.reads not in appraisal_questions():
                raise ValueError(
                    f"reads: unknown reading {self.reads!r}; use one of {', '.join(appraisal_questions())}"
                )
            if "member" not in self.placeholders() or len(self.placeholders()) > 1:
                raise ValueError("question: an item that reads a line names {member} and nothing else")
        if self.rule is not None:
            from judges.scoring._rules import rule_names

            if self.rule not in rule_names():
                raise ValueError(f"rule: unknown rule {self.rule!r}; use one of {', '.join(rule_names())}")
            if self.reads is not None:
                raise ValueError("rule: an item is answered by a rule or by a reading, not both; remove one")
            named = sorted(self.placeholders() & {"member", "other", "strategy", "addressee"})
            if named:
                raise ValueError(
                    f"question: an item answered by a rule is about the turn as a whole; remove {{{named[0]}}}"
                )
        unknown = sorted(set(_PLACEHOLDER.findall(self.question)) - set(PLACEHOLDERS))
        if unknown:
            raise ValueError(
                f"question: unknown placeholder {{{unknown[0]}}}; use one of "
                + ", ".join(f"{{{p}}}" for p in PLACEHOLDERS)
            )
        if "{other}" in self.question and "{member}" not in self.question:
            raise ValueError("question: {other} needs {member} too (the item compares two members)")
        return self

    def placeholders(self) -> set[str]:
        return set(_PLACEHOLDER.findall(self.question))


# The caps the supporter-line facts bind (judges.scoring._facts.apply_line_caps): copied, repeated, voiced lines.
LINE_CAPS = ("copy_cap", "repeat_cap", "voice_cap")


class Dimension(_Strict):
    """One thing a judge scores, with the question it answers and what evidence to cite."""

    id: str = Field(pattern=r"^[a-z][a-z0-9_]{0,39}$", description="Unique id: lowercase letters, digits, `_`.")
    level: Level = Field(description="`intervention` (each supporter turn), `session` or `member` (each member).")
    kind: Kind = Field(description="`scale`, `label` or `taxonomy_strategy` (the case group's strategy labels).")
    question: str = Field(min_length=1, description="What the judge answers for this dimension.")
    evidence: str = Field(default="", description="What to cite as evidence (turn numbers and short quotes).")
    min: int | None = Field(default=None, description="Scale: lowest score.")
    max: int | None = Field(default=None, description="Scale: highest score.")
    anchors: dict[int, str] = Field(default_factory=dict, description="Scale: one description per point.")
    allowed: list[str] = Field(default_factory=list, description="Label: allowed values; `$members` = member names.")
    neutral: str | None = Field(default=None, description="Label: the value that means nothing to report.")
    strength: Strength | None = Field(default=None, description="Label: optional strength scale.")
    rate: Literal["labelled", "expected"] = Field(
        default="labelled",
        description="Labels with a neutral, over a session: `labelled`, the share of turns labelled non-neutral; "
        "`expected`, from checklist judges the mean probability of a non-neutral label (the expected share, read "
        "before the 0.5 threshold). Choose `expected` only where the items' probabilities have been shown to mean "
        "something: near 0.5 everywhere they read as a share the judge cannot stand behind.",
    )
    about: Literal["supporter", "simulator"] = Field(
        default="supporter",
        description="`simulator` dimensions check the simulation; they never count for the supporter.",
    )
    fail_at: int | None = Field(
        default=None, description="Simulator scales: a score at or below this flags the session `simulator_failure`."
    )
    copy_cap: int | None = Field(
        default=None,
        description="Supporter scales: the highest score when a supporter turn copies members' lines, one or "
        "spliced from several (intervention level: that turn's score; session level: the session's, if any turn "
        "copied).",
    )
    repeat_cap: int | None = Field(
        default=None,
        description="Supporter scales: the highest score when a supporter turn repeats the supporter's own earlier "
        "line word for word or nearly (intervention level: that turn's score; session level: the session's, if any "
        "turn repeated).",
    )
    voice_cap: int | None = Field(
        default=None,
        description="Supporter scales: the highest score when a supporter turn is said in a member's voice, about "
        "the speaker's own hurt or life (intervention level: that turn's score; session level: the session's, if "
        "any turn was).",
    )
    enabled: bool = Field(default=True, description="`false` in a user rubric drops a built-in dimension.")
    checklist: list[ChecklistItem] = Field(
        default_factory=list, description="Yes/no items a checklist judge asks (`judge --judge-mode checklist`)."
    )

    @model_validator(mode="after")
    def _check_items(self) -> Dimension:
        seen: set[str] = set()
        for i, item in enumerate(self.checklist):
            where = f"checklist[{i}] ({item.id}): "
            if item.id in seen:
                raise ValueError(f"{where}duplicate item id; give each item its own id")
            seen.add(item.id)
            if item.level == "session" and self.level == "intervention":
                raise ValueError(f"{where}level: an intervention dimension asks about one turn; use intervention")
            if self.kind == "scale" and item.supports is not None:
                raise ValueError(f"{where}supports: only label and strategy items name a label; remove it")
            if self.kind == "label":
                allowed = [*self.allowed, MEMBER_LABEL, OTHERS_LABEL]
                if item.supports is None or (
                    item.supports not in allowed or (item.supports.startswith("$") and MEMBERS_TOKEN not in allowed)
                ):
                    raise ValueError(
                        f"{where}supports: name the label a yes speaks for: one of {', '.join(self.allowed)}"
                        + (f", {MEMBER_LABEL} or {OTHERS_LABEL}" if MEMBERS_TOKEN in self.allowed else "")
                    )
                if item.supports in (MEMBER_LABEL, OTHERS_LABEL) and "member" not in item.placeholders():
                    raise ValueError(f"{where}question: an item that supports {item.supports} must name {{member}}")
            if item.reads is not None and (item.level or self.level) != "intervention":
                raise ValueError(f"{where}level: an item that reads a line is about one turn; use intervention")
            if item.rule is not None and (item.level or self.level) != "intervention":
                raise ValueError(f"{where}level: a rule answers about one turn; use intervention")
            if "addressee" in item.placeholders() and (item.level or self.level) != "intervention":
                raise ValueError(f"{where}level: {{addressee}} names whom one turn addresses; use intervention")
            if self.kind == "taxonomy_strategy" and "strategy" not in item.placeholders():
                raise ValueError(f"{where}question: a strategy item must name {{strategy}} (asked once per strategy)")
        return self

    @property
    def items(self) -> list[ChecklistItem]:
        """The enabled checklist items."""
        return [i for i in self.checklist if i.enabled]

    @model_validator(mode="after")
    def _check_kind(self) -> Dimension:
        scale_only = {
            "min": self.min,
            "max": self.max,
            "anchors": self.anchors,
            "fail_at": self.fail_at,
            "copy_cap": self.copy_cap,
            "repeat_cap": self.repeat_cap,
            "voice_cap": self.voice_cap,
        }
        label_only = {"allowed": self.allowed, "neutral": self.neutral, "strength": self.strength}
        if self.rate == "expected" and (self.kind != "label" or self.neutral is None):
            raise ValueError("rate: only a label dimension with a neutral label has an expected share; remove it")
        if self.kind == "scale":
            if self.min is None or self.max is None:
                raise ValueError("a scale needs min and max")
            _check_anchors(self.min, self.max, self.anchors, "")
            if self.fail_at is not None and not self.min <= self.fail_at <= self.max:
                raise ValueError(f"fail_at must lie within {self.min}-{self.max}")
            if self.fail_at is not None and self.about != "simulator":
                raise ValueError("fail_at is only for `about: simulator` dimensions")
            for name in LINE_CAPS:
                cap = getattr(self, name)
                if cap is not None and not self.min <= cap <= self.max:
                    raise ValueError(f"{name} must lie within {self.min}-{self.max}")
                if cap is not None and (self.about != "supporter" or self.level == "member"):
                    raise ValueError(f"{name} is only for supporter dimensions at intervention or session level")
            wrong = [k for k, v in label_only.items() if v not in (None, [], {})]
        else:
            wrong = [k for k, v in scale_only.items() if v not in (None, [], {})]
            if self.kind == "label":
                if not self.allowed:
                    raise ValueError("a label needs allowed values")
                if len(set(self.allowed)) != len(self.allowed):
                    raise ValueError("allowed values must be unique")
                if self.neutral is not None and self.neutral not in self.allowed:
                    raise ValueError(f"neutral {self.neutral!r} is not one of the allowed values")
                if self.strength is not None and self.neutral is None:
                    raise ValueError("a label with a strength scale needs a neutral value")
            else:
                wrong += [k for k, v in label_only.items() if v not in (None, [], {})]
                if self.level != "intervention":
                    raise ValueError("taxonomy_strategy dimensions are intervention-level")
        if wrong:
            raise ValueError(f"{', '.join(wrong)}: not used by kind {self.kind!r}; remove it")
        return self

    def labels(self, members: list[str]) -> list[str]:
        """Allowed labels with `$members` expanded, in order, without duplicates."""
        out: list[str] = []
        for value in self.allowed:
            for v in members if value == MEMBERS_TOKEN else [value]:
                if v not in out:
                    out.append(v)
        return out

    @property
    def is_scale(self) -> bool:
        return self.kind == "scale"


class Rubric(_Strict):
    """A named, versioned list of dimensions. `active` skips disabled ones; ids are unique."""

    name: str = Field(min_length=1, description="Rubric name (`default`, or `default+<file>` when extended).")
    version: int = Field(default=1, description="Version of the rubric text; bump it when questions change.")
    description: str = Field(default="", description="What the rubric measures.")
    dimensions: list[Dimension] = Field(min_length=1, description="Dimensions in prompt order.")

    @model_validator(mode="after")
    def _unique_ids(self) -> Rubric:
        seen: set[str] = set()
        for d in self.dimensions:
            if d.id in seen:
                raise ValueError(f"duplicate dimension id {d.id!r}")
            seen.add(d.id)
        return self

    @property
    def active(self) -> list[Dimension]:
        return [d for d in self.dimensions if d.enabled]

    def in_use(self) -> Rubric:
        """This rubric with its enabled dimensions only: what a judgment asks, records and is keyed by."""
        return self.model_copy(update={"dimensions": self.active})

    def at(self, level: Level) -> list[Dimension]:
        """Active dimensions of one level, in rubric order."""
        return [d for d in self.active if d.level == level]

    def get(self, dim_id: str) -> Dimension:
        for d in self.dimensions:
            if d.id == dim_id:
                return d
        raise KeyError(dim_id)

    @property
    def digest(self) -> str:
        """Short hash of the active dimensions without their checklists: judgments made with different rubrics
        are told apart by it (checklist judgments by `items_digest` too)."""
        # a field added later is left out while unset, so rubrics that do not use it keep the digest they had
        dumps = [
            d.model_dump(
                mode="json",
                exclude={"checklist"} | _unset_later(d),
            )
            for d in self.active
        ]
        blob = json.dumps(dumps, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    @property
    def items_digest(self) -> str:
        """Short hash of the active dimensions' enabled checklist items."""
        # `reads`, `rule`, `anchors` and `alone` are left out while unset, so rubrics that do not use them keep their
        # digest
        blob = json.dumps(
            {
                d.id: [
                    i.model_dump(
                        mode="json",
                        exclude={k for k in ("reads", "rule", "anchors", "alone") if getattr(i, k) in (None, False)},
                    )
                    for i in d.items
                ]
                for d in self.active
            },
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:12]


def _unset_later(dim: Dimension) -> set[str]:
    """Fields added after rubrics were first digested, left out while at their default."""
    unset = {name for name in ("repeat_cap", "voice_cap") if getattr(dim, name) is None}
    return unset | ({"rate"} if dim.rate == "labelled" else set())


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = load_yaml(path)
    except YamlFileError as err:
        if err.kind == "missing":
            raise RubricError(f"{path}: no such rubric file") from None
        raise RubricError(f"{path}: not valid YAML{f' (line {err.line})' if err.line is not None else ''}") from None
    except OSError as err:
        raise RubricError(f"{path}: cannot read ({err.strerror})") from None
    if not isinstance(data, dict):
        raise RubricError(f"{path}: expected a mapping with `dimensions:`")
    return data


def _error(path: Path, err: ValidationError, dims: list[Any], label: Any = None) -> RubricError:
    first = err.errors()[0]
    loc = list(first["loc"])
    msg = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        msg = "unknown field; remove it or check its spelling"
    elif first["type"] == "missing":
        msg = "required field is missing"
    elif first["type"] == "literal_error":
        msg = f"unknown value {first.get('input')!r}; {msg.replace('Input should be', 'use')}"
    elif first["type"] == "greater_than_equal":
        msg = f"must be {first['ctx']['ge']:g} or more (got {first.get('input')!r}); a weight of 0 ignores the item"
    elif first["type"] == "string_too_short":
        msg = "must not be empty; write the question or text it needs"
    where = ""
    if len(loc) >= 2 and loc[0] == "dimensions" and isinstance(loc[1], int):
        i = loc[1]
        ident = dims[i].get("id") if i < len(dims) and isinstance(dims[i], dict) else None
        if label is not None:
            where = label(i)
        else:
            where = f"dimensions[{i}]" + (f" ({ident})" if ident else "")
        if len(loc) >= 4 and loc[2] == "checklist" and isinstance(loc[3], int):
            items = dims[i].get("checklist") if i < len(dims) and isinstance(dims[i], dict) else None
            entry = items[loc[3]] if isinstance(items, list) and loc[3] < len(items) else None
            item_id = entry.get("id") if isinstance(entry, dict) else None
            where += f" item {item_id!r}" if item_id else f" checklist[{loc[3]}]"
            rest = ".".join(str(p) for p in loc[4:])
            where += f": {rest}" if rest else ""
        else:
            rest = ".".join(str(p) for p in loc[2:])
            where += f".{rest}" if rest else ""
    else:
        where = ".".join(str(p) for p in loc)
    return RubricError(f"{path}: {where + ': ' if where else ''}{msg}")


def _parse(path: Path, data: dict[str, Any], label: Any = None) -> Rubric:
    dims = data.get("dimensions") if isinstance(data.get("dimensions"), list) else []
    try:
        return Rubric.model_validate(data)
    except ValidationError as err:
        raise _error(path, err, dims, label) from None


def _merge_items(path: Path, dim: str, base: list[dict[str, Any]], given: list[Any]) -> list[dict[str, Any]]:
    """A dimension's checklist with a user's items added, or overriding built-in ones field by field by id."""
    merged = {i["id"]: dict(i) for i in base}
    for j, item in enumerate(given):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise RubricError(
                f"{path}: dimension {dim!r} checklist[{j}].id: required field is missing; give the item an id"
            )
        merged[item["id"]] = {**merged.get(item["id"], {}), **item}
    return list(merged.values())


def load_rubric(path: str | Path | None = None, *, base: str | Path | None = DEFAULT_RUBRIC) -> Rubric:
    """The built-in rubric, with the dimensions of `path` added or overriding (field by field, by id).

    `base=None` reads `path` alone as a complete rubric. Errors raise `RubricError` (one line).
    """
    if base is None:
        if path is None:
            raise ValueError("load_rubric needs a path when base is None")
        return _parse(Path(path), _read_yaml(Path(path)))
    base_path = Path(base)
    base_data = _read_yaml(base_path)
    rubric = _parse(base_path, base_data)
    if path is None:
        return rubric
    path = Path(path)
    extra = _read_yaml(path)
    unknown = sorted(set(extra) - {"name", "version", "description", "dimensions"})
    if unknown:
        raise RubricError(f"{path}: {unknown[0]}: unknown field; remove it or check its spelling")
    entries = extra.get("dimensions")
    if not isinstance(entries, list) or not entries:
        raise RubricError(f"{path}: dimensions: expected a non-empty list of dimensions")
    merged = {d.id: d.model_dump(exclude_defaults=False) for d in rubric.dimensions}
    order = list(merged)
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise RubricError(f"{path}: dimensions[{i}].id: required field is missing")
        ident = entry["id"]
        if ident in merged and entry.get("kind", merged[ident]["kind"]) == merged[ident]["kind"]:
            if isinstance(entry.get("checklist"), list):
                entry = {
                    **entry,
                    "checklist": _merge_items(path, ident, merged[ident]["checklist"], entry["checklist"]),
                }
            merged[ident] = {**merged[ident], **entry}  # same kind: the fields given replace the built-in ones
        elif ident in merged:
            merged[ident] = dict(entry)  # a new kind: the entry replaces the dimension as a whole
        else:
            merged[ident] = dict(entry)
            order.append(ident)
    data = {
        "name": extra.get("name") or f"{rubric.name}+{path.stem}",
        "version": extra.get("version", rubric.version),
        "description": extra.get("description", rubric.description),
        "dimensions": [merged[i] for i in order],
    }
    rubric = _parse(path, data, label=lambda i: f"dimension {order[i]!r}")
    if not rubric.active:
        raise RubricError(f"{path}: every dimension is disabled; keep at least one")
    return rubric
