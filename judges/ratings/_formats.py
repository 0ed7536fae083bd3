"""Export formats for rater items: JSONL, CSV, Label Studio (tasks + labelling config) and Argilla (records +
settings). Each renders text only; `export_items` checks every text for leaks before writing any file.

- `jsonl`: line 1 is `{"kind": "instructions", ...}` (instructions and every dimension's scale anchors), then
  one `{"kind": "item", ...}` per item. `<name>.instructions.md` is written beside it.
- `csv`: one row per item with the transcript as text and an empty column per dimension (and `rater`) to fill
  in; `<name>.instructions.md` beside it holds the instructions and anchors. A filled-in copy imports back.
- `label-studio`: a JSON list of tasks (`{"data": {...}}`: `item_id`, `case`, `dialogue` as
  `[{"author", "text"}]` for the Paragraphs tag, `focus`) and `<name>.config.xml`: one single-choice group per
  dimension whose choices show the anchors and export the bare score (the choice alias).
- `argilla`: a JSON list of records as `Dataset.records.to_json` writes them (`id`, `fields`, `metadata`, ...)
  and `<name>.settings.json` as `Settings.to_json` writes it (text fields, one rating question per dimension,
  the guidelines).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path
from xml.sax.saxutils import quoteattr

from judges.ratings._blind import RaterItem
from judges.scoring._rubric import Dimension
from personas.common.prompts import render_prompt

FORMATS = ("jsonl", "csv", "label-studio", "argilla")
DATA_DIR = Path(__file__).parent / "data"


def sibling(out: Path, suffix: str) -> Path:
    """`runs/x/items.json` + `.key.json` -> `runs/x/items.key.json`."""
    return out.with_name(out.stem + suffix)


def dimensions_text(dims: Sequence[Dimension]) -> str:
    blocks = []
    for d in dims:
        anchors = "\n".join(f"- **{p}**: {d.anchors[p]}" for p in range(d.min or 0, (d.max or 0) + 1))
        blocks.append(f"### {d.id} ({d.min}-{d.max})\n\n{d.question}\n\n{anchors}")
    return "\n\n".join(blocks)


def instructions_text(items: Sequence[RaterItem], dims: Sequence[Dimension]) -> str:
    groups = sorted({i.case.group for i in items}) or ["couple"]
    units = {i.unit for i in items}
    if units == {"intervention"}:
        unit_text = (
            "Each item shows the turns before one supporter turn, marked `>>` (the focus turn): rate that turn "
            "only, in the light of what came before it."
        )
    else:
        unit_text = "Each item is a whole session: rate the supporter's work across it."
    return render_prompt(
        "instructions",
        DATA_DIR,
        count_text=f"{len(items)} item(s)",
        groups_text=" or ".join(groups),
        unit_text=unit_text,
        dimensions_text=dimensions_text(dims),
    )


def case_text(item: RaterItem) -> str:
    members = ", ".join(f"{m.name} ({m.role}{f', {m.age}' if m.age is not None else ''})" for m in item.case.members)
    return (
        f"{item.case.title} ({item.case.group}): {members}.\nSetting: {item.case.setting}\n"
        f"Presenting problem: {item.case.presenting_problem}"
    )


def turn_line(t) -> str:  # RaterTurn
    to = f" → {', '.join(t.to)}" if t.to else ""
    return f"{'>> ' if t.focus else ''}[{t.turn}] {t.speaker}{to}: {t.text}"


def transcript_text(item: RaterItem) -> str:
    return "\n".join(turn_line(t) for t in item.transcript)


def focus_text(item: RaterItem) -> str:
    focus = next((t for t in item.transcript if t.focus), None)
    return "" if focus is None else f"Rate turn {focus.turn}: {focus.speaker}: {focus.text}"


def _dim_dict(d: Dimension) -> dict:
    return {
        "id": d.id,
        "question": d.question,
        "min": d.min,
        "max": d.max,
        "anchors": {str(p): d.anchors[p] for p in sorted(d.anchors)},
    }


def render_jsonl(items: Sequence[RaterItem], dims: Sequence[Dimension], instructions: str) -> str:
    head = {"kind": "instructions", "text": instructions, "dimensions": [_dim_dict(d) for d in dims]}
    lines = [json.dumps(head, ensure_ascii=False)]
    lines += [json.dumps({"kind": "item", **i.model_dump(mode="json")}, ensure_ascii=False) for i in items]
    return "\n".join(lines) + "\n"


def render_csv(items: Sequence[RaterItem], dims: Sequence[Dimension]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(
        [
            "item_id",
            "rater",
            "unit",
            "pair",
            "position",
            "supporter",
            "case",
            "transcript",
            "focus",
            *[d.id for d in dims],
        ]
    )
    for i in items:
        w.writerow(
            [
                i.item_id,
                "",
                i.unit,
                i.pair or "",
                i.position or "",
                i.supporter,
                case_text(i),
                transcript_text(i),
                focus_text(i),
                *["" for _ in dims],
            ]
        )
    return buf.getvalue()


def label_studio_config(dims: Sequence[Dimension], instructions_summary: str) -> str:
    """The labelling config: the case, the dialogue, the focus turn, one required choice group per dimension."""
    lines = [
        "<View>",
        '  <Header value="How to rate"/>',
        f'  <Text name="guide" value={quoteattr(instructions_summary)}/>',
        '  <Header value="The case"/>',
        '  <Text name="case" value="$case"/>',
        '  <Header value="Transcript"/>',
        '  <Paragraphs name="dialogue" value="$dialogue" layout="dialogue" nameKey="author" textKey="text"/>',
        '  <Text name="focus" value="$focus"/>',
    ]
    for d in dims:
        lines.append(f"  <Header value={quoteattr(f'{d.id} ({d.min}-{d.max}): {d.question}')}/>")
        lines.append(f'  <Choices name="{d.id}" toName="dialogue" choice="single-radio" required="true">')
        for p in range(d.min or 0, (d.max or 0) + 1):
            lines.append(f'    <Choice value={quoteattr(f"{p}: {d.anchors[p]}")} alias="{p}"/>')
        lines.append("  </Choices>")
    lines.append("</View>")
    return "\n".join(lines) + "\n"


LS_SUMMARY = (
    "Rate each dimension on its scale, using the description of each point. Intervention items: rate only the "
    "focus turn (marked >>) in the light of the turns before it. Session items: rate the supporter's work across "
    "the whole session. The supporter appears only by an alias; items sharing a pair id show two supporters on "
    "the same case."
)


def label_studio_tasks(items: Sequence[RaterItem]) -> list[dict]:
    return [
        {
            "data": {
                "item_id": i.item_id,
                "unit": i.unit,
                "pair": i.pair or "",
                "supporter": i.supporter,
                "case": case_text(i),
                "dialogue": [
                    {"author": f"{'>> ' if t.focus else ''}[{t.turn}] {t.speaker}", "text": t.text}
                    for t in i.transcript
                ],
                "focus": focus_text(i) or "Rate the whole session.",
            }
        }
        for i in items
    ]


def render_label_studio(items: Sequence[RaterItem], dims: Sequence[Dimension]) -> tuple[str, str]:
    tasks = json.dumps(label_studio_tasks(items), ensure_ascii=False, indent=1)
    return tasks + "\n", label_studio_config(dims, LS_SUMMARY)


def argilla_settings(dims: Sequence[Dimension], guidelines: str) -> dict:
    def text_field(name: str, title: str, required: bool) -> dict:
        return {"name": name, "title": title, "required": required, "settings": {"type": "text", "use_markdown": False}}

    def terms(name: str, title: str) -> dict:
        return {
            "name": name,
            "title": title,
            "settings": {"type": "terms", "values": None},
            "visible_for_annotators": True,
        }

    return {
        "guidelines": guidelines,
        "questions": [
            {
                "name": d.id,
                "title": f"{d.id} ({d.min}-{d.max}): {d.question}",
                "description": "; ".join(f"{p}: {d.anchors[p]}" for p in range(d.min or 0, (d.max or 0) + 1)),
                "required": True,
                "settings": {"type": "rating", "options": [{"value": p} for p in range(d.min or 0, (d.max or 0) + 1)]},
            }
            for d in dims
        ],
        "fields": [
            text_field("case", "The case", True),
            text_field("transcript", "Transcript", True),
            text_field("focus", "Turn to rate", False),
        ],
        "vectors": [],
        "metadata": [terms("unit", "Unit"), terms("pair", "Pair"), terms("supporter", "Supporter")],
        "allow_extra_metadata": False,
    }


def argilla_records(items: Sequence[RaterItem]) -> list[dict]:
    out = []
    for i in items:
        fields = {"case": case_text(i), "transcript": transcript_text(i)}
        if focus_text(i):
            fields["focus"] = focus_text(i)
        metadata = {"unit": i.unit, "supporter": i.supporter}
        if i.pair:
            metadata["pair"] = f"{i.pair}{i.position or ''}"
        out.append(
            {
                "id": i.item_id,
                "fields": fields,
                "metadata": metadata,
                "suggestions": {},
                "responses": {},
                "vectors": {},
                "_server_id": None,
            }
        )
    return out


def render_argilla(items: Sequence[RaterItem], dims: Sequence[Dimension], guidelines: str) -> tuple[str, str]:
    records = json.dumps(argilla_records(items), ensure_ascii=False, indent=1) + "\n"
    settings = json.dumps(argilla_settings(dims, guidelines), ensure_ascii=False, indent=1) + "\n"
    return records, settings


def render(fmt: str, out: Path, items: Sequence[RaterItem], dims: Sequence[Dimension]) -> dict[Path, str]:
    """Every file of one export (the key excluded): path -> text."""
    instructions = instructions_text(items, dims)
    if fmt == "jsonl":
        return {out: render_jsonl(items, dims, instructions), sibling(out, ".instructions.md"): instructions + "\n"}
    if fmt == "csv":
        return {out: render_csv(items, dims), sibling(out, ".instructions.md"): instructions + "\n"}
    if fmt == "label-studio":
        tasks, config = render_label_studio(items, dims)
        return {out: tasks, sibling(out, ".config.xml"): config, sibling(out, ".instructions.md"): instructions + "\n"}
    if fmt == "argilla":
        records, settings = render_argilla(items, dims, instructions)
        return {out: records, sibling(out, ".settings.json"): settings}
    raise ValueError(f"unknown format {fmt!r}")
