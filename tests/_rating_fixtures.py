"""Run folders with judged sessions whose judge scores the test chooses, for export, ratings and report tests.

`make_judged_run(path, supporter, sessions=[...])` writes a run folder: each session is the hand-built couple
session of `_session_fixtures` under a new id, case and seed, judged by a panel whose scores come from
`score(judge, session_id, item, dimension) -> int`. The judgment goes through the real panel aggregation
(`aggregate_scores`, `panel_agreement`), so the units the export reads are what `rescue-sim judge` would write.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner

from judges import (
    DimensionScore,
    Evidence,
    JudgeVerdict,
    JudgmentStatus,
    SessionJudgment,
    aggregate_scores,
    load_rubric,
    panel_agreement,
    trajectory_metrics,
    write_judgment,
)
from judges.scoring._judge import interventions_of
from simulator.llm.types import CallRecord
from simulator.records import SessionRecord
from simulator.runfolder import RunFolder
from tests._session_fixtures import couple_session

Score = Callable[[str, str, str, str], int]


@dataclass
class SessionSpec:
    session_id: str
    case_id: str = "ana-and-ben"
    seed: int = 0
    perturbation: str | None = None
    text: dict[int, str] | None = None  # turn index -> replacement text


def session_for(spec: SessionSpec, supporter: str, judges: Sequence[str]) -> SessionRecord:
    record = couple_session(spec.session_id, supporter, seed=spec.seed)
    case = record.case.model_copy(update={"id": spec.case_id, "title": f"Case {spec.case_id}"})
    turns = []
    for t in record.turns:
        calls = [CallRecord(model=supporter if t.kind == "supporter" else "member/model-x", role=t.kind, latency_s=0.1)]
        t = t.model_copy(update={"calls": calls})
        if spec.text and t.index in spec.text:
            t = t.model_copy(update={"text": spec.text[t.index]})
        turns.append(t)
    return record.model_copy(
        update={
            "case": case,
            "turns": turns,
            "perturbation": spec.perturbation,
            "models": {"member": "member/model-x", "tracker": "tracker/model-y", "supporter": supporter},
        }
    )


def judge_record(record: SessionRecord, judges: Sequence[str], score: Score) -> SessionJudgment:
    rubric = load_rubric()
    used = rubric.in_use()
    interventions = interventions_of(record)
    text = {t.index: t.text.lower() for t in record.turns}
    verdicts = []
    for j in judges:
        scores = []
        for d in used.active:
            if d.kind != "scale" or d.about != "supporter":
                continue
            items = [f"t{t.index}" for t in interventions] if d.level == "intervention" else ["session"]
            if d.level == "member":
                continue
            for item in items:
                turn = int(item[1:]) if item.startswith("t") else None
                scores.append(
                    DimensionScore(
                        item=item,
                        dimension=d.id,
                        level=d.level,
                        turn=turn,
                        evidence=[Evidence(turn=turn or 1, quote="listen", quote_found="listen" in text[turn or 1])],
                        reasoning="because",
                        score=score(j, record.session_id, item, d.id),
                    )
                )
        verdicts.append(
            JudgeVerdict(
                judge=j,
                status=JudgmentStatus.OK,
                scores=scores,
                calls=[CallRecord(model=j, role="judge", latency_s=0.2)],
            )
        )
    aggregates = aggregate_scores(verdicts, used)
    return SessionJudgment(
        session_id=record.session_id,
        case_id=record.case.id,
        group=record.case.group,
        supporter=record.supporter,
        rubric=used,
        rubric_digest=used.digest,
        mode="session",
        judges=list(judges),
        status=JudgmentStatus.OK,
        interventions=[t.index for t in interventions],
        verdicts=verdicts,
        aggregates=aggregates,
        agreement=panel_agreement(verdicts, used),
        flagged=[f"{a.item}/{a.dimension}" for a in aggregates if a.disagreement],
        simulator_failure=False,
        trajectory=trajectory_metrics(record),
    )


def make_judged_run(
    path: Path,
    supporter: str,
    sessions: Sequence[SessionSpec],
    score: Score,
    judges: Sequence[str] = ("judge/alpha-1", "judge/beta-2"),
) -> RunFolder:
    folder = RunFolder(path)
    folder.open({"supporter": supporter, "models": {"member": "member/model-x"}, "judges": list(judges)})
    for spec in sessions:
        record = session_for(spec, supporter, judges)
        folder.write_session(record)
        folder.append_result(record)
        write_judgment(folder, judge_record(record, judges, score))
    return folder


def make_unfinished_run(path: Path, supporter: str = "other/unscored", session_id: str = "c9__s0") -> RunFolder:
    """A run folder with one session stopped after two turns (or still being played, while a test holds the
    folder's lock as a writer does): nothing judged, so its supporter has no scored session."""
    from simulator.records import SessionStatus

    folder = RunFolder(path)
    folder.open({"supporter": supporter})
    done = session_for(SessionSpec(session_id, case_id="c9"), supporter, ["judge/alpha-1"])
    update = {"turns": done.turns[:2], "status": SessionStatus.INCOMPLETE, "end_reason": None, "finished_at": None}
    folder.write_session(done.model_copy(update=update))
    return folder


def invoke(app, *args, env: dict[str, str] | None = None):
    """Run a CLI command through typer's runner, 200 columns wide so tables do not wrap (`env` adds to that); no
    traceback may reach the user."""
    result = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "200", **(env or {})})
    assert "Traceback" not in result.output
    return result
