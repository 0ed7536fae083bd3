"""The front door for Python users: bind models, load cases, run, judge and stress-test sessions, rank them.

Every name here is a few lines over the library the CLI uses too (`simulator.llm.settings`, `personas.library`,
`simulator.runner.runs`, `simulator.runner.stress`, `judges`), so a notebook and `rescue-sim run` produce the
same run folders, judgments and leaderboards. Objects in and out are the library's own pydantic records
(`Case`, `SessionRecord`, `SessionJudgment`, `StressConfig`, `Leaderboard`); the functions that call models are
async (`await` them in a notebook, `asyncio.run` them in a script). `import simulator` imports this module only
when a front-door name is first used, and litellm is imported on the first model call.

    import asyncio, simulator as rs
    client = rs.model_client("openai/gpt-4o-mini")
    summary = asyncio.run(rs.run(["dana-and-theo"], "scripted", client, "runs/demo", seeds=[0, 1]))
    print(rs.leaderboard("runs/demo").rows[0].supporter)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from judges import Leaderboard, SessionJudgment
from personas.case import Case
from simulator.records import SessionRecord
from simulator.runfolder import RunFolder
from simulator.runner.stress_config import StressConfig

if TYPE_CHECKING:
    from simulator.llm.types import ModelClient
    from simulator.runner.runs import RunSummary
    from simulator.runner.stress import StressSummary
    from simulator.supporters import Supporter

__all__ = [
    "Case",
    "Leaderboard",
    "RunFolder",
    "SessionJudgment",
    "SessionRecord",
    "StressConfig",
    "judge_run",
    "judge_session",
    "judged_sessions",
    "leaderboard",
    "load_case",
    "load_stress",
    "model_client",
    "open_run",
    "run",
    "stress",
    "supporter",
]

JudgeMode = Literal["checklist", "verdict"]


def model_client(model: str | None = None, *, roles: dict[str, str] | None = None, cache: bool = True) -> ModelClient:
    """The one model client every role calls through, bound the way `--model` binds it on the command line.

    `model` (else RESCUE_SIM_MODEL, else the embedded offline model) serves every role; `roles` overrides single
    roles (`{"judge": "openai/gpt-4o"}`). Calls are cached on disk unless `cache=False`, so a rerun is free."""
    from simulator.llm import settings

    return settings.make_client(settings.model_settings(model, roles=roles, no_cache=not cache))


def supporter(spec: str, client: ModelClient, *, seed: int = 0) -> Supporter:
    """The supporter under test from a `--supporter` spec (a model id, `URL#model`, `pkg.mod:function`, `silent`,
    `scripted`, a ladder rung such as `sides:M`), to check a spec or call a supporter yourself; `run` builds it
    from the spec. An endpoint URL is bound on `client` so its calls reach that server."""
    from simulator.supporters import parse_supporter_spec

    api_bases: dict[str, str] = {}
    built = parse_supporter_spec(spec, client, seed=seed, api_bases=api_bases)
    bound = getattr(getattr(client, "settings", None), "api_bases", None)
    if isinstance(bound, dict):
        bound.update(api_bases)
    return built


def load_case(ref: str | Path) -> Case:
    """A case card by id from the shipped library (`dana-and-theo`) or by path to your own YAML, validated: the
    couple or family a session simulates."""
    from personas.library import resolve_case

    return resolve_case(ref)


async def run(
    cases: Sequence[str | Case],
    supporter_spec: str,
    client: ModelClient,
    out_dir: str | Path | None = None,
    *,
    seeds: Sequence[int] = (0,),
    turns: int = 6,
    judge: bool = True,
    judges: Sequence[str] = (),
    judge_mode: JudgeMode = "checklist",
    concurrency: int = 1,
) -> RunSummary:
    """Run every case x seed session with one supporter into a run folder, judging each as it finishes (as
    `rescue-sim run`). Rerunning the same call resumes: finished sessions are skipped, failed ones run again.

    `out_dir` defaults to `runs/<case>-<supporter>-<hash>`; `judges` is a panel of judge models (default: the
    client's judge role). The summary lists finished and failed sessions and judging errors by session id."""
    from judges.scoring import judge_hook
    from personas.common.errors import Param
    from simulator.runner.runs import RunConfig, default_run_dir, run_sessions
    from simulator.supporters import HumanSupporter, SupporterSpecError

    loaded = [c if not isinstance(c, str | Path) else load_case(c) for c in cases]
    models = {r: client.model_for(r) for r in ("member", "tracker", "judge")}  # type: ignore[arg-type]
    panel = list(judges) or [models["judge"]]
    config = RunConfig(
        cases=[c.id for c in loaded],
        supporter=supporter_spec,
        models=models,
        seeds=list(seeds),
        max_turns=turns,
        judge=judge,
        judges=panel,
    )
    sup = supporter(supporter_spec, client)
    if isinstance(sup, HumanSupporter):
        raise SupporterSpecError(
            Param("supporter_spec"), " 'human': a person plays through `rescue-sim play`, not a run"
        )
    hook = judge_hook(client, panel, judge_mode) if judge else None
    out = out_dir or default_run_dir(config)
    return await run_sessions(config, loaded, client, sup, out, judge_hook=hook, concurrency=concurrency)


async def judge_session(
    record: SessionRecord,
    client: ModelClient,
    *,
    judges: Sequence[str] = (),
    judge_mode: JudgeMode = "checklist",
    rubric: str | Path | None = None,
) -> SessionJudgment:
    """Score one finished session with the rubric's dimensions (per intervention and per session), by a panel of
    judge models; failed judge calls are recorded in the judgment with their reason, never scored.

    `rubric` is a YAML file that extends the shipped rubric; `judge_mode` is `checklist` (yes/no questions
    weighted by the judge's probability of yes) or `verdict` (structured verdicts)."""
    from judges import judge_session as judge_one
    from judges import judging_mode, load_rubric

    panel = list(judges) or [client.model_for("judge")]
    return await judge_one(record, client, panel, load_rubric(rubric), judging_mode(panel), judge_mode=judge_mode)


async def judge_run(
    run_dir: str | Path,
    client: ModelClient,
    *,
    judges: Sequence[str] = (),
    judge_mode: JudgeMode = "checklist",
    again: bool = False,
) -> list[SessionJudgment]:
    """Judge every completed session of a run folder that has no judgment yet (all of them with `again`), one
    after another, writing each judgment beside its session: to judge a run made with `judge=False`, or with
    another judge model or mode."""
    from judges import write_judgment
    from simulator.records import SessionStatus

    folder = open_run(run_dir)
    done = []
    for record in folder.sessions():
        if record.status != SessionStatus.COMPLETED or (folder.has_judgment(record.session_id) and not again):
            continue
        judgment = await judge_session(record, client, judges=judges, judge_mode=judge_mode)
        write_judgment(folder, judgment)
        done.append(judgment)
    return done


def load_stress(path: str | Path) -> StressConfig:
    """A stress config (supporters x cases x perturbations x seeds x trials) read and validated from YAML; a
    config that cannot work is refused here, with the key and the fix, before any model is called."""
    from simulator.runner.stress_config import load_stress_config

    return load_stress_config(path)


async def stress(
    config: StressConfig | str | Path,
    client: ModelClient,
    out_dir: str | Path | None = None,
    *,
    concurrency: int | None = None,
) -> StressSummary:
    """Run a stress config's whole matrix into one run folder, judging each session and running its
    perturbation's behavioural check (as `rescue-sim stress`); a rerun resumes.

    A config given as a path reads its relative paths (cards, perturbations, rubric) from its folder; a
    `StressConfig` object reads them from the working directory."""
    from simulator.runner.stress import run_stress
    from simulator.runner.stress_config import build_matrix, default_out_dir

    if isinstance(config, str | Path):
        source: str | Path = Path(config)
        base, config = Path(config).resolve().parent, load_stress(config)
    else:
        source, base = "config", Path.cwd()
    matrix = build_matrix(config, base, source)
    out = out_dir or default_out_dir(config, matrix)
    return await run_stress(config, matrix, client, out, base=base, concurrency=concurrency)


def leaderboard(*run_dirs: str | Path, include_faults: bool = False) -> Leaderboard:
    """Supporters ranked over one or more run folders: means with 95% bootstrap CIs per judge dimension, pass^k
    per perturbation, critical-failure share (as `rescue-sim leaderboard`). Sessions whose simulated room
    malfunctioned are left out and listed, unless `include_faults`."""
    from judges import build_leaderboard

    return build_leaderboard(list(run_dirs), include_faults=include_faults)


def open_run(path: str | Path) -> RunFolder:
    """An existing run folder, to read its manifest, sessions and results (`.sessions()`, `.results()`,
    `.read_manifest()`); refused with one line when the folder holds no run."""
    from simulator.runfolder import RunFolderError

    folder = RunFolder(path)
    if not folder.exists():
        raise RunFolderError(f"{path}: not a run folder (no manifest.json)")
    return folder


def judged_sessions(run_dir: str | Path) -> Iterator[tuple[SessionRecord, SessionJudgment | None]]:
    """Each session of a run folder with its judgment (None when it was not judged), in session-id order: the
    loop to build your own tables and plots over a run."""
    from judges import read_judgment

    folder = open_run(run_dir)
    for record in folder.sessions():
        yield record, read_judgment(folder, record.session_id)
