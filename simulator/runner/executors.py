"""Where sessions run: in this process's event loop (`local`) or as Ray tasks on a cluster (`ray`).

Both keep at most `concurrency` sessions in flight, stop starting new ones when the runner's stop event is set
(a budget cap), and hand every finished record back to the runner in this process, which alone writes the run
folder. So a cluster needs no shared filesystem for results, and kill-safety is the same for both executors.

- `local`: one asyncio task per session over one shared, metered ModelClient (its per-provider semaphores
  and its call cache are shared by all sessions). Unfinished sessions are checkpointed as they go.
- `ray`: each session is one Ray actor task, on one of `min(concurrency, cluster CPUs)` async actors
  (`SessionWorker`) that each run up to concurrency / workers sessions at once in their own event loop, so
  sessions waiting on a model cost no CPU slot. Each actor builds its own client: from the picklable
  `ModelSettings` when the client is the litellm client (the usual case), else from a pickled copy of it (a
  test fake). A task returns the finished record, its call counts and its node (`ray_nodes.jsonl` in the run
  folder); nothing is checkpointed mid-session, so a killed driver (its actors die with it) reruns the sessions
  that were in flight, and each node's call cache replays what had succeeded. Before any session, a preflight
  task on every node checks that its workers can call the models and run the driver's code
  (`simulator.runner.ray_cluster`). Whatever a session raises on a worker is its recorded failure; an actor or
  node lost mid-run fails the sessions it held (never half-written: only the driver writes, atomically), gets no
  more, and a rerun runs them again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from personas.common.errors import Param, ParameterError, UserError
from simulator.engine import HumanInput
from simulator.llm.types import ModelClient
from simulator.records import EndReason, SessionRecord, SessionStatus
from simulator.redact import redact

if TYPE_CHECKING:
    from simulator.runner.ray_cluster import RayOptions
    from simulator.runner.session import Hooks, MeteredClient, SessionSpec, SupporterFactory


def _crashed(
    spec: SessionSpec,
    models: dict[str, str],
    err: BaseException,
    last: SessionRecord | None,
    *,
    reason: str | None = None,
) -> SessionRecord:
    """A session that raised something the engine does not turn into a failure: recorded as failed, with why
    (`reason`, else the exception and where in rescue-sim it was raised)."""
    from datetime import datetime, timezone

    if last is not None and last.status == SessionStatus.FAILED and last.failure:
        return last  # the engine already recorded why it stopped
    reason = reason or redact(f"crashed: {type(err).__name__}: {' '.join(str(err).split())}{_where(err)}"[:400])
    base = last or SessionRecord(
        session_id=spec.session_id,
        case=spec.case,
        supporter=redact(spec.supporter),
        models=models,
        seed=spec.seed,
        trial=spec.trial,
        perturbation=spec.perturbation,
        max_turns=spec.config.max_turns,
    )
    return base.model_copy(
        update={
            "status": SessionStatus.FAILED,
            "end_reason": EndReason.FAILED,
            "failure": reason,
            "finished_at": datetime.now(timezone.utc),
        }
    )


def _where(err: BaseException) -> str:
    """` (at file:line)` of the innermost frame in rescue-sim's own code, to find a bug from its record."""
    import traceback

    frames = [f for f in traceback.extract_tb(err.__traceback__) if "site-packages" not in f.filename]
    return f" (at {frames[-1].filename.rsplit('/', 2)[-2:][-1]}:{frames[-1].lineno})" if frames else ""


async def _supervise(
    pending: list[SessionSpec],
    start: Callable[[SessionSpec], asyncio.Future],
    hooks: Hooks,
    concurrency: int,
    on_stop: Callable[[dict[asyncio.Future, SessionSpec]], Any],
) -> list[str]:
    """Keep up to `concurrency` sessions in flight until all ran or the stop event is set; returns the ids of
    sessions never started."""
    queue = list(reversed(pending))
    running: dict[asyncio.Future, SessionSpec] = {}
    stop_wait = asyncio.ensure_future(hooks.stop.wait())
    try:
        while True:
            while queue and len(running) < concurrency and not hooks.stop.is_set():
                spec = queue.pop()
                running[start(spec)] = spec
            if not running:
                break
            done, _ = await asyncio.wait([*running, stop_wait], return_when=asyncio.FIRST_COMPLETED)
            for fut in done:
                if fut is not stop_wait:
                    running.pop(fut)
                    fut.result()  # a UserError (bad config) ends the run; everything else was recorded
            if hooks.stop.is_set() and running:
                await on_stop(running)
                running.clear()
    finally:
        stop_wait.cancel()
    return [s.session_id for s in reversed(queue)]


async def execute_local(
    pending: list[SessionSpec],
    client: MeteredClient,
    factory: SupporterFactory,
    models: dict[str, str],
    hooks: Hooks,
    *,
    concurrency: int,
    human_input: HumanInput | None = None,
) -> list[str]:
    from simulator.runner.session import run_one

    budget_cancelled: set[asyncio.Future] = set()

    async def session(spec: SessionSpec) -> None:
        state: dict[str, Any] = {}

        def update(record: SessionRecord) -> None:
            state["last"] = record
            hooks.checkpoint(record, state)

        hooks.started(spec)
        try:
            supporter = factory(spec, client)
            record = await run_one(
                spec,
                client,
                supporter,
                models=models,
                on_update=update,
                human_input=human_input,
                update_every_s=hooks.update_every_s,
            )
        except asyncio.CancelledError:
            if asyncio.current_task() in budget_cancelled:
                if state.get("last") is not None:
                    await hooks.finished(spec, state["last"])  # saved as incomplete / interrupted
                else:
                    hooks.abandoned(spec)
                return
            raise
        except UserError:  # bad configuration (e.g. an unknown model): keep the session as failed, then stop
            last = state.get("last")
            if last is not None and last.status == SessionStatus.FAILED:
                await hooks.finished(spec, last)
            raise
        except Exception as err:  # noqa: BLE001 - one broken session must not take the others down
            record = _crashed(spec, models, err, state.get("last"))
        except BaseException:  # KeyboardInterrupt and friends: keep the latest state, then stop
            if state.get("last") is not None:
                hooks.checkpoint(state["last"].model_copy(update={"end_reason": EndReason.INTERRUPTED}), state)
            raise
        await hooks.finished(spec, record)

    def start(spec: SessionSpec) -> asyncio.Future:
        return asyncio.ensure_future(session(spec))

    async def stop(running: dict[asyncio.Future, SessionSpec]) -> None:
        for fut in running:
            budget_cancelled.add(fut)
            fut.cancel()
        results = await asyncio.gather(*running, return_exceptions=True)
        for fut, res in zip(running, results):
            if isinstance(res, BaseException) and not isinstance(res, asyncio.CancelledError):
                raise res

    return await _supervise(pending, start, hooks, concurrency, stop)


# -- Ray -----------------------------------------------------------------------------------------------------


def _client_payload(client: ModelClient) -> tuple[str, Any]:
    from simulator.llm.client import LiteLLMClient

    if type(client) is LiteLLMClient:
        return "settings", client.settings.model_dump(mode="json")
    return "client", client


def _build_client(payload: tuple[str, Any]) -> ModelClient:
    kind, value = payload
    if kind == "settings":
        from simulator.llm.client import LiteLLMClient, ModelSettings

        return LiteLLMClient(ModelSettings.model_validate(value))
    return value


class SessionWorker:
    """A Ray actor (one per CPU it is given) running many sessions at once in its own event loop, over one
    client of its own: the client's connection pool, per-provider limits and call cache serve all of them."""

    def __init__(self, payload: tuple[str, Any], factory: Any, models: dict[str, str]):
        self.client = _build_client(payload)
        self.factory, self.models = factory, models

    def node(self) -> str:
        import ray

        return ray.get_runtime_context().get_node_id()

    async def run(self, spec_json: str) -> tuple[str, tuple, str]:
        """One session: the record (JSON), its call counts (calls, tokens, cost, cache hits, failed calls) and the
        node it ran on. Whatever the session raises, a bad configuration included, is its recorded failure."""
        from simulator.runner.session import MeteredClient, SessionSpec, run_one

        spec = SessionSpec.model_validate_json(spec_json)
        client = MeteredClient(self.client)  # per session, so concurrent sessions are counted apart
        state: dict[str, Any] = {}

        def update(record: SessionRecord) -> None:
            state["last"] = record

        try:
            supporter = self.factory(spec, client)
            record = await run_one(spec, client, supporter, models=self.models, on_update=update, update_every_s=60.0)
        except Exception as err:  # noqa: BLE001 - recorded as a failed session; the run goes on
            record = _crashed(spec, self.models, err, state.get("last"))
        counts = (client.calls, client.tokens, client.cost_usd, client.cache_hits, client.failed_calls)
        return record.model_dump_json(), counts, self.node()


def _lost_reason(err: BaseException, node: str | None) -> str:
    """Why a session's worker never returned it: the actor, its process or its node died (retryable)."""
    first = next((line.strip() for line in str(err).splitlines() if line.strip()), "")
    where = f" on node {node[:8]}" if node else ""
    return redact(
        f"Ray worker lost{where} ({type(err).__name__}: {first[:200]}); rerun the same command to run it again"
    )


async def execute_ray(
    pending: list[SessionSpec],
    client: MeteredClient,
    factory: SupporterFactory,
    models: dict[str, str],
    hooks: Hooks,
    *,
    concurrency: int,
    address: str | None = None,
    options: RayOptions | None = None,
) -> list[str]:
    """Run the sessions on Ray: the cluster at `options.address` (or `address`), else a local instance. A preflight
    task on every node checks the workers' configuration and code first (`ray_cluster.preflight`); a session whose
    worker raises or dies is recorded as failed, the others go on, and a rerun runs it again."""
    try:
        import ray
    except ImportError:
        raise ParameterError(Param("executor"), " ray needs Ray: pip install 'rescue-sim[ray]'") from None
    from simulator.runner.ray_cluster import RayOptions, preflight, runtime_env, session_models

    options = options or RayOptions(address=address)
    if not pending:
        return []
    env = runtime_env(options)  # a forwarded variable missing here fails before connecting
    started_ray = not ray.is_initialized()
    if started_ray:  # the whole job gets the runtime_env (Ray uploads local py_modules only for a whole job)
        import logging

        quiet = {"log_to_driver": options.debug, "logging_level": logging.INFO if options.debug else logging.WARNING}
        if options.address:
            ray.init(address=options.address, runtime_env=env or None, **quiet)
        else:
            ray.init(include_dashboard=False, runtime_env=env or None, **quiet)
    elif options.ship_code:
        raise ParameterError(
            Param("ship_code"), ": Ray is already connected in this process; let rescue-sim connect to it"
        )
    task_env = {} if started_ray else env  # tasks and actors inherit the job's; else each is given its own
    try:
        payload = _client_payload(client.inner)
        worker_models = session_models(models, [s.supporter for s in pending])
        for note in preflight(ray, task_env, payload, worker_models, client.inner, options):
            hooks.note(note)
        if options.ship_code:
            hooks.note(
                "shipping this driver's rescue-sim (personas, simulator, judges) to the workers (--ray-ship-code)"
            )
        if options.env:
            hooks.note(f"forwarding {', '.join(options.env)} to the Ray workers (values are written nowhere)")
        return await _run_on_ray(ray, task_env, pending, client, factory, models, hooks, concurrency, payload, options)
    finally:
        if started_ray:
            ray.shutdown()


async def _run_on_ray(
    ray: Any,
    env: dict[str, Any],
    pending: list[SessionSpec],
    client: MeteredClient,
    factory: SupporterFactory,
    models: dict[str, str],
    hooks: Hooks,
    concurrency: int,
    payload: tuple[str, Any],
    options: RayOptions,
) -> list[str]:
    cpus = int(ray.cluster_resources().get("CPU", 1)) or 1
    n_workers = max(1, min(concurrency, cpus))
    per_worker = -(-concurrency // n_workers)
    worker_cls = ray.remote(num_cpus=1, max_concurrency=per_worker, max_restarts=0)(SessionWorker)
    workers = [worker_cls.options(runtime_env=env or None).remote(payload, factory, models) for _ in range(n_workers)]
    node_refs = [w.node.remote() for w in workers]
    nodes: list[str | None] = [None] * n_workers
    alive = [True] * n_workers
    load = [0] * n_workers
    refs: dict[asyncio.Future, Any] = {}

    async def where(i: int) -> str | None:
        if nodes[i] is None:
            try:
                nodes[i] = await asyncio.wait_for(node_refs[i], timeout=5)
            except Exception:  # noqa: BLE001 - a dead actor has no node to name
                return None
        return nodes[i]

    def start(spec: SessionSpec) -> asyncio.Future:
        hooks.started(spec)
        live = [i for i in range(n_workers) if alive[i]]
        if not live:
            fut = asyncio.ensure_future(_no_worker(spec))
            refs[fut] = None
            return fut
        i = min(live, key=load.__getitem__)  # the least busy live worker
        load[i] += 1
        ref = workers[i].run.remote(spec.model_dump_json())
        fut = asyncio.ensure_future(_collect(spec, ref, i))
        refs[fut] = ref
        return fut

    async def _no_worker(spec: SessionSpec) -> None:
        reason = "no Ray worker left (every one was lost); rerun the same command to run it again"
        await hooks.finished(spec, _crashed(spec, models, RuntimeError(), None, reason=reason))

    async def _collect(spec: SessionSpec, ref: Any, worker: int) -> None:
        try:
            record_json, counts, node = await ref
        except asyncio.CancelledError:
            load[worker] -= 1
            raise
        except Exception as err:  # noqa: BLE001 - the worker raised outside the session, or died: failed, with why
            load[worker] -= 1
            if options.debug:
                import traceback

                traceback.print_exception(err)
            cause = getattr(err, "cause", None)
            if isinstance(err, ray.exceptions.RayTaskError) and isinstance(cause, Exception):
                record = _crashed(spec, models, cause, None)
            else:  # the actor, its process or its node is gone (ActorDiedError, ActorUnavailableError, ...)
                alive[worker] = False  # never given another session (actors are not restarted)
                record = _crashed(spec, models, err, None, reason=_lost_reason(err, await where(worker)))
            hooks.placed(spec, await where(worker))
            await hooks.finished(spec, record)
            return
        load[worker] -= 1
        nodes[worker] = node
        client.add(*counts)
        hooks.placed(spec, node)
        await hooks.finished(spec, SessionRecord.model_validate_json(record_json))

    async def stop(running: dict[asyncio.Future, SessionSpec]) -> None:
        for fut, spec in running.items():
            if refs.get(fut) is not None:
                ray.cancel(refs[fut])  # an async actor task: cancelled in its event loop
            fut.cancel()
            hooks.abandoned(spec)
        await asyncio.gather(*running, return_exceptions=True)

    try:
        return await _supervise(pending, start, hooks, concurrency, stop)
    finally:
        for w in workers:
            ray.kill(w)
