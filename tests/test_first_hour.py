"""The first hour of a new user (issue 12): errors before any work, plain statuses, visible progress, output that
reads at 80 columns, and the relation-graph picture. CLI tests go through the real typer app."""

from __future__ import annotations

import asyncio
import io
import json
import re
from pathlib import Path

import pytest
import yaml
from rich.console import Console
from typer.testing import CliRunner

from personas.common.errors import UserError
from personas.graph import RelationGraph, most_distressed_text
from personas.library import LIBRARY_DIR, load_library, resolve_case
from simulator.llm.fake import FakeModelClient
from simulator.llm.types import ModelConfigError
from simulator.runfolder import RunFolder
from tests._session_fixtures import couple_session, fill_reply
from tests._sim_fakes import RoomScript

NARROW = {"COLUMNS": "80", "RESCUE_SIM_MODEL": "", "RESCUE_SIM_JUDGES": "", "RESCUE_SIM_SUPPORTER": ""}
SIM_SCHEMAS = {"MemberStateReply", "TrackerReply", "SupporterReply"}


@pytest.fixture
def invoke(app):
    runner = CliRunner()

    def run(*args, env=None):
        result = runner.invoke(app, [str(a) for a in args], env={**NARROW, **(env or {})})
        assert "Traceback" not in result.output
        assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
        return result

    return run


@pytest.fixture
def fake(monkeypatch):
    """`run`, `judge` and `models` get this client; tests set `holder["client"]`."""
    case = resolve_case("dana-and-theo")
    holder = {"client": FakeModelClient(default=RoomScript(case)), "script": RoomScript(case)}
    monkeypatch.setattr("simulator.llm.settings.make_client", lambda settings: holder["client"])
    return holder


def judged_room(script: RoomScript, judge_reply=None):
    """Simulator calls answered by the room script, judge calls by `judge_reply` (default: valid scores)."""

    def reply(call):
        if call.schema is None or call.schema.__name__ in SIM_SCHEMAS:
            return script(call)
        if judge_reply is not None:
            return judge_reply(call)
        return fill_reply(call.schema, quote=script.line)

    return reply


def squash(text: str) -> str:
    return " ".join(text.split())


# ---- errors before any work ------------------------------------------------------------------------------------


def test_backwards_seed_range_is_refused_before_anything_is_written(invoke, fake, tmp_path):
    out = tmp_path / "r"
    res = invoke("run", "--case", "dana-and-theo", "--supporter", "scripted", "--seeds", "3-1", "--out", out)
    assert res.exit_code == 2
    [line] = res.stderr.strip().splitlines()
    assert line == "error: --seeds '3-1': the range runs backwards; write 1-3"
    assert not out.exists() and fake["client"].calls == []


def test_unknown_supporter_model_is_one_line_naming_role_model_and_option(app, tmp_path, monkeypatch):
    """The real client: litellm's lookup rejects the provider before any member turn runs."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    out = tmp_path / "r"
    args = ["run", "--case", "dana-and-theo", "--supporter", "nosuch/model", "--model", "openai/gpt-4o-mini"]
    res = CliRunner().invoke(app, [*args, "--out", str(out)], env=NARROW)
    assert res.exit_code == 2, res.output
    [line] = res.stderr.strip().splitlines()
    assert line.startswith("error: supporter model 'nosuch/model': unknown model;")
    assert line.endswith("(change it with --supporter)")
    assert not out.exists()


def test_dead_endpoint_is_reported_in_one_call_without_object_reprs(app, tmp_path, monkeypatch):
    """An OpenAI-compatible URL gets one tiny call (no retries); the reason carries no `<… object at 0x…>`."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    out = tmp_path / "r"
    args = ["run", "--case", "dana-and-theo", "--supporter", "http://127.0.0.1:1/v1#x"]
    args += ["--model", "openai/gpt-4o-mini"]
    res = CliRunner().invoke(app, [*args, "--out", str(out)], env=NARROW)
    assert res.exit_code == 2, res.output
    text = squash(res.stderr)
    assert text.startswith("error: supporter 'http://127.0.0.1:1/v1#x': endpoint http://127.0.0.1:1/v1 did not")
    assert "failed after 1 attempts" in text and "(change it with --supporter)" in text
    assert " object at 0x" not in text
    assert not out.exists()


def test_error_reasons_drop_object_reprs():
    from simulator.llm.client import _one_line

    err = OSError("Cannot connect to host 127.0.0.1:1 ssl:<ssl.SSLContext object at 0x7f3a2b1c9d40> [refused]")
    assert _one_line(err) == "Cannot connect to host 127.0.0.1:1 [refused]"


def test_every_configured_model_is_checked_once_with_the_role_to_change():
    from simulator.cli.models_cmd import problem_line
    from simulator.llm.preflight import check_models

    seen: list[str] = []

    class Client:
        def check_environment(self, model: str) -> None:
            seen.append(model)
            if model.startswith("openai/"):
                raise ModelConfigError(f"model {model!r}: missing API key; set OPENAI_API_KEY")

    import asyncio

    uses = [("member", "openai/m"), ("tracker", "openai/m"), ("judge", "openai/m"), ("supporter", "local/x")]
    [problem] = asyncio.run(check_models(Client(), uses))
    assert seen == ["openai/m", "local/x"]  # each distinct model once
    assert problem.roles == ("member", "tracker", "judge")
    assert problem_line(problem) == (
        "member, tracker, judge model 'openai/m': missing API key; set OPENAI_API_KEY (change it with --model, "
        "or per role with --member-model, --tracker-model, --judge-model or --judges; or skip judging with "
        "--no-judge)"
    )


# ---- failed, never incomplete; plain statuses -------------------------------------------------------------------


class StopsWithConfigError(FakeModelClient):
    """Answers like the room until the second member turn, then raises what an unknown model raises."""

    async def complete(self, prompt, *, role, **kwargs):
        if role == "member" and sum(c.role == "member" for c in self.calls) >= 2:
            raise ModelConfigError("unknown model 'nosuch/model'; use provider/model, e.g. openai/gpt-4o-mini")
        return await super().complete(prompt, role=role, **kwargs)


def test_a_session_stopped_by_an_error_is_failed_with_its_reason_and_never_scored(invoke, fake, tmp_path):
    fake["client"] = StopsWithConfigError(default=fake["script"])
    out = tmp_path / "r"
    args = ["--supporter", "scripted", "--turns", "3", "--no-judge", "--out", out]
    res = invoke("run", "--case", "dana-and-theo", *args)
    assert res.exit_code == 2 and "unknown model 'nosuch/model'" in res.stderr
    record = RunFolder(out).load_session("dana-and-theo__s0")
    assert record.status == "failed" and "unknown model 'nosuch/model'" in record.failure
    assert record.end_reason == "failed"

    shown = invoke("show", out)
    assert shown.exit_code == 0
    assert "failed: session: ModelConfigError: unknown model 'nosuch/model'" in squash(shown.stdout)
    assert "failed (failed)" not in shown.stdout and "(running)" not in shown.stdout

    row = json.loads(invoke("leaderboard", out, "--json").stdout)["rows"][0]
    assert row["failed_sessions"] == 1 and row["incomplete_sessions"] == 0 and row["scored"] == 0


def test_status_lines_read_plainly():
    from simulator.cli._render import status_line
    from simulator.records import EndReason, SessionStatus

    done = couple_session("s1")
    assert status_line(done) == "completed: turn limit reached"
    failed = done.model_copy(
        update={"status": SessionStatus.FAILED, "end_reason": EndReason.FAILED, "failure": "member turn 2: down"}
    )
    assert status_line(failed) == "failed: member turn 2: down"
    stopped = done.model_copy(update={"status": SessionStatus.INCOMPLETE, "end_reason": None})
    assert status_line(stopped) == "incomplete: stopped before its end; rerun the same command to resume"
    cut = done.model_copy(update={"status": SessionStatus.INCOMPLETE, "end_reason": EndReason.INTERRUPTED})
    assert status_line(cut) == "incomplete: interrupted; rerun the same command to resume"


# ---- judging: exit codes, counts, scores in show ----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["checklist", "verdict"])
def test_run_exits_1_when_judging_fails_and_says_how_many(invoke, fake, tmp_path, mode):
    fake["client"] = FakeModelClient(
        default=judged_room(fake["script"], judge_reply=lambda call: "not json"),
        yes=lambda call: RuntimeError("provider down"),
    )
    out = tmp_path / "r"
    res = invoke(
        "run", "--case", "dana-and-theo", "--supporter", "scripted", "--turns", "2", "--judge-mode", mode, "--out", out
    )
    assert res.exit_code == 1, res.output
    assert "judging failed for 1 of 1 session(s): dana-and-theo__s0: failed" in squash(res.stderr)
    assert RunFolder(out).load_session("dana-and-theo__s0").status == "completed"  # the session itself is kept


def test_partial_results_say_how_many_sessions_failed(invoke, fake, tmp_path):
    from simulator.llm.types import ModelError

    class LenaDown(FakeModelClient):
        async def complete(self, prompt, *, role, **kwargs):
            if role == "member" and "Lena" in prompt.context:
                raise ModelError("fake/model", "provider down")
            return await super().complete(prompt, role=role, **kwargs)

    fake["client"] = LenaDown(default=lambda call: RoomScript(resolve_case("dana-and-theo"))(call))
    out = tmp_path / "r"
    res = invoke(
        "run",
        "--case",
        "dana-and-theo",
        "--case",
        "lena-and-omar",
        "--supporter",
        "scripted",
        "--turns",
        "2",
        "--no-judge",
        "--out",
        out,
    )
    assert res.exit_code == 1, res.output
    assert "1 of 2 session(s) failed: lena-and-omar__s0: member turn 1" in squash(res.stderr)


def test_show_prints_the_judges_scores_when_the_session_was_judged(invoke, fake, tmp_path):
    fake["client"] = FakeModelClient(default=judged_room(fake["script"]), yes=lambda call: 0.7)
    out = tmp_path / "r"
    res = invoke("run", "--case", "dana-and-theo", "--supporter", "scripted", "--turns", "2", "--out", out)
    assert res.exit_code == 0
    shown = squash(invoke("show", out).stdout)
    assert "1 session(s) judged" in shown
    for label in ("strategy fit", "target fit", "overall"):
        assert label in shown
    (out / "judgments" / "dana-and-theo__s0.json").unlink()
    assert f"not judged yet: rescue-sim judge {out}" in squash(invoke("show", out).stdout)


def _judge_line(output: str, label: str) -> str:
    return next(line for line in output.splitlines() if line.startswith(f"│ {label}"))


def _local_checklist_card():
    """A checklist judge card for the default (embedded) judge, measured on the RESCUE fixture with a fake."""
    from judges.validity import validate
    from personas.rescue import load_rescue
    from simulator.llm.embedded import DEFAULT_LOCAL_MODEL
    from tests.test_validity import FIXTURE, checklist_yes

    (card,) = asyncio.run(
        validate(
            load_rescue(FIXTURE),
            FakeModelClient(yes=checklist_yes),
            source="f",
            instruments=["judge"],
            judge_model=DEFAULT_LOCAL_MODEL,
        )
    )
    return card


@pytest.mark.parametrize("where", ["user", "shipped"])
def test_run_prints_what_each_judge_number_is_worth_beside_it(invoke, fake, tmp_path, monkeypatch, where):
    """README command 1: beside each judge number, the matching card's figure (the user's card in RESCUE_SIM_HOME,
    or one shipped with the package), and "not validated" where no card measures that dimension; 80 columns."""
    from judges.validity import card as card_module
    from judges.validity import numbers_only, write_card

    monkeypatch.setenv("RESCUE_SIM_HOME", str(tmp_path / "home"))
    shipped = tmp_path / "shipped"
    monkeypatch.setattr(card_module, "shipped_dir", lambda: shipped)
    card = _local_checklist_card()
    write_card(card) if where == "user" else write_card(numbers_only(card), shipped)
    fake["client"] = FakeModelClient(default=judged_room(fake["script"]), yes=lambda call: 0.7)
    res = invoke("run", "--case", "dana-and-theo", "--supporter", "scripted", "--turns", "2", "--out", tmp_path / "r")
    assert res.exit_code == 0, res.output
    assert "judge vs RESCUE gold" in res.output
    assert "strategy accuracy 3/4 (n=4)" in _judge_line(res.output, "strategy=stated")
    assert "target accuracy 3/4 (n=4)" in _judge_line(res.output, "target fit")
    for label in ("strategy fit", "relational ", "sides taken", "balance"):
        assert _judge_line(res.output, label).split("│")[3].strip() == "not validated", label
    assert max(len(line) for line in res.output.splitlines()) <= 80


def test_run_says_not_validated_beside_every_number_without_a_card(invoke, fake, tmp_path, monkeypatch):
    from judges.validity import card as card_module

    monkeypatch.setenv("RESCUE_SIM_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(card_module, "shipped_dir", lambda: tmp_path / "none")
    fake["client"] = FakeModelClient(default=judged_room(fake["script"]), yes=lambda call: 0.7)
    res = invoke("run", "--case", "dana-and-theo", "--supporter", "scripted", "--turns", "2", "--out", tmp_path / "r")
    assert res.exit_code == 0, res.output
    for label in ("strategy=stated", "strategy fit", "target fit"):
        assert _judge_line(res.output, label).split("│")[3].strip() == "not validated", label


# ---- personas check ---------------------------------------------------------------------------------------------


def test_personas_check_reports_every_bad_card_then_exits_2(invoke, tmp_path):
    good = yaml.safe_load((LIBRARY_DIR / "dana-and-theo.yaml").read_text(encoding="utf-8"))
    folder = tmp_path / "cards"
    folder.mkdir()
    (folder / "good.yaml").write_text(yaml.safe_dump(good, sort_keys=False), encoding="utf-8")
    (folder / "a-bad.yaml").write_text(yaml.safe_dump({**good, "group": "trio"}, sort_keys=False), encoding="utf-8")
    (folder / "b-broken.yaml").write_text("title: [unclosed\n", encoding="utf-8")
    res = invoke("personas", "check", folder, env={"COLUMNS": "200"})
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("error: ") for line in lines)
    assert str(folder / "a-bad.yaml") in lines[0] and "group" in lines[0]
    assert str(folder / "b-broken.yaml") in lines[1] and "not valid YAML" in lines[1]
    assert "2 problem(s); 1 valid card(s)" in res.stdout


# ---- 80 columns ------------------------------------------------------------------------------------------------


def assert_fits(output: str, width: int = 80) -> None:
    assert "…" not in output, output
    assert all(len(line) <= width for line in output.splitlines()), output


def column_texts(output: str, headers: list[str]) -> list[str]:
    """The text of each column (cells wrapped over several lines joined), cut at the header line's offsets."""
    lines = output.splitlines()
    head = next(i for i, line in enumerate(lines) if all(h in line for h in headers))
    starts = [lines[head].index(h) for h in headers] + [None]
    return [squash(" ".join(line[a:b] for line in lines[head + 1 :])) for a, b in zip(starts, starts[1:])]


def test_personas_list_shows_every_value_whole_at_80_columns(invoke):
    res = invoke("personas", "list")
    assert res.exit_code == 0
    assert_fits(res.stdout)
    flat = squash(res.stdout)
    for head in ("id", "group", "pattern", "members", "title", "risk flags"):
        assert head in flat
    ids, patterns, titles = column_texts(res.stdout, ["id", "pattern", "title"])
    for case in load_library():
        assert f" {case.id} {case.group} " in f" {ids} "
        assert f"{case.relation_pattern} {', '.join(case.member_names)}" in patterns
        flags = " ".join(f.kind.value for f in case.risk_flags)
        assert squash(f"{case.title} {flags}") in titles


def make_judged_run(invoke, monkeypatch, path: Path, supporter: str, sessions: int, score_index: int) -> Path:

    client = FakeModelClient(default=lambda call: fill_reply(call.schema, score_index=score_index))
    monkeypatch.setattr("simulator.llm.settings.make_client", lambda settings: client)
    folder = RunFolder(path)
    folder.open({"supporter": supporter})
    for i in range(sessions):
        folder.write_session(couple_session(f"s{i}", supporter, seed=i))
    assert invoke("judge", "--judge-mode", "verdict", path).exit_code == 0
    return path


def test_leaderboard_shows_every_header_and_value_whole_at_80_columns(invoke, monkeypatch, tmp_path):
    runs = [
        make_judged_run(invoke, monkeypatch, tmp_path / "a", "openai/gpt-4o-mini", 3, 4),
        make_judged_run(invoke, monkeypatch, tmp_path / "b", "http://localhost:8000/v1#my-bot", 2, 3),
        make_judged_run(invoke, monkeypatch, tmp_path / "c", "scripted", 1, 2),
        make_judged_run(invoke, monkeypatch, tmp_path / "d", "silent", 2, 2),
    ]
    res = invoke("leaderboard", *runs)
    assert res.exit_code == 0, res.output
    assert_fits(res.stdout)
    board = json.loads(invoke("leaderboard", *runs, "--json").stdout)
    from simulator.cli.leaderboard_cmd import _cell, header

    names = [f"#{i} {row['supporter']}" for i, row in enumerate(board["rows"], start=1)]
    for name in names:
        assert name in res.stdout  # on one line, never folded
    header_lines = [line for line in res.stdout.splitlines() if "#1 " in line or "#3 " in line]
    assert header_lines and all(line.index("#") >= 0 for line in header_lines)
    first = next(line for line in res.stdout.splitlines() if "#1 " in line)
    assert "#2 " not in first or first.index("#1 ") < first.index("#2 ")  # rank order left to right
    from judges import MeanCI

    for row in board["rows"]:
        for dim in row["dimensions"]:
            assert header(dim["dimension"]) in res.stdout
            assert _cell(MeanCI(**dim["value"])) in res.stdout  # e.g. `-1.74 [-1.7–-1.7]`, whole
        assert _cell(MeanCI(**row["delta_tension"])) in res.stdout
    for label in ("sessions", "scored", "failed", "incomplete", "judge failures", "simulator failures", "Δtension"):
        assert label in res.stdout
    notes = squash(res.stdout)
    assert "No CI is shown where a supporter has one scored session (n = 1)" in notes
    assert "(scripted)" in notes and "λ=0.5." in notes


def test_help_has_no_bool_placeholders_and_one_metavar_style(invoke):
    run_help = invoke("run", "--help").stdout
    assert "<bool>" not in run_help and "--no-judge" in run_help
    for command, usage in (
        ("show", "rescue-sim show [OPTIONS] RUN_DIR"),
        ("judge", "rescue-sim judge [OPTIONS] RUN_DIR"),
        ("leaderboard", "rescue-sim leaderboard [OPTIONS] RUN_DIR..."),
        ("bench", "rescue-sim bench [OPTIONS] [RUN_DIR]..."),
    ):
        text = invoke(command, "--help").stdout
        assert usage in text, text
        assert "<bool>" not in text and "{" not in text.split("\n\n")[0] and "[[" not in text
    assert "<bool>" not in invoke("personas", "check", "--help").stdout


# ---- the relation-graph picture ---------------------------------------------------------------------------------


def test_graph_names_ties_as_ties(invoke, tmp_path):
    res = invoke("personas", "graph", "nguyen-family", "--png", tmp_path / "g.png")
    assert res.exit_code == 0
    assert "most distressed: Minh and Vy (tied at 7/10)" in res.stdout
    png = (tmp_path / "g.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert width > height  # the drawing and its edge table side by side
    assert most_distressed_text(RelationGraph.from_case(resolve_case("dana-and-theo"))) == "Dana (7/10)"


# ---- progress ---------------------------------------------------------------------------------------------------


def test_progress_costs_nothing_without_a_watcher_and_reports_with_one():
    from simulator.llm import progress

    assert progress.start("member", "m") is None and progress.current() is None
    seen = []
    with progress.watching(lambda p: seen.append((p.role, p.finished, p.prompt_done, p.completion_tokens))):
        call = progress.start("judge", "local/x")
        with progress.in_flight(call):
            assert progress.current() is call
            call.update(prompt_tokens=100, prompt_done=40)
        call.finish(prompt_done=100, completion_tokens=7)
    assert progress.current() is None
    assert seen == [("judge", False, 0, 0), ("judge", False, 40, 0), ("judge", True, 100, 7)]


def test_the_real_client_reports_each_call_to_the_watcher():
    import asyncio

    from simulator.llm import progress
    from simulator.llm.client import LiteLLMClient, ModelSettings
    from simulator.llm.types import Prompt

    client = LiteLLMClient(
        ModelSettings(default="openai/gpt-4o-mini", cache=False, litellm_kwargs={"mock_response": "hello"})
    )
    events = []
    with progress.watching(lambda p: events.append((p.role, p.finished, p.completion_tokens))):
        asyncio.run(client.complete(Prompt(context="c", instructions="i"), role="member"))
    assert events[0] == ("member", False, 0) and events[-1][:2] == ("member", True)


def test_waiting_area_shows_calls_judging_eta_and_batch_bar():
    from simulator.cli._render import Tally, Waiting, call_line
    from simulator.llm.progress import CallProgress

    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=False, color_system=None)
    waiting = Waiting(console)
    waiting.batch = Tally("sessions", 5, done=2)
    waiting.judging = Tally("judging", 3)
    call = CallProgress(role="judge", model="local/qwen", prompt_tokens=2310, prompt_done=1024, cached_tokens=800)
    waiting.hook(call)
    assert "read 1,024/2,310 tokens (800 cached)" in call_line(call)
    call.completion_tokens = 35
    assert call_line(call).endswith("wrote 35")
    console.print(waiting)
    text = out.getvalue()
    assert "sessions 2/5" in text and "ETA" in text and "judging 0/3" in text and "local/qwen" in text
    call.finish()
    waiting.hook(call)
    assert waiting.calls == {} and waiting.judging.done == 1
    assert re.search(r"judging 1/3 · \d+s · ETA", waiting.judging.line())


def test_engine_records_an_unexpected_error_as_failed(tmp_path):
    """Below the CLI: whatever stops a session, its last saved record says failed, with the reason."""
    import asyncio

    from simulator.engine import run_session
    from simulator.session_state import SessionConfig
    from simulator.supporters import ScriptedSupporter

    case = resolve_case("dana-and-theo")
    client = StopsWithConfigError(default=RoomScript(case))
    saved = []
    with pytest.raises(UserError):
        asyncio.run(
            run_session(
                case, ScriptedSupporter(), client, SessionConfig(max_turns=3), session_id="x", on_update=saved.append
            )
        )
    assert saved[-1].status == "failed" and saved[-1].finished_at is not None
    assert "unknown model" in saved[-1].failure


def test_judge_says_how_many_judgments_failed(invoke, monkeypatch, tmp_path):

    client = FakeModelClient(default=lambda call: "not json" if call.seed == 1 else fill_reply(call.schema))
    monkeypatch.setattr("simulator.llm.settings.make_client", lambda settings: client)
    folder = RunFolder(tmp_path / "r")
    folder.open({"supporter": "fake/supporter"})
    for i in range(2):
        folder.write_session(couple_session(f"s{i}", seed=i))
    res = invoke("judge", "--judge-mode", "verdict", folder.path)
    assert res.exit_code == 1
    assert "1 of 2 judgment(s) failed or partial" in squash(res.stderr)


def test_live_lines_fit_80_columns_and_never_wrap():
    """Issue 43: the live status line was 81-90 characters at 80 columns (642 of 2,293 frames wrapped)."""
    import time

    from simulator.cli._progress import RunProgress, progress_line
    from simulator.cli._render import Tally, Waiting, call_line
    from simulator.llm.progress import CallProgress
    from simulator.runner.runs import Progress

    call = CallProgress(
        role="member",
        model="local/qwen2.5-coder-1.5b",
        prompt_tokens=12_310,
        prompt_done=11_024,
        cached_tokens=10_800,
        completion_tokens=135,
    )
    assert len(call_line(call)) > 78  # as it was: too wide beside the spinner
    for width in (80, 60, 40):
        out = io.StringIO()
        console = Console(file=out, width=width, force_terminal=False, color_system=None)
        waiting = Waiting(console)
        waiting.batch = Tally("sessions", 12, done=3, failed=1)
        waiting.judging = Tally("judging", 80, done=7)
        waiting.hook(call)
        console.print(waiting)
        lines = out.getvalue().splitlines()
        assert len(lines) == 3 and max(len(x) for x in lines) <= width, lines
        if width >= 60:  # what was left out to fit: the cached count and the model (named when the run starts)
            assert "read 11,024/12,310" in lines[2] and "wrote 135" in lines[2], lines
    busy = Progress(
        total=120, done=31, failed=2, skipped=5, running=8, calls=12_345, cache_hits=4_321, tokens=9_876_543
    )
    busy.cost_usd, busy.started = 1.2345, time.perf_counter() - 3_723
    assert len(progress_line(busy)) > 80
    for width in (80, 60):
        out = io.StringIO()
        console = Console(file=out, width=width, force_terminal=False, color_system=None)
        board = RunProgress(console)
        board.update(busy)
        console.print(board)
        lines = out.getvalue().splitlines()
        assert len(lines) == 1 and len(lines[0]) <= width, lines
        assert "sessions 38/120" in lines[0] and "2 failed" in lines[0] and "12,345 calls" in lines[0]


def test_printed_paths_stay_whole_at_80_columns(invoke, fake, tmp_path, monkeypatch):
    """Issue 43: the saved session's path was broken mid-filename across two lines at 80 columns. The README's run
    folder (`runs/<case>-<supporter>-<hash>`, relative) prints whole on one line; the session file is named inside
    it; a path longer than the screen breaks only after a `/`."""
    from rich.console import Console

    from simulator.cli._common import print_path

    monkeypatch.chdir(tmp_path)
    out = Path("runs") / "dana-and-theo-local-qwen2-5-coder-1-5b-1a2b3c4d"
    res = invoke(
        "run", "--case", "dana-and-theo", "--supporter", "scripted", "--turns", "2", "--no-judge", "--out", out
    )
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "saved sessions/dana-and-theo__s0.json in the run folder" in lines
    assert f"run folder: {out}" in lines
    screen = io.StringIO()
    long = "runs/dana-and-theo-local-qwen2-5-coder-1-5b-1a2b3c4d/sessions/dana-and-theo__s0.json"
    print_path("saved", long, to=Console(file=screen, width=80, color_system=None))
    assert screen.getvalue().splitlines() == [
        "saved",
        "runs/dana-and-theo-local-qwen2-5-coder-1-5b-1a2b3c4d/sessions/",
        "dana-and-theo__s0.json",
    ]
