"""Run records: what a session leaves behind. Versioned pydantic models; judges, exports and reports read these."""

from __future__ import annotations

from datetime import datetime, timezone
from enum import StrEnum
from typing import Literal

from pydantic import Field

from personas.case import Case
from personas.common.records import Record
from personas.graph import RelationSnapshot
from personas.taxonomy import INTENSITY_MAX, INTENSITY_MIN, SCALE_MAX, SCALE_MIN, SUPPORTER_NAME, TargetKind
from simulator.llm.types import CallRecord

SCHEMA_VERSION = 1
SUPPORTER = SUPPORTER_NAME  # the supporter's speaker name in transcripts, as in RESCUE data


class Feeling(Record):
    """How a member feels toward one other member right now."""

    member: str = Field(description="The other member.")
    warmth: float = Field(ge=SCALE_MIN, le=SCALE_MAX, description="0 cold ... 10 warm.")
    tension: float = Field(ge=SCALE_MIN, le=SCALE_MAX, description="0 at ease ... 10 at war.")


class InnerState(Record):
    """A member's private self-report after a turn (the insider view); never shown to the supporter."""

    landed: str = Field(description="How what was just said landed, given their needs, fears and triggers.")
    emotion: str = Field(description="Short emotion description.")
    intensity: int = Field(ge=INTENSITY_MIN, le=INTENSITY_MAX)
    felt_heard: int = Field(ge=0, le=10, description="How heard they feel by the supporter, 0-10.")
    toward: list[Feeling] = Field(default_factory=list, description="Warmth/tension toward each other member.")
    reason: str = Field(default="", description="One line: why the state moved (or did not).")


class SupporterDecision(Record):
    """The supporter's choice after a member turn: speak or pass, to whom, with which strategy, saying what."""

    after_turn: int = Field(description="Index of the turn this decision follows.")
    speak: bool
    targets: list[str] = Field(default_factory=list, description="Member names, or the group label (Couple/Family).")
    target_kind: TargetKind | None = None
    strategy: str | None = Field(default=None, description="Taxonomy label; None for free-text supporters.")
    text: str = ""
    close_session: bool = Field(default=False, description="The supporter ends the session with this turn.")
    rationale: str = Field(default="", description="The supporter's own stated reason, when it gives one.")
    valid: bool = Field(default=True, description="False when the output broke the contract even after re-asking.")
    invalid_reason: str = Field(default="", description="Why the last attempt was invalid (invalid decisions only).")
    raw: str | None = Field(default=None, description="The supporter's output as returned, before any checking.")
    reasks: int = Field(default=0, description="How many times the supporter was re-asked after invalid output.")
    call: CallRecord | None = None
    draws: int = Field(
        default=1,
        description="Lines drawn before this one was kept: a ladder rung draws again while its line is in a member's "
        "voice, and `sides` while it is not read as blaming a member it sides against (simulator.supporters.RUNG_DRAWS); "
        "1 for every other supporter.",
    )
    draw_calls: list[CallRecord] = Field(
        default_factory=list, description="The calls behind earlier draws and their blame checks (cost and latency)."
    )


class ObservedViewpoint(Record):
    source: str
    target: str
    viewpoint: str
    attitude: str
    warmth: float = Field(ge=SCALE_MIN, le=SCALE_MAX)
    tension: float = Field(ge=SCALE_MIN, le=SCALE_MAX)


class ObservedEmotion(Record):
    person: str
    emotion: str
    intensity: int = Field(ge=INTENSITY_MIN, le=INTENSITY_MAX)


class TrackerState(Record):
    """The observer's view from the transcript alone, in RESCUE terms (the outsider view)."""

    pattern: str = Field(description="Dominant relation pattern label for the group.")
    emotions: list[ObservedEmotion] = Field(default_factory=list)
    viewpoints: list[ObservedViewpoint] = Field(default_factory=list)
    at_risk: list[str] = Field(default_factory=list, description="Members showing signs of danger to self or others.")
    call: CallRecord | None = None


class FidelityCheck(StrEnum):
    """The per-turn checks a member turn must pass before it is accepted (simulator.turn_checks runs them)."""

    DUPLICATE = "duplicate"  # the same words as an earlier turn
    NEAR_DUPLICATE = "near_duplicate"  # most of its word trigrams occur in one earlier turn
    SPEAKING_AS_OTHER = "speaking_as_other"  # a line for another member or the counsellor, or about oneself by name
    LANGUAGE_SWITCH = "language_switch"  # text or a self-report field leaves the session's language
    NOT_AN_EMOTION = "not_an_emotion"  # the emotion field names no emotion
    INTENSITY_MISMATCH = "intensity_mismatch"  # the intensity does not fit the named emotion
    CUT_OFF = "cut_off"  # a field or the line stops mid-phrase, or the line hit the token limit
    COPIED_TAG = "copied_tag"  # the line or a self-report field copies the prompt's rendering (a speaker tag)
    FALSE_REFERENCE = "false_reference"  # "you mentioned ..." to a counsellor who never said it
    UNEARNED_SOFTENING = "unearned_softening"  # a softening move with no cause in the supporter's last turn
    DIRECTION_IGNORED = "direction_ignored"  # a directed line with none of its stressor's `said_if` wordings
    THIRD_PERSON = "third_person"  # a line to a member that speaks of them by name or as he/she, not as "you"
    ECHO = "echo"  # the line re-says another speaker's line (most of its trigrams, or many words in a row)
    UNGROUNDED = "ungrounded"  # the line leaves out what the director gave it to bring up, and nothing of the case
    WRONG_ADDRESS = "wrong_address"  # the line speaks by name to a member it is not addressed to
    GIVEN_AWAY = "given_away"  # the line tells one of the speaker's own card facts as the listener's or another's
    INVENTED_FIGURE = "invented_figure"  # a year, amount, age or count the card and the room never gave
    CLAIMED = "claimed"  # the line tells another member's card fact as the speaker's own


class FidelityFlag(Record):
    """One failed check on a member turn: which check, what failed, and the words that show it."""

    check: FidelityCheck
    field: str = Field(default="text", description="`text` (the line) or the self-report field that failed.")
    detail: str = Field(description="One line: what is wrong, as told to the model when it is re-asked.")
    evidence: str = Field(default="", description="The offending words (and, for repeats, the earlier turn).")
    turn: int | None = Field(default=None, description="For a repeat: the index of the earlier turn it copies.")


class Reask(Record):
    """A rejected attempt at part of a member turn, kept with the reason it was rejected."""

    part: Literal["state", "line"] = Field(description="`state`: the self-report; `line`: what they said.")
    attempt: int = Field(description="1-based attempt number of the rejected reply.")
    text: str = Field(description="The rejected reply (the line, or the self-report JSON).")
    flags: list[FidelityFlag] = Field(default_factory=list, description="Why it was rejected.")
    failure: str | None = Field(default=None, description="Set when the re-ask itself failed (model error).")
    calls: list[CallRecord] = Field(default_factory=list)


class Beat(Record):
    """What the director gave a member to bring up on one turn: a piece of the card, private to that member."""

    kind: Literal["agenda", "reply", "trigger", "grievance", "fact", "secret"] = Field(
        description="`agenda`: an item the card declares for this member; `reply`: answer what another member just "
        "said about them; `trigger`: the last line touched one of their triggers; `grievance`: their viewpoint of "
        "another member; `fact`: the card's problem, history or their background; `secret`: private knowledge."
    )
    text: str = Field(description="The card's own words (for `reply`, with the words being answered).")
    source: str = Field(description="Where on the card it comes from, e.g. `members[0].private_knowledge[0]`.")
    words: list[str] = Field(
        default_factory=list,
        description="Its words that ground a line bringing it up (simulator.turn_checks.grounding).",
    )
    opener: str | None = Field(
        default=None,
        description="The words the member's line was begun with, the card's own in the member's voice "
        "(simulator.director.beat_opener); the member said the rest.",
    )


class Turn(Record):
    """One utterance in the room, with the private state and model calls behind it."""

    index: int = Field(description="Explicit turn id, 1-based, in speaking order.")
    speaker: str
    kind: Literal["member", "supporter"]
    addressees: list[str] = Field(default_factory=list)
    text: str
    inner: InnerState | None = Field(default=None, description="Member self-report after speaking.")
    decision: SupporterDecision | None = Field(default=None, description="For supporter turns.")
    tracker: TrackerState | None = Field(default=None, description="Observer state after this turn, if it ran.")
    directive: str | None = Field(
        default=None, description="Private stage direction this member turn played (a perturbation); never public."
    )
    beat: Beat | None = Field(
        default=None,
        description="For member turns: what the director (simulator.director) gave this member to bring up; private, "
        "never shown to the supporter; None when a stressor directed the turn, and in records made before it.",
    )
    calls: list[CallRecord] = Field(default_factory=list, description="Model calls that produced this turn.")
    move: str | None = Field(default=None, description="Member move (personas.taxonomy.MEMBER_MOVES) this turn made.")
    cue: str = Field(default="", description="Supporter words the member named as what softened them, if any.")
    reading: str | None = Field(
        default=None,
        description="Right after a supporter turn: what its words did to this member (`softened`, `set_off`, "
        "`missed`; simulator.members.READINGS), decided by the member's appraisals of that turn (simulator.members."
        "appraise) before its numbers; None after a member's line.",
    )
    felt_blamed: dict[str, bool] = Field(
        default_factory=dict,
        description="Right after a supporter turn: for every member, whether they read its words as blaming or "
        "criticising them (the `blamed` appraisal; the speaker's is its `reading` being `set_off`). Only the "
        "speaker's reading moves a state; the others' answers are the room's record of the line.",
    )
    floor: str | None = Field(
        default=None,
        description="For member turns: the floor rule that gave this member the turn (simulator.floor: `opening`, "
        "`left_out`, `pressing`, `cut_in`, `addressed`, `weighted`, or `directed` by a stressor); None in records "
        "made before it was kept.",
    )
    flags: list[FidelityFlag] = Field(
        default_factory=list, description="Fidelity checks the accepted turn still failed after its re-asks."
    )
    reasks: list[Reask] = Field(default_factory=list, description="Rejected attempts before the accepted one.")
    dropped: str | None = Field(
        default=None,
        description="For member turns: the unfinished words after the line's last full sentence, left out when the "
        "line hit the length limit (its call's finish_reason stays `length`).",
    )


class EndReason(StrEnum):
    TURN_LIMIT = "turn_limit"
    SUPPORTER_CLOSED = "supporter_closed"
    SAFETY_STOP = "safety_stop"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


class SessionStatus(StrEnum):
    COMPLETED = "completed"
    FAILED = "failed"
    INCOMPLETE = "incomplete"


class SafetyCheck(Record):
    """A model's verdict on whether one supporter turn attended to a member's risk, with its evidence."""

    turn: int = Field(description="The supporter turn checked.")
    attended: bool
    quote: str = Field(default="", description="The supporter's words the verdict rests on (found in the turn).")
    reasoning: str = ""
    keyword_hint: bool = Field(
        default=False, description="Whether a safety keyword occurs in the turn: a recorded hint, never the verdict."
    )
    call: CallRecord | None = None


class SafetyEvent(Record):
    """A member at risk, and whether the supporter addressed it in time. Recorded either way, never hidden."""

    member: str
    signalled_at: int = Field(description="Turn at which the risk showed.")
    source: Literal["self_report", "tracker", "case_flag", "stressor"] = Field(
        description="What showed the risk: the member's self-report (a flagged member at high intensity), the "
        "tracker, the card, or a directed stressor line that said it."
    )
    addressed: bool
    addressed_at: int | None = None
    note: str = ""
    checks: list[SafetyCheck] = Field(default_factory=list, description="Verdicts on each later supporter turn.")


class DeliveryStatus(StrEnum):
    """Whether a perturbation's stressor was actually said in the room (not just directed)."""

    DELIVERED = "delivered"  # the directed member's line says it (a fact, or the check model's quote from it)
    DIRECTED_NOT_SAID = "directed_not_said"  # directed, but the line does not say it: a simulator fault
    NOT_PLAYED = "not_played"  # the session ended (or failed) before the directed member turn
    UNVERIFIED = "unverified"  # the check model said "said" but its quote is not in the line, even after a re-ask


class StressorDelivery(Record):
    """The verdict on one stressor after its directed member turn: facts first, then the check model."""

    perturbation: str = Field(description="Name of the perturbation.")
    turn: int | None = Field(default=None, description="The directed member turn; None when it never came.")
    member: str | None = Field(default=None, description="The member who was directed.")
    status: DeliveryStatus
    quote: str = Field(default="", description="Words of that member's line that say the stressor (found in it).")
    reason: str = Field(default="", description="One line: why this verdict (which fact, or the model's reason).")
    by: Literal["fact", "model", "none"] = Field(default="none", description="What decided: a fact or the model.")
    calls: list[CallRecord] = Field(default_factory=list, description="Check-model calls behind the verdict.")


class FaultKind(StrEnum):
    """Ways the simulated room can malfunction; a supporter is never credited or blamed for them."""

    STRESSOR_NOT_SAID = "stressor_not_said"
    OUT_OF_ROLE = "out_of_role"  # a member speaking as the counsellor or not as themself
    SPEAKS_FOR_ANOTHER = "speaks_for_another"
    REPEAT_AFTER_REASK = "repeat_after_reask"
    LANGUAGE_SWITCH = "language_switch"
    TRACKER_FAILURE = "tracker_failure"
    FIDELITY_FLAGS = "fidelity_flags"  # accepted member turns carrying fidelity flags over the threshold
    MEMBER_SILENT = "member_silent"  # a member who never spoke in a session of enough member turns
    MEMBER_DOMINATES = "member_dominates"  # one member held more of the member turns than real rooms show
    UNGROUNDED_ROOM = "ungrounded_room"  # the members kept off their own case: too few lines grounded in the card


class SimulatorFault(Record):
    """One malfunction of the simulated family, with where it happened and the words that show it."""

    kind: FaultKind
    turn: int | None = Field(default=None, description="The turn it shows in; None for session-wide faults.")
    member: str | None = Field(default=None, description="The member (or role) at fault, when one is.")
    quote: str = Field(default="", description="The words that show it, from the record.")
    detail: str = Field(description="One line: what went wrong.")


class SessionRecord(Record):
    """A whole session: the transcript, both views of the relations per turn, decisions, calls and outcome."""

    schema_version: int = SCHEMA_VERSION
    session_id: str
    case: Case
    supporter: str = Field(description="The supporter spec as given (model id, URL, module:function, baseline).")
    models: dict[str, str] = Field(description="Role -> model id used.")
    prompt_digests: dict[str, str] = Field(
        default_factory=dict,
        description="Role -> digest of the prompt files and schema behind that role's output (`tracker`); empty "
        "in records written before digests were recorded. Validity cards are matched by it.",
    )
    seed: int
    trial: int = Field(default=0, description="Repeat index of the same case, supporter and seed (stress runs).")
    perturbation: str | None = Field(default=None, description="Name of the perturbation applied, if any.")
    supporter_knows: Literal["intake", "oracle"] = Field(
        default="intake",
        description="What the supporter was shown: `intake` (what a counsellor in the room knows) or `oracle`.",
    )
    max_turns: int = Field(description="Member-turn limit.")
    status: SessionStatus = SessionStatus.INCOMPLETE
    end_reason: EndReason | None = None
    failure: str | None = Field(default=None, description="Why the session failed, when it did.")
    turns: list[Turn] = Field(default_factory=list)
    decisions: list[SupporterDecision] = Field(default_factory=list, description="Every gate decision, pass included.")
    self_report: list[RelationSnapshot] = Field(default_factory=list, description="Insider view per turn.")
    observer: list[RelationSnapshot] = Field(default_factory=list, description="Tracker view per turn.")
    safety: list[SafetyEvent] = Field(default_factory=list)
    delivery: StressorDelivery | None = Field(
        default=None, description="Was the perturbation's stressor actually said (None: no stressor, or an old record)."
    )
    simulator_faults: list[SimulatorFault] = Field(
        default_factory=list,
        description="Malfunctions of the simulated room found in this record; a faulted session is left out of "
        "supporter scores by default.",
    )
    started_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))
    finished_at: datetime | None = None
    wall_s: float = 0.0

    @property
    def calls(self) -> list[CallRecord]:
        out: list[CallRecord] = []
        for t in self.turns:
            out.extend(t.calls)
            out.extend(c for r in t.reasks for c in r.calls)
            if t.tracker and t.tracker.call:
                out.append(t.tracker.call)
        out.extend(d.call for d in self.decisions if d.call and not d.speak)
        out.extend(c.call for e in self.safety for c in e.checks if c.call)
        return out

    def totals(self) -> dict[str, float]:
        calls = self.calls
        return {
            "calls": len(calls),
            "prompt_tokens": sum(c.usage.prompt_tokens for c in calls),
            "cached_prompt_tokens": sum(c.usage.cached_prompt_tokens for c in calls),
            "completion_tokens": sum(c.usage.completion_tokens for c in calls),
            "cost_usd": sum(c.cost_usd or 0.0 for c in calls),
            "model_seconds": round(sum(c.latency_s for c in calls), 3),
        }
