"""Case cards derived from RESCUE samples, and `import_rescue`, which writes a card and a gold file per sample."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from personas.case import Case, parse_case, write_case
from personas.rescue._format import (
    PATTERN_FIELDS,
    RescueFormatError,
    RescueSample,
    SampleCounts,
    _slug,
    load_rescue,
    rescue_case_id,
)
from personas.rescue._gold import gold_from_sample
from personas.rescue._lexicon import LEXICON_VERSION, warmth_tension
from personas.taxonomy import INTENSITY_MAX, INTENSITY_MIN, patterns_for

# ---- case cards -----------------------------------------------------------------------------------------------

HISTORY_TEXT = "Derived from RESCUE-BENCH; persona traits not annotated (use --enrich)."
# Role words a family participant may be named by, with a generation level (parents 0, children 1,
# grandparents -1 before shifting so the eldest generation present is 0).
ROLE_WORDS: dict[str, tuple[str, int]] = {
    "father": ("father", 0),
    "dad": ("father", 0),
    "mother": ("mother", 0),
    "mom": ("mother", 0),
    "mum": ("mother", 0),
    "stepfather": ("stepfather", 0),
    "stepmother": ("stepmother", 0),
    "parent": ("parent", 0),
    "aunt": ("aunt", 0),
    "uncle": ("uncle", 0),
    "son": ("son", 1),
    "daughter": ("daughter", 1),
    "stepson": ("stepson", 1),
    "stepdaughter": ("stepdaughter", 1),
    "child": ("child", 1),
    "brother": ("brother", 1),
    "sister": ("sister", 1),
    "grandfather": ("grandfather", -1),
    "grandmother": ("grandmother", -1),
    "grandpa": ("grandfather", -1),
    "grandma": ("grandmother", -1),
    "grandson": ("grandson", 2),
    "granddaughter": ("granddaughter", 2),
}
# When a sample has no usable pattern label at all, the card starts from the label RESCUE reports as most
# frequent for the group (TAXONOMY §8), tagged `pattern-unlabelled` so nobody mistakes it for an annotation.
FALLBACK_PATTERNS: dict[str, str] = {"couple": "pursue_withdraw", "family": "cooperative_family_alliance"}


def case_from_sample(sample: RescueSample) -> Case:
    """A case card derived from a RESCUE sample, validated like any card (raises CardError if it cannot be).

    - members: the participants, never the therapist; couple members are `partner`s; a family member named by a
      role word (Father, Mother, Son, ...) takes it as role and generation, others are `participant`, generation 0;
    - baseline emotion and intensity: each member's earliest `internal_emotion`;
    - viewpoints: the earliest annotation of each ordered pair; pairs never annotated are left out;
    - warmth and tension: not in RESCUE; read from the attitude text by `warmth_tension` (ATTITUDE_LEXICON);
    - relation pattern: the first non-empty, in-taxonomy label of the sample (either field);
    - title, setting, presenting problem and history: plain summaries of what the sample annotates.
    """
    group, names = sample.group, sample.members
    notes: list[str] = [
        f"warmth/tension derived from attitude text by {LEXICON_VERSION} (not annotated in RESCUE)",
        "baselines are each member's earliest internal_emotion",
    ]
    if group == "couple" and len(names) != 2:
        raise RescueFormatError(
            sample.source, f"sample {sample.sample_id!r}: a couple needs exactly 2 participants, got {', '.join(names)}"
        )

    roles = _roles(names, group)
    if group == "family" and all(r == "participant" for r, _ in roles.values()):
        notes.append("family roles and generations not annotated (all generation 0)")
    members = []
    for name in names:
        emotion, intensity = _baseline(sample, name)
        if emotion is None:
            notes.append(f"no internal_emotion for {name}: baseline is a neutral placeholder")
        role, generation = roles[name]
        members.append(
            {
                "name": name,
                "role": role,
                "generation": generation,
                "baseline_emotion": emotion or "not annotated in the sample",
                "baseline_intensity": intensity if intensity is not None else 5,
            }
        )

    viewpoints = _first_viewpoints(sample, names)
    pattern, tags = _starting_pattern(sample), ["rescue", group, _slug(sample.sample_id.split("/")[0])]
    if pattern is None:
        pattern = FALLBACK_PATTERNS[group]
        tags.append("pattern-unlabelled")
        notes.append(f"no pattern label in the sample; starting pattern {pattern} is the group's most frequent label")

    data = {
        "title": f"{_join_names(names)} (RESCUE {sample.sample_id})",
        "group": group,
        "setting": f"RESCUE sample {sample.sample_id}: recorded {group} therapy session segment, "
        f"{len(sample.rows)} rows ({len(sample.therapist_rows)} therapist turns).",
        "presenting_problem": _presenting_problem(sample, viewpoints),
        "history": HISTORY_TEXT,
        "members": members,
        "viewpoints": viewpoints,
        "relation_pattern": pattern,
        "tags": tags,
        "provenance": {"source": "rescue", "sample_id": sample.sample_id, "notes": "; ".join(notes) + "."},
    }
    return parse_case(data, case_id=rescue_case_id(sample.sample_id), source=sample.source or sample.sample_id)


def _roles(names: list[str], group: str) -> dict[str, tuple[str, int]]:
    if group == "couple":
        return {n: ("partner", 0) for n in names}
    known = {n: ROLE_WORDS[n.lower()] for n in names if n.lower() in ROLE_WORDS}
    shift = -min((g for _, g in known.values()), default=0)
    return {n: (known[n][0], known[n][1] + shift) if n in known else ("participant", 0) for n in names}


def _baseline(sample: RescueSample, name: str) -> tuple[str | None, int | None]:
    for row in sample.rows:
        for e in row.internal_emotion:
            if e.person.strip() == name and e.intensity is not None and e.emotion_description.strip():
                intensity = int(round(min(INTENSITY_MAX, max(INTENSITY_MIN, float(e.intensity)))))
                return e.emotion_description.strip(), intensity
    return None, None


def _first_viewpoints(sample: RescueSample, names: list[str]) -> list[dict[str, Any]]:
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for row in sample.rows:
        for v in row.viewpoints_attitudes:
            pair = (v.source.strip(), v.target.strip())
            if pair in out or pair[0] == pair[1] or pair[0] not in names or pair[1] not in names:
                continue
            if not v.viewpoint.strip():
                continue
            attitude = v.attitude.strip() or "not annotated"
            warmth, tension = warmth_tension(v.attitude)
            out[pair] = {
                "source": pair[0],
                "target": pair[1],
                "viewpoint": v.viewpoint.strip(),
                "attitude": attitude,
                "warmth": warmth,
                "tension": tension,
            }
    return list(out.values())


def _starting_pattern(sample: RescueSample) -> str | None:
    allowed = patterns_for(sample.group)
    for row in sample.rows:
        for f in PATTERN_FIELDS:
            label = row.field_label(f)
            if label and label in allowed:
                return label
    return None


def _presenting_problem(sample: RescueSample, viewpoints: list[dict[str, Any]]) -> str:
    if viewpoints:
        parts = [f"{v['source']} on {v['target']}: {v['viewpoint']} ({v['attitude']})" for v in viewpoints[:3]]
        return "Opening viewpoints as annotated. " + "; ".join(parts) + "."
    opening = []
    for name in sample.members:
        emotion, intensity = _baseline(sample, name)
        if emotion:
            opening.append(f"{name}: {emotion} ({intensity}/10)")
    if opening:
        return "No viewpoints annotated. Opening emotions: " + "; ".join(opening) + "."
    return "Not annotated in the RESCUE sample."


def _join_names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


# ---- import ---------------------------------------------------------------------------------------------------


class ImportReport(BaseModel):
    """Result of `import_rescue`: one SampleCounts per sample, in input order."""

    model_config = ConfigDict(extra="forbid")

    source: str
    out_dir: str
    samples: list[SampleCounts]

    def totals(self) -> dict[str, int]:
        keys = ("rows", "therapist_rows", "no_dominant_pattern", "strategies", "viewpoints", "emotions")
        out = {k: sum(getattr(s, k) for s in self.samples) for k in keys}
        for f in PATTERN_FIELDS:
            out[f] = sum(s.pattern_labels.get(f, 0) for s in self.samples)
        return out


# Extension point: enrichment. An Enricher takes a derived card and its sample and returns a fuller card, e.g. a
# model that infers age, personality, needs, fears, triggers and softeners from the transcript and records each
# inferred field in `Member.inferred` (with evidence rows and model id). `import_rescue(..., enrich=...)` calls it
# once per card and re-validates the result. The CLI's future `--enrich --model M` builds one; none ships yet.
Enricher = Callable[[Case, RescueSample], Case]


def import_rescue(src: str | Path, out_dir: str | Path, *, enrich: Enricher | None = None) -> ImportReport:
    """Write `<out>/<case_id>.yaml` and `<out>/<case_id>.gold.json` for every sample in `src` (atomic writes)."""
    from personas.common.files import atomic_write_text

    samples = load_rescue(src)
    ids: dict[str, str] = {}
    for s in samples:
        cid = rescue_case_id(s.sample_id)
        if cid in ids:
            problem = f"sample ids {ids[cid]!r} and {s.sample_id!r} both map to case id {cid!r}"
            raise RescueFormatError(s.source, problem)
        ids[cid] = s.sample_id

    derived = []
    for s in samples:  # derive everything first: a bad sample fails the import before any file is written
        case = case_from_sample(s)
        if enrich is not None:
            enriched = enrich(case, s)
            case = parse_case(enriched.model_dump(mode="json", exclude={"id"}), case_id=case.id, source=s.source)
        derived.append((s, case, gold_from_sample(s)))

    out = Path(out_dir)
    report = ImportReport(source=str(src), out_dir=str(out), samples=[])
    for s, case, gold in derived:
        case_path = write_case(case, out)
        gold_path = out / f"{case.id}.gold.json"
        atomic_write_text(gold_path, gold.model_dump_json(indent=2) + "\n")
        report.samples.append(s.counts().model_copy(update={"case_path": str(case_path), "gold_path": str(gold_path)}))
    return report
