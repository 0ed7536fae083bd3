"""Simulated families against the real ones they came from: RESCUE-derived cases vs their RESCUE sample.

For every case whose provenance names a RESCUE sample, the member turns of all its simulated sessions are set
against the sample's client rows, one measure per row, each with a distance:

- utterance length (words per turn): Wasserstein distance, in words;
- addressee: share of turns to the counsellor, to another member, to both: Jensen-Shannon distance (base 2, 0-1);
- share of each member's turns: Jensen-Shannon;
- intensity (0-10): Wasserstein, with both ranges shown; simulation = self-reports, RESCUE = annotated emotions;
- moves: simulated moves vs RESCUE utterance types read as moves (personas.taxonomy.RESCUE_UTTERANCE_MOVES);
- relation patterns: share of each label, RESCUE's gold rows vs the tracker's readings of the simulation;
- pattern transitions: consecutive labelled points (gold rows; tracker runs within one session), the whole
  matrix as one distribution, and one row per from-pattern (its conditional distribution);
- turn-taking (judges.room_audit._turn_taking): speakers per session, the counsellor's share of turns, the
  most-speaking member's share of member turns and the addressee shares, each with its distance.

A distance of None means one side has no data for the row. Nothing here calls a model.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Literal

from pydantic import Field

from judges.room_audit._turn_taking import FloorComparison, addressed, compare_floor
from judges.stats._distances import js_distance, wasserstein
from personas.common.records import Record
from personas.rescue import GoldRow, GoldTrajectory, gold_from_sample, load_gold, load_rescue
from personas.taxonomy import MEMBER_MOVES, RESCUE_UTTERANCE_MOVES, SUPPORTER_NAME, patterns_for
from simulator.records import SessionRecord, Turn
from simulator.turn_checks import words

Metric = Literal["jensen_shannon", "wasserstein"]


class ComparisonRow(Record):
    """One measure, simulated vs real, with its distance."""

    measure: str = Field(description="What is compared.")
    metric: Metric = Field(description="Distance used for the row.")
    distance: float | None = Field(description="None when one side has no data.")
    simulated: str = Field(description="Summary of the simulated side (shares or mean and range).")
    real: str = Field(description="Summary of the RESCUE side.")
    n_simulated: int = Field(description="Observations on the simulated side.")
    n_real: int = Field(description="Observations on the RESCUE side.")


class TransitionRow(Record):
    """Where one pattern led next: the simulated and the real conditional distributions."""

    from_pattern: str = Field(description="The pattern transitioned from.")
    simulated: dict[str, int] = Field(description="Next pattern -> count, tracker's readings of the simulation.")
    real: dict[str, int] = Field(description="Next pattern -> count, RESCUE gold rows.")
    distance: float | None = Field(description="Jensen-Shannon distance; None when one side never left this pattern.")


class SimVsReal(Record):
    """One RESCUE-derived case: its simulated sessions against its sample."""

    case_id: str = Field(description="The RESCUE-derived case.")
    sample_id: str = Field(description="The RESCUE sample it came from.")
    sessions: int = Field(description="Simulated sessions of the case.")
    member_turns: int = Field(description="Member turns over those sessions.")
    real_rows: int = Field(description="Client (non-therapist) rows of the sample.")
    rows: list[ComparisonRow] = Field(description="One per measure.")
    transitions: list[TransitionRow] = Field(description="One per pattern either side transitioned from.")
    turn_taking: FloorComparison | None = Field(
        default=None, description="Who held the floor: the case's sessions beside its sample (None in old reports)."
    )
    note: str = Field(default="", description="Anything that limits the comparison.")


# ---- summaries ----------------------------------------------------------------------------------------------


def _shares(c: Counter[str]) -> str:
    total = sum(c.values())
    if not total:
        return "-"
    return ", ".join(f"{k} {v / total:.0%}" for k, v in c.most_common())


def _spread(values: Sequence[float]) -> str:
    if not values:
        return "-"
    return f"mean {sum(values) / len(values):.1f}, range {min(values):g}-{max(values):g}"


# ---- the two sides ------------------------------------------------------------------------------------------


def _transitions(sequences: Sequence[Sequence[str]]) -> dict[str, Counter[str]]:
    out: dict[str, Counter[str]] = {}
    for seq in sequences:
        for a, b in pairwise(seq):
            out.setdefault(a, Counter())[b] += 1
    return out


def _client_rows(gold: GoldTrajectory) -> list[GoldRow]:
    return [r for r in gold.rows if r.speaker != SUPPORTER_NAME and r.speaker in gold.participants]


def compare(records: Sequence[SessionRecord], gold: GoldTrajectory) -> SimVsReal:
    """The simulated sessions of one RESCUE-derived case against the sample they came from."""
    case = records[0].case
    members = case.member_names
    valid = set(patterns_for(gold.group))
    sim_turns: list[Turn] = [t for r in records for t in r.turns if t.kind == "member"]
    real = _client_rows(gold)
    # name mapping: derived cards keep the sample's participant names
    rows: list[ComparisonRow] = []

    def add(measure: str, metric: Metric, distance, sim: str, rl: str, ns: int, nr: int) -> None:
        rows.append(
            ComparisonRow(
                measure=measure, metric=metric, distance=distance, simulated=sim, real=rl, n_simulated=ns, n_real=nr
            )
        )

    sim_len = [float(len(words(t.text))) for t in sim_turns]
    real_len = [float(len(words(r.text))) for r in real if r.text]
    add("utterance length (words)", "wasserstein", wasserstein(sim_len, real_len), _spread(sim_len),
        _spread(real_len), len(sim_len), len(real_len))  # fmt: skip

    sim_to = Counter(a for t in sim_turns if (a := addressed(t.addressees, members, t.speaker)))
    real_to = Counter(a for r in real if (a := addressed(r.targets, gold.participants, r.speaker)))
    add("addressed to", "jensen_shannon", js_distance(sim_to, real_to), _shares(sim_to), _shares(real_to),
        sum(sim_to.values()), sum(real_to.values()))  # fmt: skip

    sim_who = Counter(t.speaker for t in sim_turns)
    real_who = Counter(r.speaker for r in real)
    add("share of turns per member", "jensen_shannon", js_distance(sim_who, real_who), _shares(sim_who),
        _shares(real_who), len(sim_turns), len(real))  # fmt: skip

    sim_int = [float(t.inner.intensity) for t in sim_turns if t.inner is not None]
    real_int = [float(e.intensity) for r in real for e in r.emotions if e.intensity is not None and e.person in
                gold.participants]  # fmt: skip
    add("intensity (0-10)", "wasserstein", wasserstein(sim_int, real_int), _spread(sim_int), _spread(real_int),
        len(sim_int), len(real_int))  # fmt: skip

    sim_moves = Counter(t.move for t in sim_turns if t.move in MEMBER_MOVES)
    real_moves = Counter(m for r in real if (m := RESCUE_UTTERANCE_MOVES.get(r.utterance_type)))
    add("moves (RESCUE utterance types as moves)", "jensen_shannon", js_distance(sim_moves, real_moves),
        _shares(sim_moves), _shares(real_moves), sum(sim_moves.values()), sum(real_moves.values()))  # fmt: skip

    real_seq = [r.relation_pattern for r in gold.rows if r.relation_pattern in valid]
    sim_seqs = [[t.tracker.pattern for t in r.turns if t.tracker and t.tracker.pattern in valid] for r in records]
    sim_pat = Counter(p for s in sim_seqs for p in s)
    real_pat = Counter(real_seq)
    add("relation patterns (tracker vs gold)", "jensen_shannon", js_distance(sim_pat, real_pat), _shares(sim_pat),
        _shares(real_pat), sum(sim_pat.values()), sum(real_pat.values()))  # fmt: skip

    sim_tr = _transitions(sim_seqs)
    real_tr = _transitions([real_seq])
    flat_sim = Counter({f"{a}>{b}": n for a, c in sim_tr.items() for b, n in c.items()})
    flat_real = Counter({f"{a}>{b}": n for a, c in real_tr.items() for b, n in c.items()})
    add("pattern transitions (whole matrix)", "jensen_shannon", js_distance(flat_sim, flat_real),
        f"{sum(flat_sim.values())} transitions", f"{sum(flat_real.values())} transitions",
        sum(flat_sim.values()), sum(flat_real.values()))  # fmt: skip
    transitions = [
        TransitionRow(
            from_pattern=p,
            simulated=dict(sim_tr.get(p, Counter()).most_common()),
            real=dict(real_tr.get(p, Counter()).most_common()),
            distance=js_distance(sim_tr.get(p, Counter()), real_tr.get(p, Counter())),
        )
        for p in sorted(set(sim_tr) | set(real_tr))
    ]
    note = ""
    if set(members) != set(gold.participants):
        note = f"members {', '.join(members)} differ from the sample's participants {', '.join(gold.participants)}"
    return SimVsReal(
        case_id=case.id,
        sample_id=gold.sample_id,
        sessions=len(records),
        member_turns=len(sim_turns),
        real_rows=len(real),
        rows=rows,
        transitions=transitions,
        turn_taking=compare_floor(case.id, case.group, records, [gold]),
        note=note,
    )


def load_golds(source: str | Path) -> dict[str, GoldTrajectory]:
    """Gold trajectories by sample id: from `import-rescue` gold files (a folder of `*.gold.json` or one such
    file), or from RESCUE samples (a .jsonl/.json file or folder, read with personas.load_rescue)."""
    src = Path(source)
    gold_files = sorted(src.glob("*.gold.json")) if src.is_dir() else ([src] if src.name.endswith(".gold.json") else [])
    if gold_files:
        golds = [load_gold(p) for p in gold_files]
    else:
        golds = [gold_from_sample(s) for s in load_rescue(src)]
    return {g.sample_id: g for g in golds}


def compare_runs_with_rescue(
    records: Sequence[SessionRecord], source: str | Path, golds: Mapping[str, GoldTrajectory] | None = None
) -> list[SimVsReal]:
    """One comparison per RESCUE-derived case among `records` whose sample is found in `source` (`golds`: the
    source already read by `load_golds`)."""
    by_sample: dict[str, list[SessionRecord]] = {}
    for r in records:
        prov = r.case.provenance
        if prov.source == "rescue" and prov.sample_id and any(t.kind == "member" for t in r.turns):
            by_sample.setdefault(prov.sample_id, []).append(r)
    if not by_sample:
        return []
    golds = load_golds(source) if golds is None else golds
    out = []
    for sample_id, recs in sorted(by_sample.items()):
        gold = golds.get(sample_id)
        if gold is None:
            continue
        by_case: dict[str, list[SessionRecord]] = {}
        for r in recs:
            by_case.setdefault(r.case.id, []).append(r)
        out.extend(compare(group, gold) for _, group in sorted(by_case.items()))
    return out


def missing_samples(records: Sequence[SessionRecord], comparisons: Sequence[SimVsReal]) -> list[str]:
    """Sample ids of RESCUE-derived sessions that got no comparison (sample not in the source given)."""
    have = {c.sample_id for c in comparisons}
    want = {r.case.provenance.sample_id for r in records if r.case.provenance.source == "rescue"}
    return sorted(s for s in want if s and s not in have)
