"""`rescue-sim export`: each selection strategy picks what it claims, quotas and caps hold, no item twice, rated
items skipped, and no model id reaches the exported files (all four formats)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from judges.ratings import (
    ExportKey,
    Quota,
    SelectionError,
    Unit,
    collect_units,
    export_items,
    model_strings,
    parse_quotas,
    select_units,
)
from judges.ratings._units import item_id
from simulator.runfolder import RunFolder
from tests._rating_fixtures import SessionSpec, invoke, make_judged_run

A, B = "openai/gpt-4o-mini", "anthropic/claude-3-5-haiku"
JUDGES = ("judge/alpha-1", "judge/beta-2")
SPECS = [SessionSpec(f"c{c}__s{s}", case_id=f"c{c}", seed=s) for c in range(3) for s in range(2)]
SPLIT = {("c0__s0", "timing"): 5, ("c1__s1", "balance"): 4, ("c2__s0", "overall_quality"): 1}  # beta's outliers


def score(judge: str, sid: str, item: str, dim: str) -> int:
    """alpha gives 3 everywhere; beta gives 3 too, except the SPLIT cells (session-wide, every item)."""
    return SPLIT.get((sid, dim), 3) if judge == JUDGES[1] else 3


def by_supporter(supporter: str):
    """Session means that differ by supporter and case: A is better on c0, B on c1; both tie on c2."""

    def s(judge: str, sid: str, item: str, dim: str) -> int:
        case = sid.split("__")[0]
        if case == "c0":
            return 5 if supporter == A else 2
        if case == "c1":
            return 2 if supporter == A else 4
        return 3

    return s


@pytest.fixture
def runs(tmp_path: Path) -> list[Path]:
    a = make_judged_run(tmp_path / "run-a", A, SPECS, score, JUDGES)
    b = make_judged_run(tmp_path / "run-b", B, SPECS, score, JUDGES)
    return [a.path, b.path]


def items_of(path: Path) -> list[dict]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["kind"] == "instructions"
    return [x for x in lines[1:]]


def key_of(out: Path) -> ExportKey:
    return ExportKey.model_validate_json(out.with_name(out.stem + ".key.json").read_text())


# ---- units ---------------------------------------------------------------------------------------------------


def test_units_carry_panel_scores_and_stable_ids(runs) -> None:
    pool = collect_units(runs, "session")
    assert len(pool.units) == 12 and len({u.item_id for u in pool.units}) == 12
    u = next(x for x in pool.units if x.session_id == "c0__s0" and x.supporter == A)
    assert u.dimensions == ["overall_quality", "session_relation_sensitivity", "balance", "safety_handling"]
    assert u.judge["overall_quality"] == 3.0 and u.judges == 2
    again = collect_units(list(reversed(runs)), "session")
    assert {x.item_id for x in again.units} == {x.item_id for x in pool.units}  # stable across reads and order
    manifest = RunFolder(runs[0]).read_manifest()
    assert u.item_id == item_id(manifest.config_hash, "c0__s0", "session")
    turns = collect_units(runs, "intervention")
    assert len(turns.units) == 24 and {x.turn for x in turns.units} == {3, 5}
    t = next(x for x in turns.units if x.session_id == "c0__s0" and x.supporter == A and x.turn == 3)
    assert t.spread["timing"] == 2 and t.judge["timing"] == 4.0


# ---- strategies ----------------------------------------------------------------------------------------------


def test_disagreement_picks_the_largest_panel_spreads_first(runs) -> None:
    pool = collect_units(runs, "session")
    sel = select_units(pool.units, [Quota(strategy="disagreement", n=4)])
    picked = [(p.unit.session_id, p.unit.supporter) for p in sel.picks]
    # c2__s0 overall 1 vs 3 (spread 2) ties with c0__s0 timing? timing is intervention-level: not a session dim.
    # session dims with spread: c2__s0 overall_quality (2), c1__s1 balance (1); each for both supporters
    assert {s for s, _ in picked[:2]} == {"c2__s0"} and {s for s, _ in picked[2:]} == {"c1__s1"}
    assert "judges differ by 2 on overall_quality" in sel.picks[0].reason
    assert sel.shortfall == {}
    more = select_units(pool.units, [Quota(strategy="disagreement", n=6)])
    assert len(more.picks) == 4 and more.shortfall == {"disagreement": 2}  # no other unit has any spread


def test_disagreement_needs_a_panel(tmp_path: Path) -> None:
    run = make_judged_run(tmp_path / "solo", A, SPECS[:2], score, judges=("judge/solo-1",))
    with pytest.raises(SelectionError, match="every unit was scored by one judge"):
        select_units(collect_units([run.path]).units, [Quota(strategy="disagreement", n=1)])


def test_unstable_says_no_repeats_exist(runs) -> None:
    with pytest.raises(SelectionError, match="no repeated judgments exist.*--repeat K"):
        select_units(collect_units(runs).units, [Quota(strategy="unstable", n=2)])


def test_unstable_ranks_by_spread_across_repeated_judgments(runs) -> None:
    from judges.scoring._repeat import write_trial
    from tests._rating_fixtures import judge_record

    folder = RunFolder(runs[0])
    for sid, flip in (("c0__s0", 2), ("c1__s0", 1)):
        record = folder.load_session(sid)
        trial = judge_record(record, JUDGES, lambda j, s, i, d, f=flip: 3 + f if d == "balance" else 3)
        write_trial(folder, trial.model_copy(update={"trial": 1}))
    sel = select_units(collect_units(runs).units, [Quota(strategy="unstable", n=5)])
    assert [p.unit.session_id for p in sel.picks] == ["c0__s0", "c1__s0"]
    assert "repeated judgments differ by 2 on balance" in sel.picks[0].reason
    assert sel.shortfall == {"unstable": 3}


def test_extremes_alternate_best_and_worst(tmp_path: Path) -> None:
    a = make_judged_run(tmp_path / "a", A, SPECS, by_supporter(A), JUDGES)
    units = collect_units([a.path]).units
    sel = select_units(units, [Quota(strategy="extremes", n=4)])
    means = [p.unit.mean_score for p in sel.picks]
    assert means == [5.0, 2.0, 5.0, 2.0]
    assert "best" in sel.picks[0].reason and "worst" in sel.picks[1].reason


def test_pairs_are_two_supporters_on_the_same_case_and_seed_nearest_first(tmp_path: Path) -> None:
    a = make_judged_run(tmp_path / "a", A, SPECS, by_supporter(A), JUDGES)
    b = make_judged_run(tmp_path / "b", B, SPECS, by_supporter(B), JUDGES)
    sel = select_units(collect_units([a.path, b.path]).units, [Quota(strategy="pairs", n=10)])
    pairs: dict[str, list] = {}
    for p in sel.picks:
        pairs.setdefault(p.pair, []).append(p)
    assert all(len(v) == 2 for v in pairs.values())
    for first, second in pairs.values():
        assert (first.position, second.position) == ("A", "B")
        assert first.unit.supporter != second.unit.supporter
        assert (first.unit.case_id, first.unit.seed) == (second.unit.case_id, second.unit.seed)
    cases = [v[0].unit.case_id for v in pairs.values()]
    # c2 ties exactly (gap 0); c1 is 2 points apart and c0 3: beyond the near-tie gap, so never paired
    assert cases == ["c2", "c2"] and sel.shortfall == {"pairs": 6}
    with pytest.raises(SelectionError, match="use `unit session`") as err:
        select_units(collect_units([a.path, b.path], "intervention").units, [Quota(strategy="pairs", n=2)])
    assert err.value.worded(lambda param: f"--{param}").endswith("use `--unit session`")  # as `export` says it


def test_stratified_balances_cases_supporters_and_score_bins(tmp_path: Path) -> None:
    specs = [SessionSpec(f"c{c}__s{s}", case_id=f"c{c}", seed=s) for c in range(3) for s in range(4)]
    a = make_judged_run(tmp_path / "a", A, specs, by_supporter(A), JUDGES)
    b = make_judged_run(tmp_path / "b", B, specs, by_supporter(B), JUDGES)
    sel = select_units(collect_units([a.path, b.path]).units, [Quota(strategy="stratified", n=6)])
    cases = [p.unit.case_id for p in sel.picks]
    sups = [p.unit.supporter for p in sel.picks]
    assert sorted(cases) == ["c0", "c0", "c1", "c1", "c2", "c2"]
    assert sups.count(A) == sups.count(B) == 3


def test_random_is_seeded(runs) -> None:
    units = collect_units(runs).units
    first = [p.unit.item_id for p in select_units(units, [Quota(strategy="random", n=5)], seed=1).picks]
    again = [p.unit.item_id for p in select_units(units, [Quota(strategy="random", n=5)], seed=1).picks]
    other = [p.unit.item_id for p in select_units(units, [Quota(strategy="random", n=5)], seed=2).picks]
    assert first == again and first != other and len(set(first)) == 5


def test_quotas_combine_without_repeats_and_caps_hold(runs) -> None:
    units = collect_units(runs).units
    quotas = parse_quotas(["disagreement:2", "extremes", "random"], 9)
    assert [(q.strategy, q.n) for q in quotas] == [("disagreement", 2), ("extremes", 4), ("random", 3)]
    sel = select_units(units, quotas, caps={"case": 3})
    ids = [p.unit.item_id for p in sel.picks]
    assert len(ids) == len(set(ids)) == 9
    assert [p.strategy for p in sel.picks].count("disagreement") == 2
    per_case: dict[str, int] = {}
    for p in sel.picks:
        per_case[p.unit.case_id] = per_case.get(p.unit.case_id, 0) + 1
    assert max(per_case.values()) <= 3 and sum(per_case.values()) == 9


def test_parse_quotas_errors() -> None:
    with pytest.raises(SelectionError, match="unknown strategy 'best'"):
        parse_quotas(["best"], 3)
    with pytest.raises(SelectionError, match="^n: say how many") as err:
        parse_quotas(["random"], None)
    assert err.value.params == ["n"] and err.value.worded(lambda param: f"--{param}").startswith("--n: say how many")
    with pytest.raises(SelectionError, match="add up to 5"):
        parse_quotas(["random:5"], 4)


def test_exclude_skips_items_already_rated() -> None:
    units = [
        Unit(
            item_id=f"it-{i}",
            run="r",
            session_id=f"s{i}",
            unit="session",
            case_id="c",
            group="couple",
            supporter=A,
            seed=i,
            dimensions=["balance"],
            judge={"balance": 3.0},
            judges=1,
        )
        for i in range(5)
    ]
    sel = select_units(units, [Quota(strategy="random", n=5)], exclude={"it-1", "it-3"})
    assert sorted(p.unit.item_id for p in sel.picks) == ["it-0", "it-2", "it-4"]
    assert sel.already_rated == 2 and sel.shortfall == {"random": 2}


# ---- files and blinding -------------------------------------------------------------------------------------


def every_model_string(runs: list[Path]) -> set[str]:
    """Independently of the exporter: every model id and supporter spec the run folders mention anywhere."""
    from judges import read_judgment

    out: set[str] = set()
    for run in runs:
        folder = RunFolder(run)
        config = folder.read_manifest().config
        out |= {config["supporter"], *config["models"].values(), *config["judges"]}
        for sid in folder.session_ids():
            record = folder.load_session(sid)
            out |= model_strings(record, read_judgment(folder, sid))
            raw = json.loads(folder.session_path(sid).read_text())
            out |= set(re.findall(r'"model": "([^"]+)"', json.dumps(raw)))
    return out


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "label-studio", "argilla"])
@pytest.mark.parametrize("unit", ["session", "intervention"])
def test_no_exported_file_names_a_model(runs, tmp_path: Path, fmt: str, unit: str) -> None:
    out = tmp_path / "out" / f"items.{fmt}"
    result = export_items(runs, select=["random"], n=6, out=out, fmt=fmt, unit=unit)
    assert result.items == 6
    secrets = every_model_string(runs)
    assert {A, B, *JUDGES, "member/model-x", "tracker/model-y"} <= secrets
    rater_files = [Path(f) for f in result.files]
    assert out in rater_files
    for f in rater_files:
        text = f.read_text().lower()
        for s in secrets:
            assert s.lower() not in text, f"{f.name} names {s}"
            assert s.rsplit("/", 1)[-1].lower() not in text, f"{f.name} names {s}"
    key = key_of(out)
    assert set(key.aliases.values()) == {A, B} and set(key.aliases) == {"Supporter A", "Supporter B"}
    assert {k.item_id for k in key.items} == {p.unit.item_id for p in result.selection.picks}


def test_a_model_named_in_the_transcript_is_redacted(tmp_path: Path) -> None:
    spec = SessionSpec("c0__s0", text={3: f"As {A} (or just gpt-4o-mini) I think you both feel unheard."})
    run = make_judged_run(tmp_path / "a", A, [spec], score, JUDGES)
    out = tmp_path / "items.jsonl"
    export_items([run.path], select=["random"], n=1, out=out)
    text = out.read_text()
    assert "gpt-4o-mini" not in text and "As [model] (or just [model]) I think" in text


def test_aliases_are_stable_whatever_the_run_order(runs, tmp_path: Path) -> None:
    export_items(runs, select=["random"], n=2, out=tmp_path / "one.jsonl")
    export_items(list(reversed(runs)), select=["random"], n=2, out=tmp_path / "two.jsonl")
    assert key_of(tmp_path / "one.jsonl").aliases == key_of(tmp_path / "two.jsonl").aliases


def test_intervention_items_hold_the_window_before_the_focus_turn(runs, tmp_path: Path) -> None:
    out = tmp_path / "items.jsonl"
    export_items(runs, select=["random"], n=24, out=out, unit="intervention", window=2)
    items = items_of(out)
    assert len(items) == 24
    for item in items:
        turns = [t["turn"] for t in item["transcript"]]
        assert turns == list(range(max(1, item["turn"] - 2), item["turn"] + 1))
        assert [t["focus"] for t in item["transcript"]] == [t == item["turn"] for t in turns]
        assert set(item) == {
            "kind",
            "item_id",
            "unit",
            "turn",
            "supporter",
            "pair",
            "position",
            "case",
            "transcript",
            "dimensions",
        }
        assert "inner" not in json.dumps(item) and "model" not in json.dumps(item).replace("[model]", "")


def test_jsonl_and_csv_carry_instructions_and_anchors(runs, tmp_path: Path) -> None:
    export_items(runs, select=["random"], n=3, out=tmp_path / "x.jsonl")
    head = json.loads((tmp_path / "x.jsonl").read_text().splitlines()[0])
    dims = {d["id"]: d for d in head["dimensions"]}
    assert dims["balance"]["anchors"]["1"] == "One member ignored or sided against."
    assert "Rate each dimension" in head["text"]
    export_items(runs, select=["random"], n=3, out=tmp_path / "x.csv", fmt="csv", seed=5)
    rows = list(csv.DictReader((tmp_path / "x.csv").open()))
    assert len(rows) == 3 and rows[0]["balance"] == "" and rows[0]["rater"] == ""
    guide = (tmp_path / "x.instructions.md").read_text()
    assert "### balance (1-5)" in guide and "- **5**: Balanced and actively inclusive." in guide


def test_label_studio_config_and_argilla_settings_match_the_items(runs, tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    export_items(runs, select=["random"], n=2, out=tmp_path / "ls.json", fmt="label-studio", unit="intervention")
    root = ET.fromstring((tmp_path / "ls.config.xml").read_text())
    groups = {c.get("name"): [x.get("alias") for x in c] for c in root.iter("Choices")}
    assert groups == {
        d: ["1", "2", "3", "4", "5"] for d in ("strategy_fit", "target_fit", "timing", "relation_sensitivity")
    }
    tasks = json.loads((tmp_path / "ls.json").read_text())
    assert {"item_id", "case", "dialogue", "focus"} <= set(tasks[0]["data"])
    export_items(runs, select=["random"], n=2, out=tmp_path / "ar.json", fmt="argilla")
    settings = json.loads((tmp_path / "ar.settings.json").read_text())
    assert [q["name"] for q in settings["questions"]] == [
        "overall_quality",
        "session_relation_sensitivity",
        "balance",
        "safety_handling",
    ]
    assert settings["questions"][0]["settings"] == {"type": "rating", "options": [{"value": v} for v in range(1, 6)]}
    records = json.loads((tmp_path / "ar.json").read_text())
    assert set(records[0]) >= {"id", "fields", "metadata", "responses"}
    assert set(records[0]["fields"]) <= {f["name"] for f in settings["fields"]}


# ---- CLI -----------------------------------------------------------------------------------------------------


def test_cli_export(app, runs, tmp_path: Path) -> None:
    out = tmp_path / "items.csv"
    r = invoke(
        app,
        "export",
        *runs,
        "--select",
        "disagreement:2",
        "--select",
        "random",
        "--n",
        "5",
        "--format",
        "csv",
        "--out",
        out,
    )
    assert r.exit_code == 0, r.output
    assert "exported 5 item(s) (disagreement 2, random 3)" in r.stdout
    assert f"wrote {out}" in r.stdout and "items.key.json (the key: keep it away from raters)" in r.stdout
    bad = invoke(app, "export", *runs, "--select", "best", "--n", "2", "--out", out)
    assert bad.exit_code == 2
    expected = (
        "error: --select best: unknown strategy 'best'; choose from disagreement, unstable, extremes, pairs, "
        "stratified, random, active"
    )
    assert bad.stderr.strip().splitlines() == [expected]


def test_cli_export_says_the_library_parameters_as_its_flags(app, runs, tmp_path: Path) -> None:
    """The library names its parameters (`n`, `fmt`, `caps`, `dimensions`); the command says the flags typed."""
    out = tmp_path / "items.jsonl"
    cases = [
        (["--select", "random"], "error: --n: say how many items random should pick (or give NAME:COUNT)"),
        (
            ["--select", "random:5", "--n", "4"],
            "error: --n 4: the strategy counts add up to 5; drop --n or make them agree",
        ),
        (["--select", "random:2", "--format", "xml"], "error: --format xml: choose from "),
        (["--select", "random:2", "--cap", "colour=1"], "error: --cap colour=1: unknown key 'colour'; choose from "),
        (
            ["--select", "random:2", "--dimension", "nope"],
            "error: --dimension nope: not a rated session dimension here",
        ),
    ]
    for args, start in cases:
        bad = invoke(app, "export", *runs, *args, "--out", out)
        assert bad.exit_code == 2, bad.output
        assert bad.stderr.strip().startswith(start), bad.stderr


def test_cli_export_refuses_an_empty_run(app, tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "empty")
    folder.open({"supporter": A})
    r = invoke(app, "export", folder.path, "--select", "random", "--n", "2", "--out", tmp_path / "x.jsonl")
    assert r.exit_code == 2 and "nothing to export (no sessions)" in r.stderr
    assert not (tmp_path / "x.jsonl").exists()
