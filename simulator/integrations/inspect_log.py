"""Inspect logs and rescue-sim run folders, both ways: a session's public transcript as Inspect chat messages
(what `inspect view` shows), and an Inspect log of `rescue_session` / `rescue_stress` back into a run folder
(`rescue-sim import-inspect LOG`), from the session record and judgment each sample carries."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from personas.common.errors import UserError
from simulator.records import SessionRecord, SessionStatus
from simulator.runfolder import RunFolder

if TYPE_CHECKING:
    from inspect_ai.model import ChatMessage

RECORD_KEY = "rescue_sim:record"  # sample store: the session record (JSON), so a log alone rebuilds the run folder
JUDGMENT_KEY = "judgment"  # score metadata: the SessionJudgment behind the score
IMPORT_KIND = "inspect-import"


class InspectLogError(UserError):
    pass


def transcript_messages(record: SessionRecord, intake: str) -> list[ChatMessage]:
    """The public transcript as chat messages: the intake as the user's first message, members as user messages
    (`Dana: ...`; Inspect's messages have no speaker name, so it leads the text and sits in `metadata.speaker`),
    the supporter's turns as the assistant's, with its targets and strategy in metadata."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageUser

    out: list[ChatMessage] = [ChatMessageUser(content=intake, source="input")]
    for turn in record.turns:
        meta: dict[str, Any] = {"turn": turn.index, "speaker": turn.speaker, "addressees": list(turn.addressees)}
        if turn.kind == "member":  # public words only: inner states stay in the record (the store, the run folder)
            out.append(ChatMessageUser(content=f"{turn.speaker}: {turn.text}", metadata=meta))
        else:
            if turn.decision is not None:
                meta.update(strategy=turn.decision.strategy, targets=list(turn.decision.targets))
            model = turn.decision.call.model if turn.decision is not None and turn.decision.call else None
            out.append(ChatMessageAssistant(content=turn.text, model=model, source="generate", metadata=meta))
    return out


def import_inspect_log(log_path: str | Path, out_dir: str | Path) -> list[str]:
    """Write every session an Inspect log of these tasks carries into the run folder `out_dir` (created, or
    reopened when it was made from the same log): sessions, results.jsonl and judgments. Returns the session ids.
    Raises InspectLogError for a file that is not such a log."""
    from inspect_ai.log import read_eval_log

    from judges import SessionJudgment, write_judgment

    path = Path(log_path)
    if not path.exists():
        raise InspectLogError(f"{path}: no such Inspect log; give the path of a .eval or .json log")
    try:
        log = read_eval_log(str(path))
    except Exception as err:  # noqa: BLE001 - Inspect raises several kinds for files that are not logs
        raise InspectLogError(f"{path}: not a readable Inspect log ({' '.join(str(err).split())[:160]})") from None
    records: list[tuple[SessionRecord, SessionJudgment | None]] = []
    for sample in log.samples or []:
        raw = (sample.store or {}).get(RECORD_KEY)
        if raw is None:
            continue
        record = SessionRecord.model_validate_json(raw)
        judgment = None
        for score in (sample.scores or {}).values():
            data = (score.metadata or {}).get(JUDGMENT_KEY)
            if data is not None:
                judgment = SessionJudgment.model_validate(data)
        records.append((record, judgment))
    if not records:
        raise InspectLogError(
            f"{path}: no rescue-sim sessions in this log (task {log.eval.task!r}); "
            "import a log of rescue_sim/rescue_session or rescue_sim/rescue_stress"
        )
    folder = RunFolder(out_dir)
    folder.open(
        {
            "kind": IMPORT_KIND,
            "task": log.eval.task,
            "task_args": log.eval.task_args,
            "model": log.eval.model,
            "eval_id": log.eval.eval_id,
        },
        kind=IMPORT_KIND,
    )
    for record, judgment in records:
        folder.write_session(record)
        if record.status != SessionStatus.INCOMPLETE:
            folder.append_result(record)
        if judgment is not None:
            write_judgment(folder, judgment)
    folder.reconcile()
    return [r.session_id for r, _ in records]
