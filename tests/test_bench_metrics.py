"""Benchmark metrics on hand-made cases, answer cleaning, and the runner's handling of failures, batches and
resumption (FakeModelClient records every call)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from judges.bench import (
    BenchSettings,
    ResultStore,
    Task,
    answer_schema,
    batch_schema,
    binary_metrics,
    build_rescue_instances,
    clean_ranking,
    er_metrics,
    intensity_match,
    plan_rescue,
    published_row,
    rank_of,
    ranking_metrics,
    run_bench,
    run_instances,
    vp_metrics,
)
from judges.bench.report import load_published
from personas.rescue import load_rescue
from simulator.llm.fake import FakeModelClient

FIXTURE = Path(__file__).parent / "fixtures" / "bench_mini.jsonl"
approx = pytest.approx


# ---- ITP ------------------------------------------------------------------------------------------------------


def test_binary_metrics_hand_case():
    golds = [True, True, True, False, False, False]
    preds = [True, True, False, True, False, False]
    m = binary_metrics(golds, preds)
    assert (m.tp, m.fp, m.fn, m.tn) == (2, 1, 1, 2)
    assert m.precision == approx(2 / 3) and m.recall == approx(2 / 3) and m.f1 == approx(2 / 3)
    assert m.accuracy == approx(4 / 6) and m.balanced_accuracy == approx(2 / 3)
    assert m.per_class["no"].precision == approx(2 / 3) and m.per_class["no"].support == 3


def test_binary_metrics_missing_counts_as_wrong_and_zero_division_is_zero():
    m = binary_metrics([True, False], [None, None])
    assert (m.tp, m.fp, m.fn, m.tn, m.missing) == (0, 1, 1, 0, 2)
    assert m.precision == 0.0 and m.recall == 0.0 and m.f1 == 0.0 and m.accuracy == 0.0
    all_no = binary_metrics([False, False], [False, False])
    assert all_no.precision == 0.0 and all_no.recall == 0.0 and all_no.accuracy == 1.0
    assert all_no.balanced_accuracy == 0.5  # recall on "yes" is 0 by convention when it has no support
    with pytest.raises(ValueError):
        binary_metrics([True], [])


# ---- rankings --------------------------------------------------------------------------------------------------


def test_rank_of_first_occurrence_and_top3_only():
    assert rank_of("b", ["a", "b", "b"]) == 2
    assert rank_of("d", ["a", "b", "c", "d"]) == 0
    assert rank_of("a", []) == 0


def test_ranking_metrics_hand_case_with_missing_and_ties():
    labels = ["x", "y", "z", "w"]  # "w" never occurs: it still counts (as 0) in the macro average
    golds = ["x", "x", "y", "z", "y"]
    rankings = [["x", "y", "z"], ["y", "x", "z"], ["z", "x", "y"], [], ["y", "z", "x"]]
    m = ranking_metrics(golds, rankings, labels)
    assert m.n == 5 and m.missing == 1
    assert m.recall_at_1 == approx(2 / 5) == m.accuracy
    assert m.recall_at_2 == approx(3 / 5) and m.recall_at_3 == approx(4 / 5)
    assert m.mrr == approx((1 + 1 / 2 + 1 / 3 + 0 + 1) / 5)
    x, y, z, w = (m.per_label[k] for k in labels)
    assert (x.support, x.predicted, x.precision, x.recall) == (2, 1, 1.0, 0.5)
    assert (y.support, y.predicted, y.precision, y.recall) == (2, 2, 0.5, 0.5)  # tie: y predicted twice, once right
    assert (z.support, z.predicted, z.precision, z.recall) == (1, 1, 0.0, 0.0)
    assert (w.support, w.f1, w.mrr) == (0, 0.0, None)
    assert m.macro_recall == approx((0.5 + 0.5 + 0 + 0) / 4)
    assert m.macro_f1 == approx((2 / 3 + 0.5 + 0 + 0) / 4)
    assert m.confusion == {"x": {"x": 1, "y": 1}, "y": {"z": 1, "y": 1}, "z": {"(none)": 1}}


def test_ranking_metrics_grouped_by_key():
    kind = {"Ann": "individual", "Bo": "individual", "Couple": "whole_group"}.get
    m = ranking_metrics(["Ann", "Couple", "Bo"], [["Bo"], ["Couple"], ["Bo"]], ["individual", "whole_group"], key=kind)
    assert m.recall_at_1 == approx(2 / 3)  # exact labels decide correctness
    assert m.per_label["individual"].support == 2 and m.per_label["individual"].recall == 0.5
    assert m.per_label["individual"].precision == 0.5 and m.per_label["whole_group"].precision == 1.0


# ---- ER and VP -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("pred,gold,score", [(7, 7, 5), (6, 7, 4), (8, 7, 4), (3, 7, 1), (0, 10, 1), (6.5, 7, 4.5)])
def test_intensity_match(pred, gold, score):
    assert intensity_match(pred, gold) == score


def test_er_metrics_with_missing():
    m = er_metrics([(5, 7, 7), (3, 4, 7), (None, None, 6)])
    assert m.n == 3 and m.missing == 1
    assert m.emotion_score == approx((5 + 3 + 1) / 3)
    assert m.intensity_match == approx((5 + 2 + 1) / 3)
    assert m.er_score == approx((5 + 2.5 + 1) / 3)
    assert m.intensity_mae == approx(1.5)  # over answered instances only


def test_vp_metrics_with_missing():
    m = vp_metrics([(2, 4), (1, 2), None])
    assert m.source_target == approx(1.0) and m.viewpoint == approx(2.0) and m.missing == 1
    assert m.vp_score == approx((5 + 3 + 1) / 3)


# ---- cleaning and schemas --------------------------------------------------------------------------------------


def test_clean_ranking_counts_what_it_drops():
    allowed = ["track", "reframe", "evoke", "goal_align"]
    c = clean_ranking(["Goal-Align", "validation", "track", "TRACK", "evoke", "reframe"], allowed)
    assert c.labels == ["goal_align", "track", "evoke"]
    assert c.off_taxonomy == ["validation"] and c.duplicates == 1 and c.truncated == 1
    empty = clean_ranking(["soothing", 3], allowed)
    assert empty.missing and empty.off_taxonomy == ["soothing", "3"]


def test_answer_schema_constrains_labels_but_counts_off_taxonomy():
    schema = answer_schema(Task.SSP, ("track", "reframe", "evoke"))
    props = schema.model_json_schema()["properties"]
    assert props["strategies"]["items"]["enum"] == ["track", "reframe", "evoke"]
    assert "off_taxonomy" not in props  # hidden from the grammar
    parsed = schema.model_validate({"strategies": ["Reframe", "soothing", "track"]})
    assert parsed.strategies == ["reframe", "track"] and parsed.off_taxonomy == ["soothing"]
    stp = answer_schema(Task.STP, ("Ann", "Bo", "Cy", "Ann & Bo", "Family"))
    assert stp.model_validate({"targets": ["bo and ann", "Dee"]}).targets == ["Ann & Bo"]


def test_batch_schema_drops_unknown_ids():
    schema = batch_schema(Task.ITP, ("a", "b"))
    parsed = schema.model_validate(
        {
            "answers": [
                {"id": "a", "intervene": "no", "confidence": 0.4},
                {"id": "q", "intervene": "yes", "confidence": 0.9},
            ]
        }
    )
    assert [a.id for a in parsed.answers] == ["a"] and parsed.unknown_ids == ["q"]
    assert schema.model_json_schema()["properties"]["answers"]["minItems"] == 2


# ---- runner: failures, batches, judges, resume -------------------------------------------------------------------


@pytest.fixture
def instances():
    return build_rescue_instances(load_rescue(FIXTURE)).instances


def settings(**kw) -> BenchSettings:
    return BenchSettings(model="fake/model", judge_model="fake/judge", **kw)


def run(items, client, tmp_path, **kw):
    store = ResultStore(tmp_path / "r.instances.jsonl")
    return asyncio.run(run_instances(items, client, settings(**kw), store, config_hash="cfg"))


def test_failed_requests_are_excluded_and_counted_never_guessed(tmp_path, bench_reply):
    plan = plan_rescue(FIXTURE, settings(), tasks=[Task.RPP])
    calls = {"n": 0}

    def reply(call):  # the fake raises a ModelError for an Exception reply, as the client does after retries
        calls["n"] += 1
        return RuntimeError("provider down") if calls["n"] <= 2 else bench_reply(call)

    client = FakeModelClient(default=reply)
    report = asyncio.run(run_bench(plan, client, out=tmp_path / "r.json"))
    rpp = report.tasks["rpp"]
    assert rpp.instances == 6 and rpp.failed == 2 and rpp.scored == 4 and rpp.metrics.n == 4
    assert rpp.failures == ["provider down"]
    lines = [json.loads(x) for x in (tmp_path / "r.instances.jsonl").read_text().splitlines()]
    failed = [x for x in lines if x["status"] == "failed"]
    assert {x["instance_id"] for x in failed} <= {i.id for i in plan.instances} and len(failed) == 2
    assert all(x["prediction"] is None and x["scores"] == {} for x in failed)
    assert report.failed == 2


def test_missing_prediction_is_scored_wrong_not_failed(tmp_path):
    items = [i for i in build_rescue_instances(load_rescue(FIXTURE), tasks=[Task.SSP]).instances][:1]
    client = FakeModelClient(replies=[{"strategies": ["soothing", "validation"]}])
    results = run(items, client, tmp_path)
    r = results[items[0].id]
    assert r.status == "missing" and r.off_taxonomy == ["soothing", "validation"] and r.scores == {"rank": 0.0}


def test_batch_ids_answered_once_else_that_instance_fails(tmp_path):
    items = [
        i
        for i in build_rescue_instances(load_rescue(FIXTURE), tasks=[Task.ITP]).instances
        if i.sample_id.startswith("rita")
    ][:3]
    reply = {
        "answers": [
            {"id": "a", "intervene": "yes", "confidence": 0.8},
            {"id": "b", "intervene": "no", "confidence": 0.6},
            {"id": "b", "intervene": "yes", "confidence": 0.6},
        ]
    }  # b twice, c never
    client = FakeModelClient(replies=[reply])
    results = run(items, client, tmp_path, batch_size=3)
    assert len(client.calls) == 1
    a, b, c = (results[i.id] for i in items)
    assert a.status == "scored" and a.prediction == {"intervene": "yes", "confidence": 0.8}
    assert b.status == "failed" and "2 times" in b.failure
    assert c.status == "failed" and "no answer" in c.failure
    assert a.usage.request_id == b.usage.request_id


def test_batches_never_mix_samples_or_tasks(instances):
    from judges.bench import make_requests

    for req in make_requests(instances, 4):
        assert len({(i.task, i.sample_id) for i in req.instances}) == 1 and len(req.instances) <= 4


def test_judge_scores_and_judge_failures(tmp_path, bench_reply):
    items = [i for i in build_rescue_instances(load_rescue(FIXTURE), tasks=[Task.ER]).instances][:2]

    def by_role(call):
        if call.role == "judge":
            return {"reason": "close", "score": 4} if "cornered" in call.prompt.context else RuntimeError("judge down")
        return {"emotion": "feels stuck", "intensity": 6}

    client = FakeModelClient(default=by_role)
    results = run(items, client, tmp_path)
    first, second = (results[i.id] for i in items)
    assert items[0].gold_emotion == "feels numb and cornered"
    assert first.status == "scored" and first.scores == {"intensity": 4.0, "emotion": 4.0, "er": 4.0}
    assert second.status == "failed" and second.stage == "judge"
    assert {c.model for c in client.calls if c.role == "judge"} == {"fake/judge"}


def test_resume_skips_finished_and_retries_failed(tmp_path, bench_reply):
    items = build_rescue_instances(load_rescue(FIXTURE), tasks=[Task.STP, Task.VP]).instances
    flaky = {"n": 0}

    def first_reply(call):
        flaky["n"] += 1
        return RuntimeError("timeout") if flaky["n"] == 1 else bench_reply(call)

    first = FakeModelClient(default=first_reply)
    results = run(items, first, tmp_path)
    assert sum(r.status == "failed" for r in results.values()) == 1
    second = FakeModelClient(default=bench_reply)
    results = run(items, second, tmp_path)
    assert len(second.calls) == 1 and all(r.status != "failed" for r in results.values())
    third = FakeModelClient()  # no replies: any call would raise
    run(items, third, tmp_path)
    assert third.calls == []
    fresh = build_rescue_instances(load_rescue(FIXTURE), tasks=[Task.STP], context_size=2).instances
    again = FakeModelClient(default=bench_reply)
    run(fresh, again, tmp_path)
    old = {i.fingerprint() for i in items}
    changed = [i for i in fresh if i.fingerprint() not in old]
    assert 0 < len(changed) < len(fresh)  # rows cut from the context change an instance; short contexts stay
    assert len(again.calls) == len(changed)  # a changed instance is never resumed


def test_torn_last_line_is_skipped_and_rerun(tmp_path, bench_reply):
    items = build_rescue_instances(load_rescue(FIXTURE), tasks=[Task.ITP]).instances[:2]
    run(items, FakeModelClient(default=bench_reply), tmp_path)
    path = tmp_path / "r.instances.jsonl"
    text = path.read_text()
    path.write_text(text[: len(text) - 40])  # a killed process left half a line
    again = FakeModelClient(default=bench_reply)
    run(items, again, tmp_path)
    assert len(again.calls) == 1
    assert all(json.loads(line) for line in path.read_text().splitlines()[-1:])


def test_report_tokens_bertscore_and_published_row(tmp_path, bench_reply):
    plan = plan_rescue(FIXTURE, settings(batch_size=2), tasks=[Task.ITP, Task.ER])
    client = FakeModelClient(default=bench_reply)
    report = asyncio.run(run_bench(plan, client, out=tmp_path / "r.json"))
    assert report.bertscore == "not computed (no offline model configured)"
    assert report.tasks["er"].bertscore_f1 is None
    bench_calls = sum(c.role == "bench" for c in client.calls)
    assert report.tokens.requests == bench_calls and report.tokens.judge_calls == report.tasks["er"].scored
    assert report.subgroups == "keep" and "kept" in report.subgroups_note
    row = published_row(report)
    assert row["STP_Rec"] is None and row["ER_BERT"] is None and row["ITP_F1"] is not None
    assert [r["Model"] for r in load_published()][0] == "Qwen-Plus" and len(load_published()) == 10
    saved = json.loads((tmp_path / "r.json").read_text())
    assert saved["config_hash"] == plan.config_hash and saved["tasks"]["itp"]["metrics"]["n"] == 14

    sims = []

    def similarity(cands, refs):
        sims.append((cands, refs))
        return [0.5] * len(cands)

    from judges.bench import summarize

    again = summarize(
        plan.instances,
        ResultStore(tmp_path / "r.instances.jsonl").load(plan.config_hash),
        origin="rescue",
        sources=plan.sources,
        model="m",
        judge_model="j",
        subgroups="keep",
        config={},
        config_hash=plan.config_hash,
        results_path="x",
        gold_sources={},
        started_at=report.started_at,
        wall_s=0,
        similarity=similarity,
        bertscore_status="F1 with test",
    )
    assert again.tasks["er"].bertscore_f1 == 0.5 and again.tasks["itp"].bertscore_f1 is None
    assert again.bertscore == "F1 with test" and sims[0][1][0] == "feels numb and cornered"

    def broken(cands, refs):
        raise OSError("model folder unreadable")

    failed = summarize(
        plan.instances,
        ResultStore(tmp_path / "r.instances.jsonl").load(plan.config_hash),
        origin="rescue",
        sources=plan.sources,
        model="m",
        judge_model="j",
        subgroups="keep",
        config={},
        config_hash=plan.config_hash,
        results_path="x",
        gold_sources={},
        started_at=report.started_at,
        wall_s=0,
        similarity=broken,
        bertscore_status="F1 with test",
    )
    assert failed.bertscore == "not computed (BERTScore failed: model folder unreadable)"
    assert failed.tasks["er"].bertscore_f1 is None and failed.tasks["er"].metrics is not None
