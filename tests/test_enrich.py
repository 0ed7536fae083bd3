"""`import-rescue --enrich`: inferred member traits, marked as inferred with evidence rows; failures reported."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from personas.case import load_case
from personas.rescue import case_from_sample, load_rescue
from simulator.cli import app as cli_app
from simulator.enrich import ENRICHED_FIELDS, enrich_case
from simulator.llm.fake import FakeModelClient

FIXTURE = Path(__file__).parent / "fixtures" / "rescue_mini.jsonl"


def traits(rows):
    return {
        "evidence_rows": rows,
        "personality": "guarded, dry",
        "communication_style": "deflects with jokes",
        "core_need": "to be respected",
        "core_fear": "being found wanting",
        "triggers": ["being lectured"],
        "softeners": ["being asked, not told"],
    }


def test_enrich_case_marks_every_trait_as_inferred_with_rows():
    sample = load_rescue(FIXTURE)[0]
    case = case_from_sample(sample)
    first_row = sample.rows[0].row_index
    client = FakeModelClient(default=lambda call: traits([first_row]), model="fake/enricher")
    out = asyncio.run(enrich_case(case, sample, client))
    for m in out.members:
        assert m.communication_style == "deflects with jokes" and m.triggers == ["being lectured"]
        assert {f.field for f in m.inferred} == set(ENRICHED_FIELDS)
        assert all(f.evidence_rows == [first_row] and f.model == "fake/enricher" for f in m.inferred)
    assert {c.role for c in client.calls} == {"enrich"}
    assert len(client.calls) == len(case.members)


def test_evidence_rows_outside_the_sample_are_rejected_not_kept():
    sample = load_rescue(FIXTURE)[0]
    case = case_from_sample(sample)
    good = sample.rows[0].row_index
    replies = [traits([9999]), traits([good])]  # first reply cites a row that does not exist
    client = FakeModelClient(replies=replies, default=lambda call: traits([good]))
    out = asyncio.run(enrich_case(case, sample, client))
    assert out.members[0].inferred[0].evidence_rows == [good]
    assert len(client.calls) == len(case.members) + 1  # one re-ask


@pytest.fixture
def invoke(monkeypatch):
    cli_app._register()
    holder = {}
    monkeypatch.setattr("simulator.llm.settings.make_client", lambda settings: holder["client"])

    def run(client, *args):
        holder["client"] = client
        res = CliRunner().invoke(cli_app.app, ["personas", "import-rescue", *map(str, args)], env={"COLUMNS": "200"})
        assert "Traceback" not in res.output
        return res

    return run


def test_cli_enrich_writes_enriched_cards(invoke, tmp_path):
    samples = load_rescue(FIXTURE)

    def reply(call):
        rows = call.schema.model_fields["evidence_rows"].annotation.__args__[0].__args__
        return traits([rows[0]])

    res = invoke(FakeModelClient(default=reply), FIXTURE, "--out", tmp_path, "--enrich")
    assert res.exit_code == 0, res.output
    assert f"enriched {len(samples)}/{len(samples)} cards" in res.output
    for s in samples:
        card = load_case(tmp_path / f"{case_from_sample(s).id}.yaml")
        assert all(m.communication_style == "deflects with jokes" and m.inferred for m in card.members)


def test_cli_enrich_failure_is_reported_and_exit_1(invoke, tmp_path):
    samples = load_rescue(FIXTURE)

    def reply(call):
        rows = call.schema.model_fields["evidence_rows"].annotation.__args__[0].__args__
        return traits([rows[0]])

    client = FakeModelClient(default=reply)
    client.by_role["enrich"] = [TimeoutError("timed out after 600s")] * 3  # the first member call fails 3 times
    res = invoke(client, FIXTURE, "--out", tmp_path, "--enrich")
    assert res.exit_code == 1
    assert "enrichment failed" in res.output and "timed out" in res.output
    # every card is still written, the failed one without inferred traits
    cards = [load_case(tmp_path / f"{case_from_sample(s).id}.yaml") for s in samples]
    assert sum(not any(m.inferred for m in c.members) for c in cards) >= 1
