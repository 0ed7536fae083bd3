"""Leaderboards: one row per supporter across run folders, from saved sessions and judgments (no model calls).

Unit of analysis is the session: each judged session gives one value per dimension (the mean over its items of
the panel's mean score, or a rate for labels), and the row reports the mean over sessions with a percentile
bootstrap 95% CI. Sessions with a simulator fault (the record's faults or the judges' `simulator_failure` flag;
see judges.scoring._faults) are left out of every aggregate by default, counted and listed with their reasons per
member model; `include_faults=True` puts them back. Failed sessions and failed judgments are counted separately.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import Field

from judges.ratings._agreement import HumanAgreement
from judges.ratings._ppi import PPIEstimate
from judges.ratings._store import BatchSummary
from judges.room_audit._audit import FidelitySummary, fidelity_by_supporter
from judges.scoring._facts import copied_lines, repeated_lines, voiced_lines
from judges.scoring._faults import FaultedSession, FaultTally, faulted
from judges.scoring._panel import SURE_P, labelled_shares, session_values
from judges.scoring._records import JudgmentStatus, SessionJudgment
from judges.scoring._repeat import dimension_stability, read_trials
from judges.scoring._rubric import Level
from judges.scoring._store import read_judgment
from judges.scoring._trajectory import DEFAULT_GAMMA, DEFAULT_LAMBDA, trajectory_metrics
from judges.stats._agreement import krippendorff_alpha
from judges.stats._intervals import DEFAULT_SEED, MeanCI, mean_ci
from judges.stress_checks._board import PerturbationBoard, PerturbationRow, critical_failure
from judges.stress_checks._results import CheckResult, read_check
from judges.validity.card import ValidityCard, ValidityNote, dimension_validity
from personas.common.records import Record
from simulator.records import SessionRecord, SessionStatus
from simulator.runfolder import RunFolder

LEADERBOARD_SCHEMA_VERSION = 1
RANK_BY = "overall_quality"


class DimensionSummary(Record):
    """One dimension for one supporter: mean over sessions with its bootstrap CI."""

    dimension: str = Field(description="Rubric dimension id.")
    level: Level = Field(description="Dimension level.")
    measure: Literal["mean", "rate"] = Field(
        description="`mean`: mean score; `rate`: share of items with a non-neutral label (checklist judges: the "
        "mean probability of one, the expected share), or, for the strategy label, share where the panel's label "
        "equals the supporter's stated one."
    )
    value: MeanCI = Field(description="Mean over sessions with its bootstrap CI.")
    labelled_turns: int | None = Field(
        default=None,
        description="Labelled shares (label dimensions whose rate is the labelled share): turns that carry a "
        "non-neutral label, over the sessions; None for other measures.",
    )
    labelled_p: float | None = Field(
        default=None,
        description="Labelled shares from checklist judges: the mean probability behind those labels (near 0.5: "
        "near a coin toss; judges.scoring.SURE_P); None without labelled turns or with verdict judges.",
    )
    validity: list[ValidityNote] = Field(
        default_factory=list,
        description="Validity of the instrument behind the values, one note per (judge model, prompt digest) that "
        "produced them; 'not validated' without a matching card (see `rescue-sim gold sessions`).",
    )


class SupporterRow(Record):
    """Everything the leaderboard says about one supporter."""

    supporter: str = Field(description="Supporter spec as recorded in the sessions.")
    knows: str = Field(
        default="intake",
        description="What the supporter was shown (`intake` or `oracle`); rows of the two are never merged.",
    )
    runs: list[str] = Field(description="Run folders holding this supporter's sessions.")
    sessions: int = Field(description="Session files found.")
    completed: int = Field(description="Sessions that ran to their end.")
    failed_sessions: int = Field(description="Simulation failed (status failed, or the file is unreadable).")
    incomplete_sessions: int = Field(description="Interrupted before the end.")
    unjudged: int = Field(description="Completed sessions without a judgment file.")
    failed_judgments: int = Field(description="Judge verdicts (session x judge) that failed or were partial.")
    simulator_failures: int = Field(
        description="Completed sessions with a simulator fault (record faults or the judges' simulator_failure): "
        "excluded from every aggregate unless the leaderboard includes them."
    )
    simulator_faults: FaultTally = Field(
        default_factory=FaultTally, description="Those sessions, with why, per member model."
    )
    scored: int = Field(description="Judged sessions entering the dimension aggregates.")
    rank: int | None = Field(
        default=None,
        description="1 for the first row: place among the rows with a scored session, in the board's order (by the "
        "ranking dimension's mean). None: no scored session, so nothing to rank it by; such rows come last.",
    )
    decisions: int = Field(default=0, description="Supporter decisions (speak or pass) in completed sessions.")
    invalid_decisions: int = Field(
        default=0, description="Decisions whose output broke the contract even after re-asking: counted against it."
    )
    supporter_turns: int = Field(
        default=0, description="Supporter turns said in the sessions the aggregates read (faulted ones left out)."
    )
    repeated_turns: int = Field(
        default=0,
        description="Of those, turns repeating the supporter's own earlier line word for word or nearly "
        "(judges.scoring.repeated_lines): the supporter's behaviour, counted against it, never a simulator fault.",
    )
    repeated_share: float | None = Field(default=None, description="repeated_turns / supporter_turns.")
    copied_turns: int = Field(
        default=0,
        description="Of those, turns made mostly of members' earlier words (judges.scoring.copied_lines): parroting, "
        "the supporter's behaviour, counted against it, never a simulator fault.",
    )
    copied_share: float | None = Field(default=None, description="copied_turns / supporter_turns.")
    voiced_turns: int = Field(
        default=0,
        description="Of those, turns said in a member's voice, about the speaker's own hurt or life "
        "(judges.scoring.voiced_lines): the supporter's behaviour, counted against it, never a simulator fault.",
    )
    voiced_share: float | None = Field(default=None, description="voiced_turns / supporter_turns.")
    dimensions: list[DimensionSummary] = Field(default_factory=list, description="In the leaderboard's column order.")
    alpha: float | None = Field(
        default=None,
        description="Krippendorff's alpha (interval) pooled over the supporter's scale items; None with one judge.",
    )
    alpha_by_dimension: dict[str, float | None] = Field(
        default_factory=dict, description="Krippendorff's alpha per scale dimension, pooled over sessions."
    )
    delta_tension: MeanCI = Field(description="Self-report view: mean over pairs of final - initial tension.")
    delta_tension_observer: MeanCI = Field(description="Observer view: mean over pairs of final - initial tension.")
    observer_validity: list[ValidityNote] = Field(
        default_factory=list,
        description="Validity of the tracker behind the observer view, per (tracker model, prompt digest).",
    )
    group_objective: MeanCI = Field(description="Self-report view group objective (see judges.group_objective).")
    critical_sessions: int = Field(
        default=0, description="Completed sessions with any critical safety failure (see judges.stress_checks._board)."
    )
    critical_of: int = Field(
        default=0, description="Completed sessions the share is over: faulted ones are left out unless included."
    )
    critical_share: float | None = Field(default=None, description="critical_sessions / critical_of.")
    judge_compromised: int = Field(
        default=0, description="Judgments left out of every mean: a prompt-injection probe found the judges moved."
    )
    judge_trials: int = Field(default=1, description="Most judgment trials stored for a session (judge --repeat).")
    judge_flip_rate: dict[str, float | None] = Field(
        default_factory=dict, description="Dimension -> share of items whose repeated judgments do not all agree."
    )

    def dimension(self, dim_id: str) -> DimensionSummary | None:
        return next((d for d in self.dimensions if d.dimension == dim_id), None)


class Leaderboard(Record):
    """Supporters ranked by `rank_by` (mean, highest first), or by name when that dimension is absent."""

    schema_version: int = Field(default=LEADERBOARD_SCHEMA_VERSION, description="Version of this record's layout.")
    runs: list[str] = Field(description="Run folders read, as given.")
    dimensions: list[str] = Field(description="Dimension ids in column order.")
    rank_by: str | None = Field(description="Dimension the rows are ranked by; None: by supporter name.")
    confidence: float = Field(description="Coverage of the bootstrap intervals.")
    seed: int = Field(description="Bootstrap seed.")
    include_faults: bool = Field(
        default=False, description="Sessions with simulator faults were put back into the aggregates."
    )
    sure_p: float = Field(
        default=SURE_P,
        description="A labelled share whose `labelled_p` is under this reads as unsure: its turns were near coin tosses.",
    )
    gamma: float = Field(description="Group-objective discount.")
    lam: float = Field(description="Group-objective distress weight.")
    rows: list[SupporterRow] = Field(description="One per supporter, ranked.")
    perturbations: list[PerturbationRow] = Field(
        default_factory=list, description="Stress runs: one row per supporter x perturbation, with pass^k."
    )
    human: list[PPIEstimate] = Field(
        default_factory=list,
        description="With `ratings=True` and stored human ratings: per supporter and rated dimension, the "
        "judge-only, human-only and prediction-powered (IPW-PPI) means with CIs, from ratings of known inclusion "
        "probability only, weighted by 1/pi (see judges.ratings).",
    )
    human_agreement: list[HumanAgreement] = Field(
        default_factory=list, description="With `ratings=True`: judge-human agreement per dimension."
    )
    human_batches: list[BatchSummary] = Field(
        default_factory=list,
        description="With `ratings=True`: each export batch with its design (random, stratified, active or "
        "unknown-probability) and how much of it came back rated.",
    )
    fidelity: dict[str, FidelitySummary] = Field(
        default_factory=dict,
        description="With `fidelity=True`: per supporter, how person-like the simulated room was (judges.room_audit).",
    )


class _Acc:
    def __init__(self, supporter: str, knows: str = "intake"):
        self.supporter = supporter
        self.knows = knows
        self.runs: list[str] = []
        self.counts = {
            "sessions": 0,
            "completed": 0,
            "failed": 0,
            "incomplete": 0,
            "unjudged": 0,
            "failed_judgments": 0,
            "simulator": 0,
            "scored": 0,
            "decisions": 0,
            "invalid": 0,
            "supporter_turns": 0,
            "repeated": 0,
            "copied": 0,
            "voiced": 0,
        }
        self.faults = FaultTally()
        self.values: dict[str, list[float]] = {}
        self.dims: dict[str, ValueFact] = {}  # dimension -> its first value (level and kind)
        self.ratings: dict[str, dict[tuple[str, str], dict[str, int]]] = {}  # dim -> (session, item) -> judge -> score
        self.judges: list[str] = []
        self.critical = 0  # stress additions: critical safety failures, compromised judgments, judgment trials
        self.compromised = 0
        self.trials: list[list[SessionJudgment]] = []
        self.delta_tension: list[float] = []
        self.delta_tension_obs: list[float] = []
        self.objective: list[float] = []
        self.sources: dict[str, set[tuple[str | None, str | None]]] = {}  # dimension -> (model, prompt digest)
        self.labelled: dict[str, list[ValueFact]] = {}  # labelled shares: dimension -> each session's fact


class ValueFact(Record):
    """One dimension's value for one session (`session_values`), with what its column needs of the dimension."""

    level: Level
    kind: str
    value: float
    labelled: int | None = None  # labelled shares: turns labelled (judges.scoring.labelled_shares)
    p_sum: float | None = None  # and the sum of their probabilities (checklist judges)


class ScoreFact(Record):
    """One judge's score of one item on a supporter-facing scale (for the judges' agreement)."""

    dimension: str
    item: str
    judge: str
    score: int


class SessionFacts(Record):
    """What one session gives the leaderboard, read once from its record, judgment, check and judgment trials
    (`session_facts`), whatever `include_faults` is. `leaderboard_from_facts` sums them up; a served run's index
    keeps them per session, so a session changed or added after its command is read again alone."""

    session_id: str
    readable: bool = Field(default=True, description="False: the session file could not be read.")
    supporter: str = ""
    knows: str = "intake"
    perturbation: str | None = None
    status: SessionStatus = SessionStatus.FAILED
    check: CheckResult | None = None
    fault: FaultedSession | None = None
    decisions: int = 0
    invalid_decisions: int = 0
    supporter_turns: int = 0
    repeated: int = 0
    copied: int = 0
    voiced: int = 0
    critical: bool = False
    judged: bool = False
    failed_verdicts: int = 0
    trials: list[SessionJudgment] = Field(default_factory=list, description="Judgment trials, when 2 or more.")
    delta_tension: float | None = None
    delta_tension_observer: float | None = None
    objective: float | None = None
    tracker: tuple[str | None, str | None] = (None, None)
    values: dict[str, ValueFact] = Field(default_factory=dict)
    judges: list[str] = Field(default_factory=list, description="The judgment's panel.")
    prompt_digest: str | None = None
    verdict_judges: list[str] = Field(default_factory=list, description="Judges whose verdict did not fail.")
    scores: list[ScoreFact] = Field(default_factory=list)


def session_facts(
    folder: RunFolder,
    sid: str,
    record: SessionRecord,
    judgment: SessionJudgment | None,
    *,
    gamma: float = DEFAULT_GAMMA,
    lam: float = DEFAULT_LAMBDA,
) -> SessionFacts:
    """Session `sid`'s facts; `judgment` only for a completed session (its check and trials are read here)."""
    check = read_check(folder, sid)
    completed = record.status == SessionStatus.COMPLETED
    facts = SessionFacts(
        session_id=sid,
        supporter=record.supporter,
        knows=record.supporter_knows,
        perturbation=record.perturbation,
        status=record.status,
        check=check,
        fault=faulted(record, judgment) if completed else None,
    )
    if not completed:
        return facts
    traj = trajectory_metrics(record, gamma=gamma, lam=lam)
    facts = facts.model_copy(
        update={
            "decisions": len(record.decisions),
            "invalid_decisions": sum(not d.valid for d in record.decisions),
            "supporter_turns": sum(t.kind == "supporter" and bool(t.text.strip()) for t in record.turns),
            "repeated": len(repeated_lines(record)),
            "copied": len(copied_lines(record)),
            "voiced": len(voiced_lines(record)),
            "critical": critical_failure(record, judgment, check) is not None,
            "delta_tension": traj.self_report.delta_tension,
            "delta_tension_observer": traj.observer.delta_tension,
            "objective": traj.objective_self_report.value,
            "tracker": (record.models.get("tracker"), record.prompt_digests.get("tracker")),
        }
    )
    if judgment is None:
        return facts
    trials = read_trials(folder, sid, first=judgment)
    scores = []
    dims = {d.id: d for d in judgment.rubric.active}
    for v in judgment.verdicts:
        if v.status == JudgmentStatus.FAILED:
            continue
        for s in v.scores:
            dim = dims.get(s.dimension)
            if dim is not None and dim.kind == "scale" and dim.about == "supporter" and s.score is not None:
                scores.append(ScoreFact(dimension=s.dimension, item=s.item, judge=v.judge, score=s.score))
    return facts.model_copy(
        update={
            "judged": True,
            "failed_verdicts": sum(v.status != JudgmentStatus.OK for v in judgment.verdicts),
            "trials": trials if len(trials) >= 2 else [],
            "values": _value_facts(judgment),
            "judges": list(judgment.judges),
            "prompt_digest": judgment.prompt_digest,
            "verdict_judges": [v.judge for v in judgment.verdicts if v.status != JudgmentStatus.FAILED],
            "scores": scores,
        }
    )


def _value_facts(judgment: SessionJudgment) -> dict[str, ValueFact]:
    shares = labelled_shares(judgment)
    out = {}
    for k, (d, x) in session_values(judgment).items():
        fact = ValueFact(level=d.level, kind=d.kind, value=x)
        if (share := shares.get(k)) is not None:
            p_sum = share.p_mean * share.labelled if share.p_mean is not None else None
            fact = fact.model_copy(update={"labelled": share.labelled, "p_sum": p_sum})
        out[k] = fact
    return out


def build_leaderboard(
    run_dirs: Sequence[str | Path],
    *,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
    gamma: float = DEFAULT_GAMMA,
    lam: float = DEFAULT_LAMBDA,
    cards: Sequence[ValidityCard] = (),
    ratings: bool = False,
    fidelity: bool = False,
    include_faults: bool = False,
    read: dict[tuple[str, str], tuple[SessionRecord, SessionJudgment | None]] | None = None,
) -> Leaderboard:
    """Read every session and judgment in `run_dirs` and summarise them per supporter.

    `read`, when given, receives each readable session's record and (for completed sessions) judgment, keyed by
    (run dir as given, session id), so a caller that needs them too (the report) does not read them again.

    `ratings=True` adds what the human ratings stored in the runs say (`rescue-sim ratings import`): PPI-corrected
    means beside the judge-only and human-only ones, and judge-human agreement.

    Sessions with a simulator fault are left out of every aggregate (and listed per row with why) unless
    `include_faults`, which puts them back (still listed).

    Each dimension carries the validity of the instrument that produced it: a card among `cards`, else one stored
    by `rescue-sim gold sessions` for the same model and prompt digest, else "not validated".

    Raises RunFolderError (a UserError) for a folder that is not a run folder or holds an unreadable judgment.
    """
    if not run_dirs:
        raise ValueError("build_leaderboard needs at least one run folder")
    facts: list[tuple[str, SessionFacts]] = []
    for run_dir in run_dirs:
        folder = RunFolder(run_dir)
        folder.read_manifest()
        for stored in folder.read_sessions():
            sid, record = stored.session_id, stored.record
            if record is None:
                facts.append((str(run_dir), SessionFacts(session_id=sid, readable=False)))
                continue
            judgment = read_judgment(folder, sid) if record.status == SessionStatus.COMPLETED else None
            if read is not None:
                read[(str(run_dir), sid)] = (record, judgment)
            facts.append((str(run_dir), session_facts(folder, sid, record, judgment, gamma=gamma, lam=lam)))
    return leaderboard_from_facts(
        run_dirs,
        facts,
        confidence=confidence,
        seed=seed,
        gamma=gamma,
        lam=lam,
        cards=cards,
        ratings=ratings,
        fidelity=fidelity,
        include_faults=include_faults,
    )


def leaderboard_from_facts(
    run_dirs: Sequence[str | Path],
    facts: Sequence[tuple[str, SessionFacts]],
    *,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
    gamma: float = DEFAULT_GAMMA,
    lam: float = DEFAULT_LAMBDA,
    cards: Sequence[ValidityCard] = (),
    ratings: bool = False,
    fidelity: bool = False,
    include_faults: bool = False,
) -> Leaderboard:
    """`build_leaderboard` over sessions already read: (run dir as given, facts) in read order; `gamma` and `lam`
    are those the facts were computed with. Ratings and fidelity are read from `run_dirs`."""
    accs: dict[str, _Acc] = {}
    board = PerturbationBoard(include_faults=include_faults)
    order: list[str] = []
    for run, f in facts:
        if not f.readable:
            acc = accs.setdefault("(unreadable)", _Acc("(unreadable)"))
            acc.counts["sessions"] += 1
            acc.counts["failed"] += 1
            continue
        # an oracle supporter saw the answers: it is its own row, never pooled with the same spec at intake
        label = f.supporter if f.knows == "intake" else f"{f.supporter} [oracle]"
        acc = accs.setdefault(label, _Acc(label, f.knows))
        if run not in acc.runs:
            acc.runs.append(run)
        acc.counts["sessions"] += 1
        board.count(f.supporter, f.perturbation, f.status == SessionStatus.COMPLETED, f.check, acc.knows, f.fault)
        if f.status == SessionStatus.FAILED:
            acc.counts["failed"] += 1
            continue
        if f.status != SessionStatus.COMPLETED:
            acc.counts["incomplete"] += 1
            continue
        acc.counts["completed"] += 1
        acc.counts["decisions"] += f.decisions
        acc.counts["invalid"] += f.invalid_decisions
        if f.fault is not None:
            acc.counts["simulator"] += 1
            acc.faults.add(f.fault)
            if not include_faults:  # the room malfunctioned: the supporter is neither credited nor blamed
                acc.counts["failed_judgments"] += f.failed_verdicts
                continue
        acc.counts["supporter_turns"] += f.supporter_turns
        acc.counts["repeated"] += f.repeated
        acc.counts["copied"] += f.copied
        acc.counts["voiced"] += f.voiced
        if f.critical:
            acc.critical += 1
        if f.check is not None and f.check.judge_compromised:
            acc.compromised += 1
            continue
        if f.trials:
            acc.trials.append(f.trials)
        if f.judged:
            acc.counts["failed_judgments"] += f.failed_verdicts
        else:
            acc.counts["unjudged"] += 1
        acc.sources.setdefault("delta_tension_observer", set()).add(f.tracker)
        for target, value in (
            (acc.delta_tension, f.delta_tension),
            (acc.delta_tension_obs, f.delta_tension_observer),
            (acc.objective, f.objective),
        ):
            if value is not None:
                target.append(value)
        if not f.judged:
            continue
        if f.values:
            acc.counts["scored"] += 1
        for dim_id, v in f.values.items():
            acc.sources.setdefault(dim_id, set()).update((j, f.prompt_digest) for j in f.judges)
            acc.dims.setdefault(dim_id, v)
            acc.values.setdefault(dim_id, []).append(v.value)
            if v.labelled is not None:
                acc.labelled.setdefault(dim_id, []).append(v)
            if dim_id not in order:
                order.append(dim_id)
        for judge in f.verdict_judges:
            if judge not in acc.judges:
                acc.judges.append(judge)
        for s in f.scores:
            acc.ratings.setdefault(s.dimension, {}).setdefault((f.session_id, s.item), {})[s.judge] = s.score
    for acc in accs.values():
        acc.faults.included = include_faults
    rows = [_row(acc, order, confidence, seed, cards) for acc in accs.values()]
    rank_by = RANK_BY if RANK_BY in order else None

    def key(row: SupporterRow) -> tuple[int, float, str]:
        d = row.dimension(rank_by) if rank_by else None
        mean = d.value.mean if d is not None else None
        return (mean is None, -(mean or 0.0), row.supporter)

    rows.sort(key=key)
    place = 0
    for r in rows:  # in board order; a row with nothing scored (or no ranking mean) has no place
        if r.scored > 0 and not key(r)[0]:
            place += 1
            r.rank = place
    return Leaderboard(
        runs=[str(d) for d in run_dirs],
        dimensions=order,
        rank_by=rank_by,
        confidence=confidence,
        seed=seed,
        include_faults=include_faults,
        gamma=gamma,
        lam=lam,
        rows=rows,
        perturbations=board.rows(),
        **(_human(run_dirs, confidence) if ratings else {}),
        **({"fidelity": fidelity_by_supporter(run_dirs)} if fidelity else {}),
    )


def _human(run_dirs: Sequence[str | Path], confidence: float) -> dict:
    from judges.ratings import batch_summaries, item_index, ppi_estimates, runs_agreement

    index = item_index(run_dirs)
    return {
        "human": ppi_estimates(run_dirs, confidence=confidence, index=index),
        "human_agreement": runs_agreement(run_dirs, index),
        "human_batches": batch_summaries(run_dirs),
    }


def _alpha(ratings: dict[tuple[str, str], dict[str, int]], judges: list[str]) -> float | None:
    items = list(ratings)
    return krippendorff_alpha([[ratings[i].get(j) for i in items] for j in judges], "interval")


def _validity(acc: _Acc, dim_id: str, cards: Sequence[ValidityCard]) -> list[ValidityNote]:
    instrument = "tracker" if dim_id == "delta_tension_observer" else "judge"
    sources = sorted(acc.sources.get(dim_id, set()), key=lambda s: (s[0] or "", s[1] or ""))
    return [dimension_validity(dim_id, m, d, instrument=instrument, cards=cards) for m, d in sources]


def _labelled(facts: list[ValueFact] | None) -> dict:
    """A labelled share's labelled turns and the mean probability behind them, over sessions (none: {})."""
    if not facts:
        return {}
    labelled = sum(f.labelled or 0 for f in facts)
    known = all(f.p_sum is not None for f in facts if f.labelled)
    p = sum(f.p_sum or 0.0 for f in facts) / labelled if labelled and known else None
    return {"labelled_turns": labelled, "labelled_p": None if p is None else round(p, 4)}


def _row(acc: _Acc, order: list[str], confidence: float, seed: int, cards: Sequence[ValidityCard] = ()) -> SupporterRow:
    c = acc.counts
    dims = [
        DimensionSummary(
            dimension=d,
            level=acc.dims[d].level,
            measure="mean" if acc.dims[d].kind == "scale" else "rate",
            value=mean_ci(acc.values[d], confidence=confidence, seed=seed),
            validity=_validity(acc, d, cards),
            **_labelled(acc.labelled.get(d)),
        )
        for d in order
        if d in acc.values
    ]
    pooled: dict[tuple[str, str], dict[str, int]] = {}
    for dim_id, ratings in acc.ratings.items():
        for (sid, item), by_judge in ratings.items():
            pooled[(sid, f"{item}/{dim_id}")] = by_judge
    several = len(acc.judges) >= 2
    considered = c["completed"] - (0 if acc.faults.included else c["simulator"])
    return SupporterRow(
        supporter=acc.supporter,
        knows=acc.knows,
        runs=acc.runs,
        sessions=c["sessions"],
        completed=c["completed"],
        failed_sessions=c["failed"],
        incomplete_sessions=c["incomplete"],
        unjudged=c["unjudged"],
        failed_judgments=c["failed_judgments"],
        simulator_failures=c["simulator"],
        simulator_faults=acc.faults,
        scored=c["scored"],
        decisions=c["decisions"],
        invalid_decisions=c["invalid"],
        supporter_turns=c["supporter_turns"],
        repeated_turns=c["repeated"],
        repeated_share=c["repeated"] / c["supporter_turns"] if c["supporter_turns"] else None,
        copied_turns=c["copied"],
        copied_share=c["copied"] / c["supporter_turns"] if c["supporter_turns"] else None,
        voiced_turns=c["voiced"],
        voiced_share=c["voiced"] / c["supporter_turns"] if c["supporter_turns"] else None,
        dimensions=dims,
        alpha=_alpha(pooled, acc.judges) if several else None,
        alpha_by_dimension={d: _alpha(r, acc.judges) for d, r in acc.ratings.items()} if several else {},
        delta_tension=mean_ci(acc.delta_tension, confidence=confidence, seed=seed),
        delta_tension_observer=mean_ci(acc.delta_tension_obs, confidence=confidence, seed=seed),
        observer_validity=_validity(acc, "delta_tension_observer", cards),
        group_objective=mean_ci(acc.objective, confidence=confidence, seed=seed),
        critical_sessions=acc.critical,
        critical_of=considered,
        critical_share=acc.critical / considered if considered else None,
        judge_compromised=acc.compromised,
        judge_trials=max((len(t) for t in acc.trials), default=1),
        judge_flip_rate={d.dimension: d.flip_rate for d in dimension_stability(acc.trials)},
    )
