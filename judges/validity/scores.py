"""Scoring tracker checkpoints against RESCUE gold: pure functions, no model calls (the VP judge is in `run`).

Gold at a checkpoint after member row p (1-based position):

- pattern: row p's own `relation_pattern` when it carries one (couple samples put the label of the context
  ending at a row on that row); else, when row p+1 is a therapist row, that row's RPP gold (`relation_cycle_state`
  first: the pattern of the context that ends at row p, TAXONOMY §9). `""` (reviewed, no dominant pattern) and
  off-taxonomy labels are counted and left out. Scored with the benchmark's RPP metrics (top-1; macro over the
  group's taxonomy), so figures are comparable with `rescue-sim bench` RPP accuracy.
- emotions: row p's `internal_emotion` entries about members with a valid 0-10 intensity, against the
  tracker's intensity for the same person (not reported: counted, left out). MAE and Spearman's rho.
- viewpoints: row p's `viewpoints_attitudes` with source = speaker, a member target and a viewpoint (as the VP
  task, limited to member targets because the tracker's schema can only name members; views about the
  therapist or the group are counted). Pairing: share of gold source->target pairs among the tracker's views
  from the speaker. Meaning: the benchmark's VP judge (`run`).
- risk: RESCUE marks no risk. Data may mark it with a row field `at_risk: [names]` (an extension); in a sample
  that uses the field anywhere, each checkpoint's gold is the names on row p (none when absent) and every
  (checkpoint, member) pair is scored. Tracker flags are always counted.
- jitter: per directed member pair, the mean absolute change of warmth (and tension) per turn, i.e. the sum of
  |change| between consecutive observations divided by the turns between them, pooled over pairs. Tracker
  values are its reported warmth/tension; gold values are read from the annotated attitude text with the
  lexicon the RESCUE importer uses (`personas.rescue.warmth_tension`, ATTITUDE_LEXICON; RESCUE has no numbers).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import pairwise

from pydantic import Field

from judges.bench.instance_rules import valid_intensity
from judges.bench.instances import rpp_label
from judges.bench.metrics import ranking_metrics
from judges.validity.replay import Checkpoint
from personas.common.records import Record
from personas.rescue import LEXICON_VERSION, RescueSample, warmth_tension
from personas.taxonomy import patterns_for

RISK_FIELD = "at_risk"


class Count(Record):
    """k of n, never a bare percentage."""

    k: int = Field(description="Hits.")
    n: int = Field(description="Out of.")

    @property
    def share(self) -> float | None:
        return self.k / self.n if self.n else None


class PatternLabel(Record):
    support: int = Field(description="Gold checkpoints with this label.")
    predicted: int = Field(description="Checkpoints the tracker gave this label.")
    correct: int = Field(description="Gold checkpoints with this label the tracker got right.")
    recall: float | None = Field(description="correct / support; None without support.")


class PatternScores(Record):
    """Group pattern at checkpoints with a gold label (RPP metrics, top-1)."""

    n: int = Field(description="Scored checkpoints.")
    correct: int = Field(description="Checkpoints where the tracker's pattern equals gold.")
    accuracy: float | None = Field(description="correct / n; None when n is 0.")
    macro_f1: float | None = Field(description="Macro over the group taxonomy (labels with no support count 0).")
    no_gold: int = Field(description="Checkpoints without a pattern label at that point.")
    no_dominant: int = Field(description="Checkpoints whose gold is `` (reviewed, no dominant pattern).")
    off_taxonomy: int = Field(description="Checkpoints whose gold label is outside the group taxonomy.")
    per_label: dict[str, PatternLabel] = Field(description="Labels seen in gold or predictions.")
    confusion: dict[str, dict[str, int]] = Field(description="Gold -> tracker -> count.")
    by_group: dict[str, Count] = Field(default_factory=dict, description="Correct of scored, per scenario.")


class PersonIntensity(Record):
    n: int = Field(description="Pairs scored for this person.")
    mae: float = Field(description="Mean absolute intensity error for this person.")


class EmotionScores(Record):
    """Emotion intensity (0-10) per annotated person at checkpoints."""

    n: int = Field(description="(checkpoint, person) pairs scored.")
    not_reported: int = Field(description="Annotated persons the tracker gave no emotion for (left out).")
    mae: float | None = Field(description="Mean absolute error (scikit-learn).")
    spearman: float | None = Field(description="Spearman's rho (scipy); None below 3 pairs or without variation.")
    spearman_p: float | None = Field(default=None, description="Two-sided p-value of rho (scipy).")
    per_person: dict[str, PersonIntensity] = Field(default_factory=dict, description="Per annotated person.")


class ViewpointItem(Record):
    """One checkpoint with gold viewpoints: the gold triples and the tracker's views from the same speaker."""

    sample_id: str = Field(description="RESCUE sample id.")
    row: int = Field(description="1-based row the tracker ran after.")
    speaker: str = Field(description="Who spoke that row (the views' source).")
    gold: list[tuple[str, str, str]] = Field(description="(source, target, viewpoint), member targets only.")
    predicted: list[tuple[str, str, str]] = Field(description="The tracker's views whose source is the speaker.")
    pairs_found: int = Field(description="Gold source->target pairs among the predicted ones.")
    judge_source_target: float | None = Field(default=None, description="VP judge, 0-2.")
    judge_viewpoint: float | None = Field(default=None, description="VP judge, 0-4.")
    judge_reason: str = Field(default="", description="The VP judge's reason.")
    judge_failure: str | None = Field(default=None, description="Judge call failed: item left out of judge scores.")


class ViewpointScores(Record):
    items: int = Field(description="Checkpoints with member-target gold viewpoints.")
    gold_pairs: Count = Field(description="Gold source->target pairs the tracker named (k of n).")
    excluded_targets: int = Field(description="Gold views about the therapist or the group (not nameable).")
    no_speaker_view: int = Field(description="Items where the tracker gave no view from the speaker (VP: 0, 0).")
    judged: int = Field(default=0, description="Items with a VP judge score (no-view items count as 0, 0).")
    judge_failed: int = Field(default=0, description="Items whose judge call failed (left out).")
    source_target: float | None = Field(default=None, description="Mean VP judge pairing score, 0-2.")
    viewpoint: float | None = Field(default=None, description="Mean VP judge meaning score, 0-4.")
    vp_score: float | None = Field(default=None, description="The benchmark's 1-5 VP summary.")
    judge_model: str | None = Field(default=None, description="Model that judged viewpoint meaning.")


class RiskScores(Record):
    gold_marked: bool = Field(description="Whether any scored sample marks risk (row field `at_risk`).")
    checkpoints: int = Field(description="Tracker calls scored.")
    flagged_checkpoints: int = Field(description="Checkpoints where the tracker named anyone at risk.")
    flags: int = Field(description="Names flagged, summed over checkpoints.")
    tp: int = Field(default=0, description="Flagged and marked at risk.")
    fp: int = Field(default=0, description="Flagged, not marked (false alarm).")
    fn: int = Field(default=0, description="Marked, not flagged (missed).")
    tn: int = Field(default=0, description="Neither flagged nor marked.")
    scored_pairs: int = Field(default=0, description="(checkpoint, member) pairs in samples that mark risk.")


class SeriesJitter(Record):
    pairs: int = Field(description="Directed pairs with at least two observations.")
    steps: int = Field(description="Consecutive observation pairs.")
    turns: int = Field(description="Turns spanned by those steps.")
    total_change: float = Field(description="Sum of |change| over the steps.")
    per_turn: float | None = Field(description="total_change / turns.")
    per_step: float | None = Field(description="total_change / steps.")


class JitterScores(Record):
    lexicon: str = Field(default=LEXICON_VERSION, description="How gold warmth/tension are read from attitudes.")
    tracker_warmth: SeriesJitter = Field(description="Tracker warmth, per directed pair.")
    gold_warmth: SeriesJitter = Field(description="Gold warmth (lexicon), per directed pair.")
    tracker_tension: SeriesJitter = Field(description="Tracker tension, per directed pair.")
    gold_tension: SeriesJitter = Field(description="Gold tension (lexicon), per directed pair.")

    def ratio(self, which: str) -> float | None:
        t, g = getattr(self, f"tracker_{which}").per_turn, getattr(self, f"gold_{which}").per_turn
        return t / g if t is not None and g else None


# ---- gold at a checkpoint -------------------------------------------------------------------------------------


def gold_pattern(sample: RescueSample, row: int) -> str | None:
    """The pattern of the context ending at 1-based row `row`: a label, `` or None (see the module doc)."""
    rows = sample.rows
    own = rows[row - 1].field_label("relation_pattern")
    if own is not None:
        return own
    if row < len(rows) and rows[row].is_therapist:
        return rpp_label(rows[row])
    return None


def gold_emotions(sample: RescueSample, row: int) -> list[tuple[str, float]]:
    members, out = sample.members, []
    for e in sample.rows[row - 1].emotions:
        person, intensity = e.person.strip(), valid_intensity(e.intensity)
        if person in members and intensity is not None and person not in (p for p, _ in out):
            out.append((person, intensity))
    return out


def gold_viewpoints(sample: RescueSample, row: int) -> tuple[list[tuple[str, str, str]], int]:
    """(member-target triples from the speaker, views about non-members left out)."""
    r, members = sample.rows[row - 1], sample.members
    speaker = r.primary_speaker.strip()
    out: list[tuple[str, str, str]] = []
    excluded = 0
    for v in r.viewpoints:
        source, target, view = v.source.strip(), v.target.strip(), v.viewpoint.strip()
        if source != speaker or not target or not view:
            continue
        if target not in members or target == source:
            excluded += 1
            continue
        out.append((source, target, view))
    return out, excluded


def marks_risk(sample: RescueSample) -> bool:
    return any(RISK_FIELD in (r.model_extra or {}) for r in sample.rows)


def gold_risk(sample: RescueSample, row: int) -> set[str]:
    names = (sample.rows[row - 1].model_extra or {}).get(RISK_FIELD) or []
    if isinstance(names, str):
        names = [names]
    return {str(n).strip() for n in names} & set(sample.members)


# ---- scores ---------------------------------------------------------------------------------------------------

Scored = Sequence[tuple[RescueSample, Checkpoint]]


def _ok(pairs: Scored) -> list[tuple[RescueSample, Checkpoint]]:
    return [(s, c) for s, c in pairs if c.state is not None]


def pattern_scores(pairs: Scored) -> PatternScores:
    golds: list[str] = []
    preds: list[str] = []
    groups: list[str] = []
    labels: list[str] = []
    no_gold = no_dominant = off = 0
    for sample, cp in _ok(pairs):
        gold = gold_pattern(sample, cp.row)
        allowed = patterns_for(sample.group)
        if gold is None:
            no_gold += 1
        elif gold == "":
            no_dominant += 1
        elif gold not in allowed:
            off += 1
        else:
            golds.append(gold)
            preds.append(cp.state.pattern)  # type: ignore[union-attr]
            groups.append(sample.group)
            labels.extend(x for x in allowed if x not in labels)
    if not golds:
        return PatternScores(
            n=0, correct=0, accuracy=None, macro_f1=None, no_gold=no_gold, no_dominant=no_dominant,
            off_taxonomy=off, per_label={}, confusion={},
        )  # fmt: skip
    m = ranking_metrics(golds, [[p] for p in preds], labels)
    per_label = {
        lab: PatternLabel(
            support=s.support,
            predicted=s.predicted,
            correct=m.confusion.get(lab, {}).get(lab, 0),
            recall=s.recall if s.support else None,
        )
        for lab, s in m.per_label.items()
        if s.support or s.predicted
    }
    by_group = {}
    for g in dict.fromkeys(groups):
        idx = [i for i, x in enumerate(groups) if x == g]
        by_group[g] = Count(k=sum(golds[i] == preds[i] for i in idx), n=len(idx))
    correct = sum(g == p for g, p in zip(golds, preds))
    return PatternScores(
        n=len(golds),
        correct=correct,
        accuracy=m.accuracy,
        macro_f1=m.macro_f1,
        no_gold=no_gold,
        no_dominant=no_dominant,
        off_taxonomy=off,
        per_label=per_label,
        confusion=m.confusion,
        by_group=by_group,
    )


def emotion_scores(pairs: Scored) -> EmotionScores:
    from scipy.stats import spearmanr
    from sklearn.metrics import mean_absolute_error

    pred: list[float] = []
    gold: list[float] = []
    people: list[str] = []
    missing = 0
    for sample, cp in _ok(pairs):
        reported = {e.person: e.intensity for e in cp.state.emotions}  # type: ignore[union-attr]
        for person, intensity in gold_emotions(sample, cp.row):
            if person not in reported:
                missing += 1
                continue
            pred.append(float(reported[person]))
            gold.append(intensity)
            people.append(person)
    if not gold:
        return EmotionScores(n=0, not_reported=missing, mae=None, spearman=None)
    rho = p_value = None
    if len(gold) >= 3 and len(set(gold)) > 1 and len(set(pred)) > 1:
        result = spearmanr(pred, gold)
        rho, p_value = float(result.statistic), float(result.pvalue)
    per_person = {}
    for person in dict.fromkeys(people):
        idx = [i for i, x in enumerate(people) if x == person]
        per_person[person] = PersonIntensity(
            n=len(idx), mae=float(mean_absolute_error([gold[i] for i in idx], [pred[i] for i in idx]))
        )
    return EmotionScores(
        n=len(gold),
        not_reported=missing,
        mae=float(mean_absolute_error(gold, pred)),
        spearman=rho,
        spearman_p=p_value,
        per_person=per_person,
    )


def viewpoint_items(pairs: Scored) -> tuple[list[ViewpointItem], int]:
    """(items, gold views about non-members): checkpoints with member-target gold, before any judging."""
    items: list[ViewpointItem] = []
    excluded = 0
    for sample, cp in _ok(pairs):
        gold, left_out = gold_viewpoints(sample, cp.row)
        excluded += left_out
        if not gold:
            continue
        predicted: list[tuple[str, str, str]] = []
        for v in cp.state.viewpoints:  # type: ignore[union-attr]
            if v.source == cp.speaker and (v.source, v.target) not in {(a, b) for a, b, _ in predicted}:
                predicted.append((v.source, v.target, v.viewpoint))
        gold_pairs = list(dict.fromkeys((a, b) for a, b, _ in gold))
        found = sum(p in {(a, b) for a, b, _ in predicted} for p in gold_pairs)
        items.append(
            ViewpointItem(
                sample_id=sample.sample_id, row=cp.row, speaker=cp.speaker, gold=gold, predicted=predicted,
                pairs_found=found,
            )
        )  # fmt: skip
    return items, excluded


def viewpoint_scores(items: Sequence[ViewpointItem], excluded: int, judge_model: str | None = None) -> ViewpointScores:
    """Pairing over every item; judge scores over items judged (no speaker view = 0, 0 as in VP; failed left out)."""
    from judges.bench.metrics import vp_metrics

    gold_pairs = sum(len(dict.fromkeys((a, b) for a, b, _ in i.gold)) for i in items)
    found = sum(i.pairs_found for i in items)
    judged = [i for i in items if i.judge_failure is None and (i.judge_viewpoint is not None or not i.predicted)]
    vp = (
        vp_metrics([None if not i.predicted else (i.judge_source_target, i.judge_viewpoint) for i in judged])  # type: ignore[misc]
        if judged and judge_model
        else None
    )
    return ViewpointScores(
        items=len(items),
        gold_pairs=Count(k=found, n=gold_pairs),
        excluded_targets=excluded,
        no_speaker_view=sum(not i.predicted for i in items),
        judged=len(judged) if vp else 0,
        judge_failed=sum(i.judge_failure is not None for i in items),
        source_target=vp.source_target if vp else None,
        viewpoint=vp.viewpoint if vp else None,
        vp_score=vp.vp_score if vp else None,
        judge_model=judge_model if vp else None,
    )


def risk_scores(pairs: Scored) -> RiskScores:
    ok = _ok(pairs)
    flagged = [cp for _, cp in ok if cp.state.at_risk]  # type: ignore[union-attr]
    out = RiskScores(
        gold_marked=any(marks_risk(s) for s, _ in ok),
        checkpoints=len(ok),
        flagged_checkpoints=len(flagged),
        flags=sum(len(cp.state.at_risk) for cp in flagged),  # type: ignore[union-attr]
    )
    for sample, cp in ok:
        if not marks_risk(sample):
            continue
        gold, said = gold_risk(sample, cp.row), set(cp.state.at_risk)  # type: ignore[union-attr]
        for m in sample.members:
            out.scored_pairs += 1
            if m in gold and m in said:
                out.tp += 1
            elif m in said:
                out.fp += 1
            elif m in gold:
                out.fn += 1
            else:
                out.tn += 1
    return out


def series_jitter(series: Iterable[Sequence[tuple[int, float]]]) -> SeriesJitter:
    """Pooled mean absolute change per turn over several (turn, value) series, each sorted by turn."""
    pairs = steps = turns = 0
    total = 0.0
    for obs in series:
        if len(obs) < 2:
            continue
        pairs += 1
        for (t0, v0), (t1, v1) in pairwise(obs):
            steps += 1
            turns += t1 - t0
            total += abs(v1 - v0)
    return SeriesJitter(
        pairs=pairs,
        steps=steps,
        turns=turns,
        total_change=round(total, 6),
        per_turn=total / turns if turns else None,
        per_step=total / steps if steps else None,
    )


def tracker_series(pairs: Scored) -> tuple[dict[tuple, list], dict[tuple, list]]:
    """(warmth, tension): (sample, source, target) -> [(row, value)] from the tracker's views, first per call."""
    warmth: dict[tuple, list] = {}
    tension: dict[tuple, list] = {}
    for sample, cp in _ok(pairs):
        seen: set[tuple[str, str]] = set()
        for v in cp.state.viewpoints:  # type: ignore[union-attr]
            if (v.source, v.target) in seen or v.source == v.target:
                continue
            seen.add((v.source, v.target))
            key = (sample.sample_id, v.source, v.target)
            warmth.setdefault(key, []).append((cp.row, float(v.warmth)))
            tension.setdefault(key, []).append((cp.row, float(v.tension)))
    return warmth, tension


def gold_series(samples: Iterable[RescueSample]) -> tuple[dict[tuple, list], dict[tuple, list]]:
    """(warmth, tension) from annotated attitudes between members (lexicon), first entry per pair and row."""
    warmth: dict[tuple, list] = {}
    tension: dict[tuple, list] = {}
    for sample in samples:
        members = sample.members
        for pos, row in enumerate(sample.rows, start=1):
            seen: set[tuple[str, str]] = set()
            for v in row.viewpoints:
                s, t = v.source.strip(), v.target.strip()
                if s == t or s not in members or t not in members or not v.attitude.strip() or (s, t) in seen:
                    continue
                seen.add((s, t))
                w, x = warmth_tension(v.attitude)
                warmth.setdefault((sample.sample_id, s, t), []).append((pos, w))
                tension.setdefault((sample.sample_id, s, t), []).append((pos, x))
    return warmth, tension


def jitter_scores(pairs: Scored, samples: Iterable[RescueSample]) -> JitterScores:
    tw, tt = tracker_series(pairs)
    gw, gt = gold_series(samples)
    return JitterScores(
        tracker_warmth=series_jitter(tw.values()),
        gold_warmth=series_jitter(gw.values()),
        tracker_tension=series_jitter(tt.values()),
        gold_tension=series_jitter(gt.values()),
    )
