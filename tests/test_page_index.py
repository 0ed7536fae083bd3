"""The served page data (`<run>/.serve-index.json`) is written by the commands that write a run (`run`, `judge`,
and through `run_specs` `stress`/`sensitivity`), so `rescue-sim serve` shows a never-served run without building it,
under whatever name the run is served; a write that cannot happen never fails the command."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

import simulator.serve._runs as served
from personas.library import resolve_case
from simulator.cli import app as cli_app
from simulator.llm.fake import FakeModelClient
from simulator.records import SessionStatus
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
    monkeypatch.setattr("simulator.llm.settings.make_client", lambda settings: fake)
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
    monkeypatch.setattr("simulator.llm.settings.make_client", lambda settings: judge)
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


def test_a_changed_run_reads_again_only_the_sessions_that_changed(tmp_path: Path, monkeypatch) -> None:
    """Sessions rewritten, re-judged or added after the run's command: the rebuild reads those alone (the others'
    entries are kept in `.serve-entries.json`), and the page shows exactly what a build from scratch shows, the
    changed sessions' new content included."""
    import judges.report as report
    from simulator.runner.pageindex import ENTRIES_NAME
    from tests._rating_fixtures import SessionSpec, make_judged_run

    def low(judge: str, sid: str, item: str, dim: str) -> int:
        return 2

    run = tmp_path / "runs" / "r"
    specs = [SessionSpec(f"c{k}__s0", case_id=f"c{k}") for k in range(5)]
    make_judged_run(run, "openai/gpt-4o-mini", specs, low)
    first = RunsRoot(run).report_data(".")
    assert (run / ENTRIES_NAME).is_file() and {s.scores["overall_quality"] for s in first.sessions} == {2.0}

    read: list[str] = []
    real = report.read_entry
    monkeypatch.setattr(report, "read_entry", lambda folder, sid: read.append(sid) or real(folder, sid))
    make_judged_run(run, "openai/gpt-4o-mini", [specs[1]], lambda judge, sid, item, dim: 5)  # re-judged higher
    make_judged_run(run, "openai/gpt-4o-mini", [SessionSpec("c9__s0", case_id="c9")], low)  # added
    folder = RunFolder(run)
    failed = folder.load_session("c3__s0").model_copy(
        update={"status": SessionStatus.FAILED, "failure": "rewritten by hand"}
    )
    folder.write_session(failed)
    served_now = RunsRoot(run).report_data(".")
    assert sorted(read) == ["c1__s0", "c3__s0", "c9__s0"]
    rows = {s.id: s for s in served_now.sessions}
    assert rows["c1__s0"].scores["overall_quality"] == 5.0 and rows["c0__s0"].scores["overall_quality"] == 2.0
    assert rows["c3__s0"].status == "failed" and rows["c3__s0"].failure == "rewritten by hand"
    assert "c9__s0" in rows and len(rows) == 6
    (row,) = served_now.leaderboard.rows
    assert row.sessions == 6 and row.failed_sessions == 1 and row.completed == 5

    (run / ENTRIES_NAME).unlink()  # the same folder built from scratch
    (run / INDEX_NAME).unlink()
    scratch = RunsRoot(run).report_data(".")
    assert served_now.model_copy(update={"generated_at": scratch.generated_at}) == scratch
    assert len(read) == 3 + 6

    read.clear()
    (run / ENTRIES_NAME).write_text("another code version\n{}")  # entries another build of the code kept: not used
    (run / INDEX_NAME).unlink()
    assert RunsRoot(run).report_data(".").sessions == scratch.sessions and len(read) == 6
