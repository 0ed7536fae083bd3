"""What a Ray cluster that already exists needs from the driver, and the check that it has it before any session.

A cluster's workers run in the cluster's environment, not the driver's: their own variables (API keys, endpoint
URLs) and their own installed rescue-sim, possibly another version or none. So, before a session is scheduled,
`preflight` runs one task on every alive node that makes the model-configuration check the local client makes
(`LiteLLMClient.check_environment`, which raises "missing API key") for each model a session calls, resolves each
model's endpoint as a call would, and reports the node's rescue-sim version and `package_data_digest`. Anything that
differs from the driver stops the run in one line naming the fix, before a single call is spent.

`RayOptions.env` forwards named variables from the driver through Ray's `runtime_env` (`env_vars`); their values go
to Ray and nowhere else (never the run folder, the terminal or an error message). `RayOptions.ship_code` sends the
driver's packages through `runtime_env` `py_modules`, for a cluster with another rescue-sim or none.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from personas.common.errors import Param, ParameterError, UserError

PACKAGES = ("personas", "simulator", "judges")  # what --ray-ship-code sends
DATA_DIRS = ("simulator/prompts", "personas/prompts", "judges/rubrics", "judges/prompts", "simulator/data")
NODES_FILE = "ray_nodes.jsonl"  # one line per session run on Ray: its id and the node, in the run folder
PREFLIGHT_TIMEOUT_S = 300.0  # a node that installs a shipped runtime_env first can take a while
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class RayOptions:
    """How to run on Ray: the cluster, the variables forwarded to its workers (names only), whether to ship the
    driver's code, and whether worker logs and tracebacks reach the terminal."""

    address: str | None = None
    env: tuple[str, ...] = ()
    ship_code: bool = False
    debug: bool = False


ENV = Param("env")  # `RayOptions.env`: the variables forwarded to the workers (stress's --ray-env)


def parse_env_names(text: str | Sequence[str] | None, source: str = ENV) -> tuple[str, ...]:
    """`OPENAI_API_KEY,OPENAI_API_BASE` (or a list of names) -> the names; a bad name is one line, led by `source`
    (by default the parameter `RayOptions.env`, which a command says as its flag)."""
    if not text:
        return ()
    parts = text.split(",") if isinstance(text, str) else [p for t in text for p in str(t).split(",")]
    names = [p.strip() for p in parts if p.strip()]
    for name in names:
        if not _ENV_NAME.match(name):
            raise ParameterError(
                source, f": {name!r} is not a variable name; list names like OPENAI_API_KEY, not values"
            )
    return tuple(dict.fromkeys(names))


def forwarded_env(names: Sequence[str], source: str = ENV) -> dict[str, str]:
    """The named variables' values from this process's environment; a missing one is one line (names only), led by
    `source` as in `parse_env_names`."""
    missing = [n for n in names if n not in os.environ]
    if missing:
        raise ParameterError(
            source, f": {', '.join(missing)} not set in this shell; set it here or drop it from the list"
        )
    return {n: os.environ[n] for n in names}


def package_dirs() -> dict[str, Path]:
    import judges
    import personas
    import simulator

    return {m.__name__: Path(m.__file__).resolve().parent for m in (personas, simulator, judges)}  # type: ignore[arg-type]


def package_data_digest() -> str:
    """Short hash of the package data that decides results: prompts, rubrics and ladder data (every file under
    `DATA_DIRS`, by path and bytes). Two machines with the same digest ask the models the same things."""
    roots = package_dirs()
    h = hashlib.sha256()
    for rel in DATA_DIRS:
        package, _, sub = rel.partition("/")
        folder = roots[package] / sub
        files = sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        for path in files:
            h.update(f"{rel}/{path.relative_to(folder).as_posix()}".encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def rescue_sim_version() -> str:
    try:
        return metadata.version("rescue-sim")
    except metadata.PackageNotFoundError:
        return "not installed"


def runtime_env(options: RayOptions) -> dict[str, Any]:
    """The `runtime_env` of every task and actor of the run: forwarded variables and, if asked, the code."""
    env: dict[str, Any] = {}
    if options.env:
        env["env_vars"] = forwarded_env(options.env)
    if options.ship_code:
        env["py_modules"] = [str(p) for p in package_dirs().values()]
    return env


# -- on a worker ---------------------------------------------------------------------------------------------------


def node_report(payload: tuple[str, Any], models: list[tuple[str, str]]) -> dict[str, Any]:
    """Run on a node: its id and address, rescue-sim version and data digest, and per (role, model) the
    configuration problem the client would raise at its first call (None when fine) and the endpoint it would use."""
    import ray

    from simulator.llm.types import ModelConfigError

    ctx = ray.get_runtime_context()
    report: dict[str, Any] = {
        "node": ctx.get_node_id(),
        "ip": ray.util.get_node_ip_address(),
        "version": rescue_sim_version(),
        "digest": package_data_digest(),
        "problems": [],
        "endpoints": {},
    }
    kind, value = payload
    if kind != "settings":  # a client handed over whole (a test fake) carries its configuration with it
        return report
    from simulator.llm.client import LiteLLMClient, ModelSettings

    client = LiteLLMClient(ModelSettings.model_validate(value).model_copy(update={"cache": False}))
    for role, model in models:
        try:
            client.check_environment(model)
        except ModelConfigError as err:
            report["problems"].append((role, model, str(err)))
        report["endpoints"][model] = client.endpoint(model)
    return report


# -- on the driver -------------------------------------------------------------------------------------------------


def session_models(models: dict[str, str], supporters: Sequence[str]) -> list[tuple[str, str]]:
    """(role, model) for every model a session calls on a worker: members, tracker and model supporters (judges
    and checks run on the driver)."""
    out = [("member", models["member"]), ("tracker", models["tracker"])]
    for s in dict.fromkeys(supporters):
        if "/" in s and "://" not in s and "#" not in s and ":" not in s.split("/")[0]:
            out.append(("supporter", s))
    return list(dict.fromkeys(out))


def _fix(provider: str, missing: Sequence[str], options: RayOptions) -> str:
    from simulator.llm.client import ENV_ENDPOINTS

    bases = ENV_ENDPOINTS.get(provider, (f"{provider.upper().replace('-', '_')}_API_BASE",))
    names = [*missing, *(b for b in bases if b in os.environ)]
    names = [n for n in dict.fromkeys(names) if n not in options.env]
    forward = ",".join((*options.env, *names))
    return f"forward it from this shell with --ray-env {forward} (or ray_env: in the config), or start the cluster with it set"


def check_reports(reports: list[dict[str, Any]], driver_client: Any, options: RayOptions) -> list[str]:
    """The first problem across the nodes' reports as a UserError; else one note per node (for the terminal)."""
    from simulator.llm.types import provider_of

    version, digest = rescue_sim_version(), package_data_digest()
    notes = []
    for r in reports:
        where = f"Ray node {r['ip']} ({r['node'][:8]})"
        if r["digest"] != digest or (r["version"] != version and not options.ship_code):
            fix = "install the driver's version there, or pass --ray-ship-code to send this rescue-sim to the workers"
            if options.ship_code:
                fix = "the shipped code did not take effect there; check the node's runtime_env log"
            raise UserError(
                f"{where}: rescue-sim {r['version']} with prompt/rubric data {r['digest']}, but this driver has "
                f"{version} with {digest}: its results would not be comparable; {fix}"
            )
        for role, model, message in r["problems"]:
            missing = re.search(r"missing API key; set (.+)$", message)
            if missing:
                keys = [k.strip() for k in missing.group(1).split(",")]
                raise UserError(
                    f"{where}: role {role}, model {model}: missing {', '.join(keys)} on the workers; "
                    + _fix(provider_of(model), keys, options)
                )
            raise UserError(f"{where}: role {role}: {message}")
        endpoint = getattr(driver_client, "endpoint", None)
        for model, theirs in r["endpoints"].items():
            if endpoint is not None and endpoint(model) != theirs:  # values compared, never printed
                raise UserError(
                    f"{where}: model {model}: the workers would call another endpoint than this driver "
                    f"({'its provider default' if theirs is None else 'one set in their environment'}); "
                    + _fix(provider_of(model), [], options)
                )
        notes.append(f"{where}: rescue-sim {r['version']}, data {r['digest']}, models configured")
    return notes


def preflight(
    ray: Any,
    env: dict[str, Any],
    payload: tuple[str, Any],
    models: list[tuple[str, str]],
    driver_client: Any,
    options: RayOptions,
) -> list[str]:
    """Run `node_report` on every alive node with CPUs (the ones sessions can land on) and check the reports."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    task = ray.remote(num_cpus=0, max_retries=0)(node_report)
    nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) > 0]
    if not nodes:
        raise UserError("the Ray cluster has no live node with CPUs; start one with `ray start --num-cpus N`")
    refs = [
        task.options(
            runtime_env=env or None, scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)
        ).remote(payload, models)
        for n in nodes
    ]
    reports = []
    for node, ref in zip(nodes, refs):
        where = f"Ray node {node.get('NodeManagerAddress', '?')} ({node['NodeID'][:8]})"
        try:
            reports.append(ray.get(ref, timeout=PREFLIGHT_TIMEOUT_S))
        except ray.exceptions.GetTimeoutError:
            raise UserError(f"{where}: the preflight check did not finish in {PREFLIGHT_TIMEOUT_S:g} s; is it busy?")
        except Exception as err:  # noqa: BLE001 - a node that cannot run our code at all (no rescue-sim, an import)
            cause = getattr(err, "cause", None) or err
            why = " ".join(str(cause).split())[:200]
            raise UserError(
                f"{where}: cannot run rescue-sim ({type(cause).__name__}: {why}); install the driver's version there "
                "or pass --ray-ship-code"
            ) from None
    return check_reports(reports, driver_client, options)


def record_node(folder_path: Path, session_id: str, node: str) -> None:
    """Append `{"session_id", "node"}` to the run folder's `ray_nodes.jsonl` in one write (a rerun's line
    supersedes an earlier one; a torn last line is skipped when read)."""
    import json

    line = (json.dumps({"session_id": session_id, "node": node}) + "\n").encode("utf-8")
    fd = os.open(folder_path / NODES_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read_nodes(folder_path: Path) -> dict[str, str]:
    """Session id -> the Ray node that ran its latest attempt (empty for a run that never used Ray)."""
    import json

    out: dict[str, str] = {}
    try:
        text = (folder_path / NODES_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        return out
    for line in text.splitlines():
        try:
            row = json.loads(line)
            out[row["session_id"]] = row["node"]
        except (ValueError, KeyError, TypeError):
            continue  # a line torn by a kill
    return out
