"""The fake OpenAI server's replies: made up but valid, a pure function of the seed and the request.

When a request asks for structured output (an OpenAI `response_format` with a `json_schema`, or a JSON schema
spelled out in the prompt, as rescue-sim's chat profile does), the reply is a JSON instance of that schema, its
evidence fields quoting the prompt where the schema asks for quotes; otherwise a short line of speech. The server
(`simulator.testing.fake_openai`) adds latency, faults and usage around these.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from typing import Any

__all__ = ["instance_for_schema", "numbered_turns", "quotable_spans", "reply_for", "schema_of_request", "tokens_of"]

_WORDS = (
    "we keep going around in circles and nobody listens when I try to explain what happened last week "
    "it feels like every small thing turns into the same fight about respect time money and trust again"
).split()


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = defs[node["$ref"].rsplit("/", 1)[-1]]
    return node


def _text(rng: random.Random, node: dict[str, Any]) -> str:
    lo, hi = int(node.get("minLength", 0)), int(node.get("maxLength", 80))
    words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(2, 9)))
    words = words[: max(hi, 1)].strip()
    while len(words) < lo:
        words += " " + rng.choice(_WORDS)
    return words[:hi] if hi >= lo else words


_QUOTED = re.compile(r'"([^"\n]{8,})"')
_NUMBERED = re.compile(r'^\s*\[(\d+)\] [^:\n]+: "(.+)"\s*$', re.MULTILINE)


def numbered_turns(prompt: str) -> dict[int, str]:
    """Transcript lines `[n] Speaker (to X): "text"` (the judges' layout): turn number -> text."""
    return {int(n): text for n, text in _NUMBERED.findall(prompt) if text.split()}


def quotable_spans(prompt: str) -> list[str]:
    """Text a reply could quote: lines inside `<<<...` / `...>>>` delimited blocks, else double-quoted speech."""
    spans, inside = [], False
    for line in prompt.splitlines():
        if line.startswith("<<<"):
            inside = True
            continue
        if line.rstrip().endswith(">>>"):
            inside = False
            continue
        if inside and line.strip():
            spans.append(line.strip())
    return spans or _QUOTED.findall(prompt)


def _quote(rng: random.Random, spans: list[str], hi: int) -> str:
    words = rng.choice(spans).split()
    n = min(len(words), rng.randint(3, 6))
    start = rng.randint(0, len(words) - n)
    return " ".join(words[start : start + n])[:hi]


def _allowed_ints(node: dict[str, Any]) -> Any:
    if "const" in node:
        return lambda n: n == node["const"]
    if "enum" in node:
        return lambda n: n in node["enum"]
    lo, hi = node.get("minimum", float("-inf")), node.get("maximum", float("inf"))
    return lambda n: lo <= n <= hi


def _evidence_keys(props: dict[str, Any], defs: dict[str, Any]) -> tuple[str | None, str | None]:
    """The (quote, turn) property names of an evidence object: by name (`quote`/`q`, `turn`/`t`) or description."""

    def about(key: str, word: str, short: str) -> bool:
        node = _resolve(props[key], defs)
        return key.lower() == short or word in key.lower() or word in str(node.get("description", "")).lower()

    quote = next(
        (k for k in props if _resolve(props[k], defs).get("type") == "string" and about(k, "quote", "q")), None
    )
    turn = next((k for k in props if _resolve(props[k], defs).get("type") == "integer" and about(k, "turn", "t")), None)
    return quote, turn


def instance_for_schema(
    schema: dict[str, Any],
    rng: random.Random | None = None,
    *,
    quotable: list[str] = (),
    turns: dict[int, str] | None = None,
) -> Any:
    """A JSON value valid under `schema` (the subset pydantic emits: $ref/$defs, anyOf/oneOf/allOf, enum,
    const, objects with required properties, arrays with min/maxItems, bounded numbers and strings).

    String properties whose name contains `quote` are filled with words from `quotable` (see `quotable_spans`),
    so replies pass checks that a quote really occurs in the text it cites; an object with an integer `turn` and a
    `quote` cites one of `turns` (turn number -> text, see `numbered_turns`) that the schema allows."""
    rng = rng or random.Random(0)
    defs = {**schema.get("$defs", {}), **schema.get("definitions", {})}
    spans = [s for s in quotable if s.split()]

    def walk(node: dict[str, Any], name: str = "") -> Any:
        node = _resolve(node, defs)
        if "const" in node:
            return node["const"]
        if "enum" in node:
            return rng.choice(node["enum"])
        for key in ("anyOf", "oneOf"):
            if key in node:
                options = [o for o in node[key] if _resolve(o, defs).get("type") != "null"] or node[key]
                return walk(rng.choice(options))
        if "allOf" in node:
            merged: dict[str, Any] = {}
            for part in node["allOf"]:
                merged.update(_resolve(part, defs))
            return walk(merged)
        kind = node.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind == "object" or (kind is None and "properties" in node):
            props = node.get("properties", {})
            out = {k: walk(v, k) for k, v in props.items()}
            quote_key, turn_key = _evidence_keys(props, defs)
            if turns and quote_key and turn_key:
                ok = _allowed_ints(_resolve(props[turn_key], defs))
                choices = sorted(n for n in turns if ok(n))
                if choices:
                    n = rng.choice(choices)
                    hi = int(_resolve(props[quote_key], defs).get("maxLength", 200))
                    out[turn_key], out[quote_key] = n, _quote(rng, [turns[n]], hi)
            return out
        if kind == "array":
            lo = int(node.get("minItems", 0))
            hi = int(node.get("maxItems", max(lo, 3)))
            n = rng.randint(lo, max(lo, min(hi, lo + 2)))
            items = node.get("items", {})
            return [walk(items) for _ in range(n)]
        if kind == "integer":
            if "minimum" in node:
                lo = int(node["minimum"])
            elif "exclusiveMinimum" in node:
                lo = int(node["exclusiveMinimum"]) + 1
            else:
                lo = 0
            if "maximum" in node:
                hi = int(node["maximum"])
            elif "exclusiveMaximum" in node:
                hi = int(node["exclusiveMaximum"]) - 1
            else:
                hi = lo + 10
            return rng.randint(lo, max(lo, hi))
        if kind == "number":
            lo = float(node.get("minimum", 0.0))
            hi = float(node.get("maximum", lo + 10.0))
            return round(rng.uniform(lo, hi), 2)
        if kind == "boolean":
            return rng.random() < 0.7
        if kind == "null":
            return None
        if ("quote" in name.lower() or name == "q") and spans:
            return _quote(rng, spans, int(node.get("maxLength", 200)))
        return _text(rng, node)

    return walk(schema)


def schema_of_request(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a chat request asks for: `response_format`, else one spelled out after 'JSON schema'."""
    rf = body.get("response_format") or {}
    if rf.get("type") == "json_schema":
        return (rf.get("json_schema") or {}).get("schema")
    if rf.get("type") == "json_object" and isinstance(rf.get("schema"), dict):
        return rf["schema"]
    for message in reversed(body.get("messages") or []):
        content = message.get("content")
        if not isinstance(content, str):
            continue
        at = content.rfind("JSON schema")
        if at == -1:
            continue
        start = content.find("{", at)
        if start == -1:
            continue
        try:
            obj, _ = json.JSONDecoder().raw_decode(content[start:])
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            return obj
    return None


def reply_for(body: dict[str, Any], raw: bytes, seed: int) -> str:
    """The reply text for one request: a schema instance, or a line of speech (deterministic per request)."""
    rng = random.Random(hashlib.sha256(str(seed).encode() + b"\0" + raw).digest())
    schema = schema_of_request(body)
    if schema is not None:
        prompt = "\n".join(m.get("content") or "" for m in body.get("messages") or [] if isinstance(m, dict))
        return json.dumps(
            instance_for_schema(schema, rng, quotable=quotable_spans(prompt), turns=numbered_turns(prompt))
        )
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 14))).capitalize() + "."


def tokens_of(text: str) -> int:
    """The fake's token count for usage: a token per 4 characters, at least one."""
    return max(1, len(text) // 4)
