"""Pairwise comparison of supporters: `rescue-sim compare RUN_DIR...`.

Sessions of different supporters that share case, seed, perturbation and trial saw the same room start the same
way; a judge model reads both transcripts and says which counsellor did better, or `tie`. Every pair is judged
in both orders (A/B and B/A) to cancel the judges' position bias, and the bias itself is measured: how often the
session shown first wins, and how often the two orders agree. Evidence comes before the verdict and every quote
must be found in the turn of the session it names, else the judge is asked again and then the verdict is
recorded `unsupported` (left out of the ratings, counted). A failed call is recorded `failed` with its reason.

Ratings are Bradley-Terry log-strengths fitted with `choix` (I-LSR, lightly regularised so a supporter that
always wins still gets a finite rating); a tie counts as half a win for each side (each win enters the data
twice, each tie once in each direction). 95% CIs come from a percentile bootstrap over matched groups (case,
seed, perturbation, trial), refitting each resample. A panel of judges contributes every judge's verdicts.

A session with a simulator fault (judges.scoring._faults: the record's faults or the judges' simulator_failure) is
left out of its group before any pair is judged, and listed with why in the report; `include_faults` keeps it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from itertools import combinations
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from judges.scoring._faults import FaultTally, faulted
from judges.scoring._render import PROMPTS, as_data, group_kind, judge_transcript, member_cards, people_line
from judges.scoring._schema import LEAN, LEAN_WHY_WORDS, limits_for, quote_found, read_citation, sentence_openings
from personas.common.files import atomic_write_text
from personas.common.prompts import render_prompt
from personas.common.records import Record
from simulator.llm.structured import soft_max_words
from simulator.llm.types import CallRecord, ModelClient, ModelError, Prompt
from simulator.records import SUPPORTER, SessionRecord, SessionStatus
from simulator.runfolder import RunFolder, RunFolderError

COMPARE_SCHEMA_VERSION = 1
QUOTE_ATTEMPTS = 2
BT_ALPHA = 0.01  # I-LSR regularisation: keeps ratings finite when one supporter always wins
BOOTSTRAP = 500
PairKey = tuple[str, int, str, int]  # case id, seed, perturbation ("none"), trial


class PairQuote(Record):
    side: Literal["first", "second"] = Field(description="Which session the quote is from, in the order shown.")
    turn: int = Field(description="Turn index in that session.")
    quote: str = Field(description="Words the judge quoted.")
    found: bool = Field(description="The quote occurs in that turn of that session.")


class PairVerdict(Record):
    """One judge's verdict on one ordered pair of sessions."""

    case_id: str = Field(description="Case card id of both sessions.")
    seed: int = Field(description="Seed of both sessions.")
    perturbation: str = Field(description="Perturbation name, or `none`.")
    trial: int = Field(description="Trial index of both sessions.")
    first: str = Field(description="Supporter shown first (as SESSION A).")
    second: str = Field(description="Supporter shown second (as SESSION B).")
    first_session: str = Field(description="Session id shown first.")
    second_session: str = Field(description="Session id shown second.")
    judge: str = Field(description="Judge model id.")
    status: Literal["ok", "unsupported", "failed"] = Field(description="ok, unsupported (quotes not found), failed.")
    winner: Literal["first", "second", "tie"] | None = Field(description="None unless status is ok.")
    reasoning: str = Field(default="", description="The judge's reason, given before the verdict.")
    evidence: list[PairQuote] = Field(default_factory=list, description="Quotes, each checked against its turn.")
    reason: str = Field(default="", description="Why a verdict is unsupported or failed.")
    calls: list[CallRecord] = Field(default_factory=list, description="Accounting of every ask.")

    @property
    def preferred(self) -> str | None:
        """The supporter that won, `tie`, or None."""
        return {"first": self.first, "second": self.second, "tie": "tie"}.get(self.winner or "")


class Rating(Record):
    supporter: str = Field(description="Supporter spec (with ` (oracle)` for oracle runs).")
    rating: float = Field(description="Bradley-Terry log-strength (mean 0 across supporters).")
    low: float | None = Field(default=None, description="Bootstrap percentile lower bound.")
    high: float | None = Field(default=None, description="Bootstrap percentile upper bound.")
    wins: float = Field(description="Wins, a tie counting half.")
    comparisons: int = Field(description="Decided (ok) verdicts involving this supporter.")


class PositionBias(Record):
    decided: int = Field(description="Verdicts with a winner or a tie.")
    first_wins: int = Field(description="Verdicts won by the session shown first.")
    second_wins: int = Field(description="Verdicts won by the session shown second.")
    ties: int = Field(description="Tied verdicts.")
    first_win_rate: float | None = Field(description="first_wins / (first_wins + second_wins).")
    bias: float | None = Field(description="first_win_rate - 0.5: > 0 favours the session shown first.")
    pairs_both_orders: int = Field(description="(pair, judge) with an ok verdict in both orders.")
    consistent: int = Field(description="...of which both orders preferred the same supporter (or both tied).")


class CompareReport(Record):
    """Everything `compare` found. Written to `<first run folder>/compare.json` unless --out says otherwise."""

    schema_version: int = Field(default=COMPARE_SCHEMA_VERSION, description="Version of this record's layout.")
    runs: list[str] = Field(description="Run folders read.")
    judges: list[str] = Field(description="Judge model ids (the panel).")
    supporters: list[str] = Field(description="Supporters compared.")
    groups: int = Field(description="Matched (case, seed, perturbation, trial) groups with two or more supporters.")
    verdicts: list[PairVerdict] = Field(description="Every verdict, both orders, every judge.")
    ratings: list[Rating] = Field(description="Best first.")
    win_rate: dict[str, dict[str, float | None]] = Field(
        description="row supporter -> column supporter -> share of their comparisons the row won (ties half)."
    )
    position: PositionBias = Field(description="How much the order of the sessions swayed the judges.")
    unsupported: int = Field(description="Verdicts whose quotes were not found (left out of the ratings).")
    failed: int = Field(description="Verdicts whose model call failed (left out).")
    simulator_faults: FaultTally = Field(
        default_factory=FaultTally,
        description="Sessions with a simulator fault: left out before pairing (unless included), with why.",
    )
    bootstrap: int = Field(description="Bootstrap resamples behind the CIs.")
    seed: int = Field(description="Bootstrap seed.")
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC), description="UTC time.")


# -- matching ----------------------------------------------------------------------------------------------------


def match_sessions(
    run_dirs: Sequence[str | Path], *, include_faults: bool = False
) -> tuple[dict[PairKey, dict[str, SessionRecord]], list[str], FaultTally]:
    """Completed sessions grouped by (case, seed, perturbation, trial), one per supporter; notes on what was left;
    the sessions with a simulator fault (left out unless `include_faults`)."""
    from judges.scoring._store import read_judgment

    groups: dict[PairKey, dict[str, SessionRecord]] = {}
    notes: list[str] = []
    faults = FaultTally(included=include_faults)
    for run_dir in run_dirs:
        folder = RunFolder(run_dir)
        folder.read_manifest()
        for stored in folder.read_sessions():
            sid, record = stored.session_id, stored.record
            if record is None:
                notes.append(f"skipped {sid}: {stored.error}")
                continue
            if record.status != SessionStatus.COMPLETED:
                continue
            fault = faulted(record, read_judgment(folder, sid))
            if fault is not None:
                faults.add(fault)
                if not include_faults:
                    continue
            name = record.supporter if record.supporter_knows == "intake" else f"{record.supporter} (oracle)"
            key = (record.case.id, record.seed, record.perturbation or "none", record.trial)
            cell = groups.setdefault(key, {})
            if name in cell:
                notes.append(f"{sid}: {name} already has a session for {key}; the first one is used")
                continue
            cell[name] = record
    return {k: v for k, v in groups.items() if len(v) >= 2}, notes, faults


# -- one verdict -------------------------------------------------------------------------------------------------


def _schema(turns: tuple[int, ...], openings: tuple[str, ...] = ()) -> type[BaseModel]:
    """Free quotes for hosted judges; for local ones (`limits_for`), evidence chosen from the two sessions' turn
    openings, `A [turn] words`, an enum their grammar enforces: the 1.5B judge quoted words that were not in
    the turn it named in every verdict it gave on the embedded stress run, and each was left unsupported."""
    if openings:
        return create_model(
            "PairReplyLean",
            ev=(list[Literal[openings]], Field(min_length=1, max_length=2)),  # type: ignore[valid-type]
            why=(str, soft_max_words(LEAN_WHY_WORDS)),
            winner=(Literal["A", "B", "tie"], ...),
        )
    ev = create_model(
        "PairEvidence",
        s=(Literal["A", "B"], ...),
        t=(Literal[turns], ...),  # type: ignore[valid-type]
        q=(str, Field(min_length=1, max_length=80)),
    )
    return create_model(
        "PairReply",
        ev=(list[ev], Field(min_length=1, max_length=3)),  # type: ignore[valid-type]
        why=(str, Field(min_length=1, max_length=200)),
        winner=(Literal["A", "B", "tie"], ...),
    )


def _context(a: SessionRecord, b: SessionRecord) -> str:
    case = a.case
    head = (
        f"A {group_kind(case.group)} counselling session. {as_data(case.setting)}\n"
        f'People in the room: {people_line(case)}, and the counsellor ("{SUPPORTER}").\n'
        f"Why they came: {as_data(case.presenting_problem)}\n\nWho each person is meant to be:\n"
        f'{as_data(member_cards(case))}\n\nTurn numbers are in brackets; "({SUPPORTER} stays silent)" marks a '
        "moment where the counsellor chose not to speak."
    )
    return (
        f"{head}\n<<<SESSION A\n{judge_transcript(a)}\nSESSION A>>>\n<<<SESSION B\n{judge_transcript(b)}\nSESSION B>>>"
    )


async def judge_pair(
    key: PairKey,
    first: tuple[str, SessionRecord],
    second: tuple[str, SessionRecord],
    client: ModelClient,
    judge: str,
) -> PairVerdict:
    (name_a, a), (name_b, b) = first, second
    turns = tuple(sorted({t.index for t in a.turns} | {t.index for t in b.turns})) or (0,)
    texts = {"A": {t.index: t.text for t in a.turns}, "B": {t.index: t.text for t in b.turns}}
    base = {
        "case_id": key[0],
        "seed": key[1],
        "perturbation": key[2],
        "trial": key[3],
        "first": name_a,
        "second": name_b,
        "first_session": a.session_id,
        "second_session": b.session_id,
        "judge": judge,
    }
    openings: tuple[str, ...] = ()
    if limits_for(judge).cite_openings:
        openings = tuple(
            f"{side} {o}" for side, rec in (("A", a), ("B", b)) for o in sentence_openings(rec, LEAN.quote_max)
        )
    feedback, calls = "", []
    evidence: list[PairQuote] = []
    for attempt in range(QUOTE_ATTEMPTS):
        try:
            completion = await client.complete(
                Prompt(
                    context=_context(a, b),
                    instructions=render_prompt(
                        "compare",
                        PROMPTS,
                        group_kind=group_kind(a.case.group),
                        supporter=SUPPORTER,
                        evidence=render_prompt(
                            "compare_evidence_openings" if openings else "compare_evidence_quotes",
                            PROMPTS,
                            feedback=feedback,
                        ),
                    ),
                ),
                role="judge",
                model=judge,
                schema=_schema(turns, openings),
                max_tokens=220,
                temperature=0.0,
                seed=key[1] + 1009 * attempt,
            )
        except ModelError as err:
            return PairVerdict(**base, status="failed", winner=None, reason=err.reason, calls=calls)
        calls.append(completion.call)
        r = completion.parsed
        cited = [_cited(e) for e in r.ev]
        evidence = [
            PairQuote(
                side="first" if side == "A" else "second",
                turn=turn,
                quote=quote,
                found=quote_found(quote, texts[side].get(turn, "")),
            )
            for side, turn, quote in cited
        ]
        missing = [c for c, q in zip(cited, evidence) if not q.found]
        if not missing:
            winner = {"A": "first", "B": "second", "tie": "tie"}[r.winner]
            return PairVerdict(
                **base,
                status="ok",
                winner=winner,
                reasoning=r.why,
                evidence=evidence,
                calls=calls,  # type: ignore[arg-type]
            )
        feedback = (
            "\nYour previous answer quoted "
            + "; ".join(f"{quote!r} as session {side} turn {turn}" for side, turn, quote in missing)
            + ", but those words are not in that turn. Copy words exactly from the session and turn you name."
        )
    return PairVerdict(
        **base,
        status="unsupported",
        winner=None,
        evidence=evidence,
        reason=f"quotes not found in their turns after {QUOTE_ATTEMPTS} asks",
        calls=calls,
    )


def _cited(item: Any) -> tuple[str, int, str]:
    """(side, turn, words) of one evidence item: `{"s", "t", "q"}`, or a chosen `A [turn] words` opening."""
    if isinstance(item, str):
        turn, words = read_citation(item[2:])
        return item[:1], turn, words
    return item.s, item.t, item.q


# -- Bradley-Terry -----------------------------------------------------------------------------------------------


def bt_data(verdicts: Sequence[PairVerdict], index: dict[str, int]) -> list[tuple[int, int]]:
    """choix pairwise data (winner, loser): each win twice, each tie once each way (a tie = half a win)."""
    data: list[tuple[int, int]] = []
    for v in verdicts:
        if v.status != "ok":
            continue
        i, j = index[v.first], index[v.second]
        if v.winner == "first":
            data += [(i, j), (i, j)]
        elif v.winner == "second":
            data += [(j, i), (j, i)]
        else:
            data += [(i, j), (j, i)]
    return data


def fit_bradley_terry(n: int, data: Sequence[tuple[int, int]], alpha: float = BT_ALPHA) -> list[float]:
    """Bradley-Terry log-strengths (mean 0) via choix's I-LSR; all zeros without data."""
    import choix
    import numpy as np

    if not data:
        return [0.0] * n
    params = choix.ilsr_pairwise(n, list(data), alpha=alpha, max_iter=500)
    params = np.asarray(params, dtype=float)
    return [float(x) for x in params - params.mean()]


def win_rates(verdicts: Sequence[PairVerdict], supporters: Sequence[str]) -> dict[str, dict[str, float | None]]:
    tally = {a: {b: [0.0, 0] for b in supporters if b != a} for a in supporters}
    for v in verdicts:
        if v.status != "ok":
            continue
        for me, other in ((v.first, v.second), (v.second, v.first)):
            won = 0.5 if v.winner == "tie" else float(v.preferred == me)
            tally[me][other][0] += won
            tally[me][other][1] += 1
    return {a: {b: (w / n if n else None) for b, (w, n) in row.items()} for a, row in tally.items()}


def position_bias(verdicts: Sequence[PairVerdict]) -> PositionBias:
    ok = [v for v in verdicts if v.status == "ok"]
    first = sum(v.winner == "first" for v in ok)
    second = sum(v.winner == "second" for v in ok)
    ties = sum(v.winner == "tie" for v in ok)
    by_pair: dict[tuple, list[PairVerdict]] = {}
    for v in ok:
        pair = tuple(sorted((v.first, v.second)))
        by_pair.setdefault((v.case_id, v.seed, v.perturbation, v.trial, pair, v.judge), []).append(v)
    both = [vs for vs in by_pair.values() if len({x.first for x in vs}) == 2]
    consistent = sum(len({x.preferred for x in vs}) == 1 for vs in both)
    decided = first + second
    rate = first / decided if decided else None
    return PositionBias(
        decided=len(ok),
        first_wins=first,
        second_wins=second,
        ties=ties,
        first_win_rate=rate,
        bias=None if rate is None else rate - 0.5,
        pairs_both_orders=len(both),
        consistent=consistent,
    )


def rate(
    verdicts: Sequence[PairVerdict], supporters: Sequence[str], *, bootstrap: int = BOOTSTRAP, seed: int = 0
) -> list[Rating]:
    """Bradley-Terry ratings with percentile-bootstrap 95% CIs over matched groups, best first."""
    import numpy as np

    index = {s: i for i, s in enumerate(supporters)}
    point = fit_bradley_terry(len(supporters), bt_data(verdicts, index))
    groups: dict[tuple, list[PairVerdict]] = {}
    for v in verdicts:
        groups.setdefault((v.case_id, v.seed, v.perturbation, v.trial), []).append(v)
    keys = list(groups)
    samples = []
    if bootstrap and len(keys) >= 2:
        rng = np.random.default_rng(seed)
        for _ in range(bootstrap):
            picked = [v for k in rng.integers(0, len(keys), size=len(keys)) for v in groups[keys[k]]]
            samples.append(fit_bradley_terry(len(supporters), bt_data(picked, index)))
    arr = np.asarray(samples) if samples else None
    out = []
    for s, i in index.items():
        ok = [v for v in verdicts if v.status == "ok" and s in (v.first, v.second)]
        wins = sum(0.5 if v.winner == "tie" else float(v.preferred == s) for v in ok)
        low = high = None
        if arr is not None:
            low, high = (float(x) for x in np.quantile(arr[:, i], [0.025, 0.975]))
        out.append(Rating(supporter=s, rating=point[i], low=low, high=high, wins=wins, comparisons=len(ok)))
    return sorted(out, key=lambda r: (-r.rating, r.supporter))


# -- the whole comparison ----------------------------------------------------------------------------------------


async def compare_runs(
    run_dirs: Sequence[str | Path],
    client: ModelClient,
    judges: Sequence[str],
    *,
    bootstrap: int = BOOTSTRAP,
    seed: int = 0,
    at_once: int = 4,
    on_verdict=None,
    limit: int | None = None,
    include_faults: bool = False,
) -> tuple[CompareReport, list[str]]:
    """Judge every matched pair in both orders with every judge, then rate (see the module docstring).
    `limit` judges only the first N matched groups (sorted by case, seed, perturbation, trial); sessions with a
    simulator fault are left out unless `include_faults`."""
    groups, notes, faults = match_sessions(run_dirs, include_faults=include_faults)
    if limit is not None and len(groups) > limit:
        notes.append(f"--limit {limit}: {len(groups) - limit} of {len(groups)} matched groups left out")
        groups = dict(sorted(groups.items())[:limit])
    if not groups:
        left = (
            f" once {faults.faulted} session(s) with simulator faults are left out (--include-simulator-faults "
            "keeps them)"
            if faults.faulted and not include_faults
            else ""
        )
        raise RunFolderError(
            "no case + seed (+ perturbation, trial) was run by two or more supporters in "
            + ", ".join(map(str, run_dirs))
            + left
            + "; compare needs the same matrix run with different supporters"
        )
    panel = list(dict.fromkeys(j for j in judges if j))
    gate = asyncio.Semaphore(max(1, at_once))
    jobs = []
    for key, cell in sorted(groups.items()):
        for a, b in combinations(sorted(cell), 2):
            for first, second in ((a, b), (b, a)):
                for judge in panel:
                    jobs.append((key, (first, cell[first]), (second, cell[second]), judge))

    async def one(job) -> PairVerdict:
        async with gate:
            v = await judge_pair(*job[:3], client, job[3])
        if on_verdict:
            on_verdict(v)
        return v

    verdicts = list(await asyncio.gather(*(one(j) for j in jobs)))
    supporters = sorted({s for cell in groups.values() for s in cell})
    report = CompareReport(
        runs=[str(d) for d in run_dirs],
        judges=panel,
        supporters=supporters,
        groups=len(groups),
        verdicts=verdicts,
        ratings=rate(verdicts, supporters, bootstrap=bootstrap, seed=seed),
        win_rate=win_rates(verdicts, supporters),
        position=position_bias(verdicts),
        unsupported=sum(v.status == "unsupported" for v in verdicts),
        failed=sum(v.status == "failed" for v in verdicts),
        simulator_faults=faults,
        bootstrap=bootstrap,
        seed=seed,
    )
    return report, notes


def write_report(path: str | Path, report: CompareReport) -> Path:
    path = Path(path)
    atomic_write_text(path, report.model_dump_json(indent=1))
    return path
