"""The stress experiment a team writes, and the matrix it expands to.

`StressConfig` is the YAML (see the README, and `simulator/perturbations/examples/smoke.yaml`), read by
`load_stress_config` with one-line errors; `build_matrix` turns it into `SessionSpec`s, each perturbation applied
to its case and session config; `stress_manifest` and `default_out_dir` name what a run of it writes.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from personas.case import CardError, Case, load_case
from personas.common.errors import UserError
from personas.common.yamlfile import YamlFileError, load_yaml
from personas.library import load_library
from simulator.perturbations import (
    Perturbation,
    PerturbationError,
    applies_to,
    apply_perturbation,
    resolve_perturbation,
)
from simulator.runfolder import config_hash
from simulator.runner.runs import Budget
from simulator.runner.session import SessionSpec, make_session_id
from simulator.session_state import SessionConfig

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
    judge_mode: Literal["checklist", "verdict"] = Field(
        default="checklist",
        description="How the judges score: checklist items' answer probabilities, or structured verdicts.",
    )
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
    ray_env: list[str] = Field(
        default_factory=list,
        description="Variables forwarded from the driver to Ray workers (--executor ray); names only, never values.",
    )

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

    @field_validator("ray_env", mode="before")
    @classmethod
    def _env_names(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = v.split(",")
        if isinstance(v, list):
            from simulator.runner.ray_cluster import parse_env_names

            try:
                return list(parse_env_names([str(x) for x in v], source="ray_env"))
            except UserError as err:
                raise ValueError(str(err).removeprefix("ray_env: ")) from None
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


def config_error(path: Path, err: ValidationError) -> StressConfigError:
    """A StressConfig validation error as one line naming the source (a file, or the Inspect task's args), the
    key and the fix."""
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
        data = load_yaml(path)
    except YamlFileError as err:
        if err.kind == "missing":
            raise StressConfigError(f"{path}: no such config file; check the path") from None
        raise StressConfigError(f"{path}: {err.where}: not valid YAML ({err.problem})") from None
    if not isinstance(data, dict):
        raise StressConfigError(f"{path}: a stress config is a mapping of keys (supporters, cases, ...)")
    try:
        return StressConfig.model_validate(data)
    except ValidationError as err:
        raise config_error(path, err) from None


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


def unrecorded(config: StressConfig) -> set[str]:
    """Fields a run folder's manifest (and its hash) leaves out of the config: `judge_mode` when it is `verdict`,
    the mode of every run made before the field existed, so such a run resumes under `--judge-mode verdict` (an
    absent judge_mode reads as verdict, as in judgments); a checklist run records it."""
    return {"judge_mode"} if config.judge_mode == "verdict" else set()


def stress_manifest(config: StressConfig, matrix: Matrix) -> dict[str, Any]:
    """The manifest config: the experiment, each perturbation's full definition, and the session ids."""
    return {
        "kind": "stress",
        # ray_env changes where sessions run, not what they are: left out, so the folder and its hash stay the same
        "stress": config.model_dump(mode="json", exclude={"ray_env", *unrecorded(config)}),
        "perturbations": {p.name: p.model_dump(mode="json") for p in matrix.perturbations},
        "sessions": len(matrix.specs),
        "session_ids_hash": config_hash({"ids": [s.session_id for s in matrix.specs]}),
    }


def default_out_dir(config: StressConfig, matrix: Matrix, root: str | Path = "runs") -> Path:
    slug = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in config.name.lower())[:40]
    return Path(root) / f"stress-{slug}-{config_hash(stress_manifest(config, matrix))[:8]}"
