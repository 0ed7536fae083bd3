"""`rescue-sim personas …` through the real typer app: output, exit codes, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from personas.library import LIBRARY_DIR, library_paths
from simulator.cli import app as cli_app

FIXTURE = Path(__file__).parent / "fixtures" / "rescue_mini.jsonl"
CARD = LIBRARY_DIR / "dana-and-theo.yaml"
WIDE = {"COLUMNS": "200"}  # rich tables would otherwise fold ids at 80 columns


@pytest.fixture
def invoke(app):
    runner = CliRunner()

    def run(*args: str):
        result = runner.invoke(app, ["personas", *map(str, args)], env=WIDE)
        assert "Traceback" not in result.output
        assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
        return result

    return run


def card_data() -> dict:
    return yaml.safe_load(CARD.read_text(encoding="utf-8"))


def write_card(folder: Path, name: str, data: dict | str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def one_error_line(result) -> str:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


# ---- happy paths ----------------------------------------------------------------------------------------------


def test_register_is_idempotent(app) -> None:
    cli_app._register()  # again: the shared fixture registered once
    names = [g.name for g in app.registered_groups]
    assert names.count("personas") == 1


def test_list_table(invoke) -> None:
    result = invoke("list")
    assert result.exit_code == 0
    for path in library_paths():
        assert path.stem in result.stdout
    assert "pursue_withdraw" in result.stdout and "Dana, Theo" in result.stdout


def test_list_json(invoke) -> None:
    result = invoke("list", "--json")
    assert result.exit_code == 0
    items = json.loads(result.stdout)
    assert [i["id"] for i in items] == [p.stem for p in library_paths()]
    dana = next(i for i in items if i["id"] == "dana-and-theo")
    assert dana == {
        "id": "dana-and-theo",
        "group": "couple",
        "pattern": "pursue_withdraw",
        "members": ["Dana", "Theo"],
        "risk_flags": [],
        "title": "Dana and Theo — the promotion and the empty evenings",
        "source": "authored",
        "sample_id": None,
    }


def test_list_dir(invoke, tmp_path: Path) -> None:
    write_card(tmp_path, "only-one", card_data())
    result = invoke("list", "--json", "--dir", tmp_path)
    assert [i["id"] for i in json.loads(result.stdout)] == ["only-one"]


def test_show_by_id_and_path(invoke) -> None:
    for ref in ("dana-and-theo", CARD):
        result = invoke("show", ref)
        assert result.exit_code == 0
        out = result.stdout
        assert "Dana and Theo — the promotion and the empty evenings" in out
        assert "Members" in out and "Viewpoints" in out
        assert "he has chosen work over her and will not admit it" in out
        assert "One partner presses for contact or answers" in out  # the pattern's definition
        assert "Risk flags none" in out


def test_check_ok(invoke, tmp_path: Path) -> None:
    result = invoke("check", LIBRARY_DIR)
    assert result.exit_code == 0
    assert result.stdout.strip() == f"ok {len(library_paths())} cards"
    extra = write_card(tmp_path, "another-card", card_data())
    result = invoke("check", LIBRARY_DIR, extra)
    assert result.stdout.strip() == f"ok {len(library_paths()) + 1} cards"


def test_import_rescue_then_check_show_graph(invoke, tmp_path: Path) -> None:
    out = tmp_path / "imported"
    result = invoke("import-rescue", FIXTURE, "--out", out)
    assert result.exit_code == 0, result.output
    assert "Imported 4 samples" in result.stdout
    assert "rescue-family_therapy-901-merged" in result.stdout
    total = next(line for line in result.stdout.splitlines() if line.strip().startswith("total"))
    assert total.split()[1:] == ["22", "11", "6", "7", "5", "7", "10", "11"]  # rows ther rp rcs none strat vp emo
    assert len(list(out.glob("*.yaml"))) == 4 and len(list(out.glob("*.gold.json"))) == 4

    assert invoke("check", out).stdout.strip() == "ok 4 cards"
    shown = invoke("show", out / "rescue-family_therapy-901-merged.yaml")
    assert shown.exit_code == 0 and "family_therapy/901/merged" in shown.stdout

    png = tmp_path / "g.png"
    result = invoke("graph", out / "rescue-family_therapy-901-merged.yaml", "--png", png)
    assert result.exit_code == 0, result.output
    assert "most distressed: Son" in result.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_graph_queries_on_library_case(invoke) -> None:
    result = invoke("graph", "dana-and-theo")
    assert result.exit_code == 0
    assert "most distressed: Dana" in result.stdout
    assert "conflict pairs: Dana ↔ Theo" in result.stdout


# ---- errors: exit code 2, one line naming the field -----------------------------------------------------------


def _without(data: dict, key: str) -> dict:
    return {k: v for k, v in data.items() if k != key}


def _set_member(data: dict, i: int, **changes) -> dict:
    data["members"][i].update(changes)
    return data


def _set_viewpoint(data: dict, i: int, **changes) -> dict:
    data["viewpoints"][i].update(changes)
    return data


MALFORMED = {
    "missing-field": (lambda d: _without(d, "setting"), "setting: required field is missing"),
    "bad-pattern-for-group": (
        lambda d: {**d, "relation_pattern": "escalation_conflict"},
        "relation_pattern: 'escalation_conflict' is not a couple pattern",
    ),
    "intensity-11": (lambda d: _set_member(d, 0, baseline_intensity=11), "members[0] (Dana).baseline_intensity"),
    "unknown-member-in-viewpoint": (
        lambda d: _set_viewpoint(d, 0, target="Sam"),
        "viewpoints[0].target: unknown member 'Sam'",
    ),
    "duplicate-member-names": (
        lambda d: _set_member(d, 1, name="Dana"),
        "members[1].name: duplicate member name 'Dana'",
    ),
    "unknown-field": (lambda d: {**d, "mood": "grim"}, "mood: unknown field"),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_check_malformed_card(invoke, tmp_path: Path, name: str) -> None:
    change, expected = MALFORMED[name]
    path = write_card(tmp_path, name, change(card_data()))
    line = one_error_line(invoke("show", path))  # loading stops at the first problem, in one line
    assert str(path) in line
    assert expected in line
    # `check` reports the same problem the same way, first; a broken card may show more (it lists every one)
    result = invoke("check", path)
    assert result.exit_code == 2 and result.stderr.strip().splitlines()[0] == line


def test_check_invalid_yaml(invoke, tmp_path: Path) -> None:
    path = write_card(tmp_path, "broken", "title: [unclosed\ngroup: couple\n")
    line = one_error_line(invoke("check", path))
    assert f"{path}: line" in line and "not valid YAML" in line


def test_check_duplicate_ids_across_folders(invoke, tmp_path: Path) -> None:
    write_card(tmp_path / "a", "same-id", card_data())
    second = write_card(tmp_path / "b", "same-id", card_data())
    line = one_error_line(invoke("check", tmp_path / "a", tmp_path / "b"))
    assert f"{second}: id: duplicate case id 'same-id'" in line


def test_unknown_case_id(invoke) -> None:
    line = one_error_line(invoke("show", "no-such-case"))
    assert "no-such-case: no such case id or file" in line


def test_import_rescue_bad_input(invoke, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"sample_id": "x"\n', encoding="utf-8")
    line = one_error_line(invoke("import-rescue", bad, "--out", tmp_path / "out"))
    assert f"{bad}:1: not valid JSON" in line
    assert not (tmp_path / "out").exists()


def test_graph_png_needs_png_suffix(invoke, tmp_path: Path) -> None:
    line = one_error_line(invoke("graph", "dana-and-theo", "--png", tmp_path / "g.jpg"))
    assert "--png" in line


# ---- start-up cost --------------------------------------------------------------------------------------------


def test_persona_commands_import_no_heavy_modules() -> None:
    """`rescue-sim personas list` must answer fast: no litellm, matplotlib or networkx at import."""
    code = (
        "import sys; from simulator.cli import app; app._register(); "
        "print(sorted(m for m in ('litellm', 'matplotlib', 'networkx', 'langgraph') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert out.stdout.strip() == "[]"


# ---- 80 columns and every problem (issue 43, item 6) ----------------------------------------------------------


def test_show_at_80_columns_splits_no_word(app) -> None:
    from personas.library import resolve_case

    result = CliRunner().invoke(app, ["personas", "show", "nguyen-family"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    words = set(result.stdout.split())
    case = resolve_case("nguyen-family")
    texts = [t for m in case.members for t in (m.core_need, m.core_fear, *m.triggers, *m.softeners)]
    texts += [t for v in case.viewpoints for t in (v.viewpoint, v.attitude)]
    split = sorted({w.rstrip(";") for t in texts for w in t.split() if w not in words and w + ";" not in words})
    assert not split, f"words split across lines: {split[:10]}"
    for m in case.members:  # each trait whole, in order (lines joined)
        assert " ".join("; ".join(m.triggers).split()) in " ".join(result.stdout.split())


def test_check_lists_every_problem_of_every_card(invoke, tmp_path: Path) -> None:
    data = _without(card_data(), "setting")
    data["history"] = ""
    data["mood"] = "grim"
    first = write_card(tmp_path, "three-problems", _set_member(data, 0, age="old"))
    second = write_card(tmp_path, "one-problem", {**card_data(), "title": ""})
    fine = write_card(tmp_path, "fine", card_data())
    result = invoke("check", first, second, fine)
    assert result.exit_code == 2 and "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert lines == [
        f"error: {first}: setting: required field is missing",
        f"error: {first}: history: String should have at least 1 character (got '')",
        f"error: {first}: members[0] (Dana).age: must be a valid integer, unable to parse string as an integer "
        "(got 'old')",
        f"error: {first}: mood: unknown field; remove it or check its spelling",
        f"error: {second}: title: String should have at least 1 character (got '')",
    ]
    assert result.stdout.strip() == "5 problem(s); 1 valid card(s)"


def test_check_lists_every_consistency_problem_of_a_card_whose_fields_are_valid(invoke, tmp_path: Path) -> None:
    data = card_data()
    data["relation_pattern"] = "not_a_pattern"
    data["viewpoints"][0]["source"] = "Nobody"
    card = write_card(tmp_path, "inconsistent", data)
    result = invoke("check", card)
    assert result.exit_code == 2 and "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith(f"error: {card}: relation_pattern: 'not_a_pattern' is not a couple pattern")
    assert lines[1] == f"error: {card}: viewpoints[0].source: unknown member 'Nobody'; members are Dana, Theo"
    assert any("every ordered pair needs a viewpoint" in line for line in lines[2:])


def test_a_long_error_wraps_at_spaces_on_a_terminal_and_stays_one_line_in_a_pipe(app, monkeypatch) -> None:
    import io

    from rich.console import Console

    from simulator.cli import _common

    piped = CliRunner().invoke(app, ["personas", "show", "no-such-case"], env={"COLUMNS": "80"})
    (line,) = piped.stderr.strip().splitlines()
    assert len(line) > 200  # the known ids: one line for a program to read
    screen = io.StringIO()
    monkeypatch.setattr(_common, "err_console", Console(file=screen, force_terminal=True, width=80, color_system=None))
    wrapped = CliRunner().invoke(app, ["personas", "show", "no-such-case"])
    assert wrapped.exit_code == 2
    lines = screen.getvalue().splitlines()
    assert len(lines) > 2 and max(len(x) for x in lines) <= 80
    assert " ".join(screen.getvalue().split()) == line  # the same words, none cut
