"""The served page data (`<run>/.serve-index.json`) is written by the commands that write a run (`run`, `judge`,
and through `run_specs` `stress`/`sensitivity`), so `rescue-sim serve` shows a never-served run without building it,
under whatever name the run is served; a write that cannot happen never fails the command."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

import simulator.serve._runs as served
from personas.library import resolve_case
from simulator.cli import app as cli_app
from simulator.cli import judge_cmd
from simulator.llm.fake import FakeModelClient
from simulator.runfolder import RunFolder
from simulator.runner.pageindex import INDEX_NAME, index_key, refresh_index
from simulator.serve import RunsRoot
from tests._session_fixtures import fill_reply
from tests._sim_fakes import RoomScript

RUN = ["run", "--case", "dana-and-theo", "--supporter", "scripted", "--turns", "2", "--no-judge", "--no-live"]


def _keyed(run: Path) -> bool:
    """Whether the run's index is there and current (its first line is the key of the run's files now)."""
    index = run / INDEX_NAME
    return index.is_file() and index.read_bytes().partition(b"\n")[0].decode() == index_key(run)


def _run(tmp_path: Path, monkeypatch) -> Path:
    cli_app._register()
    fake = FakeModelClient(default=RoomScript(resolve_case("dana-and-theo")))
    monkeypatch.setattr("simulator.cli.run_cmd.make_client", lambda settings: fake)
    out = tmp_path / "runs" / "r"
    res = CliRunner().invoke(cli_app.app, [*RUN, "--out", str(out)], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    return out


def test_run_then_judge_leave_an_index_serve_uses_under_any_name(tmp_path: Path, monkeypatch) -> None:
    out = _run(tmp_path, monkeypatch)
    assert _keyed(out)
    folder = RunFolder(out)
    (sid,) = folder.session_ids()
    record = folder.load_session(sid)
    judge = FakeModelClient(default=lambda call: fill_reply(call.schema, record=record))
    monkeypatch.setattr(judge_cmd, "make_client", lambda settings: judge)
    res = CliRunner().invoke(
        cli_app.app, ["judge", "--judge-mode", "verdict", str(out), "--judges", "fake/judge"], env={"COLUMNS": "200"}
    )
    assert res.exit_code == 0, res.output
    assert (out / "judgments" / f"{sid}.json").is_file() and _keyed(out)  # rewritten with the judgment in

    def refuse(run):
        raise AssertionError(f"built {run}: the index was not used")

    monkeypatch.setattr(served, "build_index_data", refuse)
    under_root = RunsRoot(tmp_path / "runs").report_data("r")  # `serve runs`
    as_root = RunsRoot(out).report_data(".")  # `serve runs/r`
    assert under_root.runs == ["r"] and [s.run for s in under_root.sessions] == ["r"]
    assert as_root.runs == ["."] and [s.run for s in as_root.sessions] == ["."]
    assert [s.id for s in under_root.sessions] == [sid]
    assert under_root.sessions[0].model_copy(update={"run": "."}) == as_root.sessions[0]
    assert under_root.sessions[0].judged and under_root.sessions[0].scores  # the judgment is served


def test_a_later_change_still_rebuilds_the_index(tmp_path: Path, monkeypatch) -> None:
    out = _run(tmp_path, monkeypatch)
    built: list[Path] = []
    real = served.build_index_data
    monkeypatch.setattr(served, "build_index_data", lambda run: built.append(run) or real(run))
    (sid,) = RunFolder(out).session_ids()
    session = out / "sessions" / f"{sid}.json"
    session.write_text(session.read_text() + " ")  # the same record, another size
    assert not _keyed(out)
    assert RunsRoot(out).report_data(".").sessions[0].id == sid and built == [out]
    assert _keyed(out)


def test_an_index_that_cannot_be_written_does_not_fail(tmp_path: Path, monkeypatch) -> None:
    out = _run(tmp_path, monkeypatch)
    (out / INDEX_NAME).unlink()
    monkeypatch.setattr("simulator.runner.pageindex.build_index_data", lambda run: 1 / 0)
    assert refresh_index(out) is False and not (out / INDEX_NAME).exists()
    assert refresh_index(tmp_path / "no-such-run") is False
