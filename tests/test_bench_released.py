"""RESCUE-bench's released ER/VP instance files are scored exactly as given; VP is reported on its own scales."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judges.bench import BenchSettings, plan_rescue, published_row, run_bench
from judges.bench.released import ReleasedFormatError, load_released, looks_released
from simulator.cli import app as cli_app
from simulator.cli import bench_cmd
from simulator.llm.fake import FakeModelClient

FIXTURES = Path(__file__).parent / "fixtures"
ER, VP = FIXTURES / "released_er.jsonl", FIXTURES / "released_vp.jsonl"


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_a_released_file_is_recognised_and_the_mini_samples_are_not():
    assert looks_released(ER) and looks_released(VP)
    assert not looks_released(FIXTURES / "bench_mini.jsonl")


def test_exactly_the_instances_in_the_file():
    er = load_released(ER, context_size=0).instances
    raw = lines(ER)
    assert [(i.sample_id, i.row) for i in er] == [(r["sample_id"], r["row_index"]) for r in raw]
    first = er[0]
    assert first.task == "er" and first.speaker == "Priya" and first.group == "couple"
    assert first.gold_emotion == "feels invisible and hurt" and first.gold_intensity == 7.0
    assert [r.index for r in first.context] == [1, 2, 3, 4]  # every earlier row, then the row itself
    assert first.context[-1].text == raw[0]["dialogue"]
    assert er[2].group == "family" and er[2].members == ["Lucia", "Rosa", "Mateo"]
    vp = load_released(VP, context_size=2).instances
    assert [i.task for i in vp] == ["vp", "vp"]
    assert vp[0].gold_viewpoints[0].target == "Tom" and vp[0].omitted_rows == 2 and len(vp[0].context) == 2
    assert "Family" in vp[1].candidates and "Therapist" in vp[1].candidates


@pytest.mark.parametrize(
    "mutate, needle",
    [
        (lambda r: r.pop("prior_context"), "line 2: field prior_context"),
        (lambda r: r.update(gold_intensity_score=None), "line 2: field gold_internal_emotion / gold_intensity_score"),
        (lambda r: r.update(row_index=1), "line 2: field prior_context: rows must come before row 1"),
        (lambda r: r.update(row_index=4), "repeats line 1"),
    ],
)
def test_bad_lines_name_the_line_and_field(tmp_path, mutate, needle):
    raw = lines(ER)
    mutate(raw[1])
    bad = tmp_path / "er.jsonl"
    bad.write_text("\n".join(json.dumps(r) for r in raw) + "\n")
    with pytest.raises(ReleasedFormatError, match=needle):
        load_released(bad, context_size=0)


@pytest.fixture
def invoke(monkeypatch):
    cli_app._register()
    monkeypatch.setattr(bench_cmd, "make_bench_client", lambda settings: FakeModelClient(default=None))

    def run(*args):
        res = CliRunner().invoke(cli_app.app, ["bench", *map(str, args)], env={"COLUMNS": "200"})
        assert "Traceback" not in res.output
        return res

    return run


@pytest.mark.parametrize("path, task", [(ER, "er"), (VP, "vp")])
def test_dry_run_counts_exactly_the_file(invoke, path, task):
    res = invoke("--data", path, "--dry-run", "--json")
    assert res.exit_code == 0, res.output
    counts = json.loads(res.stdout)["counts"]
    raw = lines(path)
    assert set(counts) == {task}
    assert counts[task]["couple"] == sum(r["scenario"] == "couple" for r in raw)
    assert counts[task]["family"] == sum(r["scenario"] == "family" for r in raw)


def test_vp_headline_is_the_released_scales_and_never_set_beside_the_paper_likert(tmp_path, bench_reply):
    plan = plan_rescue(VP, BenchSettings(model="fake/model", judge_model="fake/judge"))
    report = asyncio.run(run_bench(plan, FakeModelClient(default=bench_reply), out=tmp_path / "r.json"))
    vp = report.tasks["vp"].metrics
    assert vp.n == 2
    row = published_row(report)
    assert row["VP_LLM"] is None  # a 1-5 Likert in the paper; ours is source-target 0-2 + viewpoint 0-4
    from judges.bench.report import own_scale_row

    own = own_scale_row(report)
    assert own["VP_source_target_0_2"] == pytest.approx(vp.source_target)
    assert own["VP_viewpoint_0_4"] == pytest.approx(vp.viewpoint)
