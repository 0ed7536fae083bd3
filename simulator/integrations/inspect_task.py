"""rescue-sim as Inspect AI tasks: `inspect eval rescue_sim/rescue_session --model M -T cases=dana-and-theo`.

One sample is one session. The model under evaluation is the supporter: the solver runs the real engine
(`simulator.runner.session.run_one`) with `ModelSupporter` over an `InspectModelClient`, so the decision schema,
re-asks and invalid-decision records are the ones every supporter gets. The room's roles take Inspect model roles
(`--model-role member=...`, `tracker`, `judge`, `check`) and fall back to rescue-sim's own client (the embedded
model unless RESCUE_SIM_MODEL says otherwise). Every session is also written to an ordinary run folder (its path
is in the sample metadata), so `rescue-sim leaderboard/report/export` read an Inspect run like any other; a
session already completed there is not simulated again (an `inspect eval-retry` resumes without duplicates).

The scorer is the stress runner's post-session hook (stressor delivery, judge panel, behavioural check), then one
Score per session: every supporter-facing rubric dimension and the room metrics. A session that failed (a model
call that never answered, a crash) or whose judging failed (any judge call; the judgment is not `ok`) raises
`SessionFailed`, so the sample errors and the eval ends with status `error` and the error shown, as `rescue-sim
run` and `stress` exit 1 (Inspect 0.3's `inspect eval` still exits 0 whatever the status; `inspect eval-set`
exits 1); an `inspect eval-retry` plays or judges it again. A session the simulator faulted (the room malfunctioned, not the
supporter) gets a NaN score, which Inspect counts as unscored: left out of the metrics, as the leaderboard leaves
it out.

Registered through the `inspect_ai` entry point `rescue_sim` (pyproject.toml). The task functions' module is set
to the alias `rescue_sim`, so Inspect names them `rescue_sim/<task>` whether rescue-sim is installed editable or
not (Inspect prefixes a task with the top-level package it was defined in, which here would be `simulator`).
"""

from __future__ import annotations

import importlib.machinery
import math
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ModelOutput, get_model, model_roles
from inspect_ai.scorer import SampleScore, Score, Target, mean, metric, scorer, stderr
from inspect_ai.solver import Generate, TaskState, solver
from pydantic import ValidationError

from simulator.integrations.inspect_client import InspectModelClient
from simulator.integrations.inspect_log import RECORD_KEY, transcript_messages
from simulator.llm.tokenizers import use_shipped_tokenizers
from simulator.llm.types import ModelClient
from simulator.records import SessionRecord, SessionStatus
from simulator.runfolder import RunFolder, config_hash
from simulator.runner.session import CURRENT_SESSION, SessionSpec, make_session_id
from simulator.runner.stress_config import (
    StressConfig,
    build_matrix,
    config_error,
    load_stress_config,
    unrecorded,
)

PACKAGE = "rescue_sim"  # the entry point's name: tasks are `rescue_sim/rescue_session`, `rescue_sim/rescue_stress`
ROOM_ROLES = ("member", "tracker", "judge", "check")
SUPPORTER_SLOT = "inspect"  # the supporter in the matrix before the evaluated model is known (solver time)
ROOM_METRICS = ("heard_gain", "blamed_share", "delta_tension", "objective")


def _default_room_client(config: StressConfig) -> ModelClient:
    """rescue-sim's own client for the roles given no Inspect model: the experiment's models (a stress config's
    `model`/`models`), else RESCUE_SIM_MODEL, else the embedded model, as `rescue-sim stress` builds it."""
    from simulator.llm.settings import make_client, model_settings

    roles = {r: config.model_for(r) for r in ("member", "tracker", "judge", "check")}
    return make_client(model_settings(config.model, roles=roles))


# The fallback client's factory; tests replace it with a fake room (as judge_cmd's `make_client`).
make_room_client: Callable[[StressConfig], ModelClient] = _default_room_client


def room_client(plan: _Plan) -> InspectModelClient:
    """The client of one sample: the evaluated model as supporter, Inspect roles where given, else the fallback
    (built once per task and factory: the embedded model loads once)."""
    roles = model_roles()
    models = {"supporter": get_model()}
    for role in ROOM_ROLES:
        if role in roles:
            models[role] = get_model(role=role)
    return InspectModelClient(models, plan.fallback())


# -- dataset -----------------------------------------------------------------------------------------------------


def _listed(value: str | list[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v).strip() for v in value if str(v).strip()]


def _sample(spec: SessionSpec) -> Sample:
    case = spec.case
    sample_id = f"{case.id}__{spec.perturbation or 'none'}__s{spec.seed}__t{spec.trial}"
    intake = f"{case.title} ({case.group}). {case.setting} {case.presenting_problem}"
    return Sample(
        id=sample_id,
        input=intake,
        metadata={
            "case": case.id,
            "seed": spec.seed,
            "trial": spec.trial,
            "perturbation": spec.perturbation,
            "spec": spec.model_dump(mode="json"),
        },
    )


def _task(config: StressConfig, base: Path, source: str, out: str | None, name: str) -> Task:
    use_shipped_tokenizers()  # Inspect counts tokens with tiktoken (mockllm on every call): never fetched
    config = config.model_copy(update={"supporters": [SUPPORTER_SLOT]})
    matrix = build_matrix(config, base, source)
    rubric = None
    if config.rubric:
        rubric = Path(config.rubric) if Path(config.rubric).is_absolute() else base / config.rubric
    plan = _Plan(config=config, base=base, rubric=rubric, out=Path(out or "runs").resolve(), task=name)
    return Task(
        dataset=MemoryDataset([_sample(s) for s in matrix.specs], name=name),
        solver=rescue_room(plan),
        scorer=rescue_judges(plan),
        metadata={"rescue_sim": {"config": config.model_dump(mode="json", exclude={"ray_env"})}},
    )


def rescue_session(
    cases: str | list[str] = "dana-and-theo",
    seeds: str | int | list[int] = 0,
    turns: int = 6,
    perturbations: str | list[str] | None = None,
    rubric: str | None = None,
    trials: int = 1,
    tracker_every: int = 3,
    out: str | None = None,
    judge_mode: str = "checklist",
) -> Task:
    """Sessions of cases x seeds (x perturbations: each case also runs unperturbed) with the evaluated model as
    the supporter. `cases`: ids, globs, `tag:`/`group:` selectors or card paths, comma-separated; `seeds`: `0-4`
    or `0,2`; `perturbations`: built-in names or YAML files; `rubric`: a YAML extending the judges' rubric; `out`:
    the folder under which the run folder is made (default ./runs); `judge_mode`: how the scorer's judges score,
    `checklist` (items' answer probabilities) or `verdict` (structured verdicts)."""
    perts = _listed(perturbations)
    try:
        config = StressConfig(
            name="inspect-session",
            supporters=[SUPPORTER_SLOT],
            cases=_listed(cases),
            seeds=seeds,  # type: ignore[arg-type]
            turns=turns,
            trials=trials,
            tracker_every=tracker_every,
            perturbations=perts,
            baseline=True,
            rubric=rubric,
            judge_mode=judge_mode,  # type: ignore[arg-type]  # validated here, a bad value is one line
        )
    except ValidationError as err:
        raise config_error(Path("rescue_session task args"), err) from None
    return _task(config, Path.cwd(), "rescue_session", out, "rescue_session")


def rescue_stress(config: str, out: str | None = None, judge_mode: str | None = None) -> Task:
    """The sessions of a stress config (`rescue-sim stress` YAML) with the evaluated model as the only
    supporter (the config's `supporters` are ignored; its models are fallbacks for roles Inspect does not bind).
    `judge_mode` (`checklist` or `verdict`) overrides the config's (default checklist)."""
    path = Path(config)
    loaded = load_stress_config(path)
    if judge_mode is not None:
        try:
            loaded = StressConfig.model_validate({**loaded.model_dump(), "judge_mode": judge_mode})
        except ValidationError as err:
            raise config_error(Path("rescue_stress task args"), err) from None
    return _task(loaded, path.parent, str(path), out, "rescue_stress")


def _as_package(*fns: Callable[..., Task]) -> None:
    """Register the tasks as `rescue_sim/<name>`, the entry point's name, however rescue-sim is installed.

    Inspect prefixes a task's name with the top-level package of its module when it judges that package
    installed, and judges it from the module's file and the distribution metadata it finds first; a
    `rescue_sim.egg-info` left in the checkout by `pip install -e .` (on sys.path when run from the repo root)
    hid the editable install, and the tasks registered unprefixed. So the functions are given a module named
    `rescue_sim` without an origin (Inspect then adds no prefix) and are registered under their full names."""
    alias = sys.modules.get(PACKAGE)
    if alias is None:
        alias = types.ModuleType(PACKAGE, __doc__)
        alias.__spec__ = importlib.machinery.ModuleSpec(PACKAGE, None)
        alias.__file__ = __file__
        sys.modules[PACKAGE] = alias
    for fn in fns:
        fn.__module__ = PACKAGE
        setattr(alias, fn.__name__, fn)


_as_package(rescue_session, rescue_stress)
rescue_session = task(name=f"{PACKAGE}/rescue_session")(rescue_session)
rescue_stress = task(name=f"{PACKAGE}/rescue_stress")(rescue_stress)


# -- the solver: one session -------------------------------------------------------------------------------------


class _Plan:
    """What the solver and scorer of one task share: the experiment, where the run folder goes, the rubric."""

    def __init__(self, *, config: StressConfig, base: Path, rubric: Path | None, out: Path, task: str):
        self.config, self.base, self.rubric, self.out, self.task = config, base, rubric, out, task
        self._folders: dict[str, RunFolder] = {}
        self._fallback: tuple[Callable[[StressConfig], ModelClient], ModelClient] | None = None
        self._checked: set[tuple[int, tuple[str, ...]]] = set()

    def fallback(self) -> ModelClient:
        if self._fallback is None or self._fallback[0] is not make_room_client:
            self._fallback = (make_room_client, make_room_client(self.config))
        return self._fallback[1]

    async def check_room(self) -> None:
        """The room's own models (the roles Inspect gives no model) through the pre-check `run`, `stress` and
        `serve` use, once per fallback client: an unusable one (unknown id, missing key, weights missing) errors
        the sample with its one-line reason before any call, as `rescue-sim stress` refuses to start."""
        from simulator.llm.preflight import preflight

        given = model_roles()
        fallback = self.fallback()
        roles = tuple(r for r in ROOM_ROLES if r not in given)
        key = (id(fallback), roles)
        if key not in self._checked:
            await preflight(fallback, [(r, fallback.model_for(r)) for r in roles])  # type: ignore[arg-type]
            self._checked.add(key)

    def folder(self, client: InspectModelClient) -> RunFolder:
        """The run folder of this task and these models, opened once per process (its manifest guards resumes:
        a folder made by other models or other task args is refused)."""
        manifest = {
            "kind": "inspect",
            "task": f"{PACKAGE}/{self.task}",
            "stress": self.config.model_dump(mode="json", exclude={"ray_env", *unrecorded(self.config)}),
            "supporter": client.model_for("supporter"),
            "models": {r: client.model_for(r) for r in ROOM_ROLES},  # type: ignore[arg-type]
        }
        key = config_hash(manifest)
        if key not in self._folders:
            slug = "".join(ch if ch.isalnum() else "-" for ch in client.model_for("supporter").lower()).strip("-")
            folder = RunFolder(self.out / f"inspect-{self.task.replace('_', '-')}-{slug[:40]}-{key[:8]}")
            folder.open(manifest, kind="inspect")
            self._folders[key] = folder
        return self._folders[key]


class SessionFailed(RuntimeError):
    """A session that did not complete, or whose judging failed: raised by the solver or the scorer, so that
    Inspect marks the sample as errored (the eval's status is `error`, `inspect eval-set` exits 1, and
    `inspect eval-retry` runs it again), never a NaN score in a successful eval. The run folder keeps the record."""


@solver
def rescue_room(plan: _Plan):
    """Run the sample's session with the evaluated model as supporter (or reuse it, completed, from the folder)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        from simulator.runner.session import run_one
        from simulator.runner.stress import record_delivery
        from simulator.supporters import ModelSupporter

        await plan.check_room()
        client = room_client(plan)
        folder = plan.folder(client)
        supporter_id = client.model_for("supporter")
        spec = SessionSpec.model_validate(state.metadata["spec"])
        spec = spec.model_copy(
            update={
                "supporter": supporter_id,
                "session_id": make_session_id(spec.case.id, supporter_id, spec.perturbation, spec.seed, spec.trial),
            }
        )
        if folder.status(spec.session_id) == SessionStatus.COMPLETED:
            record = folder.load_session(spec.session_id)
        else:
            supporter = ModelSupporter(
                client=client, model=supporter_id, spec=supporter_id, seed=spec.engine_seed, window=spec.config.window
            )
            models = {r: client.model_for(r) for r in ("member", "tracker", "judge")}
            record = await run_one(spec, client, supporter, models=models)
            folder.write_session(record)
            folder.append_result(record)
            pert = _perturbation(plan, spec.perturbation)
            if record.status == SessionStatus.COMPLETED and pert is not None and pert.inject is not None:
                record = await record_delivery(record, pert, client, client.model_for("check"), folder)
        state.messages = transcript_messages(record, state.input_text)
        state.output = ModelOutput.from_content(model=str(get_model()), content=_last_supporter_line(record))
        state.metadata.update(session_metadata(record, folder))
        state.store.set(RECORD_KEY, record.model_dump_json())
        if record.status != SessionStatus.COMPLETED:  # the sample errors, as Inspect reports any failed sample
            raise SessionFailed(f"session {record.session_id} {record.status.value}: {record.failure}")
        return state

    return solve


def _perturbation(plan: _Plan, name: str | None):
    if name is None:
        return None
    from simulator.runner.stress_config import resolve_perturbations

    return {p.name: p for p in resolve_perturbations(plan.config, plan.base)}.get(name)


def _last_supporter_line(record: SessionRecord) -> str:
    return next((t.text for t in reversed(record.turns) if t.kind == "supporter"), "")


def session_metadata(record: SessionRecord, folder: RunFolder) -> dict[str, Any]:
    """What a sample's metadata says about its session (the ids, how it ended, the room's faults)."""
    from simulator.faults import detect_faults, merge_faults

    faults = merge_faults(record.simulator_faults, detect_faults(record))
    return {
        "session_id": record.session_id,
        "run_folder": str(folder.path),
        "status": record.status.value,
        "end_reason": record.end_reason,
        "failure": record.failure,
        "decisions": len(record.decisions),
        "invalid_decisions": sum(not d.valid for d in record.decisions),
        "delivery": record.delivery.model_dump(mode="json", exclude={"calls"}) if record.delivery else None,
        "faults": [f.model_dump(mode="json") for f in faults],
    }


# -- the scorer: the judges --------------------------------------------------------------------------------------


@metric
def bootstrap_ci(confidence: float = 0.95):
    """Percentile-bootstrap interval of the mean over sessions (judges.stats.bootstrap_ci, seeded)."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        from judges.stats import bootstrap_ci as interval

        values = [float(s.score.as_float()) for s in scores]
        ci = interval(values, confidence=confidence)
        return {"low": ci[0], "high": ci[1]} if ci else {"low": math.nan, "high": math.nan}

    return compute


def score_keys(rubric) -> list[str]:
    """The keys of every score value: each supporter-facing rubric dimension that has a per-session value
    (`judges.session_values`), then the room metrics."""
    dims = [
        d.id
        for d in rubric.active
        if d.about == "supporter" and (d.kind in ("scale", "taxonomy_strategy") or d.neutral is not None)
    ]
    return [*dims, *ROOM_METRICS]


def session_score(record: SessionRecord, judgment, keys: list[str]) -> Score:
    """One session's Score: NaN (unscored) for a failed, unjudged or simulator-faulted session (the scorer never
    sees a failed one: the solver raises SessionFailed first), else a value per key (NaN where the session gives none); the judges' reasoning and evidence in the explanation and metadata."""
    from judges import faulted, session_values, trajectory_metrics
    from judges.room_audit import blamed_share, heard_gain
    from simulator.integrations.inspect_log import JUDGMENT_KEY

    meta: dict[str, Any] = {"session_id": record.session_id}
    if judgment is not None:
        meta[JUDGMENT_KEY] = judgment.model_dump(mode="json")
    if record.status != SessionStatus.COMPLETED:
        return Score(value=math.nan, explanation=f"session {record.status.value}: {record.failure}", metadata=meta)
    fault = faulted(record, judgment)
    if fault is not None:
        meta["faults"] = fault.reasons
        return Score(value=math.nan, explanation="simulator fault: " + "; ".join(fault.reasons), metadata=meta)
    if judgment is None:
        return Score(value=math.nan, explanation="not judged", metadata=meta)
    values = {k: v for k, (_, v) in session_values(judgment).items()}
    traj = trajectory_metrics(record)
    values.update(
        heard_gain=heard_gain(record),
        blamed_share=blamed_share(record),
        delta_tension=traj.self_report.delta_tension,
        objective=traj.objective_self_report.value,
    )
    lines = []
    for verdict in judgment.verdicts:
        for s in verdict.scores:
            quotes = "; ".join(f'turn {e.turn}: "{e.quote}"' for e in s.evidence) if s.evidence else ""
            lines.append(f"[{verdict.judge}] {s.item}/{s.dimension} = {s.score if s.score is not None else s.label}: "
                         f"{s.reasoning} {quotes}".strip())  # fmt: skip
    return Score(
        value={k: (math.nan if values.get(k) is None else float(values[k])) for k in keys},
        explanation="\n".join(lines) or judgment.status.value,
        metadata=meta,
    )


@scorer(metrics={"*": [mean(), stderr(), bootstrap_ci()]})
def rescue_judges(plan: _Plan):
    """rescue-sim's judges on the sample's session (the stress runner's post-session hook: stressor delivery,
    judge panel, behavioural check; each skipped when the run folder already has it)."""

    async def score(state: TaskState, target: Target) -> Score:
        from judges import judgment_path, load_rubric, read_judgment
        from simulator.runner.runs import RunSummary
        from simulator.runner.stress import StressSummary, judging_failure, post_session_hook
        from simulator.runner.stress_config import resolve_perturbations

        client = room_client(plan)
        folder = plan.folder(client)
        record = SessionRecord.model_validate_json(state.store.get(RECORD_KEY))
        rubric = load_rubric(plan.rubric)
        if record.status == SessionStatus.COMPLETED:
            panel = plan.config.judges or [client.model_for("judge")]
            perts = {p.name: p for p in resolve_perturbations(plan.config, plan.base)}
            summary = StressSummary(run=RunSummary(folder=folder))
            hook = post_session_hook(
                plan.config, perts, client, panel, client.model_for("check"), plan.rubric, None, None, summary
            )
            # the judges' calls belong to this session (progress, costs), whichever task Inspect scores in: the
            # solver's context reached the scorer only when both ran in one task (a retried sample's did not)
            earlier = read_judgment(folder, record.session_id)
            if earlier is not None and judging_failure(earlier) is not None:
                judgment_path(folder, record.session_id).unlink()  # an eval-retry judges it again
            token = CURRENT_SESSION.set(record.session_id)
            try:
                await hook(record, folder)
            finally:
                CURRENT_SESSION.reset(token)
            if summary.errors:
                raise SessionFailed(f"session {record.session_id}: {summary.errors[record.session_id]}")
        judgment = read_judgment(folder, record.session_id)
        return session_score(record, judgment, score_keys(rubric))

    return score
