"""The seed library shipped with the package, and lookup of cases by id or path."""

from __future__ import annotations

from pathlib import Path

from personas.case import CardError, Case, load_case

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
    """Validate card files and folders of cards; ids (file stems) must be unique across all of them.
    Raises the first problem found; `check_paths` reports all of them."""
    cases, errors = check_paths(paths)
    if errors:
        raise errors[0]
    return cases


def check_paths(paths: list[str | Path]) -> tuple[list[Case], list[CardError]]:
    """Validate every card under `paths` and collect every problem (one CardError per bad card, folder or
    duplicate id) instead of stopping at the first; the valid cards come back too."""
    files: list[Path] = []
    errors: list[CardError] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted([*p.glob("*.yaml"), *p.glob("*.yml")])
            if not found:
                errors.append(CardError(p, "", "folder holds no .yaml case cards"))
            files.extend(found)
        else:
            files.append(p)
    cases: list[Case] = []
    seen: dict[str, Path] = {}
    for f in files:
        try:
            case = load_case(f)
        except CardError as err:
            errors.extend(card_problems(f, err))
            continue
        if case.id in seen:
            errors.append(CardError(f, "id", f"duplicate case id {case.id!r} (also {seen[case.id]}); rename one file"))
            continue
        seen[case.id] = f
        cases.append(case)
    return cases, errors


class _OneError:
    """One of a ValidationError's errors, shaped as the card loader's formatter reads a whole error."""

    def __init__(self, error: dict):
        self._error = error

    def errors(self) -> list[dict]:
        return [self._error]


def card_problems(path: Path, first: CardError) -> list[CardError]:
    """Every problem pydantic finds in a card's fields, each as one CardError (file, field, fix), where loading it
    raised `first` (the loader stops at its first). A card whose fields are all valid has every consistency problem
    (members, viewpoints, risk flags) listed too: its validator collects them when asked to."""
    import yaml
    from pydantic import ValidationError

    from personas.case import _format_validation_error

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return [first]
    if not isinstance(data, dict) or data.get("id", path.stem) != path.stem:
        return [first]
    consistency: list[str] = []
    try:
        Case.model_validate({**data, "id": path.stem}, context={"problems": consistency})
    except ValidationError as err:
        problems = [CardError(path, *_format_validation_error(_OneError(e), data)) for e in err.errors()]
        return list({str(e): e for e in problems}.values()) or [first]
    found = [CardError(path, field, message) if message else CardError(path, "", field)
             for field, _, message in (line.partition(": ") for line in consistency)]  # fmt: skip
    return found or [first]
