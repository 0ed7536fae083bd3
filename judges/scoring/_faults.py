"""Is a session faulted, and why: the one predicate every supporter score uses to leave out sessions in which the
simulated room malfunctioned, so a supporter is never credited or blamed for the family's malfunction.

A session is faulted when its record shows simulator faults (those it carries, e.g. `stressor_not_said` from the
delivery check, plus what `simulator.faults.detect_faults` finds in it now, so records saved before detection
existed are judged alike) OR the judges flagged it `simulator_failure` (a persona-fidelity scale at or below its
`fail_at`). Leaderboard, compare, stress pass rates and pass^k, the HTML report, the rating export and the
fidelity command all call `faulted` and count what they left out with `FaultTally`.
"""

from __future__ import annotations

from pydantic import Field

from judges.scoring._records import SessionJudgment
from personas.common.records import Record
from simulator.faults import detect_faults, merge_faults
from simulator.records import SessionRecord, SimulatorFault

JUDGES_FLAG = "simulator_failure"  # the kind under which the judges' persona-fidelity flag is counted


class FaultedSession(Record):
    """One session left out of supporter scores (or put back), with why."""

    session_id: str = Field(description="The session.")
    supporter: str = Field(description="Supporter spec of the session.")
    member_model: str = Field(description="Model that played the members (`models.member`), `-` when not recorded.")
    kinds: list[str] = Field(
        description="Fault kinds (simulator.records.FaultKind), and `simulator_failure` for the judges' flag."
    )
    reasons: list[str] = Field(description="One line per fault: kind, turn, member, what went wrong and the quote.")


class FaultTally(Record):
    """Faulted sessions of one set (a supporter's row, a comparison, a perturbation cell), per member model."""

    included: bool = Field(default=False, description="True when they were put back (--include-simulator-faults).")
    faulted: int = Field(default=0, description="Faulted sessions.")
    by_member_model: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="Member model -> fault kind -> faulted sessions showing it."
    )
    sessions: list[FaultedSession] = Field(default_factory=list, description="Every faulted session, in read order.")

    def add(self, fault: FaultedSession) -> None:
        self.faulted += 1
        kinds = self.by_member_model.setdefault(fault.member_model, {})
        for k in fault.kinds:
            kinds[k] = kinds.get(k, 0) + 1
        self.sessions.append(fault)

    def summary(self) -> str:
        """`3 left out (member model m: out_of_role 2, simulator_failure 1)`, or `none`."""
        if not self.faulted:
            return "none"
        verb = "put back" if self.included else "left out"
        models = "; ".join(
            f"{m}: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))
            for m, kinds in sorted(self.by_member_model.items())
        )
        return f"{self.faulted} {verb} ({models})"


def record_faults(record: SessionRecord) -> list[SimulatorFault]:
    """The faults the record carries plus those detection finds in it now, deduplicated."""
    return merge_faults(record.simulator_faults, detect_faults(record))


def _reason(f: SimulatorFault) -> str:
    where = ", ".join(x for x in (f"turn {f.turn}" if f.turn is not None else "", f.member or "") if x)
    quote = f' "{f.quote}"' if f.quote else ""
    return f"{f.kind.value} ({where}): {f.detail}{quote}" if where else f"{f.kind.value}: {f.detail}{quote}"


def faulted(record: SessionRecord, judgment: SessionJudgment | None) -> FaultedSession | None:
    """Why this session is faulted (record faults or the judges' simulator_failure flag), or None when it is not."""
    faults = record_faults(record)
    kinds = [f.kind.value for f in faults]
    reasons = [_reason(f) for f in faults]
    if judgment is not None and judgment.simulator_failure:
        kinds.append(JUDGES_FLAG)
        reasons.append(f"{JUDGES_FLAG} (judges): {judgment.simulator_failure_reason or 'a simulator scale at fail_at'}")
    if not kinds:
        return None
    return FaultedSession(
        session_id=record.session_id,
        supporter=record.supporter,
        member_model=record.models.get("member") or "-",
        kinds=list(dict.fromkeys(kinds)),
        reasons=reasons,
    )
