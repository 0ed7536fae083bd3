"""What a JSON schema forces a reply to write next, so the embedded model need not choose it token by token.

A grammar-constrained reply spends many of its tokens on text the schema leaves no choice about: the braces,
the keys in their fixed order, the quote that opens a string, the rest of an enum value once its first letters
pick it (`"repair_` → `attempt"`). `JsonDraft` follows the reply character by character and says which literal
text must come next. The sampler feeds those tokens to llama.cpp in one decode, asking logits for the last one
only, which costs about half of feeding them one step at a time on two cores, and checks every one against the
grammar first, so a draft the grammar would not accept is dropped rather than written. Drafts are laid out as
the model writes JSON unprompted (`{"key": "value", "next": 3}`), so that what it writes between them is what
it would have written anyway.

It follows the layout llama.cpp's schema converter produces: required properties in schema order, then
optional ones (which are never drafted, since the model may leave them out).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

_SCALAR_CHARS = frozenset("0123456789-+.eEtruefalsn")


@dataclass
class _Object:
    schema: dict[str, Any]
    order: list[str]
    required: set[str]
    written: list[str] = field(default_factory=list)
    expect: str = "key"  # key, colon, value, comma_or_end
    key: str = ""
    open: bool = False  # other keys allowed (a dict): its end is never forced

    def unwritten(self) -> str | None:
        """The next property in the order the grammar writes them, or None when all are written."""
        return next((k for k in self.order if k not in self.written), None)

    def value_schema(self, key: str) -> dict[str, Any]:
        extra = self.schema.get("additionalProperties")
        return self.schema.get("properties", {}).get(key) or (extra if isinstance(extra, dict) else {})


@dataclass
class _Array:
    items: dict[str, Any]
    min_items: int
    max_items: int | None
    count: int = 0
    expect: str = "value"  # value, comma_or_end


class JsonDraft:
    """Follows a reply to one JSON schema (`feed`) and gives the text it must continue with (`forced`)."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self._defs = schema.get("$defs", {})
        self._root = self._resolve(schema)
        self._stack: list[_Object | _Array] = []
        self._mode = "value"  # value (expecting the root), none (between tokens), string, key, scalar, done
        self._pending: dict[str, Any] | None = self._root  # the schema of the value about to start
        self._buf = ""  # the string or scalar being written
        self._escape = False
        self._value_schema: dict[str, Any] = {}
        self.done = False  # the root value is complete

    def _resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in node:
            node = self._defs.get(node["$ref"].rsplit("/", 1)[-1], {})
        return node

    @property
    def in_string(self) -> bool:
        """Inside a string value (not a key)."""
        return self._mode == "string"

    def copy(self) -> JsonDraft:
        new = object.__new__(JsonDraft)
        new.__dict__.update(self.__dict__)
        new._stack = [
            replace(f, written=list(f.written)) if isinstance(f, _Object) else replace(f) for f in self._stack
        ]
        return new

    def chain(self, limit: int = 256) -> str:
        """All the text forced from here, up to where the model next has a choice (or the value ends)."""
        probe, text = self.copy(), ""
        while len(text) < limit and not probe.done and (step := probe.forced()):
            probe.feed(step)
            text += step
        return text

    def feed(self, text: str) -> None:
        for ch in text:
            self._char(ch)

    # -- following what was written -------------------------------------------------------------------------

    def _char(self, ch: str) -> None:
        if self.done:
            return
        if self._mode in ("string", "key"):
            if self._escape:
                self._escape = False
                self._buf += ch
            elif ch == "\\":
                self._escape = True
            elif ch == '"':
                self._end_string()
            else:
                self._buf += ch
            return
        if self._mode == "scalar":
            if ch in _SCALAR_CHARS:
                self._buf += ch
                return
            self._value_done()
        if ch.isspace():
            return
        top = self._stack[-1] if self._stack else None
        if self._pending is not None:  # a value starts here
            schema, self._pending = self._pending, None
            self._start_value(ch, schema)
        elif isinstance(top, _Object):
            if top.expect == "key" and ch == '"':
                self._mode, self._buf = "key", ""
            elif top.expect == "colon" and ch == ":":
                top.expect, self._pending = "value", self._resolve(top.value_schema(top.key))
            elif top.expect == "comma_or_end" and ch == ",":
                top.expect = "key"
            elif ch == "}" and top.expect in ("comma_or_end", "key"):
                self._stack.pop()
                self._value_done()
        elif isinstance(top, _Array):
            if ch == "]":
                self._stack.pop()
                self._value_done()
            elif top.expect == "comma_or_end" and ch == ",":
                top.expect, self._pending = "value", top.items
            elif top.expect == "value":
                self._start_value(ch, top.items)

    def _start_value(self, ch: str, schema: dict[str, Any]) -> None:
        if ch == "{":
            props = schema.get("properties", {})
            required = set(schema.get("required", []))
            order = [k for k in props if k in required] + [k for k in props if k not in required]
            extra = schema.get("additionalProperties") not in (None, False) or "patternProperties" in schema
            self._stack.append(_Object(schema=schema, order=order, required=required, open=extra))
        elif ch == "[":
            items = self._resolve(schema.get("items", {}))
            min_items = schema.get("minItems", 0)
            self._stack.append(_Array(items=items, min_items=min_items, max_items=schema.get("maxItems")))
            self._pending = items if min_items > 0 else None  # else it may close at once
        elif ch == '"':
            self._mode, self._buf, self._value_schema = "string", "", schema
        else:
            self._mode, self._buf, self._value_schema = "scalar", ch, schema

    def _end_string(self) -> None:
        if self._mode == "key":
            top = self._stack[-1]
            assert isinstance(top, _Object)
            top.key, top.expect = self._buf, "colon"
            top.written.append(self._buf)
            self._mode = "none"
            return
        self._value_done()

    def _value_done(self) -> None:
        self._mode, self._buf = "none", ""
        if not self._stack:
            self.done, self._mode = True, "done"
            return
        top = self._stack[-1]
        top.expect = "comma_or_end"
        if isinstance(top, _Array):
            top.count += 1

    # -- what must come next --------------------------------------------------------------------------------

    def forced(self) -> str:
        """The literal text the schema requires next ("" when the model has a choice, or the reply is done)."""
        if self.done:
            return ""
        if self._mode == "string":
            return self._enum_rest()
        if self._mode == "scalar":
            return self._scalar_end()
        if self._mode == "key":
            return self._key_rest()
        if self._pending is not None:
            return _opening(self._pending)
        top = self._stack[-1] if self._stack else None
        if isinstance(top, _Object):
            if top.expect == "colon":
                return ": " + self._opening_of(top, top.key)
            nxt = top.unwritten()
            if top.expect == "comma_or_end" and nxt is None and not top.open:
                return "}"
            if nxt is None or nxt not in top.required:
                return ""  # the model may close the object, or write an optional key
            if top.expect == "key":
                lead = " " if top.written else ""  # after a comma, as the model spaces it
                return f'{lead}"{nxt}": ' + self._opening_of(top, nxt)
            if top.expect == "comma_or_end":
                return f', "{nxt}": ' + self._opening_of(top, nxt)
            return ""
        if isinstance(top, _Array) and top.expect == "comma_or_end":
            if top.max_items is not None and top.count >= top.max_items:
                return "]"
            if top.count < top.min_items:
                return ", " + _opening(top.items)
        return ""

    def _key_rest(self) -> str:
        """The rest of a required key the model has begun (its first token is often `{"`)."""
        top = self._stack[-1]
        assert isinstance(top, _Object)
        nxt = top.unwritten()
        if nxt is None or nxt not in top.required or not nxt.startswith(self._buf):
            return ""
        return nxt[len(self._buf) :] + '": ' + self._opening_of(top, nxt)

    def _opening_of(self, top: _Object, key: str) -> str:
        return _opening(self._resolve(top.value_schema(key)))

    def _enum_rest(self) -> str:
        """An enum string's rest once the letters so far leave one value (or a longer common prefix)."""
        values = _string_choices(self._value_schema)
        if values is None:
            return ""
        left = [v for v in values if v.startswith(self._buf)]
        if not left:
            return ""
        if len(left) == 1:
            return left[0][len(self._buf) :] + '"'
        common = left[0]
        for v in left[1:]:
            while not v.startswith(common):
                common = common[:-1]
        return common[len(self._buf) :]

    def _scalar_end(self) -> str:
        """Nothing to add to a number, but an integer enum value that no other value extends is complete: what
        follows it is forced as if it had ended."""
        values = self._value_schema.get("enum")
        if values is None and "const" in self._value_schema:
            values = [self._value_schema["const"]]
        if not values or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            return ""
        texts = [str(v) for v in values]
        if self._buf not in texts or any(t != self._buf and t.startswith(self._buf) for t in texts):
            return ""
        ended = self.copy()
        ended._value_done()
        return ended.forced()


def _string_choices(schema: dict[str, Any]) -> list[str] | None:
    if "const" in schema and isinstance(schema["const"], str):
        return [schema["const"]]
    values = schema.get("enum")
    if values and all(isinstance(v, str) for v in values):
        return list(values)
    return None


def _opening(schema: dict[str, Any]) -> str:
    """How a value of this schema must begin: a whole one-value enum, or its first character when the type
    fixes it."""
    choices = _string_choices(schema)
    if choices is not None and len(choices) == 1:
        return f'"{choices[0]}"'
    if choices is not None:
        return '"'
    kind = schema.get("type")
    if kind == "string":
        return '"'
    if kind == "object":
        return "{"
    if kind == "array":
        return "["
    return ""
