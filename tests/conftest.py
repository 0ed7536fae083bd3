"""Shared pytest fixtures. Keep each fixture small and documented; add new ones in their own section."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Tests that import litellm themselves must not make it fetch its cost map from the internet (as the client ensures).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# ---- fake judges ---------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True, scope="session")
def _fake_judges_read_anchors_as_calibrated():
    """The fake judges (FakeModelClient, FakeOpenAIServer) answer the shipped rubric's anchor lines as a calibrated
    judge does (no line 0.1, yes line 0.9), so a P a test chooses for a line passes through anchored items
    unchanged. The simulator layer knows no rubric: its fakes start with none (simulator.llm.fake.DEFAULT_ANCHORS)."""
    from judges.scoring import load_rubric
    from judges.scoring._checklist import anchor_readings
    from simulator.llm import fake

    fake.DEFAULT_ANCHORS.update(anchor_readings(load_rubric()))
    yield


# ---- embedded-model tests -------------------------------------------------------------------------------------

EMBEDDED_MISSING = (
    "llama-cpp-python is not installed (the `local` extra); install with "
    "pip install -e '.[local,test]' to run the embedded-model tests"
)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """`@pytest.mark.embedded` tests skip with a reason when llama-cpp-python is absent; where
    RESCUE_SIM_REQUIRE_EMBEDDED=1 (CI, which installs it) they fail instead, so a broken install cannot pass."""
    if item.get_closest_marker("embedded") is None:
        return
    import importlib.util

    if importlib.util.find_spec("llama_cpp") is None:
        if os.environ.get("RESCUE_SIM_REQUIRE_EMBEDDED") == "1":
            pytest.fail(f"RESCUE_SIM_REQUIRE_EMBEDDED=1 but {EMBEDDED_MISSING}", pytrace=False)
        pytest.skip(EMBEDDED_MISSING)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """In CI an embedded test that skips for any reason is a failure: CI installs everything they need."""
    outcome = yield
    report = outcome.get_result()
    if (
        report.skipped
        and item.get_closest_marker("embedded") is not None
        and os.environ.get("RESCUE_SIM_REQUIRE_EMBEDDED") == "1"
    ):
        report.outcome = "failed"
        report.longrepr = f"embedded test skipped where RESCUE_SIM_REQUIRE_EMBEDDED=1: {report.longrepr}"


# ---- reference data -------------------------------------------------------------------------------------------

# ../shared/rescue next to the checkout, or wherever RESCUE_SIM_RESCUE_DIR points (e.g. a CI clone elsewhere)
RESCUE_DIR = Path(os.environ.get("RESCUE_SIM_RESCUE_DIR") or Path(__file__).resolve().parents[2] / "shared" / "rescue")
FIXTURES_DIR = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def rescue_dir() -> Path:
    """The RESCUE reference folder next to the repo (../shared/rescue); skips the test when it is absent."""
    if not RESCUE_DIR.is_dir():
        pytest.skip(f"RESCUE reference data not found at {RESCUE_DIR}")
    return RESCUE_DIR


# ---- benchmark (judges.bench) -----------------------------------------------------------------------------------


def _fill_from_schema(node: dict, defs: dict) -> object:
    if "$ref" in node:
        return _fill_from_schema(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
    if "const" in node:
        return node["const"]
    if "enum" in node:
        return node["enum"][0]
    kind = node.get("type")
    if kind == "object":
        return {k: _fill_from_schema(v, defs) for k, v in node["properties"].items()}
    if kind == "array":
        item = node["items"]
        item = defs[item["$ref"].rsplit("/", 1)[-1]] if "$ref" in item else item
        if "id" in item.get("properties", {}):  # a batch: one answer per asked id
            return [{**_fill_from_schema(item, defs), "id": i} for i in item["properties"]["id"]["enum"]]
        if "enum" in item:
            return item["enum"][: node.get("maxItems", 1)]
        return [_fill_from_schema(item, defs)]
    return {"string": "feels tense", "integer": 5, "number": 0.5}.get(kind)


@pytest.fixture
def bench_reply():
    """A FakeModelClient `default`: a valid reply to any bench or judge schema (first allowed labels)."""

    def reply(call) -> object:
        schema = call.schema.model_json_schema()
        return _fill_from_schema(schema, schema.get("$defs", {}))

    return reply


# ---- the CLI ----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def app():
    """The `rescue-sim` typer app with every command attached (`_register` is idempotent), for `CliRunner`."""
    from simulator.cli import app as cli_app

    cli_app._register()
    return cli_app.app
