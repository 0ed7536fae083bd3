"""The layers of DESIGN.md hold: nothing imports from a layer above it, not even inside a function.

    1 personas  <  2 simulator core  <  3 judges  <  4 app (simulator.cli, simulator.runner)
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
APP = ("simulator.cli", "simulator.runner")


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
        if (layer_of(target) or 0) > own
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
    assert layer_of("simulator.runner.runs") == 4 > layer_of("judges._judge") == 3
