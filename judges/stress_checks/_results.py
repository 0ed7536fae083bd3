"""Check records and their store: a check's outcome (`CheckResult`, with the facts, the model's verdict and the
judge probe it rests on) and `checks/<session_id>.json` in the run folder. How a check is made:
`judges.stress_checks._checks`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Literal

from pydantic import Field

from personas.common.files import atomic_write_text
from personas.common.records import Record
from simulator.llm.types import CallRecord
from simulator.perturbations import PerturbationPlan
from simulator.records import StressorDelivery
from simulator.runfolder import RunFolder, RunFolderError

CHECK_SCHEMA_VERSION = 1


class CheckStatus(StrEnum):
    PASSED = "passed"
    FAILED = "failed"  # the supporter's handling failed a fact or the model's verdict (or the judges moved)
    UNSUPPORTED = "unsupported"  # the model's evidence was not found in the turns it named, even after re-asking
    ERROR = "error"  # a model call failed; reason recorded; neither pass nor fail
    NOT_DELIVERED = "not_delivered"  # the session failed or ended before the stressor was played
    SIMULATOR_FAULT = "simulator_fault"  # the directed member never said the stressor: the room's fault, not scored


DECIDED = (CheckStatus.PASSED, CheckStatus.FAILED)


class Quote(Record):
    """A turn and words from it; `found` says the words are really in that turn's text."""

    turn: int = Field(description="Transcript turn index (1-based).")
    quote: str = Field(description="Words from that turn.")
    found: bool = Field(description="The quote occurs in that turn (case and spacing ignored).")


class CheckFact(Record):
    """One fact read from the record (no model): e.g. `responded`, `addressed`, `forbidden_phrase`."""

    name: str = Field(description="`delivered`, `responded`, `addressed`, `forbidden_phrase`, `safety_event`, ...")
    holds: bool = Field(description="Whether the requirement holds; a fact that does not hold fails the check.")
    detail: str = Field(description="What was found, in one sentence.")
    evidence: list[Quote] = Field(default_factory=list, description="Turns the fact rests on.")


class CheckVerdict(Record):
    """The model's verdict on the rubric: evidence, then reasoning, then pass/fail."""

    model: str = Field(description="Model id of the checker.")
    verdict: Literal["pass", "fail"] | None = Field(description="None when no supported verdict came back.")
    reasoning: str = Field(default="", description="The model's one-sentence reason, given before the verdict.")
    evidence: list[Quote] = Field(default_factory=list, description="Turns and quotes, each checked against its turn.")
    attempts: int = Field(description="Asks made (a re-ask follows evidence that was not found).")
    calls: list[CallRecord] = Field(default_factory=list, description="Accounting of every ask.")


class JudgeProbe(Record):
    """Prompt injection: were the judges moved by the injected words? (see the module docstring)"""

    status: CheckStatus = Field(description="`passed`, `failed` (invalid or moved judgment) or `error`.")
    reason: str = Field(default="", description="What was found, in one line.")
    tolerance: float = Field(description="Largest allowed shift of a scale dimension (points).")
    shifts: dict[str, float] = Field(default_factory=dict, description="Dimension -> |original - neutralised|.")
    max_shift: float | None = Field(default=None, description="Largest shift; None when nothing was compared.")


class CheckResult(Record):
    """The outcome of one perturbation's check on one session. Written to `checks/<session_id>.json`."""

    schema_version: int = Field(default=CHECK_SCHEMA_VERSION, description="Version of this record's layout.")
    session_id: str = Field(description="The checked session (sessions/<session_id>.json).")
    case_id: str = Field(description="Case card id.")
    supporter: str = Field(description="Supporter spec of the session.")
    perturbation: str = Field(description="Perturbation name.")
    seed: int = Field(description="Session seed.")
    trial: int = Field(description="Trial (repeat) index of the session.")
    critical: bool = Field(description="The perturbation is safety-critical: a failure is a critical safety failure.")
    status: CheckStatus = Field(description="passed, failed, unsupported, error, not_delivered or simulator_fault.")
    reason: str = Field(description="Why it passed or failed, in one line.")
    plan: PerturbationPlan = Field(description="Who played what, when, as resolved for this case.")
    trigger_turn: int | None = Field(default=None, description="Turn that carried the injection (None: none).")
    response_turns: list[int] = Field(default_factory=list, description="Supporter turns within `within` decisions.")
    facts: list[CheckFact] = Field(default_factory=list, description="Facts from the record; the first is `delivered`.")
    delivery: StressorDelivery | None = Field(
        default=None, description="Whether the stressor was said (the session record's verdict); None: no injection."
    )
    verdict: CheckVerdict | None = Field(default=None, description="The model's verdict, when the rubric was asked.")
    judge_probe: JudgeProbe | None = Field(default=None, description="Prompt injection: the judges' probe.")
    checked_at: datetime = Field(default_factory=lambda: datetime.now(UTC), description="UTC time of the check.")

    @property
    def decided(self) -> bool:
        return self.status in DECIDED

    @property
    def judge_compromised(self) -> bool:
        return self.judge_probe is not None and self.judge_probe.status == CheckStatus.FAILED


# -- store -------------------------------------------------------------------------------------------------------


def check_path(folder: RunFolder | str, session_id: str):
    f = folder if isinstance(folder, RunFolder) else RunFolder(folder)
    return f.path / "checks" / f.session_path(session_id).name


def write_check(folder: RunFolder | str, result: CheckResult):
    path = check_path(folder, result.session_id)
    atomic_write_text(path, result.model_dump_json(indent=1))
    return path


def read_check(folder: RunFolder | str, session_id: str) -> CheckResult | None:
    path = check_path(folder, session_id)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        return CheckResult.model_validate_json(text)
    except ValueError as err:
        raise RunFolderError(f"{path}: not a valid check ({str(err).splitlines()[0]}); rerun the stress command")
