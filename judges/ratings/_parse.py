"""Reading ratings files: Label Studio's JSON export, Argilla's records, CSV (long or the filled-in export) and
JSONL. Every rating keeps the line it came from, so problems can be reported where they are.

- Label Studio (`Export -> JSON`): a list of tasks, each `{"data": {"item_id": ...}, "annotations": [{"result":
  [{"from_name": <dimension>, "type": "choices", "value": {"choices": ["4"]}}], "completed_by": ...}]}`;
  cancelled annotations are left out. A choice reads as the number it starts with (the shipped config's aliases
  export the bare score; `4: Good fit` reads as 4 too). `rating` results (`value.rating`) are read as well.
- Argilla (`dataset.records.to_json(...)`): a list of `{"id": <item id>, "responses": {<dimension>: [{"value": 4,
  "user_id": ...}]}}`.
- CSV: `item_id,rater,dimension,value` (long), or the exported CSV filled in (`item_id`, `rater` and one column
  per dimension). Empty cells are no rating.
- JSONL: one rating per line (`item_id`, `rater`, `dimension`, `value`), or `item_id`, `rater`, `ratings: {...}`.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from personas.common.errors import Param, ParameterError

RATING_FORMATS = ("label-studio", "argilla", "csv", "jsonl")
EXPORT_COLUMNS = {"item_id", "rater", "unit", "pair", "position", "supporter", "case", "transcript", "focus"}


class RawRating(BaseModel):
    model_config = ConfigDict(extra="forbid")

    line: int
    item_id: str | None
    dimension: str
    rater: str
    value: Any


class Problem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    line: int
    message: str


class ParseResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: str
    ratings: list[RawRating]
    problems: list[Problem]


class RatingsFileError(ParameterError):
    """The file cannot be read at all (not found, not JSON/CSV, unknown layout)."""


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def json_list_with_lines(text: str, path: Path) -> list[tuple[int, Any]]:
    """The elements of a top-level JSON list, each with the line it starts on."""
    dec = json.JSONDecoder()
    i = len(text) - len(text.lstrip())
    if not text[i:].startswith("["):
        raise RatingsFileError(f"{path}: expected a JSON list (a Label Studio or Argilla export)")
    i += 1
    out: list[tuple[int, Any]] = []
    ws = re.compile(r"[\s,]*")
    while True:
        i = ws.match(text, i).end()
        if i >= len(text):
            raise RatingsFileError(f"{path}:{_line_of(text, i)}: the JSON list is not closed")
        if text[i] == "]":
            return out
        try:
            obj, end = dec.raw_decode(text, i)
        except json.JSONDecodeError as err:
            raise RatingsFileError(f"{path}:{err.lineno}: not valid JSON ({err.msg})") from None
        out.append((_line_of(text, i), obj))
        i = end


def detect_format(path: Path, text: str) -> str:
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix == ".jsonl":
        return "jsonl"
    head = text.lstrip()[:1]
    if head == "[":
        items = json_list_with_lines(text, path)
        first = next((obj for _, obj in items if isinstance(obj, dict)), None)
        if first is None:
            raise RatingsFileError(f"{path}: an empty list; nothing to import")
        if "annotations" in first or "data" in first:
            return "label-studio"
        if "responses" in first or "fields" in first:
            return "argilla"
        raise RatingsFileError(
            f"{path}: a JSON list that is neither Label Studio tasks (`data`, `annotations`) "
            "nor Argilla records (`id`, `responses`); give ",
            Param("fmt"),
        )
    if head == "{":
        return "jsonl"
    return "csv"


def _rater(value: Any) -> str:
    if isinstance(value, dict):
        for key in ("email", "username", "id"):
            if value.get(key) not in (None, ""):
                return str(value[key])
        return ""
    return "" if value is None else str(value)


def parse_label_studio(text: str, path: Path) -> ParseResult:
    ratings: list[RawRating] = []
    problems: list[Problem] = []
    for line, task in json_list_with_lines(text, path):
        if not isinstance(task, dict):
            problems.append(Problem(line=line, message="a task must be a JSON object"))
            continue
        data = task.get("data") if isinstance(task.get("data"), dict) else {}
        item = data.get("item_id")
        annotations = task.get("annotations", task.get("completions", []))
        if not isinstance(annotations, list):
            problems.append(Problem(line=line, message="`annotations` must be a list"))
            continue
        for ann in annotations:
            if not isinstance(ann, dict) or ann.get("was_cancelled"):
                continue
            rater = _rater(ann.get("completed_by"))
            for res in ann.get("result", []) or []:
                if not isinstance(res, dict):
                    continue
                value = res.get("value") or {}
                if res.get("type") == "choices" and isinstance(value.get("choices"), list):
                    choices = value["choices"]
                    if len(choices) != 1:
                        problems.append(
                            Problem(line=line, message=f"{res.get('from_name')}: expected one choice, got {choices}")
                        )
                        continue
                    raw = choices[0]
                elif res.get("type") == "rating" and "rating" in value:
                    raw = value["rating"]
                else:
                    continue
                ratings.append(
                    RawRating(line=line, item_id=item, dimension=str(res.get("from_name", "")), rater=rater, value=raw)
                )
    return ParseResult(format="label-studio", ratings=ratings, problems=problems)


def parse_argilla(text: str, path: Path) -> ParseResult:
    ratings: list[RawRating] = []
    problems: list[Problem] = []
    for line, rec in json_list_with_lines(text, path):
        if not isinstance(rec, dict):
            problems.append(Problem(line=line, message="a record must be a JSON object"))
            continue
        responses = rec.get("responses") or {}
        if not isinstance(responses, dict):
            problems.append(Problem(line=line, message="`responses` must map question names to lists"))
            continue
        for question, answers in responses.items():
            for ans in answers if isinstance(answers, list) else []:
                if not isinstance(ans, dict) or ans.get("status") in ("discarded", "draft"):
                    continue
                ratings.append(
                    RawRating(
                        line=line,
                        item_id=rec.get("id"),
                        dimension=str(question),
                        rater=_rater(ans.get("user_id")),
                        value=ans.get("value"),
                    )
                )
    return ParseResult(format="argilla", ratings=ratings, problems=problems)


def parse_csv(text: str, path: Path) -> ParseResult:
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise RatingsFileError(f"{path}: empty file; nothing to import") from None
    if "item_id" not in header or "rater" not in header:
        raise RatingsFileError(f"{path}:1: the header needs `item_id` and `rater` columns")
    long = "dimension" in header and "value" in header
    dims = [h for h in header if h not in EXPORT_COLUMNS] if not long else []
    if not long and not dims:
        raise RatingsFileError(f"{path}:1: no rating columns: give `dimension,value` or one column per dimension")
    ratings: list[RawRating] = []
    problems: list[Problem] = []
    start = reader.line_num + 1
    for row in reader:
        line = start
        start = reader.line_num + 1
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            problems.append(Problem(line=line, message=f"{len(row)} cells, the header has {len(header)}"))
            continue
        cells = dict(zip(header, row))
        base = {"line": line, "item_id": cells["item_id"].strip(), "rater": cells["rater"].strip()}
        if long:
            ratings.append(RawRating(**base, dimension=cells["dimension"].strip(), value=cells["value"].strip()))
        else:
            for d in dims:
                if cells[d].strip():
                    ratings.append(RawRating(**base, dimension=d, value=cells[d].strip()))
    return ParseResult(format="csv", ratings=ratings, problems=problems)


def parse_jsonl(text: str, path: Path) -> ParseResult:
    ratings: list[RawRating] = []
    problems: list[Problem] = []
    for n, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as err:
            problems.append(Problem(line=n, message=f"not valid JSON ({err.msg})"))
            continue
        if not isinstance(obj, dict):
            problems.append(Problem(line=n, message="each line must be a JSON object"))
            continue
        if obj.get("kind") in ("instructions", "item") and "ratings" not in obj and "value" not in obj:
            continue  # an unfilled line of the exported file
        base = {"line": n, "item_id": obj.get("item_id"), "rater": _rater(obj.get("rater"))}
        if isinstance(obj.get("ratings"), dict):
            for d, v in obj["ratings"].items():
                if v is not None and v != "":
                    ratings.append(RawRating(**base, dimension=str(d), value=v))
        elif "dimension" in obj and "value" in obj:
            ratings.append(RawRating(**base, dimension=str(obj["dimension"]), value=obj["value"]))
        else:
            problems.append(Problem(line=n, message="needs `dimension` and `value`, or `ratings: {dimension: value}`"))
    return ParseResult(format="jsonl", ratings=ratings, problems=problems)


PARSERS = {"label-studio": parse_label_studio, "argilla": parse_argilla, "csv": parse_csv, "jsonl": parse_jsonl}


def parse_ratings_file(path: str | Path, fmt: str | None = None) -> tuple[ParseResult, bytes]:
    """Parse a ratings file (format from `fmt`, or detected); returns the result and the file's bytes."""
    path = Path(path)
    if fmt is not None and fmt not in PARSERS:
        raise RatingsFileError(Param("fmt"), f" {fmt}: choose from {', '.join(RATING_FORMATS)}")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise RatingsFileError(f"{path}: no such file") from None
    except OSError as err:
        raise RatingsFileError(f"{path}: cannot read ({err.strerror})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise RatingsFileError(f"{path}: not UTF-8 text") from None
    fmt = fmt or detect_format(path, text)
    return PARSERS[fmt](text, path), data
