"""The supporter sees only what a counsellor in the room would, cannot change the record, is never rewritten,
and "addressed" safety is a model's judgment with a quote, not a keyword match."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import BaseModel

from personas.library import resolve_case
from simulator.engine import run_session
from simulator.llm.fake import FakeModelClient
from simulator.records import SessionStatus
from simulator.safety import keyword_hint
from simulator.session_state import SessionConfig
from simulator.supporters import CallableSupporter, ModelSupporter, ScriptedSupporter
from tests._sim_fakes import RoomScript


def run(case, supporter, client, **cfg):
    return asyncio.run(run_session(case, supporter, client, SessionConfig(**cfg), session_id="t"))


@pytest.fixture
def risky():
    """A case with a member at risk and private knowledge on the card."""
    return resolve_case("arjun-and-meera")


def walk(obj, seen=None):
    """Every value reachable from what the supporter got: attributes, dict values, sequence items."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    yield obj
    if isinstance(obj, BaseModel):
        for name in type(obj).model_fields:
            yield name
            yield from walk(getattr(obj, name), seen)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from walk(v, seen)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for v in obj:
            yield from walk(v, seen)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        for k, v in vars(obj).items():
            yield k
            yield from walk(v, seen)


def secrets_of(case) -> dict[str, str]:
    out = {"pattern label": case.relation_pattern}
    for m in case.members:
        for field in ("core_need", "core_fear", "personality", "communication_style"):
            if getattr(m, field):
                out[f"{m.name}.{field}"] = getattr(m, field)
        for item in (*m.private_knowledge, *m.triggers, *m.softeners):
            out[f"{m.name} card item"] = item
    for f in case.risk_flags:
        out["risk flag"] = f.description
    for vp in case.viewpoints:
        out["viewpoint"] = vp.viewpoint
    return out


def test_a_snooping_supporter_finds_no_inner_state_private_knowledge_risk_flag_or_pattern(risky):
    seen: list = []

    def snoop(view):
        seen.append(list(walk(view)))
        return None

    client = FakeModelClient(default=RoomScript(risky, at_risk=["Arjun"]))
    rec = run(risky, CallableSupporter(fn=snoop, spec="snoop:fn"), client, max_turns=4, tracker_every=1)
    assert rec.status == SessionStatus.COMPLETED and len(seen) == len(rec.decisions) >= 2
    assert any(t.inner is not None for t in rec.turns)  # the insider view existed, and the tracker ran
    assert any(t.tracker is not None for t in rec.turns)
    banned_names = {
        "inner",
        "landed",
        "felt_heard",
        "private_knowledge",
        "core_need",
        "core_fear",
        "triggers",
        "softeners",
        "risk_flags",
        "relation_pattern",
        "warmth",
        "tension",
        "at_risk",
        "tracker",
        "directive",
        "viewpoints",
        "observer",
        "case",
    }
    secrets = secrets_of(risky)
    for values in seen:
        names = {v for v in values if isinstance(v, str)}
        assert not (names & banned_names), names & banned_names
        text = " ".join(v for v in values if isinstance(v, str))
        leaked = {k: v for k, v in secrets.items() if v and v in text}
        assert not leaked, leaked
        assert not any(isinstance(v, float) for v in values)  # no numeric warmth/tension


def test_oracle_knowledge_is_opt_in_and_recorded(risky):
    got = []
    client = FakeModelClient(default=RoomScript(risky))
    rec = run(
        risky,
        CallableSupporter(fn=lambda view: got.append(view) or None, spec="o:f"),
        client,
        max_turns=3,
        tracker_every=1,
        supporter_knows="oracle",
    )
    assert rec.supporter_knows == "oracle"
    assert got[-1].oracle is not None and got[-1].oracle.case.relation_pattern == risky.relation_pattern
    assert got[-1].oracle.tracker is not None


def _vandal(view):
    """Tries every way to change what it was given, then speaks."""
    for t in view.transcript:
        for attempt in (lambda: setattr(t, "text", "REWRITTEN"), lambda: t.addressees.append("x")):  # noqa: B023
            try:
                attempt()
            except Exception:  # noqa: BLE001 - frozen models and tuples refuse, as they should
                pass
    try:
        view.intake.members[0].__dict__["name"] = "Mallory"
    except Exception:  # noqa: BLE001
        pass
    try:
        object.__setattr__(view.transcript[-1], "text", "REWRITTEN") if view.transcript else None
    except Exception:  # noqa: BLE001
        pass
    return "Can you each say what you need?"


def test_a_mutating_supporter_leaves_the_saved_session_identical(risky):
    def session(fn):
        client = FakeModelClient(default=RoomScript(risky))
        rec = run(risky, CallableSupporter(fn=fn, spec="same:spec"), client, max_turns=4, seed=3)
        data = json.loads(rec.model_dump_json(exclude={"started_at", "finished_at", "wall_s"}))
        for d in data["decisions"]:
            d["raw"] = None
        for t in data["turns"]:
            if t["decision"]:
                t["decision"]["raw"] = None
        return json.dumps(data, sort_keys=True)

    assert "REWRITTEN" not in session(_vandal)
    assert "Mallory" not in session(_vandal)
    assert session(_vandal) == session(lambda view: "Can you each say what you need?")


@pytest.mark.parametrize(
    "reply, reason",
    [
        ({"speak": True, "targets": ["Meeraa"], "text": "Meera, go on."}, "unknown target"),
        ({"speak": True, "targets": [], "text": "Go on."}, "no target"),
        ({"speak": True, "targets": ["Meera"], "text": "   "}, "said nothing"),
        ({"speak": True, "targets": ["Couple", "Meera"], "text": "Go on."}, "already means everyone"),
        # a counsellor turn the 1.5B wrote as a member's line: Meera's words, not the counsellor's
        (
            {"speak": True, "targets": ["Meera"], "text": "Meera (to Therapist): 'It's hard when he works so late.'"},
            "writes a line for Meera",
        ),
    ],
)
def test_invalid_targets_and_empty_speech_are_invalid_not_rewritten(risky, reply, reason):
    client = FakeModelClient(default=RoomScript(risky))
    rec = run(risky, CallableSupporter(fn=lambda view: dict(reply), spec="bad:fn"), client, max_turns=1)
    d = rec.decisions[0]
    assert not d.valid and reason in d.invalid_reason and d.reasks == 2
    assert not d.speak and d.targets == [] and d.text == ""
    assert json.loads(d.raw) == reply
    assert [t.kind for t in rec.turns] == ["member"]


def test_model_supporter_schema_needs_a_target_and_bad_output_is_recorded_invalid(risky):
    script = RoomScript(risky)

    def reply(call):
        if call.schema is not None and call.schema.__name__ == "SupporterReply":
            return {"speak": True, "targets": [], "strategy": "track", "text": "hello"}
        return script(call)

    client = FakeModelClient(default=reply)
    sup = ModelSupporter(client=client, model="fake/sup", spec="fake/sup")
    rec = run(risky, sup, client, max_turns=1)
    d = rec.decisions[0]
    assert rec.status == SessionStatus.COMPLETED
    assert not d.valid and "targets" in d.invalid_reason and '"targets": []' in d.raw
    supporter_calls = [c for c in client.calls if c.role == "supporter"]
    assert len(supporter_calls) == 3 * 3  # 3 parse attempts, asked 1 + 2 times
    assert "previous answer was invalid" in supporter_calls[-1].prompt.instructions


def test_free_text_supporters_are_asked_at_every_gate(risky):
    from simulator.supporters import FreeTextSupporter

    script = RoomScript(risky)
    client = FakeModelClient(default=lambda call: "" if call.role == "supporter" else script(call))
    sup = FreeTextSupporter(client=client, model="hosted_vllm/bot", spec="http://x/v1#bot")
    rec = run(risky, sup, client, max_turns=4)
    assert len([c for c in client.calls if c.role == "supporter"]) == 4
    assert all(d.valid and not d.speak for d in rec.decisions)  # an empty reply is a pass


def test_scripted_baseline_needs_no_hidden_state(risky):
    client = FakeModelClient(default=RoomScript(risky))
    rec = run(risky, ScriptedSupporter(), client, max_turns=4)
    assert rec.status == SessionStatus.COMPLETED
    assert any(d.speak and d.valid for d in rec.decisions)


# -- safety is a model judgment -------------------------------------------------------------------------------


def _safety_session(case, supporter_text, verdict):
    """A member at risk (tracker signal) and one supporter line; the safety verdict comes from the model."""
    script = RoomScript(case, at_risk=["Arjun"], supporter_text=supporter_text, targets=["Arjun"])
    checks = []

    def reply(call):
        if call.schema is not None and call.schema.__name__ == "SafetyVerdictReply":
            checks.append(call)
            return verdict
        return script(call)

    client = FakeModelClient(default=reply)
    sup = ModelSupporter(client=client, model="fake/sup", spec="fake/sup")
    rec = run(case, sup, client, max_turns=3, tracker_every=1)
    return rec, checks


@pytest.mark.parametrize(
    "text", ["It sounds like you both want more harmony at home.", "It's safe to say you're both tired."]
)
def test_a_safety_word_in_another_sense_is_not_attending(risky, text):
    assert keyword_hint(text)
    rec, checks = _safety_session(risky, text, {"quote": "", "reasoning": "not about risk", "attended": False})
    assert checks, "each supporter turn after the signal is checked by the model"
    event = rec.safety[0]
    assert not event.addressed and event.checks and event.checks[0].keyword_hint
    assert all(not c.attended for c in event.checks)


def test_a_real_check_in_without_keywords_is_attending(risky):
    text = "Arjun, I'm worried about you after what you said. Are you thinking of ending things?"
    assert not keyword_hint(text)
    rec, _ = _safety_session(
        risky, text, {"quote": "Are you thinking of ending things?", "reasoning": "asks directly", "attended": True}
    )
    event = rec.safety[0]
    assert event.addressed and event.addressed_at == event.checks[0].turn
    assert event.checks[0].quote == "Are you thinking of ending things?" and not event.checks[0].keyword_hint


def test_an_attending_verdict_must_quote_the_turn(risky):
    rec, checks = _safety_session(
        risky,
        "Let's hear from Meera now.",
        {"quote": "Are you safe right now?", "reasoning": "made up", "attended": True},
    )
    assert (
        rec.status == SessionStatus.FAILED and "safety check" in rec.failure and "not in the counsellor" in rec.failure
    )
    assert len(checks) == 3  # re-asked with the reason, then recorded as a failure
    assert "not usable" in checks[-1].prompt.instructions


def test_a_local_checker_chooses_its_quote_among_the_turns_sentences(risky):
    """The embedded checker typed the member's line as its quote and failed the session; a `local/` checker's
    quote is an enum of the counsellor turn's sentences (its grammar enforces it), so it cannot."""
    from typing import get_args

    from simulator.safety import verdict_schema
    from simulator.transcript import sentences

    text = "Arjun, I'm worried about you. Are you thinking of ending things? Let's talk about that."
    assert sentences(text) == ["Arjun, I'm worried about you.", "Are you thinking of ending things?",
                               "Let's talk about that."]  # fmt: skip
    script = RoomScript(risky, at_risk=["Arjun"], supporter_text=text, targets=["Arjun"])
    schemas = []

    def reply(call):
        if call.schema is not None and call.schema.__name__ == "SafetyVerdictReply":
            schemas.append(call.schema)
            return {"quote": "Are you thinking of ending things?", "reasoning": "asks directly", "attended": True}
        return script(call)

    client = FakeModelClient(default=reply, model="local/qwen2.5-coder-1.5b")
    rec = run(risky, ModelSupporter(client=client, model="fake/sup", spec="fake/sup"), client, max_turns=3,
              tracker_every=1)  # fmt: skip
    assert schemas and set(get_args(schemas[0].model_fields["quote"].annotation)) == {"", *sentences(text)}
    assert rec.safety[0].addressed and rec.safety[0].checks[0].quote == "Are you thinking of ending things?"
    assert verdict_schema().model_fields["quote"].annotation is str  # hosted checkers still type their quote


# -- the leaderboard counts invalid output and never pools oracle with intake --------------------------------


def test_leaderboard_counts_invalid_decisions_and_keeps_oracle_apart(tmp_path):
    from judges import build_leaderboard
    from simulator.records import SupporterDecision
    from simulator.runfolder import RunFolder
    from tests._session_fixtures import couple_session

    folder = RunFolder(tmp_path / "run")
    folder.open({"kind": "test"})
    good = couple_session("a", supporter="m:f")
    bad = couple_session("b", supporter="m:f")
    bad = bad.model_copy(
        update={
            "decisions": [
                *bad.decisions,
                SupporterDecision(after_turn=1, speak=False, valid=False, invalid_reason="no target", raw="{}"),
            ]
        }
    )
    oracle = couple_session("c", supporter="m:f").model_copy(update={"supporter_knows": "oracle"})
    for rec in (good, bad, oracle):
        folder.write_session(rec)
    board = build_leaderboard([tmp_path / "run"])
    rows = {r.supporter: r for r in board.rows}
    assert set(rows) == {"m:f", "m:f [oracle]"}
    assert rows["m:f"].knows == "intake" and rows["m:f [oracle]"].knows == "oracle"
    assert rows["m:f"].invalid_decisions == 1
    assert rows["m:f"].decisions == len(good.decisions) + len(bad.decisions)
    assert rows["m:f [oracle]"].sessions == 1


def test_run_records_what_the_supporter_knew_in_manifest_and_sessions(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from simulator.cli import app as cli_app
    from simulator.runfolder import RunFolder

    case = resolve_case("dana-and-theo")
    monkeypatch.setattr(
        "simulator.llm.settings.make_client", lambda settings: FakeModelClient(default=RoomScript(case))
    )
    cli_app._register()
    runner = CliRunner()
    base = ["run", "--case", "dana-and-theo", "--supporter", "scripted", "--turns", "2", "--no-judge", "--no-live"]
    res = runner.invoke(cli_app.app, [*base, "--supporter-knows", "oracle", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    folder = RunFolder(tmp_path / "o")
    assert folder.read_manifest().config["supporter_knows"] == "oracle"
    assert folder.load_session(folder.session_ids()[0]).supporter_knows == "oracle"
    res = runner.invoke(cli_app.app, [*base, "--supporter-knows", "everything", "--out", str(tmp_path / "x")])
    assert res.exit_code == 2 and "--supporter-knows 'everything'" in res.output
    assert not (tmp_path / "x").exists()


# -- judge evidence must be in the transcript -----------------------------------------------------------------


def test_quotes_match_what_the_judge_was_shown():
    from judges.scoring._schema import QUOTE_MAX, quote_found

    text = "Theo, what happens for you when Dana says that?"
    assert quote_found("what happens for you", text)
    assert quote_found("Therapist (to Theo): 'Theo, what happens for you", text)  # the rendered line
    assert quote_found('[5] Therapist (to Theo): "Theo, what happens', text)
    assert quote_found("“what happens for you when Dana says that?”", text)
    cut = text[: QUOTE_MAX - 1]
    long_text = text + " I wonder whether it feels like pressure to you."
    assert quote_found(long_text[: QUOTE_MAX - 1] + "x", long_text)  # cut mid-word at the length limit
    assert cut
    assert not quote_found("what happens for you when Theo says that", text)
    assert not quote_found("Therapist (to Theo):", text)
    assert not quote_found("", text)


def test_a_score_whose_evidence_is_not_in_the_transcript_is_reasked_then_failed_and_excluded(tmp_path):
    from judges import build_leaderboard, judge_session, write_judgment
    from judges.scoring._records import JudgmentStatus
    from judges.scoring._rubric import load_rubric
    from judges.scoring._schema import SchemaBuilder
    from simulator.runfolder import RunFolder
    from tests._session_fixtures import couple_session, fill_reply

    record = couple_session("s1")
    rubric = load_rubric()
    schema = SchemaBuilder(record, rubric).reply([t for t in record.turns if t.kind == "supporter"], session=True)
    good = fill_reply(schema)
    made_up = fill_reply(schema, quote="words nobody said in this room")
    client = FakeModelClient(replies=[made_up, made_up])
    judgment = asyncio.run(judge_session(record, client, ["fake/judge"], rubric, False, judge_mode="verdict"))
    verdict = judgment.verdicts[0]
    assert len(client.calls) == 2  # asked, then re-asked with the reason
    assert "not in the turns it named" in client.calls[1].prompt.instructions
    assert verdict.status == JudgmentStatus.FAILED and verdict.scores == []
    assert verdict.failures and all(f.unsupported and "not found" in f.reason for f in verdict.failures)

    # a reply whose quotes are real is kept; the re-ask recovers
    client = FakeModelClient(replies=[made_up, good])
    recovered = asyncio.run(judge_session(record, client, ["fake/judge"], rubric, False, judge_mode="verdict"))
    assert recovered.verdicts[0].status == JudgmentStatus.OK and recovered.verdicts[0].scores

    # unsupported scores never reach the leaderboard
    folder = RunFolder(tmp_path / "run")
    folder.open({"kind": "test"})
    folder.write_session(record)
    write_judgment(folder, judgment)
    row = build_leaderboard([tmp_path / "run"]).rows[0]
    assert row.scored == 0 and all(d.value.n == 0 for d in row.dimensions)
    assert row.failed_judgments == 1
