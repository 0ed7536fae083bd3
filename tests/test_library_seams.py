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
