"""The seed library shipped with the package, and lookup of cases by id or path."""

from __future__ import annotations

from pathlib import Path

from personas.case import Case, CardError, load_case

LIBRARY_DIR = Path(__file__).parent / "cases"


def library_paths() -> list[Path]:
    """Card files of the shipped seed library, sorted by id."""
    return sorted(LIBRARY_DIR.glob("*.yaml"))


def load_library() -> list[Case]:
    """Every shipped case, validated."""
    return [load_case(p) for p in library_paths()]


def resolve_case(ref: str | Path) -> Case:
    """A case from a library id (`lena-and-omar`) or a path to a card file."""
    path = Path(ref)
    if path.suffix in (".yaml", ".yml") or path.exists():
        return load_case(path)
    candidate = LIBRARY_DIR / f"{ref}.yaml"
    if candidate.exists():
        return load_case(candidate)
    known = ", ".join(p.stem for p in library_paths()) or "(library is empty)"
    raise CardError(str(ref), "", f"no such case id or file; known ids: {known}")


def validate_paths(paths: list[str | Path]) -> list[Case]:
    """Validate card files and folders of cards; ids (file stems) must be unique across all of them."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted([*p.glob("*.yaml"), *p.glob("*.yml")])
            if not found:
                raise CardError(p, "", "folder holds no .yaml case cards")
            files.extend(found)
        else:
            files.append(p)
    cases: list[Case] = []
    seen: dict[str, Path] = {}
    for f in files:
        case = load_case(f)
        if case.id in seen:
            raise CardError(f, "id", f"duplicate case id {case.id!r} (also {seen[case.id]}); rename one file")
        seen[case.id] = f
        cases.append(case)
    return cases
