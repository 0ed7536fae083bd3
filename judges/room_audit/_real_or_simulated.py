"""Real or simulated? A blind test of RESCUE-derived cases against the samples they came from.

**Pairs** (`draw_pairs`). For every simulated session of a case whose provenance names a RESCUE sample, each
member turn is set beside a client row of that sample at the matched moment: the turn is the k-th member turn of
its session; its partner is the same member's row whose position among the sample's client rows is nearest k
(ties: the earlier), else any member's nearest row when that member has none left. Each real row is used once per
sample, so the pairs of two sessions of one case never share a real line. Lines under `MIN_WORDS` words on either
side ("Yeah.", "Mm-hmm") are left out on both sides by the same rule: they carry nothing to judge.

**Frame: neutral, no preceding context.** Both lines are shown with a short frame (the kind of session, the
members' names, who says each line) and nothing that came before. The real sample's preceding rows would favour
the real line (it answers that conversation; the simulated line answers another one), the simulated session's
rows would favour the simulated one; a neutral frame asks only whether the line itself sounds like a person.

**Reading.** Each pair is asked in both orders (real line as Line A, then as Line B), each as one yes/no question
("Was Line A said by a real person?") read by the checklist judges' machinery (`judges.scoring._checklist.
ask_questions`: P(yes) from the embedded model's first-token logits, a provider's `top_logprobs`, or the share of
sampled answers). P(real) is P(yes) when the real line is A and 1 - P(yes) when it is B; the pair's P(real) is the
mean of both orders, which cancels a constant lean toward Line A or toward "yes". The hard choice picks the line
with P above 0.5 in each order (exactly 0.5 counts half). A pair with a failed order is recorded with the reason
and left out of the scores (one order alone does not cancel the position lean).

**Accuracy and interval.** `accuracy` is the mean of the pairs' P(real); `hard_accuracy` the mean of their hard
choices; 0.5 = the check model cannot tell real from simulated. Pairs cluster: the lines of one simulated session
share its room, seed and member model. The interval is a cluster bootstrap (`cluster_bootstrap_ci`): sessions are
resampled with replacement, their pairs kept together, and the pair-weighted mean is taken (percentile, 2000
resamples, seeded). Sessions of one case also share the real people of its sample; `cluster="sample"` resamples
samples instead, which is the stricter choice when there are enough of them (with the six shared samples and two
or three cases it is not: a percentile bootstrap over three clusters says little).

**Human batch** (`write_rating_batch`). The same pairs as a `/rate` batch (`rescue-sim serve --rate`), in the
JSONL (and CSV) format of `judges.ratings`: one item per pair in one order drawn by a seeded hash, the two lines as
a two-turn transcript, one question `real_line` (1 = Line A, 2 = Line B), the same neutral frame. Which line is
real goes to `<name>.key.json` beside it, never into the items; `score_rating_sheets` reads the raters' sheets
with the key and gives their accuracy and the PsyCLIENT-style confusion rate (1 - accuracy: the share of pairs
where the simulated line was taken for the real one).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import Field

from judges.ratings._blind import RaterCase, RaterItem, RaterMember, RaterTurn, find_leaks, model_strings, secrets_of
from judges.ratings._formats import render_csv, render_jsonl, sibling
from judges.room_audit._sim_vs_real import load_golds
from judges.scoring._checklist import ask_questions
from judges.scoring._render import PROMPTS, as_data, group_kind
from judges.scoring._rubric import Dimension
from personas.common.errors import UserError
from personas.common.files import atomic_write_text
from personas.common.prompts import render_prompt
from personas.common.records import Record
from personas.rescue import GoldRow, GoldTrajectory
from personas.taxonomy import SUPPORTER_NAME
from simulator.llm.types import ModelClient, YesProbability
from simulator.records import SessionRecord
from simulator.runfolder import RunFolder, RunFolderError
from simulator.turn_checks import words

REAL_OR_SIMULATED_SCHEMA_VERSION = 1
MIN_WORDS = 3  # lines shorter than this (either side) are not paired
RESAMPLES = 2000
FIDELITY_PROMPTS = PROMPTS / "fidelity"
RATING_DIMENSION = "real_line"

Order = Literal["real_first", "real_second"]
Cluster = Literal["session", "sample"]


class LinePair(Record):
    """A simulated member line and a real client line at the matched moment of the same case."""

    pair_id: str = Field(description="`<run>/<session>/t<turn>`: the simulated turn the pair is built on.")
    run: str = Field(description="Run folder of the simulated session.")
    session_id: str
    case_id: str = Field(description="The RESCUE-derived case.")
    sample_id: str = Field(description="The RESCUE sample the case came from (and the real line).")
    group: str = Field(description="`couple` or `family`.")
    members: list[str] = Field(description="The case's members, in card order.")
    turn: int = Field(description="Turn index of the simulated line in its session.")
    position: int = Field(description="The simulated line is its session's k-th member turn (1-based).")
    speaker: str = Field(description="Who says the simulated line.")
    simulated: str = Field(description="The simulated line.")
    real_row: int = Field(description="RESCUE `row_index` of the real line.")
    real_position: int = Field(description="The real line is the sample's k-th client row (1-based).")
    real_speaker: str = Field(description="Who says the real line (the simulated speaker when `same_speaker`).")
    real: str = Field(description="The real line (`dialogue_cleaned`).")
    same_speaker: bool = Field(description="False when the member had no real line left and another's was taken.")


class PairReading(Record):
    """The check model's reading of one pair, in both orders."""

    pair_id: str
    cluster: str = Field(description="The bootstrap cluster the pair belongs to (session or sample id).")
    p_real_first: float | None = Field(description="P(picks the real line) with the real line shown as Line A.")
    p_real_second: float | None = Field(description="P(picks the real line) with the real line shown as Line B.")
    p_real: float | None = Field(description="Mean of both orders; None when an order failed.")
    hard: float | None = Field(description="Mean of both orders' hard choices (1 real picked, 0 not, 0.5 a tie).")
    p_line_a: float | None = Field(description="Mean P(picks Line A) over both orders: above 0.5 = leans to A.")
    method: str | None = Field(default=None, description="`logprobs` or `samples` (as the checklist judges read).")
    failure: str | None = Field(default=None, description="Why the pair was not scored (an order failed).")


class RealOrSimulated(Record):
    """The blind real-or-simulated test of a set of runs against their RESCUE samples."""

    schema_version: int = REAL_OR_SIMULATED_SCHEMA_VERSION
    model: str = Field(description="The check model asked.")
    frame: Literal["neutral"] = Field(default="neutral", description="What each pair is shown with (see module).")
    cluster: Cluster = Field(description="What the bootstrap resamples.")
    pairs: list[LinePair]
    readings: list[PairReading] = Field(description="One per pair, in the same order.")
    scored: int = Field(description="Pairs read in both orders.")
    failed: int = Field(description="Pairs recorded with a failure, left out of the scores.")
    unmatched: int = Field(description="Simulated member turns (of MIN_WORDS or more) left without a real line.")
    clusters: int = Field(description="Clusters among the scored pairs.")
    accuracy: float | None = Field(description="Mean order-averaged P(picks the real line); 0.5 = cannot tell.")
    accuracy_ci: tuple[float, float] | None = Field(description="95% cluster-bootstrap interval of `accuracy`.")
    hard_accuracy: float | None = Field(description="Share of (pair, order) choices that picked the real line.")
    hard_accuracy_ci: tuple[float, float] | None = Field(description="95% cluster-bootstrap interval.")
    p_line_a: float | None = Field(description="Mean P(picks Line A): the position lean both orders cancel.")
    cases: dict[str, int] = Field(description="Scored pairs per case.")
    note: str = Field(default="", description="Anything that limits the reading.")


# ---- pairs ----------------------------------------------------------------------------------------------------


def _client_rows(gold: GoldTrajectory) -> list[GoldRow]:
    return [r for r in gold.rows if r.speaker != SUPPORTER_NAME and r.speaker in gold.participants]


def _long_enough(text: str, min_words: int) -> bool:
    return len(words(text)) >= min_words


def draw_pairs(
    runs: Mapping[str, Sequence[SessionRecord]], golds: Mapping[str, GoldTrajectory], *, min_words: int = MIN_WORDS
) -> tuple[list[LinePair], int]:
    """Matched pairs for every RESCUE-derived session among `runs` (run name -> its sessions) whose sample is in
    `golds`, and how many simulated member turns found no real line (see the module for the rule)."""
    used: dict[str, set[int]] = {}
    pairs: list[LinePair] = []
    unmatched = 0
    for run, records in sorted(runs.items()):
        for rec in sorted(records, key=lambda r: r.session_id):
            prov = rec.case.provenance
            gold = golds.get(prov.sample_id or "") if prov.source == "rescue" else None
            if gold is None:
                continue
            real = [(k, row) for k, row in enumerate(_client_rows(gold), start=1) if _long_enough(row.text, min_words)]
            taken = used.setdefault(gold.sample_id, set())
            members = [t for t in rec.turns if t.kind == "member"]
            for k, turn in enumerate(members, start=1):
                if not _long_enough(turn.text, min_words):
                    continue
                free = [(p, row) for p, row in real if row.row_index not in taken]
                mine = [(p, row) for p, row in free if row.speaker == turn.speaker]
                pool = mine or free
                if not pool:
                    unmatched += 1
                    continue
                p, row = min(pool, key=lambda pr: (abs(pr[0] - k), pr[0]))
                taken.add(row.row_index)
                pairs.append(
                    LinePair(
                        pair_id=f"{run}/{rec.session_id}/t{turn.index}",
                        run=run,
                        session_id=rec.session_id,
                        case_id=rec.case.id,
                        sample_id=gold.sample_id,
                        group=rec.case.group,
                        members=rec.case.member_names,
                        turn=turn.index,
                        position=k,
                        speaker=turn.speaker,
                        simulated=turn.text.strip(),
                        real_row=row.row_index,
                        real_position=p,
                        real_speaker=row.speaker,
                        real=row.text.strip(),
                        same_speaker=row.speaker == turn.speaker,
                    )
                )
    return pairs, unmatched


def read_runs(run_dirs: Sequence[str | Path]) -> tuple[dict[str, list[SessionRecord]], list[str]]:
    """Every readable session of each run folder (keyed by the folder as given) and the unreadable ones."""
    runs: dict[str, list[SessionRecord]] = {}
    unreadable: list[str] = []
    for run in run_dirs:
        folder = RunFolder(run)
        if not folder.exists() and not folder.sessions_dir.is_dir():
            raise RunFolderError(f"{run}: not a run folder (no manifest.json or sessions/); pass a folder `run` wrote")
        mine = runs.setdefault(str(run), [])
        for stored in folder.read_sessions():
            if stored.record is None:
                unreadable.append(str(stored.error))
            else:
                mine.append(stored.record)
    return runs, unreadable


def pairs_from_runs(
    run_dirs: Sequence[str | Path], rescue: str | Path, *, min_words: int = MIN_WORDS
) -> tuple[list[LinePair], int, dict[str, list[SessionRecord]]]:
    """`draw_pairs` over run folders and a RESCUE source (samples, or an `import-rescue` folder of gold files);
    also returns the sessions read (the rating batch scrubs their model names)."""
    runs, _ = read_runs(run_dirs)
    pairs, unmatched = draw_pairs(runs, load_golds(rescue), min_words=min_words)
    return pairs, unmatched, runs


# ---- asking ---------------------------------------------------------------------------------------------------


def shown(pair: LinePair, order: Order) -> tuple[tuple[str, str], tuple[str, str]]:
    """((speaker, line) shown as Line A, (speaker, line) shown as Line B) for one order."""
    real, sim = (pair.real_speaker, pair.real), (pair.speaker, pair.simulated)
    return (real, sim) if order == "real_first" else (sim, real)


def _names(members: Sequence[str]) -> str:
    return members[0] if len(members) == 1 else ", ".join(members[:-1]) + " and " + members[-1]


def pair_prompt(pair: LinePair, order: Order) -> tuple[str, str, str]:
    """(context, about, question) of one order of a pair, as `ask_questions` takes them. Nothing in them says which
    line is real."""
    (speaker_a, line_a), (speaker_b, line_b) = shown(pair, order)
    context = render_prompt(
        "real_or_simulated",
        FIDELITY_PROMPTS,
        kind=group_kind(pair.group),
        members=_names(pair.members),
        speaker_a=speaker_a,
        line_a=as_data(line_a),
        speaker_b=speaker_b,
        line_b=as_data(line_b),
    )
    question = render_prompt("real_or_simulated_question", FIDELITY_PROMPTS)
    return context, "the two lines above", question


def _hard(p: float) -> float:
    return 1.0 if p > 0.5 else 0.0 if p < 0.5 else 0.5


async def read_pair(
    pair: LinePair, client: ModelClient, model: str, *, seed: int = 0, cluster: Cluster = "session"
) -> PairReading:
    """Both orders of one pair asked; a failed order is recorded, never scored."""
    got: dict[Order, float] = {}
    methods: set[str] = set()
    failure = None
    for order in ("real_first", "real_second"):
        context, about, question = pair_prompt(pair, order)  # type: ignore[arg-type]
        answers, _ = await ask_questions(client, model, context, about, [question], seed=seed)
        answer = answers[question]
        if not isinstance(answer, YesProbability):
            failure = f"{order}: {answer}"
            continue
        methods.add(answer.method)
        got[order] = answer.p_yes if order == "real_first" else 1.0 - answer.p_yes  # type: ignore[index]
    first, second = got.get("real_first"), got.get("real_second")
    both = first is not None and second is not None
    return PairReading(
        pair_id=pair.pair_id,
        cluster=pair.session_id if cluster == "session" else pair.sample_id,
        p_real_first=None if first is None else round(first, 6),
        p_real_second=None if second is None else round(second, 6),
        p_real=round((first + second) / 2, 6) if both else None,  # type: ignore[operator]
        hard=(_hard(first) + _hard(second)) / 2 if both else None,  # type: ignore[arg-type]
        p_line_a=round((first + 1.0 - second) / 2, 6) if both else None,  # type: ignore[operator]
        method="samples" if "samples" in methods else (methods.pop() if methods else None),
        failure=failure,
    )


def cluster_bootstrap_ci(
    values: Sequence[float],
    clusters: Sequence[str],
    *,
    confidence: float = 0.95,
    n_resamples: int = RESAMPLES,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile interval of the pooled mean of `values` when they come in `clusters`: each resample draws as many
    clusters as there are, with replacement, and takes the mean over all their values (clusters of unequal size
    weigh by their size, as the pooled mean does). None with fewer than two clusters: one cluster's spread says
    nothing about another's."""
    import numpy as np

    if len(values) != len(clusters):
        raise ValueError("one cluster per value")
    keys = sorted(set(clusters))
    if len(keys) < 2:
        return None
    sums = np.array([sum(v for v, c in zip(values, clusters, strict=True) if c == k) for k in keys], dtype=float)
    counts = np.array([sum(1 for c in clusters if c == k) for k in keys], dtype=float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(keys), size=(n_resamples, len(keys)))
    means = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return float(low), float(high)


def summarise_readings(
    model: str,
    pairs: Sequence[LinePair],
    readings: Sequence[PairReading],
    *,
    unmatched: int = 0,
    cluster: Cluster = "session",
    seed: int = 0,
) -> RealOrSimulated:
    """The accuracies and their cluster-bootstrap intervals over the scored pairs."""
    ok = [r for r in readings if r.p_real is not None and r.hard is not None]
    by_id = {p.pair_id: p for p in pairs}
    groups = [r.cluster for r in ok]

    def mean(xs: list[float]) -> float | None:
        return round(sum(xs) / len(xs), 6) if xs else None

    def ci(xs: list[float]) -> tuple[float, float] | None:
        got = cluster_bootstrap_ci(xs, groups, seed=seed) if xs else None
        return None if got is None else (round(got[0], 6), round(got[1], 6))

    p_real = [r.p_real for r in ok if r.p_real is not None]
    hard = [r.hard for r in ok if r.hard is not None]
    cases: dict[str, int] = {}
    for r in ok:
        cases[by_id[r.pair_id].case_id] = cases.get(by_id[r.pair_id].case_id, 0) + 1
    notes = []
    if len(set(groups)) < 2 and ok:
        notes.append(f"one {cluster} only: no interval")
    other = sum(1 for p in pairs if not p.same_speaker)
    if other:
        notes.append(f"{other} pair(s) set another member's real line beside the simulated one (none of theirs left)")
    return RealOrSimulated(
        model=model,
        cluster=cluster,
        pairs=list(pairs),
        readings=list(readings),
        scored=len(ok),
        failed=len(readings) - len(ok),
        unmatched=unmatched,
        clusters=len(set(groups)),
        accuracy=mean(p_real),
        accuracy_ci=ci(p_real),
        hard_accuracy=mean(hard),
        hard_accuracy_ci=ci(hard),
        p_line_a=mean([r.p_line_a for r in ok if r.p_line_a is not None]),
        cases=cases,
        note="; ".join(notes),
    )


async def real_or_simulated(
    pairs: Sequence[LinePair],
    client: ModelClient,
    model: str,
    *,
    unmatched: int = 0,
    cluster: Cluster = "session",
    seed: int = 0,
) -> RealOrSimulated:
    """Ask the check model `model` about every pair in both orders (one call at a time: on the embedded model the
    context of each order is new anyway) and summarise."""
    readings = [await read_pair(p, client, model, seed=seed, cluster=cluster) for p in pairs]
    return summarise_readings(model, pairs, readings, unmatched=unmatched, cluster=cluster, seed=seed)


# ---- the same pairs for human raters ----------------------------------------------------------------------------


class RatingKeyItem(Record):
    item_id: str = Field(description="The rater item's id.")
    real: Literal["A", "B"] = Field(description="Which line a real person said.")
    pair: LinePair


class RatingKey(Record):
    """Which line of each rater item is real: written beside the batch (`<name>.key.json`); never send it."""

    schema_version: int = REAL_OR_SIMULATED_SCHEMA_VERSION
    kind: Literal["real_or_simulated"] = "real_or_simulated"
    batch: str = Field(description="The items file's name.")
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    seed: int = Field(description="Seed of the order drawn for each item.")
    items: list[RatingKeyItem]


def rating_dimension() -> Dimension:
    return Dimension(
        id=RATING_DIMENSION,
        level="session",
        kind="scale",
        question="Which line did a real person say?",
        min=1,
        max=2,
        anchors={1: "Line A", 2: "Line B"},
        about="simulator",
    )


def _item_id(pair: LinePair, seed: int) -> str:
    return "ros-" + hashlib.sha256(f"{seed}:{pair.pair_id}".encode()).hexdigest()[:12]


def rater_items(pairs: Sequence[LinePair], *, seed: int = 0) -> tuple[list[RaterItem], list[RatingKeyItem]]:
    """One blinded rater item per pair, in an order drawn from a hash of the seed and the pair; the key beside."""
    items, key = [], []
    for pair in pairs:
        item_id = _item_id(pair, seed)
        order: Order = "real_first" if random.Random(item_id).random() < 0.5 else "real_second"
        (speaker_a, line_a), (speaker_b, line_b) = shown(pair, order)
        kind = group_kind(pair.group)
        items.append(
            RaterItem(
                item_id=item_id,
                unit="session",
                supporter="Line A or Line B",
                case=RaterCase(
                    title=_names(pair.members),
                    group=pair.group,
                    setting=f"{kind.capitalize()} therapy session.",
                    presenting_problem="Not shown: each line is read on its own.",
                    members=[RaterMember(name=m, role="member") for m in pair.members],
                ),
                transcript=[
                    RaterTurn(turn=1, speaker=f"Line A: {speaker_a}", text=line_a),
                    RaterTurn(turn=2, speaker=f"Line B: {speaker_b}", text=line_b),
                ],
                dimensions=[RATING_DIMENSION],
            )
        )
        key.append(RatingKeyItem(item_id=item_id, real="A" if order == "real_first" else "B", pair=pair))
    return items, key


class RatingBatchPaths(Record):
    items: str = Field(description="The `/rate` batch (JSONL): send this to raters.")
    csv: str = Field(description="The same items as CSV with an empty `real_line` column.")
    instructions: str = Field(description="The instructions, as markdown.")
    key: str = Field(description="Which line is real: keep it from raters.")
    items_count: int


def write_rating_batch(
    pairs: Sequence[LinePair],
    out: str | Path,
    *,
    records: Iterable[SessionRecord] = (),
    seed: int = 0,
) -> RatingBatchPaths:
    """Write the pairs as a `/rate` batch (`out`, JSONL), a CSV and instructions beside it, and the key. Model
    names of `records` never reach the items (a leak is an error and nothing is written)."""
    out = Path(out)
    if not out.name.endswith(".jsonl"):
        raise UserError(f"{out}: the rating batch is a .jsonl file (what `rescue-sim serve --rate` reads)")
    items, key = rater_items(pairs, seed=seed)
    groups = sorted({p.group for p in pairs}) or ["couple"]
    text = render_prompt(
        "real_or_simulated_raters", FIDELITY_PROMPTS, count=len(items), groups_text=" or ".join(groups)
    )
    dims = [rating_dimension()]
    jsonl, table = render_jsonl(items, dims, text), render_csv(items, dims)
    secrets = secrets_of(s for r in records for s in model_strings(r))
    leaks = find_leaks(jsonl + table, secrets)
    if leaks:
        raise UserError(f"{out}: a line names a model ({', '.join(leaks)}); nothing was written")
    paths = RatingBatchPaths(
        items=str(out),
        csv=str(out.with_suffix(".csv")),
        instructions=str(sibling(out, ".instructions.md")),
        key=str(sibling(out, ".key.json")),
        items_count=len(items),
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, jsonl)
    atomic_write_text(Path(paths.csv), table)
    atomic_write_text(Path(paths.instructions), text + "\n")
    atomic_write_text(Path(paths.key), RatingKey(batch=out.name, seed=seed, items=key).model_dump_json(indent=2))
    return paths


class HumanRealOrSimulated(Record):
    """Raters' choices scored with the key."""

    ratings: int = Field(description="Choices read (one per rater and item).")
    raters: list[str]
    items: int = Field(description="Distinct items rated.")
    accuracy: float | None = Field(description="Share of choices that picked the real line.")
    accuracy_ci: tuple[float, float] | None = Field(description="95% cluster-bootstrap interval (by session).")
    confusion: float | None = Field(description="1 - accuracy: simulated lines taken for real (PsyCLIENT's rate).")
    by_rater: dict[str, float] = Field(description="Accuracy per rater.")
    unknown: int = Field(description="Rows whose item is not in the key, or off the 1-2 scale (not scored).")


def score_rating_sheets(key_path: str | Path, sheets: Sequence[str | Path], *, seed: int = 0) -> HumanRealOrSimulated:
    """Score raters' sheets (`<batch>.<rater>.ratings.jsonl` from `/rate`, or a filled-in CSV's rows in the same
    JSONL shape) against the key."""
    key = RatingKey.model_validate_json(Path(key_path).read_text(encoding="utf-8"))
    by_item = {k.item_id: k for k in key.items}
    correct: list[float] = []
    groups: list[str] = []
    per_rater: dict[str, list[float]] = {}
    unknown = 0
    seen: set[str] = set()
    for sheet in sheets:
        for line in Path(sheet).read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            k = by_item.get(str(row.get("item_id")))
            if k is None or row.get("dimension") != RATING_DIMENSION or row.get("value") not in (1, 2):
                unknown += 1
                continue
            hit = 1.0 if ("A" if row["value"] == 1 else "B") == k.real else 0.0
            correct.append(hit)
            groups.append(k.pair.session_id)
            per_rater.setdefault(str(row.get("rater", "")), []).append(hit)
            seen.add(k.item_id)
    acc = sum(correct) / len(correct) if correct else None
    ci = cluster_bootstrap_ci(correct, groups, seed=seed) if correct else None
    return HumanRealOrSimulated(
        ratings=len(correct),
        raters=sorted(per_rater),
        items=len(seen),
        accuracy=None if acc is None else round(acc, 6),
        accuracy_ci=ci,
        confusion=None if acc is None else round(1 - acc, 6),
        by_rater={r: round(sum(v) / len(v), 6) for r, v in sorted(per_rater.items())},
        unknown=unknown,
    )
