"""Known inclusion probabilities (issue 21): each design's pi is the frequency with which it really draws a unit,
IPW-PPI is ppi_py's PPI when every pi is equal and stays unbiased under active sampling where naive PPI does not,
deterministic picks never enter a mean, and `ratings plan` -> `export --select active --plan` work through the CLI
on a run judged by a fake provider."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from judges.ratings import (
    ExportKey,
    Quota,
    Unit,
    collect_units,
    export_items,
    hajek_mean,
    ipw_ppi_mean,
    read_ratings,
    select_units,
)
from judges.ratings._designs import (
    BASE,
    FLOOR,
    active_pi,
    dimension_uncertainty,
    floored,
    proportional_pi,
    sampling_sizes,
    uncertainty,
)
from judges.ratings._store import ratings_path
from simulator.llm.fake import FakeModelClient
from simulator.runfolder import RunFolder
from tests._rating_fixtures import SessionSpec, make_judged_run
from tests._rating_fixtures import invoke as invoke_cli
from tests._session_fixtures import couple_session, fill_reply

A, B = "openai/gpt-4o-mini", "anthropic/claude-3-5-haiku"
JUDGES = ("judge/alpha-1", "judge/beta-2")
WIDE = {"COLUMNS": "200", "RESCUE_SIM_MODEL": "", "RESCUE_SIM_JUDGES": ""}


def h(*parts: object) -> int:
    return int(hashlib.md5("|".join(map(str, parts)).encode()).hexdigest(), 16)


def judge_score(judge: str, sid: str, item: str, dim: str) -> int:
    return 1 + h(judge, sid, item, dim) % 5


def invoke(app, *args):
    return invoke_cli(app, *args, env=WIDE)


def unit(i: int, *, supporter: str = A, case: str = "c0", mean: float = 3.0, spread: int = 0) -> Unit:
    return Unit(
        item_id=f"it-{i:04d}",
        run="r",
        session_id=f"s{i}",
        unit="session",
        case_id=case,
        group="couple",
        supporter=supporter,
        seed=i,
        dimensions=["balance"],
        judge={"balance": mean},
        spread={"balance": spread},
        judges=2,
    )


def frame() -> list[Unit]:
    """24 units: two supporters, three cases, uncertainties from 0 to large (spread 0-3, half-point means)."""
    return [
        unit(
            i,
            supporter=(A, B)[i % 2],
            case=f"c{i % 3}",
            mean=(3.0, 3.5, 2.0, 4.5)[i % 4],
            spread=(0, 0, 1, 3)[(i // 4) % 4],
        )
        for i in range(24)
    ]


# ---- designs: pi is what the draw really does -----------------------------------------------------------------


def test_uncertainty_reads_panel_spread_repeats_and_the_decision_boundary() -> None:
    u = unit(0, mean=3.5, spread=2).model_copy(update={"repeat_spread": {"balance": 1}})
    # (2/2)^2 + (1/2)^2 + 0.5 * 0.5
    assert dimension_uncertainty(u, "balance") == pytest.approx(1 + 0.25 + 0.25)
    assert uncertainty(unit(1, mean=4.0)) == 0.0
    pi = active_pi([unit(2, mean=4.0), unit(3, mean=3.5, spread=2), unit(4, mean=3.0, spread=4)], 1.5)
    assert sum(pi) == pytest.approx(1.5) and min(pi) > 0
    sizes = [math.sqrt(BASE + x) for x in (0.0, 1.25, 4.0)]  # root of the expected squared human-judge gap
    assert pi[0] / pi[2] == pytest.approx(sizes[0] / sizes[2]) and pi[1] / pi[2] == pytest.approx(sizes[1] / sizes[2])
    assert floored([0.0, 0.0, 3.0]) == [pytest.approx(FLOOR), pytest.approx(FLOOR), 3.0]  # no pi near 0
    capped = active_pi([unit(5, spread=8), unit(6, mean=3.5), unit(7, mean=3.5)], 2)
    assert capped[0] == 1.0 and capped[1] == capped[2] == pytest.approx(0.5)  # excess spread over the others


@pytest.mark.parametrize("strategy, n", [("random", 6), ("stratified", 7), ("active", 6)])
def test_pi_is_the_frequency_with_which_the_design_draws_each_unit(strategy: str, n: int) -> None:
    units = frame()
    reps = 1500
    counts: dict[str, int] = {u.item_id: 0 for u in units}
    pis: dict[str, float] = {}
    for seed in range(reps):
        sel = select_units(units, [Quota(strategy=strategy, n=n)], seed=seed)
        for p in sel.picks:
            assert p.pi is not None and 0 < p.pi <= 1 and p.design == strategy
            assert pis.setdefault(p.unit.item_id, p.pi) == pytest.approx(p.pi)  # the same unit, the same pi
            counts[p.unit.item_id] += 1
    assert set(pis) == {u.item_id for u in units}  # every unit can be drawn
    for item, pi in pis.items():
        se = math.sqrt(pi * (1 - pi) / reps)
        assert abs(counts[item] / reps - pi) <= 4 * se + 1e-9, (item, counts[item] / reps, pi)
    if strategy != "active":
        assert sum(pis.values()) == pytest.approx(n)
    else:
        spread_pi = {u.item_id: pis[u.item_id] for u in units}
        assert max(spread_pi.values()) > 2 * min(spread_pi.values())  # uncertain units drawn more often


def test_deterministic_picks_have_no_pi_and_a_cap_that_turns_draws_away_voids_it() -> None:
    units = frame()
    sel = select_units(units, [Quota(strategy="disagreement", n=3), Quota(strategy="extremes", n=2)])
    assert all(p.pi is None and p.design == "unknown-probability" for p in sel.picks)
    capped = select_units(units, [Quota(strategy="random", n=10)], caps={"case": 2})
    assert len(capped.picks) == 6 and all(p.pi is None for p in capped.picks)
    assert "random" in capped.unknown_pi
    free = select_units(units, [Quota(strategy="random", n=3)], caps={"case": 8})
    assert all(p.pi == pytest.approx(3 / 24) for p in free.picks) and not free.unknown_pi


# ---- estimators -----------------------------------------------------------------------------------------------


def test_ipw_ppi_equals_ppi_py_when_every_pi_is_equal() -> None:
    import ppi_py

    rng = np.random.default_rng(3)
    big = rng.integers(1, 6, size=200).astype(float)
    rated = rng.choice(200, size=25, replace=False)
    f = big[rated]
    y = np.clip(f + rng.integers(-1, 2, size=25), 1, 5)
    for pi in (0.125, 0.9):
        for lam in (1.0, 0.4, None):  # classic PPI, a fixed lambda, and the tuned one
            est, used = ipw_ppi_mean(list(y), list(f), [pi] * 25, list(big), 0.95, lam=lam)
            lo, hi = ppi_py.ppi_mean_ci(y, f, big, alpha=0.05, lam=used)
            point = ppi_py.ppi_mean_pointestimate(y, f, big, lam=used)
            assert est.mean == pytest.approx(float(np.ravel(point)[0]), rel=1e-12)
            assert (est.low, est.high) == pytest.approx((float(lo[0]), float(hi[0])), rel=1e-12)
        tuned = ppi_py.ppi_mean_ci(y, f, big, alpha=0.05)  # ppi_py's own lambda: the same interval to 1%
        assert (est.low, est.high) == pytest.approx((float(tuned[0][0]), float(tuned[1][0])), rel=1e-2)
        assert 0 < used < 1
        human = hajek_mean(list(y), [pi] * 25, 0.95)
        clo, chi = ppi_py.classical_mean_ci(y, alpha=0.05)
        assert (human.mean, human.low, human.high) == pytest.approx((y.mean(), float(clo), float(chi)), rel=1e-12)


def test_ipw_ppi_stays_unbiased_under_active_sampling_where_unweighted_ppi_does_not() -> None:
    """A judge that under-scores exactly where it is unsure: active sampling over-draws those items, so the
    unweighted correction over-corrects; weighting by 1/pi removes that."""
    rng = np.random.default_rng(7)
    n_items = 600
    u = rng.gamma(0.5, 1.0, size=n_items)
    f = rng.uniform(1, 5, size=n_items)
    y = f + 0.8 * u + rng.normal(0, 0.3, size=n_items)
    truth = y.mean()
    pi = np.asarray(proportional_pi(sampling_sizes(list(u)), 60))  # the active design's pi
    ipw, naive = [], []
    for _ in range(400):
        s = np.flatnonzero(rng.random(n_items) < pi)
        ipw.append(ipw_ppi_mean(list(y[s]), list(f[s]), list(pi[s]), list(f), lam=1.0)[0].mean)
        naive.append(ipw_ppi_mean(list(y[s]), list(f[s]), [0.5] * len(s), list(f), lam=1.0)[0].mean)
    assert abs(np.mean(naive) - truth) > 0.15  # unweighted: biased by the selection
    assert abs(np.mean(ipw) - truth) < 0.03  # weighted: on target


# ---- key file, store, leaderboard -----------------------------------------------------------------------------

SPECS = [SessionSpec(f"c{c}__s{s}", case_id=f"c{c}", seed=s) for c in range(3) for s in range(4)]


@pytest.fixture
def runs(tmp_path: Path) -> list[Path]:
    return [
        make_judged_run(tmp_path / "run-a", A, SPECS, judge_score, JUDGES).path,
        make_judged_run(tmp_path / "run-b", B, SPECS, judge_score, JUDGES).path,
    ]


def rate_all(out: Path, runs: list[Path], path: Path) -> int:
    """Ratings near the judges' means for every item in the export `out` (two raters)."""
    key = ExportKey.model_validate_json(out.with_name(out.stem + ".key.json").read_text())
    units = {u.item_id: u for u in collect_units(runs).units}
    lines = []
    for it in key.items:
        for d, mean in units[it.item_id].judge.items():
            for rater in ("ann", "bob"):
                value = min(5, max(1, math.floor(mean + 0.5) + [0, 1, -1][h(it.item_id, d, rater) % 3]))
                lines.append(json.dumps({"item_id": it.item_id, "rater": rater, "dimension": d, "value": value}))
    path.write_text("\n".join(lines) + "\n")
    return len(lines)


def test_key_file_and_ratings_store_carry_pi_for_every_item(app, runs, tmp_path: Path) -> None:
    out = tmp_path / "batch.jsonl"
    result = export_items(runs, select=["disagreement:3", "random:4", "active:5"], out=out, seed=2)
    key = ExportKey.model_validate_json((tmp_path / "batch.key.json").read_text())
    assert key.batch == result.batch and key.schema_version == 2
    raw = json.loads((tmp_path / "batch.key.json").read_text())
    assert all("pi" in it and "design" in it for it in raw["items"])  # null is written, never left out
    for it in key.items:
        if it.strategy == "disagreement":
            assert it.pi is None and it.design == "unknown-probability"
        else:
            assert it.pi is not None and 0 < it.pi <= 1 and it.design == it.strategy
    random_pi = [it.pi for it in key.items if it.strategy == "random"]
    assert random_pi == [pytest.approx(4 / (24 - 3))] * 4  # the frame: everything the disagreement quota left
    stored = {i: b for run in runs for batch in read_ratings(run).batches for i, b in batch.items.items()}
    assert {i: (b.strategy, b.pi) for i, b in stored.items()} == {it.item_id: (it.strategy, it.pi) for it in key.items}
    rate_all(out, runs, tmp_path / "r.jsonl")
    assert invoke(app, "ratings", "import", tmp_path / "r.jsonl", "--run", runs[0], "--run", runs[1]).exit_code == 0
    by_item = {it.item_id: it for it in key.items}
    ratings = [r for run in runs for r in read_ratings(run).ratings]
    assert ratings and all(r.batch == key.batch for r in ratings)
    assert all((r.pi, r.design) == (by_item[r.item_id].pi, by_item[r.item_id].design) for r in ratings)


def test_a_disagreement_only_batch_gives_agreement_figures_and_no_corrected_mean(app, runs, tmp_path: Path) -> None:
    from judges import build_leaderboard

    out = tmp_path / "d.jsonl"
    export_items(runs, select=["disagreement:8"], out=out)
    rate_all(out, runs, tmp_path / "r.jsonl")
    assert invoke(app, "ratings", "import", tmp_path / "r.jsonl", "--run", runs[0], "--run", runs[1]).exit_code == 0
    board = build_leaderboard(runs, ratings=True)
    assert board.human_agreement and board.human_agreement[0].ratings > 0
    assert board.human and all(e.labeled == 0 and e.unknown_pi > 0 for e in board.human)
    assert all(e.ppi.mean is None and e.human.mean is None and e.n_eff is None for e in board.human)
    assert [b.designs for b in board.human_batches] == [{"unknown-probability": 8}]
    r = invoke(app, "leaderboard", *runs, "--ratings")
    assert r.exit_code == 0, r.output
    flat = " ".join(r.stdout.split())
    assert "With human ratings: mean per item" not in r.stdout
    first = board.human[0]
    from simulator.cli.leaderboard_cmd import header

    assert (
        f"{first.supporter} / {header(first.dimension)}: {first.unknown_pi} rated item(s), none of known inclusion "
        "probability" in flat
    )
    assert "agreement figures only, no human-corrected mean" in flat
    shown = invoke(app, "ratings", "show", *runs)
    assert shown.exit_code == 0 and "unknown-probability 8" in shown.stdout and "Judge-human agreement" in shown.stdout


def test_mixed_batches_weight_known_pi_items_only(app, runs, tmp_path: Path) -> None:
    from judges import build_leaderboard

    first = tmp_path / "d.jsonl"
    export_items(runs, select=["disagreement:4"], out=first)
    rate_all(first, runs, tmp_path / "r1.jsonl")
    assert invoke(app, "ratings", "import", tmp_path / "r1.jsonl", "--run", runs[0], "--run", runs[1]).exit_code == 0
    second = tmp_path / "a.jsonl"
    export_items(runs, select=["active:10"], out=second, seed=1)
    rate_all(second, runs, tmp_path / "r2.jsonl")
    assert invoke(app, "ratings", "import", tmp_path / "r2.jsonl", "--run", runs[0], "--run", runs[1]).exit_code == 0
    key = ExportKey.model_validate_json((tmp_path / "a.key.json").read_text())
    pi = {it.item_id: it.pi for it in key.items}
    board = build_leaderboard(runs, ratings=True)
    units = {u.item_id: u for u in collect_units(runs).units}
    stored = [r for run in runs for r in read_ratings(run).ratings]
    for e in board.human:
        mine = [i for i in pi if units[i].label == e.supporter and e.dimension in units[i].judge]
        assert e.labeled == len(mine) and e.designs == ({"active": len(mine)} if mine else {})
        if len(mine) < 2:
            continue
        w = np.array([1 / pi[i] for i in mine])
        y = np.array(
            [np.mean([r.value for r in stored if r.item_id == i and r.dimension == e.dimension]) for i in mine]
        )
        assert e.human.mean == pytest.approx(float(w @ y / w.sum()))  # 1/pi-weighted; disagreement items left out
        assert e.n_eff == pytest.approx(w.sum() ** 2 / (w**2).sum())
    r = invoke(app, "ratings", "show", *runs)
    assert r.exit_code == 0
    assert "unknown-probability 4" in r.stdout and f"active {len(key.items)}" in r.stdout  # Poisson: size varies
    assert "active" in r.stdout and "IPW-PPI" in r.stdout and "n_eff" in r.stdout


def test_a_v1_ratings_store_reads_with_unknown_probabilities(runs) -> None:
    ratings_path(runs[0]).write_text(
        json.dumps(
            {
                "schema_version": 1,
                "imports": [],
                "ratings": [
                    {
                        "item_id": "it-0",
                        "session_id": "s",
                        "unit": "session",
                        "dimension": "balance",
                        "rater": "ann",
                        "value": 3,
                        "import_id": "x",
                    }
                ],
            }
        )
    )
    (r,) = read_ratings(runs[0]).ratings
    assert r.pi is None and r.design == "unknown-probability" and r.batch is None


# ---- plan and active export through the CLI, on a run judged by a fake provider -------------------------------


def fake_judged_run(app, monkeypatch, path: Path, supporter: str, sessions: int) -> Path:
    """Sessions judged by `rescue-sim judge` with a two-judge panel of a fake provider whose scores vary by
    judge and prompt (so the panel disagrees sometimes)."""

    def reply(call):
        return fill_reply(call.schema, score_index=h(call.model, call.prompt) % 5)

    monkeypatch.setattr("simulator.llm.settings.make_client", lambda settings: FakeModelClient(default=reply))
    folder = RunFolder(path)
    folder.open({"supporter": supporter})
    for i in range(sessions):
        folder.write_session(couple_session(f"s{i}", supporter, seed=i))
    r = invoke(app, "judge", "--judge-mode", "verdict", path, "--judges", "judge/a,judge/b", "--per-intervention")
    assert r.exit_code == 0, r.output
    return path


def human(item_id: str, dimension: str, judge_mean: float) -> int:
    """A rater who scores one above the judges, or level with them, by item: the judge-human gap varies, so the
    rated items alone cannot pin the corrected mean down (the identical fake sessions give the judges only two
    distinct means, and a gap that never varies would make any interval zero-width)."""
    return max(1, min(5, math.floor(judge_mean) + h(item_id, dimension) % 2))


def test_plan_then_active_export_through_the_cli(app, monkeypatch, tmp_path: Path) -> None:
    runs = [
        fake_judged_run(app, monkeypatch, tmp_path / "a", "fake/supporter-a", 6),
        fake_judged_run(app, monkeypatch, tmp_path / "b", "fake/supporter-b", 6),
    ]
    pilot = tmp_path / "pilot.jsonl"
    r = invoke(app, "export", *runs, "--select", "random", "--n", "8", "--unit", "intervention", "--out", pilot)
    assert r.exit_code == 0, r.output
    assert "designs: random 8" in r.stdout
    rate_all_units = {u.item_id: u for u in collect_units(runs, "intervention").units}
    key = ExportKey.model_validate_json((tmp_path / "pilot.key.json").read_text())
    lines = [
        json.dumps({"item_id": it.item_id, "rater": "ann", "dimension": d, "value": human(it.item_id, d, m)})
        for it in key.items
        for d, m in rate_all_units[it.item_id].judge.items()
    ]
    (tmp_path / "r.jsonl").write_text("\n".join(lines) + "\n")
    assert invoke(app, "ratings", "import", tmp_path / "r.jsonl", "--run", runs[0], "--run", runs[1]).exit_code == 0
    plan_file = tmp_path / "plan.json"
    r = invoke(app, "ratings", "plan", *runs, "--target-width", "0.4", "--out", plan_file)
    assert r.exit_code == 0, r.output
    assert "More active ratings for a 95% CI of width 0.4" in r.stdout and f"wrote {plan_file}" in r.stdout
    plan = json.loads(plan_file.read_text())
    budgets: dict[str, int] = {}
    for row in plan["rows"]:
        assert row["judge_floor"] >= 0 and row["rated"] <= row["items"]
        if row["level"] == "intervention" and row["more"] is not None:
            budgets[row["supporter"]] = max(budgets.get(row["supporter"], 0), min(row["more"], row["unrated"]))
    assert all(n >= 1 for n in budgets.values()) and len(budgets) == 2 and sum(budgets.values()) >= 5, budgets
    out = tmp_path / "next.jsonl"
    r = invoke(
        app,
        "export",
        *runs,
        "--select",
        "active",
        "--plan",
        plan_file,
        "--unit",
        "intervention",
        "--out",
        out,
        "--seed",
        "3",
    )
    assert r.exit_code == 0, r.output
    nxt = ExportKey.model_validate_json((tmp_path / "next.key.json").read_text())
    assert nxt.items and all(it.design == "active" and 0 < it.pi <= 1 for it in nxt.items)
    assert not {it.item_id for it in nxt.items} & {it.item_id for it in key.items}  # rated items are not redrawn
    for supporter, n in budgets.items():  # per supporter, the pi add up to what the plan asked for
        units = [u for u in collect_units(runs, "intervention").units if u.label == supporter]
        frame = [u for u in units if u.item_id not in {it.item_id for it in key.items}]
        assert sum(active_pi(sorted(frame, key=lambda u: u.item_id), n)) == pytest.approx(min(n, len(frame)))
    r = invoke(app, "ratings", "plan", *runs, "--target-width", "-1")
    assert (
        r.exit_code == 2
        and r.stderr.strip() == "error: --target-width -1.0: must be a positive width in score points, e.g. 0.5"
    )
    r = invoke(app, "export", *runs, "--select", "active", "--plan", tmp_path / "nope.json", "--out", out)
    assert r.exit_code == 2 and "nope.json: no such file" in r.stderr


def test_import_report_and_show_name_each_batch_design(app, runs, tmp_path: Path) -> None:
    from judges.report import build_report_data, render_html

    mixed = tmp_path / "mixed.jsonl"
    export_items(runs, select=["disagreement:3", "random:4"], out=mixed)
    rate_all(mixed, runs, tmp_path / "r.jsonl")
    r = invoke(app, "ratings", "import", tmp_path / "r.jsonl", "--run", runs[0], "--run", runs[1])
    assert r.exit_code == 0, r.output
    per_item = len(read_ratings(runs[0]).ratings + read_ratings(runs[1]).ratings) // 7
    assert f"designs: unknown-probability {3 * per_item}, random {4 * per_item}" in r.stdout
    export_items(runs, select=["active:5"], out=tmp_path / "next.jsonl", seed=4)
    data = build_report_data(runs)
    batches = data.leaderboard.human_batches
    assert [b.designs for b in batches][0] == {"unknown-probability": 3, "random": 4}
    assert set(batches[1].designs) == {"active"} and batches[1].rated == 0
    assert (batches[0].items, batches[0].rated) == (7, 7)
    html = render_html(data)
    assert "Rating batches" in html and "IPW-PPI" in html and "n_eff" in html
    assert all(e.designs in ({"random": e.labeled}, {}) for e in data.leaderboard.human)
    narrow = CliRunner().invoke(app, ["ratings", "show", *map(str, runs)], env={**WIDE, "COLUMNS": "80"})
    assert narrow.exit_code == 0 and all(len(line) <= 80 for line in narrow.stdout.splitlines())
    assert "unknown-probability 3, random 4" in narrow.stdout
    plan = CliRunner().invoke(
        app, ["ratings", "plan", *map(str, runs), "--target-width", "0.5"], env={**WIDE, "COLUMNS": "80"}
    )
    assert plan.exit_code == 0 and all(len(line) <= 80 for line in plan.stdout.splitlines())


def test_ratings_of_several_batches_are_weighted_by_their_union_probability(app, runs, tmp_path: Path) -> None:
    from judges import build_leaderboard

    pilot = tmp_path / "pilot.jsonl"
    export_items(runs, select=["random:6"], out=pilot)
    rate_all(pilot, runs, tmp_path / "r1.jsonl")
    assert invoke(app, "ratings", "import", tmp_path / "r1.jsonl", "--run", runs[0], "--run", runs[1]).exit_code == 0
    more = tmp_path / "active.jsonl"
    export_items(runs, select=["active:8"], out=more, seed=5)
    rate_all(more, runs, tmp_path / "r2.jsonl")
    assert invoke(app, "ratings", "import", tmp_path / "r2.jsonl", "--run", runs[0], "--run", runs[1]).exit_code == 0
    batches = [b for run in runs for b in read_ratings(run).batches]
    units = {u.item_id: u for u in collect_units(runs).units}
    # every unit of the runs has a probability under each design, drawn or not (pilot items: what active would
    # have given them had they not been rated already)
    first = {i: p for b in batches if "random" in b.probabilities for i, p in b.probabilities["random"].items()}
    second = {i: p for b in batches if "active" in b.probabilities for i, p in b.probabilities["active"].items()}
    assert set(first) == set(second) == set(units)
    assert all(p == pytest.approx(6 / 24) for p in first.values())
    union = {i: 1 - (1 - first[i]) * (1 - second[i]) for i in units}
    rated = {r.item_id for run in runs for r in read_ratings(run).ratings}
    stored = [r for run in runs for r in read_ratings(run).ratings]
    board = build_leaderboard(runs, ratings=True)
    for e in board.human:
        mine = sorted(i for i in rated if units[i].label == e.supporter and e.dimension in units[i].judge)
        assert e.labeled == len(mine)
        if len(mine) < 2:
            continue
        w = np.array([1 / union[i] for i in mine])
        y = np.array(
            [np.mean([r.value for r in stored if r.item_id == i and r.dimension == e.dimension]) for i in mine]
        )
        assert e.human.mean == pytest.approx(float(w @ y / w.sum()))
        assert e.n_eff == pytest.approx(w.sum() ** 2 / (w**2).sum())


def test_plan_asks_for_the_least_batch_whose_projected_variance_fits() -> None:
    from judges.ratings._plan import projected_variance, ratings_needed, residual_model

    # equal sizes, gap variance 1, nothing rated: variance 1/m, so 0.02 needs m = 50
    assert projected_variance((1.0, 0.0), [1.0] * 100, [0.0] * 100, range(100), 50) == pytest.approx(1 / 50)
    assert ratings_needed((1.0, 0.0), [1.0] * 100, [0.0] * 100, list(range(100)), 0.02) == 50
    # a pilot gave every item 0.1 already: union pi = 1 - 0.9 (1 - m/100) >= 0.5 needs m >= 44.4
    assert ratings_needed((1.0, 0.0), [1.0] * 100, [0.1] * 100, list(range(100)), 0.02) == 45
    # gaps that grow with size, +- pairs (mean 0): a + b s^2 recovered exactly
    sizes = [0.5, 1.0, 1.5, 2.0, 2.5]
    gaps = [(-1) ** i * math.sqrt(0.3 + 0.8 * x * x) for i, x in enumerate(sizes * 2)]
    assert residual_model(gaps, [1.0] * 10, sizes * 2) == pytest.approx((0.3, 0.8))
