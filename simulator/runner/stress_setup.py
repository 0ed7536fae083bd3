"""What `rescue-sim stress` and `rescue-sim sensitivity` wire before a matrix runs: the matrix built from a config,
its supporters checked, its size estimated, its run folder named, and the models it will call (for the pre-check).
The commands only parse options and print; a script gets the same checks from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from personas.common.errors import UserError

if TYPE_CHECKING:
    from simulator.llm.client import ModelSettings
    from simulator.runner.sensitivity_human import HumanSession
    from simulator.runner.sensitivity_ladder import Ladder
    from simulator.runner.stress_config import Matrix, StressConfig
    from simulator.runner.stress_estimate import Estimate


@dataclass(frozen=True)
class StressPlan:
    """A stress config made ready to run: its matrix, the folder its relative paths are read from, the estimate of
    its calls and tokens, and its run folder."""

    config: StressConfig
    matrix: Matrix
    base: Path
    estimate: Estimate
    out_dir: Path


def plan_stress(config: StressConfig, source: Path, out_dir: Path | None = None) -> StressPlan:
    """The matrix of `config` (read from `source`, whose folder its relative paths start from), every supporter spec
    checked (no model is called), the estimate and the run folder (`out_dir`, else `runs/stress-<name>-<hash>`)."""
    from simulator.runner.stress_config import build_matrix, default_out_dir
    from simulator.runner.stress_estimate import estimate

    base = source.resolve().parent
    matrix = build_matrix(config, base, source)
    check_supporters(config, source)
    est = estimate(config, matrix, base)
    return StressPlan(config, matrix, base, est, out_dir or default_out_dir(config, matrix))


@dataclass(frozen=True)
class SensitivityPlan:
    """The supporter ladder for one model made ready to run: the rungs chosen, the stress config and matrix they
    make (relative paths read from `base`, the working directory), and the run folder."""

    model: str
    ladder: Ladder
    config: StressConfig
    matrix: Matrix
    base: Path
    out_dir: Path

    @property
    def variants(self) -> list[str]:
        """The perturbations each case x seed is played under, `none` for unperturbed sessions."""
        return ["none"] * self.config.baseline + [p.name for p in self.matrix.perturbations]


def plan_sensitivity(
    model: str,
    *,
    rungs: list[str] | None,
    cases: list[str],
    seeds: str,
    perturbations: list[str],
    turns: int,
    room_model: str | None,
    judges: Sequence[str],
    tracker_every: int,
    concurrency: int,
    judge_mode: str,
    out_dir: Path | None = None,
) -> SensitivityPlan:
    """The ladder for `model` (`rungs`: rung ids, `["all"]`, else the ladder's default rungs) as a stress matrix over
    `cases` x `seeds` (`0,1` or `0-4`) x `perturbations` (`none`: unperturbed); the room is `room_model`. Every
    supporter spec is checked (no model is called); the run folder is `out_dir`, else
    `runs/sensitivity-<model>-<hash>`."""
    from simulator.runner.sensitivity import default_out_dir, sensitivity_config
    from simulator.runner.sensitivity_ladder import load_ladder
    from simulator.runner.stress_config import build_matrix

    full = load_ladder()
    ladder = full.subset([r.id for r in full.rungs] if rungs == ["all"] else rungs)
    config = sensitivity_config(
        model,
        ladder=ladder,
        cases=cases,
        seeds=seeds,
        perturbations=perturbations,
        turns=turns,
        room_model=room_model,
        judges=judges,
        tracker_every=tracker_every,
        concurrency=concurrency,
        judge_mode=judge_mode,  # type: ignore[arg-type]
    )
    base = Path.cwd()
    matrix = build_matrix(config, base, "sensitivity")
    check_supporters(config, Path("sensitivity"))
    return SensitivityPlan(model, ladder, config, matrix, base, out_dir or default_out_dir(model, config, matrix.specs))


def human_reference(plan: SensitivityPlan, settings: ModelSettings, dirs: list[str]) -> list[HumanSession]:
    """The sessions people played in `dirs`, read as the unranked `human` reference beside the ladder (judged with
    the ladder's judges and mode, else refused); none without `dirs`."""
    if not dirs:
        return []
    from simulator.runner.sensitivity_human import HUMAN, load_human_sessions

    config = plan.config
    panel = list(config.judges) or [settings.model_for("judge")]
    reference = plan.ladder.reference(HUMAN)
    return load_human_sessions(dirs, reference, judges=panel if config.judge else (), judge_mode=config.judge_mode)


def check_supporters(config: StressConfig, source: Path) -> None:
    """Every supporter spec has a known form and is not `human` (no model is called); an error names the entry
    (`supporters[1]`) of `source`."""
    from simulator.llm.fake import FakeModelClient
    from simulator.supporters import HumanSupporter, SupporterSpecError, parse_supporter_spec

    for i, spec in enumerate(config.supporters):
        try:
            sup = parse_supporter_spec(spec, FakeModelClient(), api_bases={})
        except SupporterSpecError as err:
            raise UserError(f"{source}: supporters[{i}]: {err.worded(lambda _: '').lstrip()}") from None
        if isinstance(sup, HumanSupporter):
            raise UserError(f"{source}: supporters[{i}]: human: stress runs need an automatic supporter; remove it")


def matrix_roles(config: StressConfig) -> dict[str, str | None]:
    """The config's model per role (member, tracker, judge, check; None: the default model), to bind a client."""
    return {r: config.model_for(r) for r in ("member", "tracker", "judge", "check")}


def stress_models(config: StressConfig, matrix: Matrix, settings: ModelSettings) -> list[tuple[str, str]]:
    """The (role, model) pairs a stress matrix calls, in model-id order, for the pre-check: the room, the judges
    when it judges, the check model when a perturbation has a rubric check, and supporters given as model ids."""
    used = {(r, settings.model_for(r)) for r in ("member", "tracker")}
    if config.judge:
        used |= {("judge", m) for m in config.judges or [settings.model_for("judge")]}
    if any(p.check.rubric for p in matrix.perturbations):
        used.add(("check", settings.model_for("check")))
    used |= {("supporter", s) for s in config.supporters if "/" in s and "://" not in s and ":" not in s.split("/")[0]}
    return _by_model(used, settings)


def sensitivity_models(
    model: str, config: StressConfig, matrix: Matrix, settings: ModelSettings
) -> list[tuple[str, str]]:
    """The (role, model) pairs a sensitivity ladder for `model` calls, in model-id order, for the pre-check."""
    used = {("supporter", model), ("member", settings.model_for("member")), ("tracker", settings.model_for("tracker"))}
    used |= {("judge", m) for m in config.judges or [settings.model_for("judge")]}
    if any(p.check.rubric for p in matrix.perturbations):
        used.add(("check", settings.model_for("check")))
    return _by_model(used, settings)


def _by_model(used: set[tuple[str, str]], settings: ModelSettings) -> list[tuple[str, str]]:
    """Sorted by model id (the order the models are checked and the first problem found), endpoints left out."""
    return sorted(((r, m) for r, m in used if m not in settings.api_bases), key=lambda u: (u[1], u[0]))


__all__ = [
    "SensitivityPlan",
    "StressPlan",
    "check_supporters",
    "human_reference",
    "matrix_roles",
    "plan_sensitivity",
    "plan_stress",
    "sensitivity_models",
    "stress_models",
]
