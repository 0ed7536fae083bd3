"""The pieces the commands moved into the library: the one model pre-check, errors that name parameters (said as
flags by the commands), and the stress/sensitivity supporter check, each usable without the CLI."""

import asyncio
from pathlib import Path

import pytest

from personas.common.errors import Param, ParameterError, UserError
from simulator.cli._common import as_flag
from simulator.llm.preflight import UnusableModels, preflight
from simulator.llm.types import ModelConfigError


class Keyless:
    """A client whose `openai/` models lack a key, as the real client's environment check says."""

    def __init__(self):
        self.checked: list[str] = []

    def check_environment(self, model: str) -> None:
        self.checked.append(model)
        if model.startswith("openai/"):
            raise ModelConfigError(f"model {model!r}: missing API key; set OPENAI_API_KEY")


def test_the_pre_check_names_every_unusable_model_with_its_roles():
    client = Keyless()
    uses = [("member", "openai/a"), ("tracker", "openai/a"), ("judge", "openai/b"), ("supporter", "local/x")]
    with pytest.raises(UnusableModels) as caught:
        asyncio.run(preflight(client, uses))
    assert client.checked == ["openai/a", "openai/b", "local/x"]  # each distinct model once, in order
    assert [(p.roles, p.model) for p in caught.value.problems] == [
        (("member", "tracker"), "openai/a"),
        (("judge",), "openai/b"),
    ]
    assert str(caught.value) == (
        "member, tracker model 'openai/a': model 'openai/a': missing API key; set OPENAI_API_KEY; "
        "judge model 'openai/b': model 'openai/b': missing API key; set OPENAI_API_KEY"
    )
    assert asyncio.run(preflight(client, [("member", "local/x")])) is None


def test_a_parameter_error_names_the_parameter_and_a_command_says_its_flag():
    err = ParameterError(Param("supporter_knows"), " 'x': use one of intake, oracle")
    assert str(err) == "supporter_knows 'x': use one of intake, oracle"
    assert err.params == ["supporter_knows"]
    assert err.worded(as_flag) == "--supporter-knows 'x': use one of intake, oracle"
    assert err.worded(lambda p: as_flag(p, {"supporter_knows": "--knows"})) == "--knows 'x': use one of intake, oracle"


def test_run_config_refuses_an_unknown_supporter_view_by_its_parameter_name():
    from personas.library import resolve_case
    from simulator.llm.settings import model_settings
    from simulator.runner.run_setup import run_config

    case = resolve_case("dana-and-theo")
    kwargs = dict(seeds=[0], turns=2, tracker_every=3, judge=True, judges=[], supporter_knows="everything")
    with pytest.raises(ParameterError, match=r"^supporter_knows 'everything': use one of"):
        run_config([case], "scripted", model_settings("openai/m"), **kwargs)
    config = run_config([case], "scripted", model_settings("openai/m"), **{**kwargs, "supporter_knows": "intake"})
    assert config.judges == ["openai/m"] and config.models["member"] == "openai/m"


def test_stress_supporters_are_checked_without_a_model(tmp_path):
    from simulator.runner.stress_config import StressConfig
    from simulator.runner.stress_setup import check_supporters

    config = StressConfig(supporters=["scripted", "human"], cases=["dana-and-theo"])
    with pytest.raises(UserError, match=r"^s.yaml: supporters\[1\]: human: stress runs need an automatic supporter"):
        check_supporters(config, Path("s.yaml"))


# -- library errors name the library's parameters; each command says them as its own flags -----------------------


def test_a_bad_supporter_spec_names_the_supporter_parameter():
    from simulator.llm.fake import FakeModelClient
    from simulator.runner.stress_config import StressConfig
    from simulator.runner.stress_setup import check_supporters
    from simulator.supporters import SupporterSpecError, parse_supporter_spec

    with pytest.raises(SupporterSpecError, match=r"^supporter 'what is this' is not a known form") as bad:
        parse_supporter_spec("what is this", FakeModelClient())
    assert bad.value.worded(as_flag).startswith("--supporter 'what is this' is not a known form")
    with pytest.raises(ParameterError, match=r"^supporter http://h/v1: add the model name after '#'"):
        parse_supporter_spec("http://h/v1", FakeModelClient())
    config = StressConfig(supporters=["scripted", "what is this"], cases=["dana-and-theo"])  # a config names its entry
    with pytest.raises(UserError, match=r"^s.yaml: supporters\[1\]: 'what is this' is not a known form"):
        check_supporters(config, Path("s.yaml"))


def test_run_folder_errors_name_out_dir(tmp_path):
    from simulator.runfolder import RunFolder, RunFolderError

    RunFolder(tmp_path).open({"a": 1})
    with pytest.raises(RunFolderError, match=r"\(changed: a\); use another out_dir folder$") as changed:
        RunFolder(tmp_path).open({"a": 2})
    assert changed.value.worded(lambda p: as_flag(p, {"out_dir": "--out"})).endswith("use another --out folder")
    lock = RunFolder(tmp_path).lock()
    try:
        with pytest.raises(RunFolderError, match=r"writing this run folder; wait for it or use another out_dir$"):
            RunFolder(tmp_path).lock()
    finally:
        lock.release()


def test_serve_errors_name_port_and_rate(tmp_path):
    import socket

    from simulator.serve import ServeError, bind_socket
    from simulator.serve._rate import load_batch

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    try:
        with pytest.raises(
            ServeError, match=rf"^port {port}: cannot listen on 127\.0\.0\.1:{port} .*; pass another port"
        ):
            bind_socket("127.0.0.1", port)
    finally:
        taken.close()
    with pytest.raises(ServeError, match=r"^rate .*none\.jsonl: no such file; pass the items file") as missing:
        load_batch(tmp_path / "none.jsonl")
    assert missing.value.worded(as_flag).startswith(f"--rate {tmp_path / 'none.jsonl'}: no such file")


def test_human_reference_errors_name_dirs_and_the_ladder_names_rungs(tmp_path):
    from simulator.runner.sensitivity_human import load_human_sessions
    from simulator.runner.sensitivity_ladder import LadderError, load_ladder

    reference = load_ladder().reference("human")
    with pytest.raises(ParameterError, match=r"^dirs .*nope: no such folder") as nope:
        load_human_sessions([tmp_path / "nope"], reference)
    assert nope.value.worded(lambda p: as_flag(p, {"dirs": "--human"})).startswith(f"--human {tmp_path / 'nope'}:")
    with pytest.raises(LadderError, match=r"it sits beside model: include that rung in rungs$") as left_out:
        load_ladder().subset(["sides", "silent"]).reference("human")
    assert left_out.value.worded(as_flag).endswith("include that rung in --rungs")


def test_ray_env_names_are_checked_under_the_name_they_came_in_as():
    from simulator.runner.ray_cluster import parse_env_names

    with pytest.raises(ParameterError, match=r"^env: 'sk-123' is not a variable name") as bad:
        parse_env_names("sk-123")
    assert bad.value.worded(lambda p: as_flag(p, {"env": "--ray-env"})).startswith("--ray-env: 'sk-123'")
    with pytest.raises(ParameterError, match=r"^ray_env: 'sk-123' is not a variable name"):
        parse_env_names(["sk-123"], source="ray_env")  # a config's key, said as it is
