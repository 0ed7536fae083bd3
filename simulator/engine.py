"""The session engine: a LangGraph StateGraph over SessionState.

    floor -> member -> track -> gate -> (supporter -> track ->) end_check -> floor | END

Nodes come from factories that close over their fixed dependencies (case, model client, supporter, config),
return only the keys they change, and never mutate their input. A model failure inside a node ends the
session as `failed` with its reason; nothing is filled in for it. The nodes live in `simulator.nodes`, the
config, state and reducers in `simulator.session_state`; this module wires and runs them.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from personas.case import Case
from simulator.llm.types import ModelClient
from simulator.nodes import (
    failure_update,
    make_end_check_node,
    make_floor_node,
    make_gate_node,
    make_member_node,
    make_supporter_node,
    make_track_node,
)
from simulator.records import (
    EndReason,
    SessionRecord,
    SessionStatus,
)
from simulator.redact import redact
from simulator.session_state import (
    STATE_TYPES,
    SessionConfig,
    SessionState,
    initial_state,
)
from simulator.supporters import HumanSupporter, Supporter
from simulator.tracker import prompt_digest as tracker_prompt_digest

if TYPE_CHECKING:  # LangGraph reads the annotation by name: a node taking `config: RunnableConfig` is given it
    from langchain_core.runnables import RunnableConfig

# -- routers -----------------------------------------------------------------------------------------------------


def after_member(state: SessionState) -> Literal["track", "__end__"]:
    return "__end__" if state.get("failure") else "track"


def after_track(state: SessionState) -> Literal["gate", "end_check", "__end__"]:
    if state.get("failure"):
        return "__end__"
    return "gate" if state["turns"][-1].kind == "member" else "end_check"


def after_gate(state: SessionState) -> Literal["supporter", "end_check", "__end__"]:
    if state.get("failure"):
        return "__end__"
    return "supporter" if state["decisions"][-1].speak else "end_check"


def after_end_check(state: SessionState) -> Literal["floor", "__end__"]:
    return "__end__" if state.get("end_reason") else "floor"


NODE_NAMES = ("floor", "member", "track", "gate", "supporter", "end_check")


def session_nodes(case: Case, client: ModelClient, supporter: Supporter, config: SessionConfig) -> dict[str, Any]:
    """The node functions of one session, each closed over its fixed dependencies."""
    return {
        "floor": make_floor_node(case, config),
        "member": make_member_node(client, case, config),
        "track": make_track_node(client, case, config),
        "gate": make_gate_node(case, supporter, config),
        "supporter": make_supporter_node(case),
        "end_check": make_end_check_node(client, case, config),
    }


def _on_loop(router: Callable[[SessionState], str]) -> Callable[[SessionState], Awaitable[str]]:
    """A router as a coroutine function, with its name and `Literal` return type (what LangGraph draws).

    LangGraph runs a plain function given to an async graph in the default thread pool: a thread hop per routing
    decision, about one per model call, that costs CPU (thread wake-ups, a future, the loop's self-pipe) for a
    dictionary lookup. A coroutine function runs in the event loop, as the nodes do (`_dispatch`)."""

    @functools.wraps(router)
    async def route(state: SessionState) -> str:
        return router(state)

    return route


def _wire(g: Any, nodes: dict[str, Any]) -> Any:
    from langgraph.graph import START

    for name in NODE_NAMES:
        g.add_node(name, nodes[name])
    g.add_edge(START, "floor")
    g.add_edge("floor", "member")
    g.add_conditional_edges("member", _on_loop(after_member))
    g.add_conditional_edges("track", _on_loop(after_track))
    g.add_conditional_edges("gate", _on_loop(after_gate))
    g.add_edge("supporter", "track")
    g.add_conditional_edges("end_check", _on_loop(after_end_check))
    return g


def build_graph(case: Case, client: ModelClient, supporter: Supporter, config: SessionConfig, checkpointer: Any = None):
    """Compile the session graph for one case and supporter (a graph of its own, e.g. to inspect or extend)."""
    from langgraph.graph import StateGraph

    return _wire(StateGraph(SessionState), session_nodes(case, client, supporter, config)).compile(
        checkpointer=checkpointer
    )


SESSION_NODES = "rescue_sim_nodes"  # the run-config key under which a session's node functions travel


def _dispatch(name: str) -> Callable[..., Awaitable[dict]]:
    """A node of the shared graph: it runs this session's own function (from the run config) in the event loop,
    so synchronous nodes (floor, supporter) need no thread hop either."""

    async def node(state: SessionState, config: RunnableConfig) -> dict:
        out = config["configurable"][SESSION_NODES][name](state)
        return await out if asyncio.iscoroutine(out) else out

    node.__name__ = name
    return node


_shared_graph: Any = None


def shared_graph() -> Any:
    """One compiled graph for every session without a checkpointer: compiling costs milliseconds of CPU, and at
    64 sessions in flight against a fast provider that is a measurable share of the runner's time."""
    global _shared_graph
    if _shared_graph is None:
        from langgraph.graph import StateGraph

        _shared_graph = _wire(StateGraph(SessionState), {n: _dispatch(n) for n in NODE_NAMES}).compile()
    return _shared_graph


# -- running -----------------------------------------------------------------------------------------------------


def to_record(
    state: SessionState,
    *,
    session_id: str,
    case: Case,
    supporter: Supporter,
    models: dict[str, str],
    config: SessionConfig,
    started_at: datetime,
    started: float,
    final: bool,
) -> SessionRecord:
    failure = state.get("failure")
    end = state.get("end_reason")
    if failure:
        status = SessionStatus.FAILED
    elif final and end is not None:
        status = SessionStatus.COMPLETED
    else:
        status = SessionStatus.INCOMPLETE
    return SessionRecord(
        session_id=session_id,
        case=case,
        supporter=redact(supporter.spec),
        models=models,
        prompt_digests={"tracker": tracker_prompt_digest()},
        seed=config.seed,
        supporter_knows=config.supporter_knows,
        max_turns=config.max_turns,
        status=status,
        end_reason=end,
        failure=failure,
        turns=state.get("turns", []),
        decisions=state.get("decisions", []),
        self_report=state.get("self_report", []),
        observer=state.get("observer", []),
        safety=state.get("safety", []),
        started_at=started_at,
        finished_at=datetime.now(UTC) if final else None,
        wall_s=round(time.perf_counter() - started, 3),
    )


HumanInput = Callable[[dict[str, Any], SessionRecord], Awaitable[dict[str, Any]]]


async def run_session(
    case: Case,
    supporter: Supporter,
    client: ModelClient,
    config: SessionConfig,
    *,
    session_id: str,
    models: dict[str, str] | None = None,
    on_update: Callable[[SessionRecord], None] | None = None,
    human_input: HumanInput | None = None,
    update_every_s: float = 0.0,
) -> SessionRecord:
    """Run one session to its end and return the record. `on_update` sees the record after every step, or at
    most once per `update_every_s` seconds when that is above 0 (a record per step costs CPU that many sessions
    in parallel feel); the final, failed or interrupted record is always handed over.

    Interruption (Ctrl-C, task cancellation) returns the record so far as `incomplete` / `interrupted`
    after calling `on_update` with it, so callers can save it; then the interruption propagates.
    """
    from langgraph.types import Command

    human = isinstance(supporter, HumanSupporter)
    if human and human_input is None:
        raise ValueError("a human supporter needs `human_input`")
    run_config: dict[str, Any] = {
        "recursion_limit": config.max_turns * 12 + 50,
        "configurable": {"thread_id": session_id},
    }
    if human:  # interrupts need a checkpointer of its own
        from langgraph.checkpoint.memory import InMemorySaver
        from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

        saver = InMemorySaver(serde=JsonPlusSerializer(allowed_msgpack_modules=STATE_TYPES))
        graph = build_graph(case, client, supporter, config, saver)
    else:
        graph = shared_graph()
        run_config["configurable"][SESSION_NODES] = session_nodes(case, client, supporter, config)
    models = models or {}
    started_at, started = datetime.now(UTC), time.perf_counter()
    state: SessionState = initial_state(case)
    pending: Any = state
    last_update = started

    def record(final: bool) -> SessionRecord:
        return to_record(
            state,
            session_id=session_id,
            case=case,
            supporter=supporter,
            models=models,
            config=config,
            started_at=started_at,
            started=started,
            final=final,
        )

    try:
        while True:
            interrupt_payload = None
            async for mode, chunk in graph.astream(pending, run_config, stream_mode=["values", "updates"]):
                if mode == "values":
                    state = chunk
                    if on_update and (update_every_s <= 0 or time.perf_counter() - last_update >= update_every_s):
                        last_update = time.perf_counter()
                        on_update(record(final=False))
                elif "__interrupt__" in chunk:
                    interrupt_payload = chunk["__interrupt__"][0].value
            if interrupt_payload is None:
                break
            answer = await human_input(interrupt_payload, record(final=False))  # type: ignore[misc]
            pending = Command(resume=answer)
    except (KeyboardInterrupt, asyncio.CancelledError):
        state = {**state, "end_reason": EndReason.INTERRUPTED}
        rec = record(final=False)
        if on_update:
            on_update(rec)
        raise
    except Exception as err:  # stopped by an error no node turned into a failure (e.g. an unknown model)
        state = {**state, **failure_update("session", err)}
        if on_update:
            on_update(record(final=True))  # saved as failed with its reason, never left as `incomplete`
        raise
    rec = record(final=True)
    if on_update:
        on_update(rec)
    return rec
