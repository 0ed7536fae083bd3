"""Judgment records: versioned pydantic models, one file per session (`judgments/<session_id>.json`).

A judgment keeps every judge's verdict (scores with evidence and reasoning, calls, failures with reasons), the
panel aggregate per scored item, agreement statistics, the simulator-failure flag and the trajectory metrics.
Nothing is filled in for a failed judge: its verdict says `failed` and why.
"""

from __future__ import annotations

from datetime import datetime, timezone
from enum import StrEnum
from typing import Any, Literal

from pydantic import Field, model_validator

from judges.scoring._rubric import Kind, Level, Rubric
from judges.scoring._trajectory import TrajectoryMetrics
from personas.common.records import Record
from simulator.llm.types import CallRecord

JUDGMENT_SCHEMA_VERSION = 3
# 3: checklist judgments (`judge_mode`; a score's `value` and per-item `answers`); older ones read as verdicts.
# 2: a copied line lists its sources (splices); 1 named one copied turn.


class JudgmentStatus(StrEnum):
    OK = "ok"
    PARTIAL = "partial"  # some judges, or some of a judge's calls, failed; the rest is valid
    FAILED = "failed"  # no judge produced anything


class Evidence(Record):
    """A piece of evidence a judge cites: a transcript turn and a short quote from it."""

    turn: int = Field(description="Transcript turn index (1-based, as in the session record).")
    quote: str = Field(description="Short quote the judge gave.")
    quote_found: bool = Field(description="The quote occurs in that turn's text (case and spacing ignored).")
    in_scope: bool = Field(
        default=True,
        description="The turn is one the scored item may rest on: a member's own turns for a member dimension, "
        "the intervention's window (the turns since the counsellor last spoke, and the turn itself) for an "
        "intervention dimension, any turn for a session dimension. True in judgments written before it was checked.",
    )


class AnchorReading(Record):
    """What an anchored item's P(yes) was made of (rubric `anchors:`): the judge's own reading of the turn's line
    and of the two known lines read in its place."""

    raw: float = Field(description="P(yes) of the turn's line as the judge read it, before calibration.")
    no: float = Field(description="P(yes) of the anchor line whose answer is no, read in the turn's place.")
    yes: float = Field(description="P(yes) of the anchor line whose answer is yes, read in the turn's place.")


class ItemAnswer(Record):
    """A checklist judge's answer to one instantiated yes/no item: the evidence a checklist score rests on."""

    item: str = Field(description="Checklist item id (rubric).")
    question: str = Field(description="The question as asked (placeholders filled in).")
    turn: int | None = Field(default=None, description="The supporter turn it asks about; None: the whole session.")
    member: str | None = Field(default=None, description="The member it names, if any.")
    other: str | None = Field(default=None, description="The second member of a comparison (asked in both orders).")
    strategy: str | None = Field(default=None, description="The strategy it names, for strategy items.")
    direction: Literal["yes_good", "yes_bad"] = Field(description="Whether a yes raises or lowers a scale.")
    weight: float = Field(description="The item's weight.")
    supports: str | None = Field(default=None, description="Labels: the label a yes speaks for (rubric).")
    p_yes: float = Field(description="P(yes) / (P(yes) + P(no)); the mean of both orders for comparisons.")
    method: Literal["logprobs", "samples", "rule"] = Field(
        description="How p_yes was read: `logprobs` or `samples` from the judge model (see simulator.llm); `rule`, "
        "answered by the item's rule (judges/scoring/_rules.py), 1.0 or 0.0, no model call."
    )
    k: int = Field(default=1, description="Answers sampled per order (`samples`); 1 for `logprobs` and `rule`.")
    anchored: AnchorReading | None = Field(
        default=None,
        description="Anchored items: the readings `p_yes` was calibrated from (it is where `raw` sits between "
        "`no` and `yes`, which read 0.1 and 0.9); None: `p_yes` is the judge's reading as it is.",
    )


class DimensionScore(Record):
    """One judge's verdict on one dimension for one item; evidence and reasoning come before the score."""

    item: str = Field(description="What is scored: `t<turn>` (an intervention), `session`, or `member:<name>`.")
    dimension: str = Field(description="Rubric dimension id.")
    level: Level = Field(description="`intervention`, `session` or `member`.")
    turn: int | None = Field(default=None, description="Intervention turn index, for intervention-level items.")
    member: str | None = Field(default=None, description="Member name, for member-level items.")
    evidence: list[Evidence] = Field(description="Turns and quotes the verdict rests on.")
    reasoning: str = Field(description="The judge's reason, given before the score.")
    score: int | None = Field(default=None, description="Scale dimensions: the score, within the rubric's bounds.")
    label: str | None = Field(default=None, description="Label and taxonomy dimensions: the judge's label.")
    strength: int | None = Field(default=None, description="Labels with a strength scale: the strength.")
    supporter_label: str | None = Field(
        default=None, description="Taxonomy dimensions: the strategy the supporter stated for its turn, if any."
    )
    supporter_label_ok: bool | None = Field(
        default=None, description="Taxonomy dimensions: the judge's check of the supporter's stated strategy."
    )
    capped_from: int | None = Field(
        default=None,
        description="The judge's own score when a copied or repeated line capped it (`score` holds the cap, the "
        "rubric's `copy_cap` or `repeat_cap`); None when no cap applied.",
    )
    value: float | None = Field(
        default=None,
        description="Checklist judgments: scales, the unrounded score on the scale (`score` is it rounded, capped "
        "like it); labels, the probability behind the label. None for verdicts.",
    )
    answers: list[ItemAnswer] = Field(
        default_factory=list, description="Checklist judgments: the item answers the score was computed from."
    )


class JudgeFailure(Record):
    """A judge call that gave no valid output after its attempts; nothing was scored for its items."""

    unit: str = Field(
        description="`session` (one call for everything), `t<turn>` or `session+members`; for unsupported "
        "scores `<item>/<dimension>`."
    )
    reason: str = Field(description="Why, as the model client reported it (parse error, provider error...).")
    unsupported: bool = Field(
        default=False,
        description="The judge answered, but its evidence for this item was not in the transcript, or came from "
        "turns that do not belong to the item (another member's, outside an intervention's window): not scored.",
    )


class CopySource(Record):
    """One earlier member turn that a copied supporter turn took words from."""

    turn: int = Field(description="The member turn the words were taken from.")
    member: str = Field(description="Who said them.")
    coverage: float = Field(
        description="Share of the supporter turn's words copied from this turn and not already credited to a "
        "source listed before it (the sources' coverages add up to the turn's)."
    )


class CopiedLine(Record):
    """A supporter turn made mostly of members' words: a fact measured from the record, not a judgment.

    Its words are matched against earlier member turns in verbatim runs of COPY_RUN_WORDS words or more (case and
    punctuation ignored); the turn is a copy when such runs, from one member turn or pieced together from several,
    cover at least COPY_MIN_COVERAGE of its words. A reflection that quotes a few of a member's words inside its
    own sentences stays under it."""

    turn: int = Field(description="The supporter turn that copies.")
    coverage: float = Field(description="Share of its words that are runs copied from earlier member turns.")
    sources: list[CopySource] = Field(
        min_length=1, description="The member turns copied from, the largest share first (several: a splice)."
    )
    quote: str = Field(description="The supporter turn's words (up to 200 characters), as the judges are shown.")

    @model_validator(mode="before")
    @classmethod
    def _from_v1(cls, data: Any) -> Any:
        """Judgment schema 1 named one copied member turn (`copies_turn`, `member`, `overlap`, and `share`: that
        line's words as a share of the supporter turn's), which reads as a copy with that one source."""
        if not isinstance(data, dict) or "copies_turn" not in data:
            return data
        old = dict(data)
        source = {"turn": old.pop("copies_turn"), "member": old.pop("member"), "coverage": old.pop("share")}
        old.pop("overlap", None)
        return {**old, "coverage": source["coverage"], "sources": [source]}


class RepeatedLine(Record):
    """A supporter turn that says again what the supporter itself said earlier: its own behaviour, never a fault
    of the simulated room. A fact measured from the record (judges.scoring._facts.repeated_lines)."""

    turn: int = Field(description="The supporter turn that repeats.")
    repeats_turn: int = Field(description="The supporter's own earlier turn it repeats (the one it shares most with).")
    coverage: float = Field(
        description="Share of its words that are verbatim runs of REPEAT_RUN_WORDS words or more from that turn."
    )
    quote: str = Field(description="The repeating turn's words (up to 200 characters), as the judges are shown.")


class VoicedLine(Record):
    """A supporter turn said in a member's voice, about the speaker's own hurt or life ("my father's absence is
    challenging for me"): not a counsellor's line. A fact measured from the record
    (judges.scoring._facts.voiced_lines, by `simulator.transcript.member_voice`)."""

    turn: int = Field(description="The supporter turn said as a member.")
    said: str = Field(description='The words that show it ("my", "I feel", "me").')
    quote: str = Field(description="The turn's words (up to 200 characters).")


class JudgeVerdict(Record):
    """Everything one judge model produced for one session."""

    judge: str = Field(description="Judge model id.")
    status: JudgmentStatus = Field(description="`ok`, `partial` (some calls failed) or `failed` (all did).")
    scores: list[DimensionScore] = Field(default_factory=list, description="Every valid score, all items.")
    failures: list[JudgeFailure] = Field(default_factory=list, description="Calls that failed, with reasons.")
    calls: list[CallRecord] = Field(default_factory=list, description="Accounting of the successful calls.")


class AggregateScore(Record):
    """The panel's verdict on one item and dimension: mean/median for scales, majority for labels."""

    item: str = Field(description="`t<turn>`, `session` or `member:<name>`.")
    dimension: str = Field(description="Rubric dimension id.")
    level: Level = Field(description="Dimension level.")
    kind: Kind = Field(description="Dimension kind.")
    turn: int | None = Field(default=None, description="Intervention turn index.")
    member: str | None = Field(default=None, description="Member name, for member-level items.")
    values: dict[str, int | str] = Field(description="Judge model id -> score or label.")
    n: int = Field(description="Judges that scored this item.")
    mean: float | None = Field(default=None, description="Scales: mean score.")
    median: float | None = Field(default=None, description="Scales: median score.")
    spread: int | None = Field(default=None, description="Scales (and strengths): max - min across judges.")
    majority: str | None = Field(default=None, description="Labels: the most frequent label; None on a tie.")
    tie: bool = Field(default=False, description="Labels: two or more labels share the top count.")
    counts: dict[str, int] = Field(default_factory=dict, description="Labels: label -> number of judges.")
    strength_mean: float | None = Field(default=None, description="Labels with strength: mean strength.")
    p_not_neutral: float | None = Field(
        default=None,
        description="Labels with a neutral, checklist judges: the mean probability that the label is not the neutral "
        "one (the strongest item's P(yes)); None for verdicts.",
    )
    supporter_label: str | None = Field(default=None, description="Taxonomy: the supporter's stated strategy.")
    agrees_with_supporter: bool | None = Field(
        default=None,
        description="Taxonomy: the majority label equals the supporter's stated one (None: none stated, or a tie).",
    )
    disagreement: bool = Field(default=False, description="Judges differ by 2 points or more (scale or strength).")


class PairKappa(Record):
    """Cohen's kappa between two judges on one dimension, over the items both scored."""

    judge_a: str = Field(description="First judge model id.")
    judge_b: str = Field(description="Second judge model id.")
    n: int = Field(description="Items both judges scored.")
    kappa: float | None = Field(description="Unweighted kappa; None when undefined (e.g. no variation at all).")
    weighted_kappa: float | None = Field(default=None, description="Scales: quadratic-weighted kappa.")


class DimensionAgreement(Record):
    """How far the panel agrees on one dimension in this session."""

    dimension: str = Field(description="Rubric dimension id.")
    metric: Literal["interval", "nominal"] = Field(description="Krippendorff level: interval (scales) or nominal.")
    n_items: int = Field(description="Items scored by at least two judges.")
    alpha: float | None = Field(
        description="Krippendorff's alpha; None when undefined (fewer than 2 judges, no variation)."
    )
    pairs: list[PairKappa] = Field(default_factory=list, description="Cohen's kappa for every pair of judges.")


class SessionJudgment(Record):
    """The judgment of one session by a panel of judge models. Written to `judgments/<session_id>.json`."""

    schema_version: int = Field(default=JUDGMENT_SCHEMA_VERSION, description="Version of this record's layout.")
    session_id: str = Field(description="The judged session (sessions/<session_id>.json).")
    case_id: str = Field(description="Case card id of the session.")
    group: str = Field(description="`couple` or `family`: whose strategy taxonomy applied.")
    supporter: str = Field(description="Supporter spec of the judged session.")
    rubric: Rubric = Field(description="The rubric used (active dimensions only).")
    rubric_digest: str = Field(description="Short hash of the rubric's dimensions.")
    prompt_digest: str | None = Field(
        default=None,
        description="Digest of the judge prompts and rubric (`judges.scoring._render.prompt_digest`); validity cards are "
        "matched by it. None in judgments written before it was recorded.",
    )
    mode: Literal["session", "per_intervention"] = Field(description="One call per session, or one per intervention.")
    judge_mode: Literal["verdict", "checklist"] = Field(
        default="verdict",
        description="`verdict`: structured verdicts with scores and quotes; `checklist`: scores computed from yes/no "
        "items' answer probabilities. Judgments before schema 3 are verdicts.",
    )
    judges: list[str] = Field(description="Judge model ids, in panel order.")
    status: JudgmentStatus = Field(description="`ok` (every judge ok), `failed` (every judge failed) or `partial`.")
    interventions: list[int] = Field(description="Turn indices of the supporter's interventions (speaking turns).")
    verdicts: list[JudgeVerdict] = Field(description="One per judge, failed ones included.")
    aggregates: list[AggregateScore] = Field(default_factory=list, description="Panel verdict per item and dimension.")
    agreement: list[DimensionAgreement] = Field(
        default_factory=list, description="Per dimension; empty with one judge."
    )
    flagged: list[str] = Field(
        default_factory=list, description="`<item>/<dimension>` where judges disagree by 2 points or more."
    )
    simulator_failure: bool = Field(
        description="A simulator check failed (e.g. persona fidelity <= fail_at): excluded from supporter aggregates."
    )
    simulator_failure_reason: str | None = Field(default=None, description="Which check failed, and its score.")
    trajectory: TrajectoryMetrics = Field(description="Model-free metrics of the session's relation trajectory.")
    copied_lines: list[CopiedLine] = Field(
        default_factory=list,
        description="Supporter turns made mostly of members' words (one line, or pieced from several): shown to "
        "the judges as a checked fact; they cap the scores of every dimension with a `copy_cap` (that turn's, and "
        "the session's).",
    )
    repeated_lines: list[RepeatedLine] = Field(
        default_factory=list,
        description="Supporter turns that repeat the supporter's own earlier line word for word or nearly: shown to "
        "the judges as a checked fact; they cap the scores of every dimension with a `repeat_cap` (that turn's, and "
        "the session's). Empty in judgments written before it was measured.",
    )
    voiced_lines: list[VoicedLine] = Field(
        default_factory=list,
        description='Supporter turns said in a member\'s voice ("I feel so alone", "my father"): they cap the '
        "scores of every dimension with a `voice_cap` (that turn's, and the session's). Empty in judgments written "
        "before it was measured.",
    )
    judged_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc), description="UTC time of judging.")
    trial: int = Field(
        default=0,
        ge=0,
        description="Repeat index: 0 is the ordinary judgment (`judgments/<session_id>.json`); `judge --repeat K` "
        "writes trials 1..K-1 to `judgments/trials/<session_id>/<trial>.json`, each a full SessionJudgment.",
    )
    temperature: float = Field(default=0.0, description="Sampling temperature the judges ran at.")

    def aggregate(self, item: str, dimension: str) -> AggregateScore | None:
        return next((a for a in self.aggregates if a.item == item and a.dimension == dimension), None)
