"""The layers of DESIGN.md hold: nothing imports from a layer above it, not even inside a function.

1 personas  <  2 simulator core  <  3 judges  <  4 app (simulator.cli, simulator.runner, simulator.serve,
    simulator.integrations, simulator.api)

`simulator.api` is the Python front door (DESIGN names front doors the app layer); the `simulator` package
re-exports it, lazily, so that one edge, from `simulator/__init__.py` to `simulator.api`, is the only one allowed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
APP = ("simulator.cli", "simulator.runner", "simulator.serve", "simulator.integrations", "simulator.api")
FRONT_DOOR = ("simulator/__init__.py", "simulator.api")  # the package re-exports its front door


def layer_of(module: str) -> int | None:
    if module == "personas" or module.startswith("personas."):
        return 1
    if module.startswith(APP) or module in APP:
        return 4
    if module == "simulator" or module.startswith("simulator."):
        return 2
    if module == "judges" or module.startswith("judges."):
        return 3
    return None  # third-party or stdlib


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module an import statement names (top level, in functions, in TYPE_CHECKING blocks)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    own = module_name(path)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1] if node.level > 1 else base
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            out.append((node.lineno, target))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
            "import_module",
            "__import__",
        ):
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                out.append((node.lineno, node.args[0].value))
    return out


def sources() -> list[Path]:
    return sorted(p for pkg in ("personas", "simulator", "judges") for p in (ROOT / pkg).rglob("*.py"))


def test_there_are_sources_to_check():
    assert len(sources()) > 40


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_upward_imports(path: Path):
    own = layer_of(module_name(path))
    assert own is not None
    upward = [
        f"{path.relative_to(ROOT)}:{line} imports {target} (layer {layer_of(target)} > {own})"
        for line, target in imported_modules(path)
        if (layer_of(target) or 0) > own and (str(path.relative_to(ROOT)), target) != FRONT_DOOR
    ]
    assert not upward, "\n".join(upward)


def test_the_walker_sees_imports_inside_functions(tmp_path: Path):
    src = ROOT / "judges" / "_probe_for_layer_test.py"
    src.write_text("def f():\n    from simulator.runner.runs import run_sessions\n    return run_sessions\n")
    try:
        found = imported_modules(src)
    finally:
        src.unlink()
    assert (2, "simulator.runner.runs") in found
    assert layer_of("simulator.runner.runs") == 4 > layer_of("judges.scoring._judge") == 3


def _project_modules() -> set[str]:
    return {module_name(p) for p in sources()}


def _owner(target: str, modules: set[str]) -> str | None:
    """The project module an import names (`judges.scoring._judge.judge_session` -> `judges.scoring._judge`)."""
    while target and target not in modules:
        target = target.rpartition(".")[0]
    return target or None


def import_graph() -> dict[str, set[str]]:
    """Module -> project modules it imports, anywhere in the file. A module importing its own package's
    `__init__` (or an ancestor's) is left out: Python has that package half-built already, by design."""
    modules = _project_modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for path in sources():
        own = module_name(path)
        for _, target in imported_modules(path):
            dep = _owner(target, modules)
            if dep and dep != own and not own.startswith(dep + "."):
                graph[own].add(dep)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    import networkx as nx

    g = nx.DiGraph([(a, b) for a, deps in graph.items() for b in deps])
    return [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1]


def test_no_import_cycles_between_modules():
    found = cycles(import_graph())
    assert not found, "import cycles (each line is one set of modules that import each other):\n" + "\n".join(
        " <-> ".join(c) for c in found
    )


def test_no_import_cycles_between_judges_packages():
    """judges/ is arranged by concern (stats < scoring < stress, fidelity, validity, bench, ratings, export <
    boards < report); two of its packages that import each other are one concern split in two."""

    def package(m: str) -> str:
        parts = m.split(".")
        return ".".join(parts[:2]) if len(parts) > 2 or (len(parts) == 2 and not parts[1].startswith("_")) else m

    graph: dict[str, set[str]] = {}
    for mod, deps in import_graph().items():
        if mod.startswith("judges.") and mod != "judges":
            graph.setdefault(package(mod), set()).update(
                package(d) for d in deps if d.startswith("judges.") and package(d) != package(mod)
            )
    found = cycles(graph)
    assert not found, "\n".join(" <-> ".join(c) for c in found)


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_nothing_outside_the_cli_imports_it():
    """The commands only parse and print (issue 44): what the web app, the Inspect task or the library need from
    them (a call's progress line, the model client) lives in the library, and `simulator.cli` re-imports it. A
    module outside `simulator/cli/` that imports `simulator.cli` (even inside a function) is a command's private
    piece used as library."""
    outside = [p for p in sources() if not module_name(p).startswith("simulator.cli")]
    found = [
        f"{p.relative_to(ROOT)}:{line} imports {target}"
        for p in outside
        for line, target in imported_modules(p)
        if target == "simulator.cli" or target.startswith("simulator.cli.")
    ]
    assert not found, "\n".join(found)


def test_the_cli_check_sees_a_cli_import(tmp_path: Path):
    src = ROOT / "simulator" / "serve" / "_probe_for_cli_test.py"
    src.write_text("def f():\n    from simulator.cli._render import call_line\n    return call_line\n")
    try:
        found = imported_modules(src)
    finally:
        src.unlink()
    assert (2, "simulator.cli._render") in found
