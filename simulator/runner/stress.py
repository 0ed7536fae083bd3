"""Stress runs: a matrix of supporters x cases x perturbations x seeds x trials, run, judged and checked.

`StressConfig` is the YAML a team writes (see the README, and `simulator/perturbations/examples/smoke.yaml`).
`build_specs` turns it into `SessionSpec`s (each perturbation applied to its case and session config);
`estimate` says before anything starts how many sessions and model calls that is; `run_stress` runs the specs
with `run_specs` (concurrent, kill-safe, resumable), judges each completed session and runs its perturbation's
behavioural check. Everything lands in the run folder: `sessions/`, `judgments/`, `checks/`, `manifest.json`.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from judges import judging_mode
from personas.case import CardError, Case, load_case
from personas.common.errors import UserError
from personas.library import load_library
from simulator.engine import SessionConfig
from simulator.llm.types import ModelClient, is_local
from simulator.perturbations import (
    Perturbation,
    PerturbationError,
    applies_to,
    apply_perturbation,
    resolve_perturbation,
)
from simulator.records import SessionRecord, SessionStatus
from simulator.runfolder import RunFolder, config_hash
from simulator.runner.runs import Budget, RunEvents, RunSummary, run_specs
from simulator.runner.session import SessionSpec, make_session_id

STRESS_CONFIG_VERSION = 1
MODEL_ROLES = ("member", "tracker", "judge", "check")
BASELINE = "none"  # how unperturbed sessions appear in tables


class StressConfigError(UserError):
    pass


class StressConfig(BaseModel):
    """A stress experiment. Relative paths (cards, perturbation files, rubric) are read from the config's folder."""

    model_config = ConfigDict(extra="forbid")

    version: int = Field(default=STRESS_CONFIG_VERSION, description="Config layout version.")
    name: str = Field(default="stress", min_length=1, description="Names the default run folder.")
    supporters: list[str] = Field(min_length=1, description="--supporter specs: model ids, URL#model, silent, ...")
    cases: list[str] = Field(
        min_length=1, description="Case ids, globs over ids (`*-family`), `tag:<tag>`, `group:couple|family`, paths."
    )
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1, description="Session seeds.")
    trials: int = Field(default=1, ge=1, le=100, description="Repeats of each case, supporter, perturbation and seed.")
    perturbations: list[str] = Field(default_factory=list, description="Built-in names or perturbation YAML files.")
    baseline: bool = Field(default=False, description="Also run every case unperturbed (perturbation `none`).")
    model: str | None = Field(default=None, description="Default model for every role (else the embedded one).")
    models: dict[Literal["member", "tracker", "judge", "check"], str] = Field(
        default_factory=dict, description="Per-role models: member, tracker, judge, check (default: judge)."
    )
    judges: list[str] = Field(default_factory=list, description="Judge panel; default: the judge model.")
    judge: bool = Field(default=True, description="Judge completed sessions (needed for leaderboard means).")
    rubric: str | None = Field(default=None, description="Rubric YAML that adds, overrides or disables dimensions.")
    per_intervention: bool | None = Field(
        default=None,
        description="One judge call per supporter turn; unset: per turn when every judge is a local/ model.",
    )
    turns: int = Field(default=6, ge=1, le=200, description="Member turns per session (before session changes).")
    tracker_every: int = Field(default=3, ge=0, description="Tracker every N member turns and at the end.")
    window: int = Field(default=16, ge=2, description="Transcript turns shown to models.")
    concurrency: int = Field(default=1, ge=1, le=1024, description="Sessions in flight (--concurrency overrides).")
    budget: Budget | None = Field(default=None, description="Caps: max_calls, max_tokens, max_cost_usd.")

    @field_validator("seeds", mode="before")
    @classmethod
    def _seeds(cls, v: Any) -> Any:
        if isinstance(v, str):
            try:
                if "-" in v and "," not in v:
                    lo, hi = (int(x) for x in v.split("-"))
                    return list(range(lo, hi + 1))
                return [int(x) for x in v.split(",") if x.strip()]
            except ValueError:
                raise ValueError("use a list like [0, 1, 2] or a range like 0-9") from None
        if isinstance(v, int):
            return [v]
        return v

    @field_validator("supporters", "cases", "perturbations", "judges")
    @classmethod
    def _unique(cls, v: list[str]) -> list[str]:
        return list(dict.fromkeys(x.strip() for x in v if x.strip()))

    def model_for(self, role: str) -> str | None:
        if role == "judge" and self.judges:
            return self.models.get("judge") or self.judges[0]
        if role == "check":
            return self.models.get("check") or self.model_for("judge")
        return self.models.get(role) or self.model  # type: ignore[call-overload]


def _config_error(path: Path, err: ValidationError) -> StressConfigError:
    first = err.errors()[0]
    loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"]).lstrip(".") or "(top level)"
    msg = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        fields = ", ".join(StressConfig.model_fields)
        msg = f"unknown key; remove it or use one of: {fields}"
    elif first["type"] == "missing":
        msg = "required key is missing; add it"
    elif first["type"] == "too_short":
        msg = "must list at least one entry; add one"
    else:
        msg = msg.replace("Input should be", "must be")
        if not isinstance(first.get("input"), (dict, list)) and "input" in first:
            msg += f" (got {first['input']!r})"
    return StressConfigError(f"{path}: {loc}: {msg}")


def load_stress_config(path: str | Path) -> StressConfig:
    """Read and validate a stress config; every error is one line naming the file, the key and the fix."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StressConfigError(f"{path}: no such config file; check the path") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "YAML"
        raise StressConfigError(f"{path}: {where}: not valid YAML ({getattr(err, 'problem', err)})") from None
    if not isinstance(data, dict):
        raise StressConfigError(f"{path}: a stress config is a mapping of keys (supporters, cases, ...)")
    try:
        return StressConfig.model_validate(data)
    except ValidationError as err:
        raise _config_error(path, err) from None


# -- resolving the matrix ----------------------------------------------------------------------------------------


def resolve_cases(config: StressConfig, base: Path, source: str | Path = "config") -> list[Case]:
    library = load_library()
    ids = [c.id for c in library]
    out: dict[str, Case] = {}
    for i, ref in enumerate(config.cases):
        where = f"{source}: cases[{i}]"
        if ref.startswith("tag:"):
            found = [c for c in library if ref[4:] in c.tags]
            hint = "tags: " + ", ".join(sorted({t for c in library for t in c.tags}))
        elif ref.startswith("group:"):
            found = [c for c in library if c.group == ref[6:]]
            hint = "groups: couple, family"
        elif any(ch in ref for ch in "*?["):
            found = [c for c in library if fnmatch.fnmatchcase(c.id, ref)]
            hint = "known ids: " + ", ".join(ids)
        elif ref.endswith((".yaml", ".yml")) or "/" in ref:
            path = Path(ref) if Path(ref).is_absolute() else base / ref
            try:
                found = [load_case(path)]
            except CardError as err:
                raise StressConfigError(f"{where}: {err}") from None
            hint = ""
        else:
            found = [c for c in library if c.id == ref]
            hint = "known ids: " + ", ".join(ids)
        if not found:
            raise StressConfigError(f"{where}: no case matches {ref!r}; {hint}")
        for c in found:
            out.setdefault(c.id, c)
    return list(out.values())


def resolve_perturbations(config: StressConfig, base: Path, source: str | Path = "config") -> list[Perturbation]:
    out: list[Perturbation] = []
    for i, ref in enumerate(config.perturbations):
        try:
            p = resolve_perturbation(ref, base)
        except PerturbationError as err:
            raise StressConfigError(f"{source}: perturbations[{i}]: {err}") from None
        if any(q.name == p.name for q in out):
            raise StressConfigError(f"{source}: perturbations[{i}]: name {p.name!r} is listed twice; rename one")
        out.append(p)
    return out


@dataclass
class Matrix:
    """What a stress config expands to."""

    specs: list[SessionSpec]
    cases: list[Case]
    perturbations: list[Perturbation]
    skipped: list[str] = field(default_factory=list)  # (case, perturbation) pairs whose group does not fit


def build_matrix(config: StressConfig, base: Path, source: str | Path = "config") -> Matrix:
    """Every session of the experiment, ordered seed > case > perturbation > trial > supporter: a run stopped
    early (a budget cap, a deadline) has covered every case and perturbation for the first seeds; neighbours
    share prompt prefixes, and sessions that differ only in the supporter share their members' early calls."""
    cases = resolve_cases(config, base, source)
    perts = resolve_perturbations(config, base, source)
    if not perts and not config.baseline:
        raise StressConfigError(f"{source}: perturbations: empty and baseline is false; list some or set baseline")
    variants: list[Perturbation | None] = ([None] if config.baseline else []) + list(perts)
    specs: list[SessionSpec] = []
    skipped: list[str] = []
    for seed in config.seeds:
        for case in cases:
            for p in variants:
                if p is not None and not applies_to(p, case):
                    if seed == config.seeds[0]:
                        skipped.append(f"{case.id} x {p.name} (only for {', '.join(p.groups)})")
                    continue
                base_config = SessionConfig(
                    max_turns=config.turns, seed=seed, tracker_every=config.tracker_every, window=config.window
                )
                try:
                    sc, cfg = (case, base_config) if p is None else apply_perturbation(p, case, base_config)[:2]
                except PerturbationError as err:  # e.g. a stressor that could not play before the session ends
                    where = f"perturbations[{perts.index(p)}]: " if p else ""
                    raise StressConfigError(f"{source}: {where}{err}") from None
                for trial in range(config.trials):
                    for supporter in config.supporters:
                        specs.append(
                            SessionSpec(
                                session_id=make_session_id(case.id, supporter, p.name if p else None, seed, trial),
                                case=sc,
                                supporter=supporter,
                                seed=seed,
                                trial=trial,
                                perturbation=p.name if p else None,
                                config=cfg,
                            )
                        )
    return Matrix(specs=specs, cases=cases, perturbations=perts, skipped=skipped)


def plays_at(matrix: Matrix) -> dict[str, dict[str, tuple[int, int]]]:
    """Perturbation -> case id -> (member turn its direction plays at, member turns of the session)."""
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for s in matrix.specs:
        for d in s.config.directions:
            if d.source == s.perturbation:
                out.setdefault(d.source, {})[s.case.id] = (d.at_member_turn, s.config.max_turns)
    return out


def stress_manifest(config: StressConfig, matrix: Matrix) -> dict[str, Any]:
    """The manifest config: the experiment, each perturbation's full definition, and the session ids."""
    return {
        "kind": "stress",
        "stress": config.model_dump(mode="json"),
        "perturbations": {p.name: p.model_dump(mode="json") for p in matrix.perturbations},
        "sessions": len(matrix.specs),
        "session_ids_hash": config_hash({"ids": [s.session_id for s in matrix.specs]}),
    }


def default_out_dir(config: StressConfig, matrix: Matrix, root: str | Path = "runs") -> Path:
    slug = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in config.name.lower())[:40]
    return Path(root) / f"stress-{slug}-{config_hash(stress_manifest(config, matrix))[:8]}"


# -- the estimate ------------------------------------------------------------------------------------------------

# Rough token sizes of each call kind at this project's prompt layout (measured on the embedded model's runs);
# an estimate for planning, not a bound.
_TURN_TOKENS = 45
_OUT = {"member": 150, "tracker": 180, "supporter": 80, "judge_entry": 60, "check": 90, "delivery": 30}
_INSTR = {"member": 420, "tracker": 350, "supporter": 300, "judge": 900, "check": 350}
LOCAL_PROMPT_TOK_S = 34.0  # embedded model on 2 cores, uncached prompt tokens per second
LOCAL_GEN_TOK_S = 11.0


class Estimate(BaseModel):
    """How big a stress run is, before it starts. Token counts assume no cache hits (an upper-ish estimate)."""

    sessions: int
    by_supporter: dict[str, int]
    by_perturbation: dict[str, int]
    skipped: list[str]
    calls: dict[str, int] = Field(description="Role -> model calls.")
    prompt_tokens: int
    completion_tokens: int
    local_minutes: float | None = Field(
        default=None, description="At the embedded model's speed (no prefix cache), when every model is local."
    )
    plays_at: dict[str, dict[str, tuple[int, int]]] = Field(
        default_factory=dict,
        description="Perturbation -> case -> (member turn its stressor plays at, member turns of the session).",
    )

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())


def _supporter_calls(spec: str, turns: int) -> tuple[int, float]:
    """(model calls, share of member turns with a supporter turn) for a supporter spec."""
    if spec == "silent":
        return 0, 0.0
    if spec == "scripted":
        return 0, 0.5
    if spec.startswith(("http://", "https://")):
        return math.ceil(turns / 2), 0.5
    if ":" in spec and "/" not in spec:
        return 0, 0.5
    return turns, 0.7


def estimate(config: StressConfig, matrix: Matrix) -> Estimate:
    from simulator.transcript import case_context

    calls = {"member": 0, "tracker": 0, "supporter": 0, "judge": 0, "check": 0}
    prompt = completion = 0
    panel = max(1, len(config.judges))
    per_turn = judging_mode(config.judges or [config.model_for("judge") or ""], config.per_intervention)
    perts = {p.name: p for p in matrix.perturbations}
    contexts = {c.id: len(case_context(c)) // 4 for c in matrix.cases}
    for s in matrix.specs:
        t = s.config.max_turns
        ctx = contexts.get(s.case.id, 900)
        sup_calls, share = _supporter_calls(s.supporter, t)
        turns_total = t * (1 + share)
        avg_transcript = int(turns_total / 2 * _TURN_TOKENS)
        tracker = 1 if config.tracker_every == 0 else t // config.tracker_every + (1 if t % config.tracker_every else 0)
        calls["member"] += 2 * t
        calls["tracker"] += tracker
        calls["supporter"] += sup_calls
        prompt += 2 * t * (ctx + avg_transcript + _INSTR["member"])
        prompt += tracker * (ctx + avg_transcript + _INSTR["tracker"])
        prompt += sup_calls * (ctx + avg_transcript + _INSTR["supporter"])
        completion += t * _OUT["member"] + tracker * _OUT["tracker"] + sup_calls * _OUT["supporter"]
        full = ctx + int(turns_total * _TURN_TOKENS)
        interventions = round(t * share)
        if config.judge:
            n = panel * ((interventions + 1) if per_turn else 1)
            calls["judge"] += n
            prompt += n * (full + _INSTR["judge"])
            completion += panel * (interventions * 5 + 6) * _OUT["judge_entry"]
        p = perts.get(s.perturbation or "")
        if p is not None and p.inject is not None and not p.check.expect:  # was the stressor said? (delivery)
            calls["check"] += 1
            prompt += ctx + avg_transcript + _INSTR["check"]
            completion += _OUT["delivery"]
        if p is not None and p.check.rubric and share > 0:
            calls["check"] += 1
            prompt += full + _INSTR["check"]
            completion += _OUT["check"]
        if p is not None and p.check.judge_probe and config.judge:
            calls["judge"] += panel
            prompt += panel * (full + _INSTR["judge"])
            completion += panel * (interventions * 5 + 6) * _OUT["judge_entry"]
    models = {config.model_for(r) for r in MODEL_ROLES} | set(config.judges)
    models |= {s for s in config.supporters if "/" in s and not s.startswith("http")}
    local = all(m is None or is_local(m) for m in models)
    by_sup: dict[str, int] = {}
    by_pert: dict[str, int] = {}
    for s in matrix.specs:
        by_sup[s.supporter] = by_sup.get(s.supporter, 0) + 1
        by_pert[s.perturbation or BASELINE] = by_pert.get(s.perturbation or BASELINE, 0) + 1
    return Estimate(
        sessions=len(matrix.specs),
        by_supporter=by_sup,
        by_perturbation=by_pert,
        skipped=matrix.skipped,
        calls=calls,
        prompt_tokens=prompt,
        completion_tokens=completion,
        local_minutes=round((prompt / LOCAL_PROMPT_TOK_S + completion / LOCAL_GEN_TOK_S) / 60, 1) if local else None,
        plays_at=plays_at(matrix),
    )


# -- running -----------------------------------------------------------------------------------------------------


@dataclass
class StressSummary:
    run: RunSummary
    judged: int = 0
    checked: int = 0
    errors: dict[str, str] = field(default_factory=dict)  # session id -> judge/check error


def _post_session(
    config: StressConfig,
    perts: dict[str, Perturbation],
    client: ModelClient,
    panel: list[str],
    check_model: str,
    rubric_path: Path | None,
    on_judged: Callable[[Any], None] | None,
    on_checked: Callable[[Any], None] | None,
    summary: StressSummary,
):
    """The hook that judges a completed session and runs its perturbation's check (each skipped when done)."""
    from judges import (
        check_session,
        judge_session,
        judgment_path,
        load_rubric,
        read_check,
        read_judgment,
        write_check,
        write_judgment,
    )

    rubric = load_rubric(rubric_path) if config.judge or any(p.check.judge_probe for p in perts.values()) else None

    async def hook(record: SessionRecord, folder: RunFolder) -> None:
        p = perts.get(record.perturbation or "")
        if p is not None and p.inject is not None and record.delivery is None:
            record = await _record_delivery(record, p, client, check_model, folder)
        judgment = (
            read_judgment(folder, record.session_id) if judgment_path(folder, record.session_id).is_file() else None
        )
        if config.judge and judgment is None:
            judgment = await judge_session(record, client, panel, rubric, config.per_intervention)
            write_judgment(folder, judgment)
            summary.judged += 1
            if on_judged:
                on_judged(judgment)
        if p is not None and read_check(folder, record.session_id) is None:
            result = await check_session(
                record,
                p,
                client,
                check_model,
                judgment=judgment,
                panel=panel if config.judge else (),
                rubric=rubric,
                per_intervention=config.per_intervention,
            )
            write_check(folder, result)
            summary.checked += 1
            if on_checked:
                on_checked(result)

    return hook


async def _record_delivery(
    record: SessionRecord, p: Perturbation, client: ModelClient, check_model: str, folder: RunFolder
) -> SessionRecord:
    """Decide whether the directed member said the stressor and save the verdict (and a `stressor_not_said`
    simulator fault) on the session record; a model failure leaves it undecided (the check records the error)."""
    from judges.stress import verify_delivery, with_delivery
    from simulator.llm.types import ModelError
    from simulator.perturbations import plan_for

    plan = plan_for(p, record.case, record.max_turns, session_applied=True, strict=False)
    try:
        delivery = await verify_delivery(record, p, plan, client, check_model)
    except ModelError:
        return record
    record = with_delivery(record, delivery)
    folder.write_session(record, durable=True)
    return record


async def run_stress(
    config: StressConfig,
    matrix: Matrix,
    client: ModelClient,
    out_dir: str | Path,
    *,
    base: Path,
    concurrency: int | None = None,
    executor: Literal["local", "ray"] = "local",
    ray_address: str | None = None,
    events: RunEvents | None = None,
    supporter_factory: Any = None,
    on_judged: Callable[[Any], None] | None = None,
    on_checked: Callable[[Any], None] | None = None,
) -> StressSummary:
    """Run the matrix into `out_dir`, judging and checking each completed session as it finishes; a rerun
    resumes: finished sessions, judgments and checks are skipped, failed sessions run again.

    One metered client serves the sessions, the judges and the checks, so the budget caps count them all."""
    from simulator.runner.session import MeteredClient

    client = client if isinstance(client, MeteredClient) else MeteredClient(client)
    panel = config.judges or [config.model_for("judge") or client.model_for("judge")]
    check_model = config.model_for("check") or panel[0]
    perts = {p.name: p for p in matrix.perturbations}
    rubric_path = None
    if config.rubric:
        rubric_path = Path(config.rubric) if Path(config.rubric).is_absolute() else base / config.rubric
    summary = StressSummary(run=RunSummary(folder=RunFolder(out_dir)))  # `run` is filled in when it ends
    hook = _post_session(config, perts, client, panel, check_model, rubric_path, on_judged, on_checked, summary)
    models = {r: (config.model_for(r) or client.model_for(r)) for r in ("member", "tracker", "judge")}  # type: ignore[arg-type]
    run = await run_specs(
        matrix.specs,
        client,
        out_dir,
        concurrency=concurrency or config.concurrency,
        executor=executor,
        ray_address=ray_address,
        budget=config.budget,
        manifest=stress_manifest(config, matrix),
        events=events,
        judge_hook=hook,
        supporter_factory=supporter_factory,
        models=models,
    )
    summary.run = run
    summary.errors.update(run.judge_errors)
    if run.stopped_by is None:  # sessions judged earlier but never checked (a kill between the two)
        from judges import read_check
        from simulator.llm.types import ModelError

        for spec in matrix.specs:
            if spec.perturbation is None or spec.session_id in summary.errors:
                continue
            if run.folder.status(spec.session_id) != SessionStatus.COMPLETED:
                continue
            if read_check(run.folder, spec.session_id) is None:
                try:
                    await hook(run.folder.load_session(spec.session_id), run.folder)
                except Exception as err:  # noqa: BLE001 - recorded with its reason, the rest goes on
                    reason = err.reason if isinstance(err, ModelError) else f"{type(err).__name__}: {err}"
                    summary.errors[spec.session_id] = reason
    return summary


def check_rows(folder: RunFolder, session_ids: Sequence[str]) -> list[Any]:
    """Pass rates and pass^k per supporter x perturbation over these sessions (judges.stress.PerturbationBoard):
    sessions with a simulator fault are left out of them and counted."""
    from judges import PerturbationBoard, faulted, read_check, read_judgment
    from simulator.runfolder import RunFolderError

    board = PerturbationBoard()
    for sid in session_ids:
        try:
            record = folder.load_session(sid)
        except (RunFolderError, FileNotFoundError):
            continue
        fault = None
        if record.status == SessionStatus.COMPLETED:
            fault = faulted(record, read_judgment(folder, sid))
        board.add(record, read_check(folder, sid), record.supporter_knows, fault)
    return board.rows()
