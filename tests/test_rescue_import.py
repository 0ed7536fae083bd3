"""RESCUE parser and importer, on the real samples (when present) and on our own fixture.

Expected counts are computed here straight from the raw JSON, independently of personas.rescue.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from personas.case import load_case
from personas.common.errors import UserError
from personas.library import validate_paths
from personas.rescue import (
    GOLD_SCHEMA_VERSION,
    RescueFormatError,
    RescueSample,
    case_from_sample,
    gold_from_sample,
    import_rescue,
    load_gold,
    load_rescue,
    rescue_case_id,
    warmth_tension,
)
from personas.taxonomy import TargetKind, patterns_for

FIXTURE = Path(__file__).parent / "fixtures" / "rescue_mini.jsonl"
FIELDS = ("relation_pattern", "relation_cycle_state")


def raw_samples(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _is_placeholder(row: dict, field: str) -> bool:
    """`""` with a present-but-blank reason and no evidence rows is not a review (family client rows)."""
    reason, evidence = {
        "relation_pattern": ("relation_pattern_reason", "relation_pattern_evidence_rows"),
        "relation_cycle_state": ("relation_cycle_reason", "relation_cycle_evidence_rows"),
    }[field]
    return row.get(field) == "" and reason in row and not (row[reason] or "").strip() and not row.get(evidence)


def expected_counts(raw: dict) -> dict:
    rows = raw["rows"]
    no_dominant = 0
    for r in rows:
        values = [r.get(f) for f in FIELDS if r.get(f) is not None and not _is_placeholder(r, f)]
        no_dominant += bool(values) and values[0] == ""
    return {
        "rows": len(rows),
        "therapist_rows": sum(r["primary_speaker"] == "Therapist" for r in rows),
        "pattern_labels": {f: sum(isinstance(r.get(f), str) and r[f] != "" for r in rows) for f in FIELDS},
        "no_dominant_pattern": no_dominant,
        "strategies": sum(len(r.get("support_strategy") or []) for r in rows),
        "viewpoints": sum(len(r.get("viewpoints_attitudes") or []) for r in rows),
        "emotions": sum(len(r.get("internal_emotion") or []) for r in rows),
    }


def check_import(src: Path, out: Path) -> None:
    """The assertions shared by the real data and the fixture."""
    raws = raw_samples(src)
    report = import_rescue(src, out)
    assert [s.sample_id for s in report.samples] == [r["sample_id"] for r in raws]

    for raw, counts in zip(raws, report.samples, strict=True):
        exp = expected_counts(raw)
        got = counts.model_dump(include=set(exp))
        assert got == exp, raw["sample_id"]

        # one card per sample, the right participants, never the therapist; it validates from disk
        case = load_case(counts.case_path)
        assert case.id == rescue_case_id(raw["sample_id"]) == Path(counts.case_path).stem
        assert case.member_names == [p for p in raw["participants"] if p != "Therapist"]
        assert "Therapist" not in case.member_names
        assert case.provenance.source == "rescue" and case.provenance.sample_id == raw["sample_id"]
        assert "warmth/tension" in case.provenance.notes
        assert case.relation_pattern in patterns_for(case.group)
        for vp in case.viewpoints:
            assert vp.source in case.member_names and vp.target in case.member_names

        # baseline = earliest internal_emotion of each member; a neutral, labelled placeholder when there is none
        for m in case.members:
            emotions = [e for r in raw["rows"] for e in (r.get("internal_emotion") or []) if e["person"] == m.name]
            if emotions:
                first = emotions[0]
                assert m.baseline_emotion == first["emotion_description"]
                assert m.baseline_intensity == round(first["intensity"])
            else:
                assert (m.baseline_emotion, m.baseline_intensity) == ("not annotated in the sample", 5)
                assert f"no internal_emotion for {m.name}" in case.provenance.notes

        # the gold trajectory holds every row and every annotation, as counted from the raw JSON
        gold = load_gold(counts.gold_path)
        assert gold.schema_version == GOLD_SCHEMA_VERSION
        assert gold.sample_id == raw["sample_id"] and gold.case_id == case.id and gold.group == case.group
        assert len(gold.rows) == exp["rows"]
        assert [g.row_index for g in gold.rows] == [r.get("row_index", i) for i, r in enumerate(raw["rows"], 1)]
        assert [g.speaker for g in gold.rows] == [r["primary_speaker"] for r in raw["rows"]]
        assert sum(len(g.support_strategies) for g in gold.rows) == exp["strategies"]
        assert sum(len(g.viewpoints) for g in gold.rows) == exp["viewpoints"]
        assert sum(len(g.emotions) for g in gold.rows) == exp["emotions"]
        for f in FIELDS:
            assert sum(bool(g.pattern_fields.get(f)) for g in gold.rows) == exp["pattern_labels"][f]
        assert sum(g.relation_pattern == "" for g in gold.rows) == exp["no_dominant_pattern"]
        for g, r in zip(gold.rows, raw["rows"], strict=True):
            if isinstance(r.get("relation_pattern"), str) and r["relation_pattern"]:
                assert (g.relation_pattern, g.relation_pattern_field) == (r["relation_pattern"], "relation_pattern")
            elif r.get("relation_pattern") is None and r.get("relation_cycle_state"):
                expected = (r["relation_cycle_state"], "relation_cycle_state")
                assert (g.relation_pattern, g.relation_pattern_field) == expected
            for gs, rs in zip(g.support_strategies, r.get("support_strategy") or [], strict=True):
                assert gs.targets == rs["target"] and gs.strategy == rs["strategy_type"]

    assert validate_paths([out])  # the whole output folder validates, ids unique


# ---- real data ------------------------------------------------------------------------------------------------


@pytest.mark.rescue
def test_import_real_samples(rescue_dir: Path, tmp_path: Path) -> None:
    check_import(rescue_dir / "samples.jsonl", tmp_path / "cases")
    assert len(list((tmp_path / "cases").glob("*.yaml"))) == 6
    assert len(list((tmp_path / "cases").glob("*.gold.json"))) == 6


@pytest.mark.rescue
def test_real_samples_pattern_variants(rescue_dir: Path) -> None:
    samples = {s.sample_id.split("/")[0]: s for s in load_rescue(rescue_dir / "samples.jsonl")}
    # these two only label relation_cycle_state, on therapist rows
    for name in ("annie_and_mau", "josh_and_natasha"):
        s = samples[name]
        labelled = [r for r in s.rows if r.pattern]
        assert labelled and all(r.pattern_field == "relation_cycle_state" and r.is_therapist for r in labelled)
        assert all(r.relation_pattern is None for r in s.rows)
    # alan_and_evelyn labels relation_pattern on client rows; the therapist row copies it as relation_cycle_state
    s = samples["alan_and_evelyn"]
    assert {r.pattern_field for r in s.rows if r.pattern} == {"relation_pattern", "relation_cycle_state"}
    # every row with a label is read, in either field
    for s in samples.values():
        for r in s.rows:
            if r.relation_pattern or r.relation_cycle_state:
                assert r.pattern


@pytest.mark.rescue
def test_real_family_sample(rescue_dir: Path) -> None:
    family = next(s for s in load_rescue(rescue_dir / "samples.jsonl") if s.sample_id.startswith("family_therapy/"))
    assert family.group == "family" and family.members == ["Ben", "Heather", "Don"]
    gold = gold_from_sample(family)
    targets = [(tuple(s.targets), s.target_kind) for r in gold.rows for s in r.support_strategies]
    assert (("Heather", "Ben"), TargetKind.SUBGROUP) in targets
    assert (("Don", "Ben"), TargetKind.SUBGROUP) in targets
    assert (("Family",), TargetKind.WHOLE_GROUP) in targets
    assert sum(t == ("Heather", "Ben") for t, _ in targets) == 2  # order kept, not merged with (Ben, Heather)
    assert sum(t == ("Ben", "Heather") for t, _ in targets) == 1
    # client rows carry relation_cycle_state "" with a blank reason: no label, not "no dominant pattern"
    clients = [r for r in family.rows if not r.is_therapist]
    assert clients and all(r.pattern is None for r in clients)
    assert [r.row_index for r in family.rows if r.pattern == ""] == [1, 2]
    # the therapist's own emotion stays in the gold rows but never becomes a member
    assert any(e.person == "Therapist" for r in gold.rows for e in r.emotions)
    assert "Therapist" not in case_from_sample(family).member_names


# ---- our fixture ----------------------------------------------------------------------------------------------


def test_import_fixture(tmp_path: Path) -> None:
    check_import(FIXTURE, tmp_path)


def test_fixture_quirks() -> None:
    samples = {s.sample_id: s for s in load_rescue(FIXTURE)}
    mira = samples["mira_and_tom/001_fixture_segment01"]
    assert mira.group == "couple"
    assert [r.pattern for r in mira.rows] == [
        "",
        "",
        "attack_attack",
        "attack_attack",
        "repair_softening",
        "constructive_alignment",
    ]
    last = mira.rows[-1]  # both fields present and disagreeing: relation_pattern wins, both are kept
    assert last.pattern_field == "relation_pattern"
    assert last.pattern_labels == {
        "relation_pattern": "constructive_alignment",
        "relation_cycle_state": "repair_softening",
    }
    assert case_from_sample(mira).relation_pattern == "attack_attack"  # first non-empty label

    ines = samples["ines_and_kofi/002_fixture_segment03"]
    assert ines.group == "couple"  # no scenario, no family marker
    assert ines.rows[1].target == ["Ines"]  # a bare string target becomes a list
    assert ines.rows[3].internal_emotion == [] and ines.rows[3].support_strategy == []  # nulls read as empty
    assert [r.pattern_field for r in ines.rows if r.pattern is not None] == ["relation_cycle_state"] * 3
    assert ines.rows[5].pattern == "" and ines.rows[0].pattern is None

    fam = samples["family_therapy/901/merged"]
    case = case_from_sample(fam)
    assert [(m.name, m.role, m.generation) for m in case.members] == [
        ("Mother", "mother", 0),
        ("Son", "son", 1),
        ("Daughter", "daughter", 1),
    ]
    kinds = {tuple(s.targets): fam.target_kind(s.target) for r in fam.rows for s in r.strategies}
    assert kinds == {
        ("Family",): TargetKind.WHOLE_GROUP,
        ("Mother", "Daughter"): TargetKind.SUBGROUP,
        ("Son",): TargetKind.INDIVIDUAL,
    }
    assert [r.pattern for r in fam.rows] == [
        "",
        None,
        None,
        None,
        "cross_generational_coalition",
        "escalation_conflict",
        None,
    ]

    okafor = samples["okafor_household/004_fixture"]
    assert okafor.group == "family"  # only the `Family` label says so
    assert case_from_sample(okafor).relation_pattern == "mutual_disengagement"


def test_derived_warmth_tension_follow_the_lexicon() -> None:
    case = case_from_sample(load_rescue(FIXTURE)[0])
    mira_tom = case.viewpoint("Mira", "Tom")
    assert (mira_tom.attitude, mira_tom.warmth, mira_tom.tension) == ("blaming and resentful", 2.5, 9.0)
    assert warmth_tension("") == (5.0, 5.0)
    assert warmth_tension("matter-of-fact") == (5.0, 5.0)
    w_hostile, t_hostile = warmth_tension("hostile")
    w_warm, t_warm = warmth_tension("loving and deeply encouraging")
    assert t_hostile > 5 > w_hostile and w_warm > 5 > t_warm
    assert warmth_tension("slightly dismissive")[0] > warmth_tension("dismissive")[0]  # softened
    assert warmth_tension("hopeless") != warmth_tension("hopeful")  # longest stem wins
    assert all(0 <= x <= 10 for x in warmth_tension("hostile contemptuous blaming resentful bitter"))


def test_case_id_sanitising() -> None:
    sample_id = "alan_and_evelyn/001_s01e01_ct25_segment04"
    assert rescue_case_id(sample_id) == "rescue-alan_and_evelyn-001_s01e01_ct25_segment04"
    assert rescue_case_id("Family_Therapy/013/merged") == "rescue-family_therapy-013-merged"
    assert rescue_case_id("a b/c.d!") == "rescue-ab-cd"


def test_enrich_extension_point(tmp_path: Path) -> None:
    seen = []

    def enrich(case, sample):
        seen.append(sample.sample_id)
        members = [m.model_copy(update={"core_need": "to be asked"}) for m in case.members]
        return case.model_copy(update={"members": members})

    import_rescue(FIXTURE, tmp_path, enrich=enrich)
    assert len(seen) == 4
    case = load_case(tmp_path / f"{rescue_case_id(seen[0])}.yaml")
    assert {m.core_need for m in case.members} == {"to be asked"}


# ---- bad input ------------------------------------------------------------------------------------------------


def _one_line(err: Exception) -> str:
    text = str(err)
    assert "\n" not in text
    return text


def test_bad_jsonl_names_file_and_line(tmp_path: Path) -> None:
    lines = FIXTURE.read_text().splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text(lines[0] + "\n" + "{not json\n")
    with pytest.raises(RescueFormatError) as exc:
        load_rescue(bad)
    assert _one_line(exc.value).startswith(f"{bad}:2: not valid JSON")
    assert isinstance(exc.value, UserError)

    raw = json.loads(lines[0])
    raw["rows"][2]["internal_emotion"][0]["intensity"] = "very"
    bad.write_text(lines[1] + "\n\n" + json.dumps(raw) + "\n")
    with pytest.raises(RescueFormatError) as exc:
        load_rescue(bad)
    msg = _one_line(exc.value)
    sample = "sample 'mira_and_tom/001_fixture_segment01'"
    assert msg == f"{bad}:3: {sample}: rows[2].internal_emotion[0].intensity: must be a number (got 'very')"

    del raw["sample_id"]
    bad.write_text(json.dumps(raw) + "\n")
    with pytest.raises(RescueFormatError, match=r"bad.jsonl:1: sample_id: required field is missing"):
        load_rescue(bad)

    bad.write_text(lines[0] + "\n" + lines[0] + "\n")
    with pytest.raises(RescueFormatError, match="duplicate sample_id 'mira_and_tom/001_fixture_segment01'"):
        load_rescue(bad)

    bad.write_text(json.dumps({"sample_id": "x", "participants": ["Therapist", "A"], "rows": [{}]}) + "\n")
    with pytest.raises(RescueFormatError, match="needs at least 2 participants"):
        load_rescue(bad)


def test_bad_paths(tmp_path: Path) -> None:
    with pytest.raises(RescueFormatError, match="no such file or folder"):
        load_rescue(tmp_path / "missing.jsonl")
    with pytest.raises(RescueFormatError, match="folder holds no .json or .jsonl files"):
        load_rescue(tmp_path)
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(RescueFormatError, match="expected a .jsonl or .json file"):
        load_rescue(tmp_path / "notes.txt")


def test_folder_of_per_sample_json_files(tmp_path: Path) -> None:
    """RESCUE's per-sample layout: <couple>/<segment>.json; an id-less file takes its relative path as id."""
    raws = raw_samples(FIXTURE)
    (tmp_path / "mira_and_tom").mkdir()
    first = dict(raws[0])
    del first["sample_id"]
    (tmp_path / "mira_and_tom" / "001_fixture_segment01.json").write_text(json.dumps(first, indent=1))
    (tmp_path / "more.jsonl").write_text("\n".join(json.dumps(r) for r in raws[1:]) + "\n")
    samples = load_rescue(tmp_path)
    assert sorted(s.sample_id for s in samples) == sorted(r["sample_id"] for r in raws)

    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(RescueFormatError, match=r"broken.json: not valid JSON"):
        load_rescue(tmp_path)


def test_couple_with_three_participants_is_rejected() -> None:
    raw = raw_samples(FIXTURE)[0]
    raw["participants"] = ["Mira", "Tom", "Lou"]
    with pytest.raises(RescueFormatError, match="a couple needs exactly 2 participants"):
        case_from_sample(RescueSample.model_validate(raw))


def test_colliding_case_ids_are_rejected(tmp_path: Path) -> None:
    raws = raw_samples(FIXTURE)[:2]
    raws[1] = {**raws[0], "sample_id": raws[0]["sample_id"].upper()}
    src = tmp_path / "x.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in raws) + "\n")
    with pytest.raises(RescueFormatError, match="both map to case id"):
        import_rescue(src, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing written
