"""The gold trajectory of a RESCUE sample: what a benchmark or a sim-vs-real comparison scores against."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, ValidationError

from personas.common.records import Record
from personas.rescue._format import PatternField, RescueFormatError, RescueSample, _read, rescue_case_id
from personas.taxonomy import (
    Group,
    TargetKind,
)

GOLD_SCHEMA_VERSION = 1

# ---- gold trajectory ------------------------------------------------------------------------------------------


class GoldEmotion(Record):
    person: str
    emotion: str = Field(description="RESCUE `emotion_description`.")
    intensity: int | float | None = Field(description="0-10 as annotated; None when missing.")


class GoldViewpoint(Record):
    source: str
    target: str
    viewpoint: str
    attitude: str


class GoldStrategy(Record):
    provider: str
    targets: list[str] = Field(description="As annotated: names, a subgroup, or the group label.")
    target_kind: TargetKind | None = Field(description="Individual, subgroup or whole group; None without target.")
    strategy: str = Field(description="RESCUE `strategy_type`.")
    content: str = Field(description="RESCUE `strategy_content`.")


class GoldRow(Record):
    """One annotated row of the gold trajectory, quirks resolved."""

    row_index: int = Field(description="1-based row index.")
    speaker: str = Field(description="`primary_speaker`; `Therapist` for supporter turns.")
    targets: list[str] = Field(description="Row addressees as annotated (may include `Therapist`).")
    text: str = Field(description="`dialogue_cleaned`.")
    utterance_type: str = Field(description="Client rows: accusation, defense, ...; `` on therapist rows.")
    emotions: list[GoldEmotion]
    viewpoints: list[GoldViewpoint]
    relation_pattern: str | None = Field(
        description="Pattern at this row: a label, `` = reviewed with no dominant pattern, None = no label."
    )
    relation_pattern_field: PatternField | None = Field(description="Which RESCUE field `relation_pattern` came from.")
    pattern_fields: dict[str, str] = Field(
        description="Every pattern field that carries a label on this row, as read (they can disagree)."
    )
    support_strategies: list[GoldStrategy]


class GoldTrajectory(Record):
    """A RESCUE sample as a versioned trajectory: what benchmarks and trajectory metrics score against."""

    schema_version: int = Field(default=GOLD_SCHEMA_VERSION, description="Bumped when the layout changes.")
    sample_id: str
    case_id: str = Field(description="Id of the case card derived from the same sample.")
    group: Group
    participants: list[str] = Field(description="Members (never the therapist).")
    rows: list[GoldRow]
    source: str = Field(description="File (and line) the sample was read from.")


def gold_from_sample(sample: RescueSample) -> GoldTrajectory:
    """The sample's annotated rows as a GoldTrajectory."""
    rows = []
    for r in sample.rows:
        rows.append(
            GoldRow(
                row_index=r.row_index or 0,
                speaker=r.primary_speaker,
                targets=r.targets,
                text=r.text,
                utterance_type=r.utterance_type,
                emotions=[
                    GoldEmotion(person=e.person, emotion=e.emotion_description, intensity=e.intensity)
                    for e in r.internal_emotion
                ],
                viewpoints=[
                    GoldViewpoint(source=v.source, target=v.target, viewpoint=v.viewpoint, attitude=v.attitude)
                    for v in r.viewpoints_attitudes
                ],
                relation_pattern=r.pattern,
                relation_pattern_field=r.pattern_field,
                pattern_fields=r.pattern_labels,
                support_strategies=[
                    GoldStrategy(
                        provider=s.provider,
                        targets=list(s.target),
                        target_kind=sample.target_kind(s.target),
                        strategy=s.strategy_type,
                        content=s.strategy_content,
                    )
                    for s in r.support_strategy
                ],
            )
        )
    return GoldTrajectory(
        sample_id=sample.sample_id,
        case_id=rescue_case_id(sample.sample_id),
        group=sample.group,
        participants=sample.members,
        rows=rows,
        source=sample.source,
    )


def load_gold(path: str | Path) -> GoldTrajectory:
    """Read a `<case_id>.gold.json` written by `import_rescue`."""
    path = Path(path)
    try:
        gold = GoldTrajectory.model_validate_json(_read(path))
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(k) for k in first["loc"])
        raise RescueFormatError(path, f"{loc or 'file'}: {first['msg']}") from None
    if gold.schema_version != GOLD_SCHEMA_VERSION:
        raise RescueFormatError(path, f"schema_version {gold.schema_version} is not {GOLD_SCHEMA_VERSION}")
    return gold
