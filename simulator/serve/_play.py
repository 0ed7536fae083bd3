"""Playing the counsellor in a browser: each room is one `human:<name>` session run by the same runner as
`rescue-sim play` (`run_sessions` with a `human_input` callback) into its own run folder under RUNS_DIR.

The browser sees only the frozen `SessionView` a model supporter is given (intake and public transcript; never
inner states, card secrets, risk flags or gold) and answers each pause with one move. A room whose tab is gone
(no move for `idle_s`, an explicit "leave", or the server stopping) is cancelled: the runner saves it atomically as
`incomplete` with end reason `interrupted`, never as a half-written file.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from personas.case import Case, load_case
from personas.library import library_paths
from personas.taxonomy import strategies_for
from simulator.llm.types import ModelClient
from simulator.records import SessionRecord
from simulator.runner.runs import RunConfig, RunEvents, run_sessions
from simulator.serve._runs import RunsRoot
from simulator.supporters import HUMAN, HumanSupporter
from simulator.view import SessionView, build_view

IDLE_S = 1800.0  # a room waiting this long for a move is taken as an abandoned tab


class PlayStart(BaseModel):
    """What the start form sends."""

    model_config = ConfigDict(extra="forbid")

    case: str = Field(min_length=1, max_length=200, description="Library case id.")
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,40}$", description="Recorded as supporter `human:<name>`.")
    turns: int = Field(default=6, ge=1, le=60, description="Member turns.")
    seed: int = Field(default=0, ge=0, le=1_000_000)


class PlayMove(BaseModel):
    """One counsellor move, as the browser sends it."""

    model_config = ConfigDict(extra="forbid")

    speak: bool
    text: str = Field(default="", max_length=4000)
    targets: list[str] = Field(default_factory=list, max_length=10)
    strategy: str | None = None
    close: bool = Field(default=False, description="Close the session after this line.")


class MoveRefused(Exception):
    """A move the room cannot take (not its turn, unknown target or strategy): one line for the browser."""


RoomStatus = Literal["starting", "running", "your_move", "finished", "abandoned", "failed"]


@dataclass
class Room:
    id: str
    case: Case
    supporter: str
    run_name: str
    status: RoomStatus = "starting"
    view: SessionView | None = None
    awaiting: dict[str, Any] | None = None
    outcome: str = ""
    version: int = 0
    task: asyncio.Task | None = None
    move: asyncio.Future | None = None
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def touch(self) -> None:
        self.version += 1
        self.changed.set()
        self.changed = asyncio.Event()

    def public(self) -> dict[str, Any]:
        """Everything the browser gets: the supporter's view, the pause it is asked to answer, the status."""
        return {
            "id": self.id,
            "version": self.version,
            "status": self.status,
            "supporter": self.supporter,
            "run": self.run_name,
            "outcome": self.outcome,
            "view": self.view.model_dump(mode="json") if self.view is not None else None,
            "awaiting": self.awaiting,
        }


def library_case(case_id: str) -> Case:
    """A case of the shipped library by id; a page cannot name a card file on the server."""
    known = {p.stem: p for p in library_paths()}
    if case_id not in known:
        raise MoveRefused(f"case {case_id!r}: not a library case id; known ids: {', '.join(known)}")
    return load_case(known[case_id])


def _view_of(record: SessionRecord, max_turns: int) -> SessionView:
    """The frozen intake view (whatever the record holds, a person in the browser is shown only this)."""
    return build_view(
        record.case,
        record.turns,
        member_turns=sum(t.kind == "member" for t in record.turns),
        max_turns=max_turns,
        knows="intake",
    )


class PlayRooms:
    """The rooms in progress in this server (several at once, one run folder each)."""

    def __init__(
        self, runs: RunsRoot, client_factory: Callable[[], ModelClient], *, idle_s: float = IDLE_S, tracker_every=3
    ):
        self.runs = runs
        self.client_factory = client_factory
        self.idle_s = idle_s
        self.tracker_every = tracker_every
        self.rooms: dict[str, Room] = {}
        self._client: ModelClient | None = None

    def get(self, room_id: str) -> Room:
        room = self.rooms.get(room_id)
        if room is None:
            raise KeyError(room_id)
        return room

    async def start(self, form: PlayStart) -> Room:
        case = library_case(form.case)
        if self._client is None:
            self._client = self.client_factory()
        client = self._client
        supporter = f"{HUMAN}:{form.name}"
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        room_id = secrets.token_hex(8)
        out = self.runs.root / f"play-{case.id}-{form.name}-{stamp}-{room_id[:6]}"
        room = Room(id=room_id, case=case, supporter=supporter, run_name=self.runs.name_of(out))
        config = RunConfig(
            cases=[case.id],
            supporter=supporter,
            models={r: client.model_for(r) for r in ("member", "tracker")},
            seeds=[form.seed],
            max_turns=form.turns,
            tracker_every=self.tracker_every,
            judge=False,
        )

        def update(record: SessionRecord) -> None:
            room.view = _view_of(record, form.turns)
            room.touch()

        async def human_input(payload: dict[str, Any], record: SessionRecord) -> dict[str, Any]:
            room.view = _view_of(record, form.turns)
            room.awaiting = {
                "after_turn": payload["after_turn"],
                "members": payload["members"],
                "group_label": payload["group_label"],
                "strategies": strategies_for(payload["group"]),
                "reask": payload.get("reask"),
            }
            room.status = "your_move"
            room.move = asyncio.get_running_loop().create_future()
            room.touch()
            done, _ = await asyncio.wait({room.move}, timeout=self.idle_s)
            if not done:
                room.outcome = f"no move for {self.idle_s:.0f} s: the tab was taken as closed"
                raise asyncio.CancelledError
            answer = room.move.result()
            room.move, room.awaiting, room.status = None, None, "running"
            room.touch()
            return answer

        async def drive() -> None:
            room.status = "running"
            room.touch()
            try:
                summary = await run_sessions(
                    config,
                    [case],
                    client,
                    HumanSupporter(spec=supporter),
                    out,
                    events=RunEvents(session_update=update),
                    human_input=human_input,
                )
            except asyncio.CancelledError:
                room.status = "abandoned"
                room.outcome = room.outcome or "left before the end"
                room.outcome += "; saved as incomplete (interrupted)"
                room.touch()
                raise
            except Exception as err:  # noqa: BLE001 - shown to the player as one line; the runner saved the record
                room.status, room.outcome = "failed", f"{type(err).__name__}: {err}".splitlines()[0]
                room.touch()
                return
            rec = summary.finished[0] if summary.finished else None
            room.status = "finished" if rec is not None and rec.status.value == "completed" else "failed"
            if rec is not None:
                room.view = _view_of(rec, form.turns)
                end = rec.end_reason.value if rec.end_reason is not None else "?"
                room.outcome = f"{rec.status.value} ({end}){': ' + rec.failure if rec.failure else ''}"
            room.touch()

        self.rooms[room_id] = room
        room.task = asyncio.create_task(drive())
        return room

    def submit(self, room_id: str, move: PlayMove) -> None:
        """Hand one move to a room waiting for it; MoveRefused when it cannot be taken as given."""
        room = self.get(room_id)
        if room.status != "your_move" or room.move is None or room.move.done() or room.awaiting is None:
            raise MoveRefused(f"room {room_id}: not waiting for a move (status {room.status})")
        if not move.speak:
            room.move.set_result({"text": ""})
            return
        text = move.text.strip()
        if not text:
            raise MoveRefused("text: write what you say, or choose to stay silent")
        valid = [*room.awaiting["members"], room.awaiting["group_label"]]
        unknown = [t for t in move.targets if t not in valid]
        if not move.targets or unknown:
            raise MoveRefused(f"targets: choose from {', '.join(valid)}")
        if move.strategy is not None and move.strategy not in room.awaiting["strategies"]:
            raise MoveRefused(f"strategy {move.strategy!r}: not a {room.case.group} strategy")
        room.move.set_result(
            {"text": text, "targets": list(move.targets), "strategy": move.strategy, "close_session": move.close}
        )

    async def abandon(self, room_id: str, why: str = "left from the page") -> None:
        room = self.get(room_id)
        if room.task is not None and not room.task.done():
            room.outcome = why
            room.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await room.task

    async def close(self) -> None:
        """Server stopping: every room still in progress is saved as interrupted."""
        for room_id in list(self.rooms):
            await self.abandon(room_id, "the server stopped")

    async def wait_change(
        self, room_id: str, since: int, timeout: float, stopping: Callable[[], bool] = lambda: False
    ) -> Room:
        """The room once its version is past `since` (or after `timeout`, or when the server stops): a long poll,
        no busy loop."""
        room = self.get(room_id)
        deadline = asyncio.get_running_loop().time() + timeout
        while room.version <= since and not stopping():
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(room.changed.wait(), min(left, 1.0))
        return room
