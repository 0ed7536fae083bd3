"""Replaying the relation-state tracker over RESCUE transcripts exactly as a session runs it.

A RESCUE sample becomes the engine's `Turn` list (one turn per row, 1-based, `Therapist` rows as supporter
turns, addressees as annotated without the speaker) and a case card (`case_from_sample`). Each turn is fed to the
session engine's own tracker node (`simulator.nodes.make_track_node`), so the prompt, the window, the cadence
(`tracker_every` member turns and the last member turn) and the seeds are the session's. Two differences, both
needed to measure rather than to run a session:

- the card's presenting problem is replaced by a neutral line, because the imported card summarises the
  sample's annotated viewpoints there, and the tracker would read the gold it is scored against;
- a failed tracker call ends a session; here it is recorded as a failed checkpoint (excluded from every metric
  and counted) and the replay goes on.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from personas.case import Case
from personas.common.records import Record
from personas.rescue import RescueSample, case_from_sample
from simulator.llm.types import ModelClient
from simulator.nodes import make_track_node
from simulator.records import SUPPORTER, TrackerState, Turn
from simulator.session_state import SessionConfig, initial_state
from simulator.transcript import DEFAULT_WINDOW

NEUTRAL_PROBLEM = "Not summarised here: the observer codes the recorded segment from the transcript alone."
MAX_SESSION_TURNS = 200  # SessionConfig's bound; longer transcripts keep the same cadence (see `replay_config`)


class ReplaySettings(Record):
    """How the tracker is run: the session defaults unless a user asks otherwise (recorded in the card)."""

    tracker_every: int = Field(default=3, ge=0, description="Tracker every N member turns and at the last one.")
    window: int = Field(default=DEFAULT_WINDOW, ge=2, description="Transcript turns shown to the tracker.")
    seed: int = Field(default=0, description="Session seed; each call's seed derives from it as in a session.")


class Checkpoint(Record):
    """One tracker call: after which row, what it inferred, or why it failed."""

    sample_id: str = Field(description="RESCUE sample id.")
    row: int = Field(description="1-based position of the member row the tracker ran after.")
    speaker: str = Field(description="Who spoke that row.")
    state: TrackerState | None = Field(default=None, description="The tracker's reply; None when the call failed.")
    failure: str | None = Field(default=None, description="Why the call failed (excluded from every metric).")


def tracker_case(sample: RescueSample) -> Case:
    """The sample's case card with a neutral presenting problem (the imported one quotes gold viewpoints)."""
    return case_from_sample(sample).model_copy(update={"presenting_problem": NEUTRAL_PROBLEM})


def rescue_turns(sample: RescueSample) -> list[Turn]:
    """The sample's rows as session turns: index = 1-based position, Therapist rows are supporter turns."""
    turns = []
    for pos, row in enumerate(sample.rows, start=1):
        speaker = row.primary_speaker.strip() or "?"
        addressees = [t.strip() for t in row.target if t and t.strip() and t.strip() != speaker]
        turns.append(
            Turn(
                index=pos,
                speaker=speaker,
                kind="supporter" if speaker == SUPPORTER else "member",
                addressees=list(dict.fromkeys(addressees)),
                text=row.text.strip(),
            )
        )
    return turns


def replay_config(turns: Sequence[Turn], settings: ReplaySettings) -> SessionConfig:
    """A session config whose last member turn is the transcript's last member row (so the final call fires)."""
    member_turns = sum(t.kind == "member" for t in turns)
    config = SessionConfig(
        max_turns=max(1, min(member_turns, MAX_SESSION_TURNS)),
        tracker_every=settings.tracker_every,
        window=settings.window,
        seed=settings.seed,
    )
    if member_turns > MAX_SESSION_TURNS:  # sessions stop at 200 member turns; a recorded one may run longer
        config = config.model_copy(update={"max_turns": member_turns})
    return config


def planned_checkpoints(sample: RescueSample, settings: ReplaySettings) -> list[int]:
    """Rows after which the tracker will run (the engine's rule, without calling a model)."""
    turns = rescue_turns(sample)
    config = replay_config(turns, settings)
    out, members = [], 0
    for t in turns:
        if t.kind != "member":
            continue
        members += 1
        if members >= config.max_turns or (config.tracker_every > 0 and members % config.tracker_every == 0):
            out.append(t.index)
    return out


async def replay_tracker(sample: RescueSample, client: ModelClient, settings: ReplaySettings) -> list[Checkpoint]:
    """Run the session's tracker node over the sample's turns, one turn at a time; one Checkpoint per call."""
    case = tracker_case(sample)
    turns = rescue_turns(sample)
    node = make_track_node(client, case, replay_config(turns, settings))
    observer = initial_state(case)["observer"]
    shown: list[Turn] = []
    out: list[Checkpoint] = []
    for turn in turns:
        shown.append(turn)
        update = await node({"turns": list(shown), "observer": observer})
        if update.get("failure"):
            out.append(
                Checkpoint(sample_id=sample.sample_id, row=turn.index, speaker=turn.speaker, failure=update["failure"])
            )
            continue
        observer = [*observer, *update.get("observer", [])][-2:]
        annotated = update.get("turns")
        if annotated and annotated[0].tracker is not None:
            shown[-1] = annotated[0]
            out.append(
                Checkpoint(sample_id=sample.sample_id, row=turn.index, speaker=turn.speaker, state=annotated[0].tracker)
            )
    return out
