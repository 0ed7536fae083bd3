"""Benchmark instance construction: counts checked against raw rows, no future leakage, reproducible sampling,
subgroup modes, and probe-mode instances from simulated sessions."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from judges.bench import (
    CHECKPOINTS_PER_SAMPLE,
    EARLY_ROWS,
    MIN_DIALOGUE_WORDS,
    Task,
    build_probe_instances,
    build_rescue_instances,
    count_instances,
    limit_instances,
)
from judges.bench.render import build_prompt
from personas.library import resolve_case
from personas.rescue import load_rescue
from personas.taxonomy import patterns_for, strategies_for
from simulator.records import (
    InnerState,
    ObservedViewpoint,
    SessionRecord,
    SessionStatus,
    SupporterDecision,
    TrackerState,
    Turn,
)

FIXTURE = Path(__file__).parent / "fixtures" / "bench_mini.jsonl"
GROUP_LABELS = {"Couple", "Family"}


# ---- independent counts from raw rows ----------------------------------------------------------------------------


def raw_samples(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def names(value) -> list[str]:
    value = [value] if isinstance(value, str) else (value or [])
    return [n.strip() for n in value if n and n.strip() and n.strip() != "Therapist"]


def enough_words(text: str) -> bool:
    return sum(any(c.isalpha() for c in w) for w in (text or "").split()) >= MIN_DIALOGUE_WORDS


def expected_counts(samples: list[dict]) -> dict[str, Counter]:
    """Instances per task and scenario, recomputed from the raw JSON with the documented rules."""
    out = {t.value: Counter() for t in Task}
    for s in samples:
        group, rows, members = s["scenario"], s["rows"], s["participants"]
        closed = set(members) | {"Couple" if group == "couple" else "Family"}
        ther = [r["primary_speaker"] == "Therapist" for r in rows]
        yes = sum(not ther[i] and ther[i + 1] for i in range(len(rows) - 1))
        no = sum(not ther[i] and not ther[i + 1] for i in range(len(rows) - 1))
        out["itp"][group] += 2 * min(yes, no)
        for r in rows:
            if r["primary_speaker"] != "Therapist":
                continue
            rcs, rp = r.get("relation_cycle_state"), r.get("relation_pattern")
            label = rcs.strip() if isinstance(rcs, str) and rcs.strip() else (rp or "").strip()
            out["rpp"][group] += label in patterns_for(group)
            strategies = r.get("support_strategy") or []
            if strategies:
                target = names(strategies[0].get("target")) or names(r.get("target"))
                if target and all(n in closed for n in target):
                    out["stp"][group] += 1
                    out["ssp"][group] += strategies[0].get("strategy_type", "").strip() in strategies_for(group)
        er = vp = 0
        for pos, r in enumerate(rows, start=1):
            sp = r["primary_speaker"].strip()
            if pos <= EARLY_ROWS or sp == "Therapist" or sp in GROUP_LABELS or not enough_words(r["dialogue_cleaned"]):
                continue
            emo = [e for e in r.get("internal_emotion") or [] if e["person"].strip() == sp]
            if (
                emo
                and emo[0]["emotion_description"].strip()
                and isinstance(emo[0].get("intensity"), int | float)
                and 0 <= emo[0]["intensity"] <= 10
            ):
                er += 1
            views = r.get("viewpoints_attitudes") or []
            vp += any(
                v["source"].strip() == sp and v.get("target", "").strip() and v.get("viewpoint", "").strip()
                for v in views
            )
        out["er"][group] += min(CHECKPOINTS_PER_SAMPLE, er)
        out["vp"][group] += min(CHECKPOINTS_PER_SAMPLE, vp)
    return out


@pytest.mark.rescue
@pytest.mark.parametrize("subgroups", ["keep", "collapse"])
def test_counts_on_rescue_samples_match_raw_rows(rescue_dir, subgroups):
    path = rescue_dir / "samples.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    built = build_rescue_instances(load_rescue(path), subgroups=subgroups)
    counts = count_instances(built.instances)
    expected = expected_counts(raw_samples(path))
    for task in Task:
        got = counts.get(task.value, {"couple": 0, "family": 0})
        assert (got["couple"], got["family"]) == (expected[task.value]["couple"], expected[task.value]["family"]), task
    assert all(counts[t.value]["couple"] > 0 and counts[t.value]["family"] > 0 for t in Task)


@pytest.mark.rescue
def test_subgroup_modes_on_rescue_samples(rescue_dir):
    path = rescue_dir / "samples.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    raw = raw_samples(path)
    # multi-person (not whole-group) targets on therapist strategy rows, counted from the raw JSON
    multi = 0
    for s in raw:
        for r in s["rows"]:
            if r["primary_speaker"] == "Therapist" and r.get("support_strategy"):
                target = names(r["support_strategy"][0].get("target")) or names(r.get("target"))
                multi += len(target) > 1 and not set(target) >= set(s["participants"])
    assert multi > 0
    samples = load_rescue(path)
    keep = [i for i in build_rescue_instances(samples, tasks=[Task.STP]).instances]
    collapse = [i for i in build_rescue_instances(samples, tasks=[Task.STP], subgroups="collapse").instances]
    assert sum(i.gold_target_kind == "subgroup" for i in keep) == multi
    assert sum(" & " in i.gold_label for i in keep) == multi
    assert not any(" & " in i.gold_label for i in collapse)
    assert not any(" & " in c for i in collapse for c in i.candidates)
    whole_keep = sum(i.gold_label in GROUP_LABELS for i in keep)
    assert sum(i.gold_label in GROUP_LABELS for i in collapse) == whole_keep + multi


@pytest.mark.rescue
def test_er_vp_sampling_caps_and_is_reproducible(rescue_dir):
    samples = load_rescue(rescue_dir / "samples.jsonl")
    a = build_rescue_instances(samples, tasks=[Task.ER, Task.VP, Task.ITP])
    b = build_rescue_instances(samples, tasks=[Task.ER, Task.VP, Task.ITP])
    assert [i.id for i in a.instances] == [i.id for i in b.instances]
    per_sample = Counter((i.task, i.sample_id) for i in a.instances if i.task in (Task.ER, Task.VP))
    assert max(per_sample.values()) == CHECKPOINTS_PER_SAMPLE
    assert a.stats.er_candidates > sum(i.task is Task.ER for i in a.instances)  # some sample had more than 5
    other = build_rescue_instances(samples, tasks=[Task.ER, Task.VP, Task.ITP], seed=7)
    assert Counter(i.task for i in other.instances) == Counter(i.task for i in a.instances)
    assert {i.id for i in other.instances} != {i.id for i in a.instances}


# ---- rules on our own fixture -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fixture_samples():
    return load_rescue(FIXTURE)


def by_task(built, task: Task) -> dict[str, object]:
    return {i.id.split(":", 1)[1]: i for i in built.instances if i.task is task}


def test_fixture_counts_and_drop_reasons(fixture_samples):
    built = build_rescue_instances(fixture_samples)
    assert count_instances(built.instances) == {
        "itp": {"couple": 8, "family": 6, "samples_couple": 1, "samples_family": 1},
        "rpp": {"couple": 2, "family": 4, "samples_couple": 1, "samples_family": 1},
        "stp": {"couple": 3, "family": 4, "samples_couple": 1, "samples_family": 1},
        "ssp": {"couple": 2, "family": 4, "samples_couple": 1, "samples_family": 1},
        "er": {"couple": 4, "family": 5, "samples_couple": 1, "samples_family": 1},
        "vp": {"couple": 3, "family": 2, "samples_couple": 1, "samples_family": 1},
    }
    s = built.stats
    assert (s.itp_samples_dropped, s.rpp_no_dominant, s.rpp_off_taxonomy, s.rpp_field_disagreements) == (1, 1, 1, 1)
    assert (s.stp_unresolved, s.ssp_off_taxonomy) == (1, 1)
    assert count_instances(built.instances) == expected_counts_as_dict(raw_samples(FIXTURE))


def expected_counts_as_dict(raw):
    exp = expected_counts(raw)
    return {
        t: {"couple": c["couple"], "family": c["family"], "samples_couple": 1, "samples_family": 1}
        for t, c in exp.items()
    }


def test_itp_labels_and_context_end_at_the_decision(fixture_samples):
    built = build_rescue_instances(fixture_samples, tasks=[Task.ITP])
    itp = by_task(built, Task.ITP)
    couple = {k: v for k, v in itp.items() if k.startswith("rita")}
    assert {int(k.rsplit(":", 1)[1]): v.gold_label for k, v in couple.items()} == {
        1: "no",
        2: "yes",
        4: "no",
        5: "no",
        6: "yes",
        8: "yes",
        10: "no",
        11: "yes",
    }
    for inst in itp.values():
        assert inst.context[-1].index == inst.row and inst.context[-1].speaker != "Therapist"
    per_sample = Counter((i.sample_id, i.gold_label) for i in itp.values())
    assert per_sample[("family_fixture/002_bench", "yes")] == per_sample[("family_fixture/002_bench", "no")] == 3


def test_rpp_reads_cycle_state_first_and_hides_the_turn(fixture_samples):
    built = build_rescue_instances(fixture_samples, tasks=[Task.RPP])
    rpp = by_task(built, Task.RPP)
    turn7 = rpp["rita_and_sam/001_bench_fixture:7"]
    assert turn7.gold_label == "pursue_withdraw"  # relation_pattern says repair_softening on the same row
    assert [r.index for r in turn7.context] == [1, 2, 3, 4, 5, 6]
    assert "rita_and_sam/001_bench_fixture:9" not in rpp  # "" = no dominant pattern
    assert "rita_and_sam/001_bench_fixture:12" not in rpp  # off-taxonomy label
    first = rpp["family_fixture/002_bench:1"]
    assert first.context == [] and first.candidates == list(patterns_for("family"))


def test_support_targets_keep_and_collapse(fixture_samples):
    keep = by_task(build_rescue_instances(fixture_samples, tasks=[Task.STP, Task.SSP]), Task.STP)
    assert keep["rita_and_sam/001_bench_fixture:7"].gold_label == "Couple"  # empty strategy target -> row target
    assert keep["family_fixture/002_bench:5"].gold_label == "Lena & Kai"  # member order, not annotation order
    assert keep["family_fixture/002_bench:7"].gold_target_kind == "subgroup"
    assert keep["family_fixture/002_bench:10"].gold_label == "Family"  # every member named = whole group
    assert keep["family_fixture/002_bench:1"].candidates == [
        "Lena",
        "Kai",
        "Omar",
        "Lena & Kai",
        "Lena & Omar",
        "Family",
    ]
    collapse = by_task(build_rescue_instances(fixture_samples, tasks=[Task.STP], subgroups="collapse"), Task.STP)
    assert collapse["family_fixture/002_bench:5"].gold_label == "Family"
    assert collapse["family_fixture/002_bench:5"].gold_target_kind == "whole_group"
    assert collapse["family_fixture/002_bench:1"].candidates == ["Lena", "Kai", "Omar", "Family"]
    ssp = by_task(build_rescue_instances(fixture_samples, tasks=[Task.SSP]), Task.SSP)
    assert ssp["family_fixture/002_bench:5"].known_target == "Lena & Kai"
    assert ssp["family_fixture/002_bench:5"].gold_label == "track"
    assert "rita_and_sam/001_bench_fixture:9" not in ssp  # "validation" is not a strategy label


def test_er_vp_filters(fixture_samples):
    built = build_rescue_instances(fixture_samples, tasks=[Task.ER, Task.VP])
    er, vp = by_task(built, Task.ER), by_task(built, Task.VP)
    couple_er = sorted(int(k.rsplit(":", 1)[1]) for k in er if k.startswith("rita"))
    assert couple_er == [4, 6, 10, 11]  # 1-2 early, 5 very short, 8 intensity 11 is invalid
    assert er["rita_and_sam/001_bench_fixture:6"].gold_intensity == 8
    assert [r.index for r in er["rita_and_sam/001_bench_fixture:6"].context][-1] == 6  # the row itself is read
    v10 = vp["rita_and_sam/001_bench_fixture:10"]
    assert [(t.source, t.target) for t in v10.gold_viewpoints] == [("Sam", "Rita")]  # empty viewpoint dropped
    assert "Sam" not in v10.candidates and "Rita" in v10.candidates


def test_context_size_cuts_old_rows_only(fixture_samples):
    built = build_rescue_instances(fixture_samples, tasks=[Task.RPP], context_size=3)
    inst = by_task(built, Task.RPP)["family_fixture/002_bench:10"]
    assert [r.index for r in inst.context] == [7, 8, 9] and inst.omitted_rows == 6
    prompt, _ = build_prompt([inst])
    assert "6 earlier rows not shown" in prompt.context
    assert "real step for all three" not in prompt.context + prompt.instructions  # the predicted turn stays hidden
    everything = by_task(build_rescue_instances(fixture_samples, tasks=[Task.RPP], context_size=0), Task.RPP)
    assert len(everything["family_fixture/002_bench:10"].context) == 9


def test_limit_is_per_task_nested_and_reproducible(fixture_samples):
    built = build_rescue_instances(fixture_samples).instances
    two, three = limit_instances(built, 2, 1), limit_instances(built, 3, 1)
    assert Counter(i.task for i in two) == {t: 2 for t in Task}
    assert {i.id for i in two} <= {i.id for i in three}
    assert [i.id for i in two] == [i.id for i in limit_instances(built, 2, 1)]
    assert limit_instances(built, None, 1) == list(built)


# ---- probe mode ------------------------------------------------------------------------------------------------


def _member(index: int, speaker: str, text: str, emotion: str = "", intensity: int = 5, tracker=None) -> Turn:
    inner = InnerState(landed="it landed", emotion=emotion, intensity=intensity, felt_heard=4) if emotion else None
    return Turn(index=index, speaker=speaker, kind="member", text=text, inner=inner, tracker=tracker)


def _supporter(index: int, targets: list[str], strategy: str | None, tracker=None) -> Turn:
    decision = SupporterDecision(after_turn=index - 1, speak=True, targets=targets, strategy=strategy, text="...")
    return Turn(
        index=index,
        speaker="Therapist",
        kind="supporter",
        text="Let us pause on that for a moment.",
        decision=decision,
        tracker=tracker,
    )


def _tracker(pattern: str, views: list[tuple[str, str, str]] = ()) -> TrackerState:
    return TrackerState(
        pattern=pattern,
        viewpoints=[
            ObservedViewpoint(source=s, target=t, viewpoint=v, attitude="tense", warmth=4, tension=6)
            for s, t, v in views
        ],
    )


def probe_session(status: SessionStatus = SessionStatus.COMPLETED) -> SessionRecord:
    case = resolve_case("carter-family")  # members Renee, Marcus, Kayla, Jordan
    turns = [
        _member(
            1,
            "Renee",
            "Nobody in this house listens to me anymore.",
            "feels ignored",
            7,
            _tracker("escalation_conflict"),
        ),
        _member(2, "Marcus", "Because you only ever bring up what we do wrong.", "feels criticised", 6),
        _member(
            3,
            "Kayla",
            "Can we not do this again tonight, please?",
            "feels weary",
            6,
            _tracker("escalation_conflict", [("Kayla", "Renee", "she starts the fights"), ("Renee", "Kayla", "x")]),
        ),
        _supporter(4, ["Renee", "Marcus"], "enact", _tracker("escalation_conflict")),
        _member(
            5,
            "Renee",
            "Marcus, I am tired of carrying this alone.",
            "feels exhausted and alone",
            8,
            _tracker("pursue_withdraw", [("Renee", "Marcus", "he leaves her alone with it")]),
        ),
        _member(
            6,
            "Marcus",
            "I did not know you felt that alone.",
            "feels surprised and sorry",
            5,
            _tracker("repair_softening"),
        ),
        _supporter(7, ["Family"], "reframe"),
        _member(8, "Jordan", "I guess we all kind of do that to each other.", "feels hopeful", 4),
        _member(9, "Kayla", "Yes, and maybe we could stop now.", "feels cautious", 4),
        _supporter(10, ["Kayla"], None),
    ]
    return SessionRecord(
        session_id="s1",
        case=case,
        supporter="baseline:scripted",
        models={},
        seed=1,
        max_turns=10,
        status=status,
        turns=turns,
    )


def test_probe_instances_take_gold_from_the_simulator():
    built = build_probe_instances([("run-a/s1", probe_session())])
    got = {t: [i for i in built.instances if i.task is t] for t in Task}
    itp = {i.row: i.gold_label for i in got[Task.ITP]}
    assert sorted(r for r, g in itp.items() if g == "yes") == [3, 6, 9]  # the supporter spoke next
    no = [r for r, g in itp.items() if g == "no"]
    assert len(no) == 3 and set(no) <= {1, 2, 5, 8}  # member followed member; balanced down from 4
    assert [(i.row, i.gold_label) for i in got[Task.RPP]] == [
        (4, "escalation_conflict"),
        (7, "repair_softening"),
        (10, "repair_softening"),
    ]
    assert [(i.row, i.gold_label) for i in got[Task.STP]] == [(4, "Renee & Marcus"), (7, "Family"), (10, "Kayla")]
    assert got[Task.STP][0].candidates == ["Renee", "Marcus", "Kayla", "Jordan", "Renee & Marcus", "Family"]
    assert [(i.row, i.gold_label, i.known_target) for i in got[Task.SSP]] == [
        (4, "enact", "Renee & Marcus"),
        (7, "reframe", "Family"),
    ]
    assert [(i.row, i.gold_emotion, i.gold_intensity) for i in got[Task.ER]][:2] == [
        (3, "feels weary", 6.0),
        (5, "feels exhausted and alone", 8.0),
    ]
    assert len(got[Task.ER]) == 5  # rows 3, 5, 6, 8, 9 qualify; 1-2 are early
    assert [(i.row, [(v.source, v.target) for v in i.gold_viewpoints]) for i in got[Task.VP]] == [
        (3, [("Kayla", "Renee")]),
        (5, [("Renee", "Marcus")]),
    ]
    assert all(i.origin == "probe" and i.sample_id == "run-a/s1" for i in built.instances)
    for inst in got[Task.RPP] + got[Task.STP]:
        assert inst.context[-1].index == inst.row - 1
