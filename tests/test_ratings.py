"""Ratings round trip: export -> ratings written in each tool's format -> `rescue-sim ratings import` -> stored, and
the agreement numbers equal values computed here independently (hand-written statistics, no library).
Validation: unknown ids, out-of-scale values, duplicates reported with their line, exit 2, nothing stored."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from itertools import combinations
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judges.ratings import collect_units, export_items, read_ratings, runs_agreement
from judges.ratings._store import ratings_path
from tests._rating_fixtures import SessionSpec, invoke, make_judged_run

A, B = "openai/gpt-4o-mini", "anthropic/claude-3-5-haiku"
JUDGES = ("judge/alpha-1", "judge/beta-2")
SPECS = [SessionSpec(f"c{c}__s{s}", case_id=f"c{c}", seed=s) for c in range(3) for s in range(3)]
RATERS = ("ann", "bob")


def h(*parts: object) -> int:
    return int(hashlib.md5("|".join(map(str, parts)).encode()).hexdigest(), 16)


def judge_score(judge: str, sid: str, item: str, dim: str) -> int:
    return 1 + h(judge, sid, item, dim) % 5


def human_score(item_id: str, dim: str, rater: str, judge_mean: float) -> int:
    """Near the judges most of the time, sometimes off by one or two (so no statistic is degenerate)."""
    off = [0, 0, 1, -1, 2][h(item_id, dim, rater) % 5]
    return min(5, max(1, math.floor(judge_mean + 0.5) + off))


@pytest.fixture
def runs(tmp_path: Path) -> list[Path]:
    return [
        make_judged_run(tmp_path / "run-a", A, SPECS, judge_score, JUDGES).path,
        make_judged_run(tmp_path / "run-b", B, SPECS, judge_score, JUDGES).path,
    ]


def judge_means(runs: list[Path]) -> dict[tuple[str, str], float]:
    out = {}
    for kind in ("session", "intervention"):
        for u in collect_units(runs, kind).units:
            for d, v in u.judge.items():
                out[(u.item_id, d)] = v
    return out


def planned(runs, items: list[dict], dims_of) -> list[tuple[str, str, str, int]]:
    """(item, dimension, rater, value) for every item, both raters, every dimension."""
    means = judge_means(runs)
    return [
        (i["item_id"], d, r, human_score(i["item_id"], d, r, means[(i["item_id"], d)]))
        for i in items
        for d in dims_of(i)
        for r in RATERS
    ]


# ---- ratings files as each tool writes them ----------------------------------------------------------------


def write_label_studio(export: Path, plan, out: Path) -> None:
    tasks = json.loads(export.read_text())
    for n, task in enumerate(tasks, start=1):
        task["id"] = n
        task["annotations"] = []
        for k, rater in enumerate(RATERS, start=1):
            result = [
                {"from_name": d, "to_name": "dialogue", "type": "choices", "value": {"choices": [str(v)]}}
                for item, d, r, v in plan
                if item == task["data"]["item_id"] and r == rater
            ]
            task["annotations"].append({"id": 10 * n + k, "completed_by": {"id": k, "email": rater}, "result": result})
        task["annotations"].append(
            {
                "id": 99,
                "completed_by": 3,
                "was_cancelled": True,
                "result": [{"from_name": "balance", "type": "choices", "value": {"choices": ["9"]}}],
            }
        )
    out.write_text(json.dumps(tasks, indent=2))


def write_argilla(export: Path, plan, out: Path) -> None:
    records = json.loads(export.read_text())
    for rec in records:
        responses: dict[str, list] = {}
        for item, d, r, v in plan:
            if item == rec["id"]:
                responses.setdefault(d, []).append({"value": v, "user_id": r})
        rec["responses"] = responses
    out.write_text(json.dumps(records, indent=2))


def write_csv_long(plan, out: Path) -> None:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["item_id", "rater", "dimension", "value"])
    w.writerows([item, r, d, v] for item, d, r, v in plan)
    out.write_text(buf.getvalue())


def write_csv_filled(export: Path, plan, out: Path) -> None:
    rows = list(csv.DictReader(export.open()))
    filled = []
    for rater in RATERS:
        for row in rows:
            row = dict(row, rater=rater)
            for item, d, r, v in plan:
                if item == row["item_id"] and r == rater:
                    row[d] = str(v)
            filled.append(row)
    with out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(filled)


def write_jsonl(plan, out: Path) -> None:
    out.write_text(
        "".join(json.dumps({"item_id": i, "rater": r, "dimension": d, "value": v}) + "\n" for i, d, r, v in plan)
    )


# ---- independent statistics ----------------------------------------------------------------------------------


def ranks(xs: list[float]) -> list[float]:
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    out = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def pearson(a: list[float], b: list[float]) -> float:
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    return cov / math.sqrt(sum((x - ma) ** 2 for x in a) * sum((y - mb) ** 2 for y in b))


def quadratic_kappa(a: list[int], b: list[int], lo: int = 1, hi: int = 5) -> float:
    cats = list(range(lo, hi + 1))
    n = len(a)
    obs = {(i, j): sum(1 for x, y in zip(a, b) if (x, y) == (i, j)) / n for i in cats for j in cats}
    pa = {i: sum(x == i for x in a) / n for i in cats}
    pb = {j: sum(y == j for y in b) / n for j in cats}
    w = {(i, j): ((i - j) / (hi - lo)) ** 2 for i in cats for j in cats}
    return 1 - sum(w[k] * obs[k] for k in w) / sum(w[(i, j)] * pa[i] * pb[j] for i in cats for j in cats)


def interval_alpha(units: list[list[float]]) -> float:
    """Krippendorff's alpha, interval metric, from its definition: units with >= 2 values are pairable."""
    units = [u for u in units if len(u) >= 2]
    values = [v for u in units for v in u]
    n = len(values)
    d_o = sum(sum((a - b) ** 2 for a in u for b in u) / (len(u) - 1) for u in units) / n
    d_e = sum((a - b) ** 2 for a in values for b in values) / (n * (n - 1))
    return 1 - d_o / d_e


def expected(plan, means) -> dict[str, dict[str, float]]:
    out = {}
    for dim in dict.fromkeys(d for _, d, _, _ in plan):
        rows = [(i, r, v, means[(i, dim)]) for i, d, r, v in plan if d == dim]
        hum = [v for _, _, v, _ in rows]
        jm = [m for _, _, _, m in rows]
        ji = [math.floor(m + 0.5) for m in jm]
        items = list(dict.fromkeys(i for i, _, _, _ in rows))
        by_item = {i: [v for ii, _, v, _ in rows if ii == i] for i in items}
        pairs = [a == b for vals in by_item.values() for a, b in combinations(vals, 2)]
        out[dim] = {
            "exact": sum(x == y for x, y in zip(hum, ji)) / len(hum),
            "mae": sum(abs(x - y) for x, y in zip(hum, jm)) / len(hum),
            "spearman": pearson(ranks(jm), ranks([float(x) for x in hum])),
            "weighted_kappa": quadratic_kappa(hum, ji),
            "alpha": interval_alpha([[means[(i, dim)], *by_item[i]] for i in items]),
            "human_exact": sum(pairs) / len(pairs),
            "human_alpha": interval_alpha([by_item[i] for i in items]),
            "ratings": len(hum),
        }
    return out


# ---- round trip ----------------------------------------------------------------------------------------------

FORMATS = {
    "label-studio": ("label-studio", "ls-export.json"),
    "argilla": ("argilla", "argilla-records.json"),
    "csv-long": ("csv", "ratings.csv"),
    "csv-filled": ("csv", "filled.csv"),
    "jsonl": ("jsonl", "ratings.jsonl"),
}


@pytest.mark.parametrize("name", list(FORMATS))
def test_round_trip_agreement_equals_independent_values(app, runs, tmp_path: Path, name: str) -> None:
    fmt, filename = FORMATS[name]
    unit = "intervention" if name == "label-studio" else "session"
    export = tmp_path / f"items.{'json' if fmt in ('label-studio', 'argilla') else fmt}"
    result = export_items(runs, select=["random"], n=8, out=export, fmt=fmt, unit=unit)
    items = [{"item_id": p.unit.item_id, "dims": p.unit.dimensions} for p in result.selection.picks]
    plan = planned(runs, items, lambda i: i["dims"])
    ratings_file = tmp_path / filename
    {
        "label-studio": lambda: write_label_studio(export, plan, ratings_file),
        "argilla": lambda: write_argilla(export, plan, ratings_file),
        "csv-long": lambda: write_csv_long(plan, ratings_file),
        "csv-filled": lambda: write_csv_filled(export, plan, ratings_file),
        "jsonl": lambda: write_jsonl(plan, ratings_file),
    }[name]()
    r = invoke(app, "ratings", "import", ratings_file, "--run", runs[0], "--run", runs[1])
    assert r.exit_code == 0, r.output
    assert f"imported {len(plan)} rating(s) ({fmt}) from 2 rater(s)" in r.stdout
    assert "Judge-human agreement" in r.stdout
    stored = [x for run in runs for x in read_ratings(run).ratings]
    assert sorted((x.item_id, x.dimension, x.rater, x.value) for x in stored) == sorted(
        (i, d, r, v) for i, d, r, v in plan
    )
    rows = {a.dimension: a for a in runs_agreement(runs)}
    want = expected(plan, judge_means(runs))
    assert set(want) <= set(rows) and "all" in rows
    for dim, values in want.items():
        got = rows[dim]
        assert got.ratings == values["ratings"] and got.raters == 2
        for stat in ("exact", "mae", "spearman", "weighted_kappa", "alpha", "human_exact", "human_alpha"):
            assert getattr(got, stat) == pytest.approx(values[stat], abs=1e-9), (dim, stat)
    pooled = rows["all"]
    means = judge_means(runs)
    assert pooled.ratings == len(plan)
    assert pooled.exact == pytest.approx(sum(v == math.floor(means[(i, d)] + 0.5) for i, d, _, v in plan) / len(plan))


def test_rated_items_are_skipped_by_the_next_export(app, runs, tmp_path: Path) -> None:
    first = export_items(runs, select=["random"], n=5, out=tmp_path / "one.jsonl")
    items = [{"item_id": p.unit.item_id, "dims": p.unit.dimensions} for p in first.selection.picks]
    write_jsonl(planned(runs, items, lambda i: i["dims"]), tmp_path / "r.jsonl")
    assert invoke(app, "ratings", "import", tmp_path / "r.jsonl", "--run", runs[0], "--run", runs[1]).exit_code == 0
    second = export_items(runs, select=["random"], n=30, out=tmp_path / "two.jsonl")
    assert second.selection.already_rated == 5
    assert not {p.unit.item_id for p in second.selection.picks} & {i["item_id"] for i in items}
    assert second.items == 18 - 5


# ---- validation ----------------------------------------------------------------------------------------------


def test_bad_ratings_are_reported_with_their_line_and_nothing_is_stored(app, runs, tmp_path: Path) -> None:
    result = export_items(runs, select=["random"], n=2, out=tmp_path / "x.jsonl")
    good = result.selection.picks[0].unit.item_id
    other = result.selection.picks[1].unit.item_id
    f = tmp_path / "bad.csv"
    f.write_text(
        "item_id,rater,dimension,value\n"
        f"{good},ann,balance,4\n"  # line 2: fine
        "it-000000000000,ann,balance,3\n"  # 3: unknown id
        f"{good},ann,balance,2\n"  # 4: duplicate of line 2
        f"{good},bob,balance,7\n"  # 5: out of scale
        f"{good},bob,timing,3\n"  # 6: not a session dimension
        f"{other},bob,overall_quality,great\n"  # 7: not a number
        f"{other},,overall_quality,3\n"  # 8: no rater
    )

    def stored_bytes() -> list[bytes | None]:
        return [ratings_path(run).read_bytes() if ratings_path(run).exists() else None for run in runs]

    before = stored_bytes()  # the export recorded its batch there
    r = invoke(app, "ratings", "import", f, "--run", runs[0], "--run", runs[1])
    assert r.exit_code == 2
    lines = r.stderr.strip().splitlines()
    assert lines[:-1] == [
        f"{f}:3: unknown item id 'it-000000000000': not an item of these runs",
        f"{f}:4: duplicate rating of {good} / balance by ann (first on line 2)",
        f"{f}:5: {good}: balance: 7 is outside the 1-5 scale",
        (
            f"{f}:6: {good}: 'timing' is not rated on this item; its dimensions: overall_quality, "
            "session_relation_sensitivity, balance, safety_handling"
        ),
        f"{f}:7: {other}: overall_quality: 'great' is not a whole number on the 1-5 scale",
        f"{f}:8: {other}: no rater given",
    ]
    assert lines[-1] == f"error: 6 problem(s) in {f}; nothing was stored"
    assert stored_bytes() == before
    assert not any(read_ratings(run).ratings or read_ratings(run).imports for run in runs)


def test_json_problems_name_the_line_of_their_record(app, runs, tmp_path: Path) -> None:
    export_items(runs, select=["random"], n=2, out=tmp_path / "x.json", fmt="argilla")
    records = json.loads((tmp_path / "x.json").read_text())
    records[1]["responses"] = {"balance": [{"value": 0, "user_id": "ann"}]}
    f = tmp_path / "ar.json"
    f.write_text(json.dumps(records, indent=1))
    line = next(n for n, text in enumerate(f.read_text().splitlines(), start=1) if records[1]["id"] in text) - 1
    r = invoke(app, "ratings", "import", f, "--run", runs[0], "--run", runs[1])
    assert r.exit_code == 2
    assert r.stderr.splitlines()[0] == f"{f}:{line}: {records[1]['id']}: balance: 0 is outside the 1-5 scale"


def test_the_same_file_and_the_same_rating_are_not_imported_twice(app, runs, tmp_path: Path) -> None:
    result = export_items(runs, select=["random"], n=1, out=tmp_path / "x.jsonl")
    item = result.selection.picks[0].unit.item_id
    f = tmp_path / "r.csv"
    f.write_text(f"item_id,rater,dimension,value\n{item},ann,balance,4\n")
    assert invoke(app, "ratings", "import", f, "--run", runs[0], "--run", runs[1]).exit_code == 0
    again = invoke(app, "ratings", "import", f, "--run", runs[0], "--run", runs[1])
    assert again.exit_code == 2 and "this file was already imported into" in again.stderr
    g = tmp_path / "r2.csv"
    g.write_text(f"item_id,rater,dimension,value\n{item},ann,balance,5\n{item},bob,balance,5\n")
    r = invoke(app, "ratings", "import", g, "--run", runs[0], "--run", runs[1])
    assert r.exit_code == 2 and f"{g}:2: {item} / balance by ann was already imported into" in r.stderr
    assert sum(len(read_ratings(run).ratings) for run in runs) == 1


def test_unreadable_files_are_one_line_errors(app, runs, tmp_path: Path) -> None:
    r = invoke(app, "ratings", "import", tmp_path / "missing.csv", "--run", runs[0])
    assert r.exit_code == 2 and r.stderr.strip() == f"error: {tmp_path / 'missing.csv'}: no such file"
    f = tmp_path / "odd.json"
    f.write_text('[{"something": 1}]')
    r = invoke(app, "ratings", "import", f, "--run", runs[0])
    assert r.exit_code == 2 and "neither Label Studio tasks" in r.stderr


# ---- leaderboard --ratings (PPI) -----------------------------------------------------------------------------


def test_leaderboard_with_ratings_reports_ppi_beside_judge_and_human_only(app, runs, tmp_path: Path) -> None:
    import numpy as np
    import ppi_py

    from judges import build_leaderboard

    first = export_items(runs, select=["random"], n=10, out=tmp_path / "x.jsonl")
    items = [{"item_id": p.unit.item_id, "dims": p.unit.dimensions} for p in first.selection.picks]
    plan = planned(runs, items, lambda i: i["dims"])
    write_jsonl(plan, tmp_path / "r.jsonl")
    assert invoke(app, "ratings", "import", tmp_path / "r.jsonl", "--run", runs[0], "--run", runs[1]).exit_code == 0
    board = build_leaderboard(runs, ratings=True)
    assert board.human and board.human_agreement
    means = judge_means(runs)
    units = collect_units(runs, "session").units
    for e in board.human:
        mine = [u for u in units if u.supporter == e.supporter]
        rated = [u for u in mine if any(i == u.item_id and d == e.dimension for i, d, _, _ in plan)]
        y = [np.mean([v for i, d, _, v in plan if i == u.item_id and d == e.dimension]) for u in rated]
        yhat = [means[(u.item_id, e.dimension)] for u in rated]
        yu = [means[(u.item_id, e.dimension)] for u in mine if u not in rated]
        assert (e.labeled, e.unlabeled) == (len(rated), len(yu))
        assert e.judge.mean == pytest.approx(np.mean(yhat + yu))
        assert e.human.mean == pytest.approx(np.mean(y))
        assert e.unknown_pi == 0 and e.designs == {"random": len(rated)} and e.n_eff == pytest.approx(len(rated))
        if len(rated) >= 2:  # a random batch: every pi equal, so IPW-PPI is ppi_py's PPI++ over all judged items
            everything = np.array(yhat + yu)
            lo, hi = ppi_py.ppi_mean_ci(np.array(y), np.array(yhat), everything, alpha=0.05, lam=e.lam)
            point = ppi_py.ppi_mean_pointestimate(np.array(y), np.array(yhat), everything, lam=e.lam)
            assert (e.ppi.low, e.ppi.high) == pytest.approx((float(lo[0]), float(hi[0])))
            assert e.ppi.mean == pytest.approx(float(np.ravel(point)[0]))
            assert e.ppi.low <= e.ppi.mean <= e.ppi.high
        else:
            assert e.ppi.mean is None
    r = invoke(app, "leaderboard", *runs, "--ratings")
    assert r.exit_code == 0, r.output
    assert "With human ratings: mean per item" in r.stdout
    assert "judges only" in r.stdout and "humans only" in r.stdout and "PPI" in r.stdout
    narrow = CliRunner().invoke(app, ["leaderboard", *map(str, runs), "--ratings"], env={"COLUMNS": "80"})
    assert narrow.exit_code == 0 and all(len(line) <= 80 for line in narrow.stdout.splitlines())


def test_ppi_corrects_a_biased_judge() -> None:
    """Humans are always one point above the judge: PPI moves the mean up by about that much, with a CI."""
    from judges.ratings import ipw_ppi_mean

    judge_rated = [2.0, 3.0, 4.0, 3.0, 2.0, 4.0, 3.0, 3.0]
    human = [x + 1 for x in judge_rated]
    unrated = [3.0, 2.0, 4.0, 3.0] * 25
    everything = judge_rated + unrated
    est, lam = ipw_ppi_mean(human, judge_rated, [0.1] * len(human), everything)
    n, big_n = len(human), len(everything)
    # PPI++: the lambda minimising var(judge) / N + var(human - lambda judge) / n; cov(Y, Yhat) = var(Yhat) here
    mean_r, mean_all = sum(judge_rated) / n, sum(everything) / big_n
    var_r = sum((j - mean_r) ** 2 for j in judge_rated) / n
    var_all = sum((j - mean_all) ** 2 for j in everything) / big_n
    assert lam == pytest.approx((var_r / n) / (var_all / big_n + var_r / n))
    by_hand = lam * sum(everything) / big_n + sum(h - lam * j for h, j in zip(human, judge_rated)) / n
    assert est.mean == pytest.approx(by_hand, rel=1e-9)
    assert est.low < est.mean < est.high
    assert ipw_ppi_mean(human[:1], judge_rated[:1], [0.1], everything)[0].mean is None
