"""The supporter ladder and `rescue-sim sensitivity`: ladder specs parse into supporters whose prompts differ, their
decisions keep the contract, the declared orders are data, and the statistics separate only what they measured."""

from __future__ import annotations

import asyncio

import pytest

from personas.library import load_library
from personas.taxonomy import strategies_for
from simulator.llm.fake import FakeModelClient
from simulator.records import Turn
from simulator.supporters import (
    LADDER_STYLES,
    InvalidDecision,
    ModelSupporter,
    ScriptedSupporter,
    SilentSupporter,
    SupporterSpecError,
    parse_supporter_spec,
)
from simulator.view import build_view

M = "fake/model"


def _view(case_id: str = "dana-and-theo"):
    case = next(c for c in load_library() if c.id == case_id)
    a, b = case.member_names[:2]
    turns = [
        Turn(index=1, speaker=a, kind="member", addressees=[], text="You never listen to me."),
        Turn(index=2, speaker=b, kind="member", addressees=[], text="Because you only ever complain."),
    ]
    return case, build_view(case, turns, member_turns=2, max_turns=6)


def test_ladder_specs_parse_and_each_rung_prompt_differs():
    client = FakeModelClient()
    assert isinstance(parse_supporter_spec("silent", client), SilentSupporter)
    assert isinstance(parse_supporter_spec("scripted", client), ScriptedSupporter)
    _, view = _view()
    prompts = {}
    for spec in [M, *(f"{s}:{M}" for s in LADDER_STYLES)]:
        sup = parse_supporter_spec(spec, client)
        assert isinstance(sup, ModelSupporter)
        assert sup.model == M and sup.spec == spec  # same model; the record's supporter names the rung
        prompts[spec] = sup.instructions(view)
    assert len(set(prompts.values())) == len(prompts)
    case = view.intake
    assert case.member_names[0] in prompts[f"sides:{M}"] and "blame" in prompts[f"sides:{M}"]
    assert "advice" in prompts[f"lecture:{M}"] and "feelings" in prompts[f"lecture:{M}"]
    assert "spoke the last line" in prompts[f"generic:{M}"]


@pytest.mark.parametrize("bad", ["sides:", "sides:gpt4", "lecture:http://x/v1#m", "generic:a b/c"])
def test_ladder_spec_needs_a_model_id(bad):
    with pytest.raises(SupporterSpecError):
        parse_supporter_spec(bad, FakeModelClient())


def good_instructions(style, view):
    return ModelSupporter(client=FakeModelClient(), model=M, spec=f"{style}:{M}", style=style).instructions(view)


@pytest.mark.parametrize("case_id", ["dana-and-theo", "nguyen-family"])
@pytest.mark.parametrize("style", LADDER_STYLES)
def test_degraded_supporters_keep_the_decision_contract(style, case_id):
    case, view = _view(case_id)
    last = view.transcript[-1].speaker
    strategy = next(iter(strategies_for(case.group)))
    good = FakeModelClient(replies=[{"speak": True, "targets": [last], "strategy": strategy, "text": "I hear you."}])
    decision = asyncio.run(parse_supporter_spec(f"{style}:{M}", good).decide(view))
    assert decision.speak and decision.targets == [last] and decision.strategy == strategy
    assert good.calls[0].model == M and good.calls[0].prompt.instructions == good_instructions(style, view)
    off = FakeModelClient(replies=[{"speak": True, "targets": [last], "strategy": "not_a_label", "text": "Hi."}] * 3)
    with pytest.raises(InvalidDecision):
        asyncio.run(parse_supporter_spec(f"{style}:{M}", off).decide(view))
    bad = FakeModelClient(
        replies=[{"speak": True, "targets": ["Nobody"], "strategy": "track", "text": "Hi."}] * 3,
    )
    with pytest.raises(InvalidDecision):
        asyncio.run(parse_supporter_spec(f"{style}:{M}", bad).decide(view))
