"""Judging the sessions of a run folder, writing each judgment as it lands: many sessions at once (`judge_all`), or
one session as a run finishes it (`judge_hook`, the hook `run_sessions` calls). `rescue-sim judge`, `rescue-sim run`
and the Python front door go through these, so a judgment is written the same way wherever it was asked for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Literal

from simulator.llm.types import is_local

if TYPE_CHECKING:
    from judges.scoring._records import SessionJudgment
    from judges.scoring._rubric import Rubric
    from simulator.llm.types import ModelClient
    from simulator.records import SessionRecord
    from simulator.runfolder import RunFolder

SESSIONS_AT_ONCE = 4  # sessions judged concurrently (the client still limits calls per provider)

# (the session, its trial, the judgment, judgments done so far, judgments in all): a line per judgment
Judged = Callable[["SessionRecord", int, "SessionJudgment", int, int], None]


async def judge_all(
    records: list[SessionRecord],
    client: ModelClient,
    panel: list[str],
    rubric: Rubric,
    per_intervention: bool,
    folder: RunFolder,
    *,
    trials: int = 1,
    temperature: float = 0.0,
    all_trials: dict[str, list[SessionJudgment]] | None = None,
    judge_mode: str = "checklist",
    on_judged: Judged | None = None,
) -> list[SessionJudgment]:
    """Judge and write each session as soon as it is done (a killed run keeps what it finished).

    With `trials` > 1 each session is judged that many times as distinct trials (see `judges.write_trial`);
    the trial-0 judgments are returned, and every trial lands in `all_trials` when given. The embedded model
    judges one session at a time (its prompt-prefix cache stays warm); hosted judges `SESSIONS_AT_ONCE`.
    """
    from judges.scoring._judge import judge_session
    from judges.scoring._repeat import write_trial
    from judges.scoring._store import write_judgment

    gate = asyncio.Semaphore(1 if any(is_local(m) for m in panel) else SESSIONS_AT_ONCE)
    done = 0
    total = len(records) * trials

    async def one(record: SessionRecord, trial: int) -> SessionJudgment:
        nonlocal done
        async with gate:
            judgment = await judge_session(
                record,
                client,
                panel,
                rubric,
                per_intervention,
                trial=trial,
                temperature=temperature,
                judge_mode=judge_mode,  # type: ignore[arg-type]
            )
        if trial == 0:
            write_judgment(folder, judgment)
        else:
            write_trial(folder, judgment)
        if all_trials is not None:
            all_trials.setdefault(record.session_id, []).append(judgment)
        done += 1
        if on_judged is not None:
            on_judged(record, trial, judgment, done, total)
        return judgment

    jobs = [one(r, t) for r in records for t in range(trials)]
    results = list(await asyncio.gather(*jobs))
    if all_trials is not None:
        for sid in all_trials:
            all_trials[sid].sort(key=lambda j: j.trial)
    return [j for j in results if j.trial == 0]


def judge_hook(
    client: ModelClient,
    panel: Sequence[str],
    judge_mode: Literal["checklist", "verdict"] = "checklist",
    *,
    on_start: Callable[[int], None] | None = None,
    on_stop: Callable[[], None] | None = None,
    on_judged: Callable[[SessionJudgment], None] | None = None,
) -> Callable[[SessionRecord, RunFolder], Awaitable[None]]:
    """The hook `run_sessions` calls on each completed session: judge it with `panel` on the shipped rubric and
    write the judgment into the run folder. `on_start` gets the judge calls the session will take, `on_stop` is
    called when judging ends (judged or not), `on_judged` gets the written judgment."""
    from judges.scoring._judge import judge_session, judge_units, judging_mode
    from judges.scoring._rubric import load_rubric
    from judges.scoring._store import write_judgment

    judges = list(panel)

    async def hook(record: SessionRecord, folder: RunFolder) -> None:
        rubric = load_rubric()
        per_intervention = judging_mode(judges)
        if on_start is not None:
            on_start(judge_units(record, rubric, judges, judge_mode, per_intervention))
        try:
            judgment = await judge_session(record, client, judges, rubric, per_intervention, judge_mode=judge_mode)
        finally:
            if on_stop is not None:
                on_stop()
        write_judgment(folder, judgment)
        if on_judged is not None:
            on_judged(judgment)

    return hook


__all__ = ["SESSIONS_AT_ONCE", "judge_all", "judge_hook"]
