"""Benchmark prompts: the task text lives in `judges/bench/prompts/*.md`; this module only fills it in.

Layout, so that consecutive calls of one task share a prefix (llama.cpp and hosted providers cache it):
context = task text with its label list, then the session line, then the transcript window(s);
instructions = the short question(s). Transcript text is data (the model client wraps the context in <data>).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from pathlib import Path

from judges.bench.instance_format import Instance, Row, Task, ViewpointTriple
from personas.common.prompts import render_prompt
from personas.taxonomy import GROUP_TARGET_LABELS, patterns_for, strategies_for
from simulator.llm.types import Prompt

PROMPTS_DIR = Path(__file__).parent / "prompts"
ROW_CHAR_LIMIT = 300  # longer utterances are cut (with "…") to keep prompts short for small local models
SHORT_IDS = "abcdefghijklmnopqrstuvwxyz"


@functools.cache
def prompts_version() -> str:
    """Hash of every bench prompt file: part of the config hash, so edited prompts never resume old answers."""
    h = hashlib.sha256()
    for path in sorted(PROMPTS_DIR.glob("*.md")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:12]


def _render(name: str, **values: object) -> str:
    return render_prompt(name, PROMPTS_DIR, **values)


def format_row(row: Row) -> str:
    text = " ".join(row.text.split())
    if len(text) > ROW_CHAR_LIMIT:
        text = text[: ROW_CHAR_LIMIT - 1].rstrip() + "…"
    to = f" (to {', '.join(row.to)})" if row.to else ""
    return f"#{row.index} {row.speaker}{to}: {text}"


def transcript(inst: Instance) -> str:
    """The instance's rows, with a note on earlier rows cut by the context size."""
    if not inst.context:
        return "(no rows yet: the session is just starting)"
    first, last = inst.context[0].index, inst.context[-1].index
    cut = f"; {inst.omitted_rows} earlier rows not shown" if inst.omitted_rows else ""
    lines = [f"Transcript, rows {first}-{last}{cut}:", *(format_row(r) for r in inst.context)]
    return "\n".join(lines)


def _labels(defs: dict[str, str]) -> str:
    return "\n".join(f"- {label}: {text}" for label, text in defs.items())


def task_header(inst: Instance) -> str:
    """Task text for the instance's task and group (stable across a sample, mostly across a task)."""
    values: dict[str, object] = {}
    if inst.task is Task.RPP:
        values["labels"] = _labels(patterns_for(inst.group))
    elif inst.task is Task.SSP:
        values["labels"] = _labels(strategies_for(inst.group))
    elif inst.task is Task.STP:
        values["group_label"] = GROUP_TARGET_LABELS[inst.group]
        values["targets"] = ", ".join(inst.candidates)
    return _render(inst.task.value, **values)


def session_line(inst: Instance) -> str:
    return _render("session", Group=inst.group.title(), members=", ".join(inst.members))


def question(inst: Instance) -> str:
    # The last context row is the decision row for ITP/ER/VP; RPP/STP/SSP ask about the turn after it.
    row = inst.context[-1].index if inst.context else 0
    after = f"right after row #{row}" if row else "at the very start, before anyone has spoken"
    return _render(f"{inst.task.value}_ask", row=row, after=after, speaker=inst.speaker, target=inst.known_target)


def build_prompt(batch: Sequence[Instance]) -> tuple[Prompt, list[str]]:
    """One request for one or more instances of the same task and sample: (prompt, short ids in order).

    A single instance gets no id. Several get their own transcript window each (a shared transcript would show
    earlier instances rows from their future) and short ids a, b, c, ...
    """
    first = batch[0]
    head = [task_header(first), session_line(first)]
    if len(batch) == 1:
        return Prompt(context="\n\n".join([*head, transcript(first)]), instructions=question(first)), []
    if len(batch) > len(SHORT_IDS):
        raise ValueError(f"at most {len(SHORT_IDS)} instances per request")
    ids = list(SHORT_IDS[: len(batch)])
    blocks = [f"[Instance {i}]\n{transcript(inst)}" for i, inst in zip(ids, batch)]
    questions = "\n".join(f"{i}: {question(inst)}" for i, inst in zip(ids, batch))
    instructions = _render("batch", ids=", ".join(ids), questions=questions)
    return Prompt(context="\n\n".join([*head, *blocks]), instructions=instructions), ids


def format_viewpoints(triples: Sequence[ViewpointTriple]) -> str:
    return "\n".join(f"- {t.source} -> {t.target}: {t.viewpoint}" for t in triples) or "- (none)"


def er_judge_prompt(inst: Instance, predicted_emotion: str) -> Prompt:
    context = _render("judge_er", gold=inst.gold_emotion, predicted=predicted_emotion)
    return Prompt(context=context, instructions=_render("judge_er_ask"))


def vp_judge_prompt(inst: Instance, predicted: Sequence[ViewpointTriple]) -> Prompt:
    context = _render("judge_vp", gold=format_viewpoints(inst.gold_viewpoints), predicted=format_viewpoints(predicted))
    return Prompt(context=context, instructions=_render("judge_vp_ask"))


def prompt_chars(prompt: Prompt) -> int:
    return len(prompt.context) + len(prompt.instructions)
