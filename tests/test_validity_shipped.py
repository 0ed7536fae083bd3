"""Validity cards shipped as package data: looked up after the user's own, numbers only, and current.

A shipped card is keyed by the digest of the prompts and rubric that produced its numbers; when either changes,
the card no longer matches any judgment ("not validated" stays honest) and the freshness test below fails until
the card is regenerated with the command it names (judges/README.md, "Validity").
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from judges.validity import (
    ValidityCard,
    numbers_only,
    read_card,
    shipped_dir,
    validate,
    validity_for,
    write_card,
)
from judges.validity import card as card_module
from judges.validity.run import judge_digest
from personas.rescue import load_rescue
from simulator.llm.embedded import DEFAULT_LOCAL_MODEL
from simulator.llm.fake import FakeModelClient
from simulator.tracker import prompt_digest as tracker_digest
from tests.test_validity import FIXTURE, checklist_yes, fixture_client

ROOT = Path(__file__).resolve().parents[1]
REGENERATE = (
    f"rescue-sim gold sessions --data RESCUE-FILE --judge-model {DEFAULT_LOCAL_MODEL} --tracker-model "
    f"{DEFAULT_LOCAL_MODEL} --ship judges/validity/shipped (judges/README.md, Validity)"
)


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("RESCUE_SIM_HOME", str(tmp_path / "home"))


def _checklist_card(model: str = "judge/a") -> ValidityCard:
    client = FakeModelClient(yes=checklist_yes)
    (card,) = asyncio.run(validate(load_rescue(FIXTURE), client, source="f", instruments=["judge"], judge_model=model))
    return card


def test_a_shipped_card_answers_after_the_users_own(tmp_path, monkeypatch):
    shipped = tmp_path / "shipped"
    monkeypatch.setattr(card_module, "shipped_dir", lambda: shipped)
    card = _checklist_card()
    digest = judge_digest("checklist")
    assert not validity_for("judge", "judge/a", digest, measure="strategy").validated
    write_card(numbers_only(card), shipped)
    note = validity_for("judge", "judge/a", digest, measure="strategy")
    assert note.validated and note.card == f"shipped card judge-judge_a-{digest}.json"
    assert note.text == "strategy labels = gold 3/4, macro-F1 0.60"
    user = write_card(card)  # the user's own card (same key) wins
    assert validity_for("judge", "judge/a", digest, measure="target").card == str(user)
    # a shipped card for other prompts or another rubric does not answer for this judgment
    assert not validity_for("judge", "judge/a", judge_digest("verdict"), measure="strategy").validated


def test_numbers_only_keeps_the_numbers_and_drops_rescue_text():
    samples = load_rescue(FIXTURE)
    (tracker, judge) = asyncio.run(
        validate(samples, fixture_client(), source=str(FIXTURE), judge_model="j", judge_mode="verdict")
    )
    for card in (tracker, judge, _checklist_card()):
        bare = numbers_only(card)
        assert bare.headlines() == card.headlines() and numbers_only(bare) == bare
        text = bare.model_dump_json()
        for sample in samples:
            assert sample.sample_id not in text
            assert all(row.text[:30] not in text for row in sample.rows if len(row.text) > 20)
            assert all(f'"{name}"' not in text for name in sample.members)
        assert str(FIXTURE) not in text


def test_shipped_cards_are_current_and_numbers_only():
    """Fails when a shipped card's digest differs from what the current prompts and rubric produce: rerun the
    command in the message (it measures the embedded model again) and commit the new cards."""
    cards = {p.name: read_card(p) for p in sorted(shipped_dir().glob("*.json"))}
    checklist = [c for c in cards.values() if c.instrument == "judge" and c.judge_mode == "checklist"]
    assert [c.model for c in checklist] == [DEFAULT_LOCAL_MODEL], f"no shipped checklist judge card; run {REGENERATE}"
    for name, card in cards.items():
        current = tracker_digest() if card.instrument == "tracker" else judge_digest(card.judge_mode or "verdict")
        assert card.digest == current, (
            f"judges/validity/shipped/{name}: digest {card.digest} is not the current {card.instrument} digest "
            f"{current} (a prompt or the rubric changed); regenerate it: {REGENERATE}"
        )
        assert card == numbers_only(card), f"judges/validity/shipped/{name}: not numbers only; rerun {REGENERATE}"


def test_an_installed_package_finds_the_shipped_cards(tmp_path):
    """The package's build step (setuptools' build_py, what a wheel is made of) carries the cards, and a lookup
    from that installed layout (not this checkout) finds them."""
    site = tmp_path / "site"
    build = subprocess.run(
        [sys.executable, "-c", "import setuptools; setuptools.setup()", "-q", "build_py", "-d", str(site)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    # every data file the code reads from its packages (prompts, rubrics, cases, assets) is in what is installed:
    # the room's appraisal examples and the scripted baseline's lines were once left out of the wheel
    data = {
        p.relative_to(ROOT).as_posix()
        for package in ("personas", "simulator", "judges")
        for p in (ROOT / package).rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and p.name != "README.md" and "__pycache__" not in p.parts
    }
    built = {p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file()}
    assert sorted(data - built) == []
    shipped = sorted(p.name for p in shipped_dir().glob("*.json"))
    assert shipped and sorted(p.name for p in (site / "judges" / "validity" / "shipped").glob("*.json")) == shipped
    probe = (
        "import json, judges.validity as v; from judges.validity.run import judge_digest;"
        f"n = v.validity_for('judge', {DEFAULT_LOCAL_MODEL!r}, judge_digest('checklist'), measure='strategy');"
        "print(json.dumps([v.__file__, n.validated, n.card]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(site)!r}); {probe}"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"RESCUE_SIM_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    where, validated, card = json.loads(out.stdout)
    assert where.startswith(str(site)) and validated and card.startswith("shipped card judge-")
