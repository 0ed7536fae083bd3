"""What `rescue-sim run` wires before and around `run_sessions`: the supporter bound to the client, the run's
config, the models it will call (for the pre-check), and the run itself with failed sessions saved when a
configuration error stops it. The command only parses options and prints; this is the part a script can reuse.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from personas.common.errors import Param, ParameterError
from simulator.runner.runs import RunConfig

if TYPE_CHECKING:
    from personas.case import Case
    from simulator.llm.client import ModelSettings
    from simulator.llm.types import ModelClient
    from simulator.supporters import Supporter

RUN_ROLES = ("member", "tracker", "judge")


def run_supporter(spec: str, client: ModelClient, settings: ModelSettings) -> Supporter:
    """The supporter under test from its spec, its endpoint (for `URL#model`) bound in `settings.api_bases`;
    `human` is refused (a person plays through `rescue-sim play`)."""
    from simulator.supporters import HumanSupporter, parse_supporter_spec

    api_bases: dict[str, str] = {}
    supporter = parse_supporter_spec(spec, client, api_bases=api_bases)
    if isinstance(supporter, HumanSupporter):
        raise ParameterError(Param("supporter"), " human: use `rescue-sim play --case ID` to be the supporter yourself")
    settings.api_bases.update(api_bases)
    return supporter


def run_config(
    cases: Sequence[Case],
    spec: str,
    settings: ModelSettings,
    *,
    seeds: list[int],
    turns: int,
    tracker_every: int,
    judge: bool,
    judges: Sequence[str],
    supporter_knows: str,
) -> RunConfig:
    """The run's config: each role's model as `settings` binds it, and the judge panel (`judges`, else the judge
    role's model). `supporter_knows` must be one of `simulator.view.KNOWS_CHOICES`."""
    return RunConfig(
        cases=[c.id for c in cases],
        supporter=spec,
        models={r: settings.model_for(r) for r in RUN_ROLES},
        seeds=seeds,
        max_turns=turns,
        tracker_every=tracker_every,
        judge=judge,
        judges=list(judges) or [settings.model_for("judge")],
        supporter_knows=_knows(supporter_knows),
    )


def _knows(value: str) -> str:
    from simulator.view import KNOWS_CHOICES

    if value not in KNOWS_CHOICES:
        raise ParameterError(Param("supporter_knows"), f" {value!r}: use one of {', '.join(KNOWS_CHOICES)}")
    return value


def models_used(config: RunConfig, supporter: Supporter) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """The (role, model) pairs a run calls, for the pre-check, and how to name a model to a user (the redacted
    spec they typed for an endpoint, as `URL#model`)."""
    from simulator.redact import redact
    from simulator.supporters import FreeTextSupporter, ModelSupporter

    uses = [("supporter", supporter.model)] if isinstance(supporter, ModelSupporter | FreeTextSupporter) else []
    uses += [(r, config.models[r]) for r in ("member", "tracker")]
    uses += [("judge", j) for j in config.judges] if config.judge else []
    labels = {supporter.model: redact(config.supporter)} if isinstance(supporter, FreeTextSupporter) else {}
    return uses, labels


__all__ = ["RUN_ROLES", "models_used", "run_config", "run_supporter"]
