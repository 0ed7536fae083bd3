"""Relation graphs: who feels what, and how each member stands toward each other member, turn by turn.

A `RelationGraph` wraps a networkx `DiGraph`:

- nodes are members, with `emotion`, `intensity` (0-10), `role` and `generation`;
- a directed edge `A -> B` is how A stands toward B: `viewpoint`, `attitude`, `warmth` and `tension` (0-10);
- graph attributes hold the group (`couple` | `family`), the case id and the current relation `pattern`.

State changes arrive as partial `RelationUpdate`s (only the given values change, numbers are clamped to 0-10);
every update appends a `RelationSnapshot` to the history, so the history is the trajectory. One graph holds one
line of state: keep one graph per view (self-report, observer) to compare the insider and outsider views.

The queries (`most_distressed`, `conflict_pairs`, `coalitions`, `left_out`) read the current state only.
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import networkx as nx
from pydantic import Field, field_validator

from personas.common.records import Record
from personas.taxonomy import SCALE_MAX, SCALE_MIN, patterns_for

if TYPE_CHECKING:
    from personas.case import Case

GRAPH_SCHEMA_VERSION = 1
View = Literal["initial", "self_report", "observer"]
DEFAULT_WARMTH = 5.0  # an edge created by an update before anyone described it starts neutral
DEFAULT_TENSION = 5.0


def _clamp(value: float) -> float:
    # comparisons rather than min/max/isnan: it runs for every member and edge of every snapshot read back
    v = float(value)
    if v != v:
        raise ValueError("must be a number, got NaN")
    return SCALE_MIN if v < SCALE_MIN else SCALE_MAX if v > SCALE_MAX else v


class MemberState(Record):
    """One member's emotional state at a turn."""

    name: str = Field(description="Member name.")
    emotion: str = Field(description="Short emotion description, e.g. `hurt and defensive`.")
    intensity: float = Field(description="Emotion intensity 0-10; values outside are clamped.")

    @field_validator("intensity")
    @classmethod
    def _clamp_intensity(cls, v: float) -> float:
        return _clamp(v)


class EdgeState(Record):
    """How `source` stands toward `target` at a turn."""

    source: str
    target: str
    viewpoint: str = Field(description="What source thinks of target (RESCUE viewpoint).")
    attitude: str = Field(description="Source's attitude toward target (RESCUE attitude).")
    warmth: float = Field(description="0-10; values outside are clamped.")
    tension: float = Field(description="0-10; values outside are clamped.")

    @field_validator("warmth", "tension")
    @classmethod
    def _clamp_scales(cls, v: float) -> float:
        return _clamp(v)


class RelationSnapshot(Record):
    """The whole relation state after a turn, from one point of view."""

    turn: int = Field(description="Turn id the state belongs to; 0 is the case's initial state.")
    view: View = Field(description="`initial` (the case card), `self_report` (members) or `observer` (tracker).")
    pattern: str = Field(description="Dominant RESCUE relation pattern; `` means no dominant pattern.")
    members: list[MemberState]
    edges: list[EdgeState]


class EdgeUpdate(Record):
    """A partial change to one directed edge: only the values given change."""

    source: str
    target: str
    warmth: float | None = None
    tension: float | None = None
    viewpoint: str | None = None
    attitude: str | None = None

    @field_validator("warmth", "tension")
    @classmethod
    def _clamp_optional(cls, v: float | None) -> float | None:
        return None if v is None else _clamp(v)


class RelationUpdate(Record):
    """A partial change to the relation state at a turn: emotions of some members, some edges, maybe the pattern."""

    turn: int
    view: View
    pattern: str | None = Field(default=None, description="New pattern; None keeps the current one.")
    emotions: list[MemberState] = Field(default_factory=list)
    edges: list[EdgeUpdate] = Field(default_factory=list)


class Coalition(Record):
    """Two members warm to each other and both tense toward a third."""

    members: tuple[str, str]
    against: str
    cross_generational: bool = Field(description="True when the two allies belong to different generations.")


class _MemberMeta(Record):
    name: str
    role: str = "participant"
    generation: int = 0


class _GraphRecord(Record):
    """Serialised form of a RelationGraph: metadata, current state and full history."""

    schema_version: int = GRAPH_SCHEMA_VERSION
    case_id: str = ""
    group: str
    members: list[_MemberMeta]
    current: RelationSnapshot
    history: list[RelationSnapshot]


class RelationGraph:
    """A directed relation graph with a history of snapshots. Build it with `from_case` or `from_snapshot`."""

    def __init__(self, graph: nx.DiGraph, history: list[RelationSnapshot] | None = None):
        self.graph = graph
        self._history: list[RelationSnapshot] = list(history or [])

    # ---- construction -------------------------------------------------------------------------------------

    @classmethod
    def from_case(cls, case: Case) -> RelationGraph:
        """Nodes from members, edges from viewpoints, the case's pattern; records the `initial` snapshot at turn 0."""
        g = nx.DiGraph(group=case.group, case_id=case.id, pattern=case.relation_pattern)
        for m in case.members:
            g.add_node(
                m.name,
                emotion=m.baseline_emotion,
                intensity=_clamp(m.baseline_intensity),
                role=m.role,
                generation=m.generation,
            )
        for vp in case.viewpoints:
            g.add_edge(
                vp.source,
                vp.target,
                viewpoint=vp.viewpoint,
                attitude=vp.attitude,
                warmth=_clamp(vp.warmth),
                tension=_clamp(vp.tension),
            )
        rg = cls(g)
        rg._history.append(rg.snapshot(turn=0, view="initial"))
        return rg

    @classmethod
    def from_snapshot(
        cls,
        snapshot: RelationSnapshot,
        *,
        group: str,
        case_id: str = "",
        roles: dict[str, str] | None = None,
        generations: dict[str, int] | None = None,
        history: list[RelationSnapshot] | None = None,
    ) -> RelationGraph:
        """Rebuild a graph from stored state. `history` defaults to `[snapshot]`; roles default to `participant`."""
        roles, generations = roles or {}, generations or {}
        _check_pattern(snapshot.pattern, group)
        g = nx.DiGraph(group=group, case_id=case_id, pattern=snapshot.pattern)
        for m in snapshot.members:
            g.add_node(
                m.name,
                emotion=m.emotion,
                intensity=m.intensity,
                role=roles.get(m.name, "participant"),
                generation=generations.get(m.name, 0),
            )
        for name in [*roles, *generations]:
            if name not in g:
                raise ValueError(f"unknown member {name!r} in roles/generations; members are {', '.join(g.nodes)}")
        for e in snapshot.edges:
            for end in (e.source, e.target):
                if end not in g:
                    raise ValueError(f"unknown member {end!r} in edge {e.source} -> {e.target}")
            g.add_edge(e.source, e.target, **e.model_dump(exclude={"source", "target"}))
        return cls(g, history if history is not None else [snapshot])

    # ---- state --------------------------------------------------------------------------------------------

    @property
    def group(self) -> str:
        return self.graph.graph["group"]

    @property
    def case_id(self) -> str:
        return self.graph.graph.get("case_id", "")

    @property
    def pattern(self) -> str:
        return self.graph.graph["pattern"]

    @property
    def members(self) -> list[str]:
        return list(self.graph.nodes)

    @property
    def snapshots(self) -> list[RelationSnapshot]:
        """The history, oldest first (a copy)."""
        return list(self._history)

    def member_state(self, name: str) -> MemberState:
        self._check_member(name, "member")
        n = self.graph.nodes[name]
        return MemberState(name=name, emotion=n["emotion"], intensity=n["intensity"])

    def edge_state(self, source: str, target: str) -> EdgeState | None:
        """The edge source -> target, or None when nobody described it."""
        if not self.graph.has_edge(source, target):
            return None
        return EdgeState(source=source, target=target, **self.graph.edges[source, target])

    def snapshot(self, turn: int | None = None, view: View | None = None) -> RelationSnapshot:
        """The current state. Turn and view default to those of the latest snapshot (0 / `initial`)."""
        last = self._history[-1] if self._history else None
        return RelationSnapshot(
            turn=turn if turn is not None else (last.turn if last else 0),
            view=view or (last.view if last else "initial"),
            pattern=self.pattern,
            members=[self.member_state(n) for n in self.graph.nodes],
            edges=[self.edge_state(a, b) for a, b in self.graph.edges],  # type: ignore[misc]
        )

    def apply(self, update: RelationUpdate) -> RelationSnapshot:
        """Apply a partial update, append the resulting snapshot to the history and return it.

        The whole update is checked before anything changes: an unknown member or an invalid pattern raises
        ValueError naming it and leaves the graph as it was. An edge update for a pair nobody has described yet
        creates the edge, starting from neutral warmth/tension (5/5) and empty viewpoint/attitude.
        """
        for m in update.emotions:
            self._check_member(m.name, "emotions")
        for e in update.edges:
            self._check_member(e.source, "edges.source")
            self._check_member(e.target, "edges.target")
            if e.source == e.target:
                raise ValueError(f"edges: a member has no edge to themselves ({e.source})")
        if update.pattern is not None:
            _check_pattern(update.pattern, self.group)

        for m in update.emotions:
            self.graph.nodes[m.name].update(emotion=m.emotion, intensity=m.intensity)
        for e in update.edges:
            if not self.graph.has_edge(e.source, e.target):
                self.graph.add_edge(
                    e.source, e.target, viewpoint="", attitude="", warmth=DEFAULT_WARMTH, tension=DEFAULT_TENSION
                )
            changes = e.model_dump(exclude={"source", "target"}, exclude_none=True)
            self.graph.edges[e.source, e.target].update(changes)
        if update.pattern is not None:
            self.graph.graph["pattern"] = update.pattern
        snap = self.snapshot(turn=update.turn, view=update.view)
        self._history.append(snap)
        return snap

    # ---- queries ------------------------------------------------------------------------------------------

    def warmth(self, source: str, target: str) -> float | None:
        return self.graph.edges[source, target]["warmth"] if self.graph.has_edge(source, target) else None

    def tension(self, source: str, target: str) -> float:
        """Tension source -> target; 0 when the edge is absent (nobody described it)."""
        return self.graph.edges[source, target]["tension"] if self.graph.has_edge(source, target) else 0.0

    def incoming_tension(self, name: str) -> float:
        return sum(d["tension"] for _, _, d in self.graph.in_edges(name, data=True))

    def incoming_warmth(self, name: str) -> float | None:
        """Mean warmth of the edges into `name`; None when no edge points at them."""
        values = [d["warmth"] for _, _, d in self.graph.in_edges(name, data=True)]
        return sum(values) / len(values) if values else None

    def most_distressed(self) -> str:
        """The member with the highest intensity; ties go to more total incoming tension, then to the name (A-Z)."""
        return min(self.graph.nodes, key=lambda n: (-self.graph.nodes[n]["intensity"], -self.incoming_tension(n), n))

    def conflict_pairs(self, threshold: float = 6.0) -> list[tuple[str, str]]:
        """Unordered pairs in conflict, most tense first.

        A pair is in conflict when tension runs at least `threshold` both ways, or at least `threshold + 2` one
        way (a one-sided attack is still a conflict). A missing edge counts as tension 0. Each pair is given in
        member order; ties in combined tension keep member order.
        """
        found = []
        for a, b in combinations(self.graph.nodes, 2):
            ab, ba = self.tension(a, b), self.tension(b, a)
            if (ab >= threshold and ba >= threshold) or max(ab, ba) >= threshold + 2:
                found.append(((a, b), ab + ba))
        found.sort(key=lambda item: -item[1])  # stable: member order breaks ties
        return [pair for pair, _ in found]

    def coalitions(self, warmth_min: float = 6.0, tension_min: float = 6.0) -> list[Coalition]:
        """Pairs warm to each other (both ways >= warmth_min) who are both tense (>= tension_min) toward a third.

        Strongest first (sum of the two warmths and the two tensions); ties keep member order.
        """
        found = []
        for a, b in combinations(self.graph.nodes, 2):
            wab, wba = self.warmth(a, b), self.warmth(b, a)
            if wab is None or wba is None or wab < warmth_min or wba < warmth_min:
                continue
            for c in self.graph.nodes:
                if c in (a, b):
                    continue
                tac, tbc = self.tension(a, c), self.tension(b, c)
                if tac >= tension_min and tbc >= tension_min:
                    gen = self.graph.nodes
                    coalition = Coalition(
                        members=(a, b), against=c, cross_generational=gen[a]["generation"] != gen[b]["generation"]
                    )
                    found.append((coalition, wab + wba + tac + tbc))
        found.sort(key=lambda item: -item[1])
        return [c for c, _ in found]

    def cross_generational_coalitions(self, warmth_min: float = 6.0, tension_min: float = 6.0) -> list[Coalition]:
        """Coalitions whose two allies belong to different generations (SFT's cross-generational coalition)."""
        return [c for c in self.coalitions(warmth_min, tension_min) if c.cross_generational]

    def left_out(self, warmth_max: float = 4.0, margin: float = 1.5) -> list[str]:
        """Members the others are cool toward, least warmth first.

        A member's incoming warmth is the mean warmth of the edges pointing at them (members nobody has a
        described edge toward are not judged). A member is left out when that mean is below `warmth_max` and at
        least `margin` below the mean of all members' incoming warmth.
        """
        incoming = {n: w for n in self.graph.nodes if (w := self.incoming_warmth(n)) is not None}
        if not incoming:
            return []
        group_mean = sum(incoming.values()) / len(incoming)
        out = [n for n, w in incoming.items() if w < warmth_max and w <= group_mean - margin]
        return sorted(out, key=lambda n: (incoming[n], n))

    # ---- persistence --------------------------------------------------------------------------------------

    def _record(self) -> _GraphRecord:
        nodes = self.graph.nodes
        return _GraphRecord(
            case_id=self.case_id,
            group=self.group,
            members=[_MemberMeta(name=n, role=nodes[n]["role"], generation=nodes[n]["generation"]) for n in nodes],
            current=self.snapshot(),
            history=self._history,
        )

    def to_json(self, indent: int | None = None) -> str:
        """JSON of metadata, current state and the full history; `from_json` restores it exactly."""
        return self._record().model_dump_json(indent=indent)

    @classmethod
    def from_json(cls, text: str) -> RelationGraph:
        record = _GraphRecord.model_validate_json(text)
        if record.schema_version != GRAPH_SCHEMA_VERSION:
            raise ValueError(f"relation graph schema_version {record.schema_version} is not {GRAPH_SCHEMA_VERSION}")
        return cls.from_snapshot(
            record.current,
            group=record.group,
            case_id=record.case_id,
            roles={m.name: m.role for m in record.members},
            generations={m.name: m.generation for m in record.members},
            history=record.history,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RelationGraph) and self._record() == other._record()

    __hash__ = None  # type: ignore[assignment]

    # ---- drawing ------------------------------------------------------------------------------------------

    def draw_png(self, path: str | Path, title: str | None = None) -> Path:
        """Draw the current state as a PNG (matplotlib Agg; no pyplot, no global backend change).

        Left, the graph: node colour = distress (intensity), edge colour = tension, edge width = warmth; edges
        are curved so A -> B and B -> A both show, and each carries a numbered badge on its own curve, near its
        source. Right, the legend those numbers point into: one row per edge (from -> to, warmth, tension,
        attitude), then each member's emotion and the headline queries (ties named as ties).
        """
        from personas._graph_png import draw_relation_png

        headlines = (
            ("most distressed", most_distressed_text(self)),
            ("in conflict", ", ".join(f"{a} ↔ {b}" for a, b in self.conflict_pairs()) or "none"),
            ("left out", ", ".join(self.left_out()) or "none"),
        )
        heading = f"{title or self.case_id or 'relation graph'}\npattern: {self.pattern or '(no dominant pattern)'}"
        return draw_relation_png(self.graph, Path(path), heading, headlines)

    # ---- helpers ------------------------------------------------------------------------------------------

    def _check_member(self, name: str, where: str) -> None:
        if name not in self.graph:
            raise ValueError(f"{where}: unknown member {name!r}; members are {', '.join(self.graph.nodes)}")

    def __repr__(self) -> str:
        return f"RelationGraph(case_id={self.case_id!r}, members={self.members}, pattern={self.pattern!r})"


def _check_pattern(pattern: str, group: str) -> None:
    """A pattern must be a label of the group's taxonomy, or `` (no dominant pattern)."""
    allowed = patterns_for(group)
    if pattern != "" and pattern not in allowed:
        raise ValueError(f"pattern: {pattern!r} is not a {group} pattern; allowed: {', '.join(allowed)}")


def most_distressed_text(graph: RelationGraph) -> str:
    """`Minh (7/10)`, or with a tie `Minh and Vy (tied at 7/10)`: a tie is named, not broken silently."""
    top = max(graph.graph.nodes[n]["intensity"] for n in graph.graph.nodes)
    tied = [n for n in graph.graph.nodes if graph.graph.nodes[n]["intensity"] == top]
    if len(tied) == 1:
        return f"{tied[0]} ({top:g}/10)"
    return f"{', '.join(tied[:-1])} and {tied[-1]} (tied at {top:g}/10)"


def load_graph(path: str | Path) -> RelationGraph:
    """Read a graph written with `RelationGraph.to_json`."""
    return RelationGraph.from_json(Path(path).read_text(encoding="utf-8"))


__all__ = [
    "Coalition",
    "EdgeState",
    "EdgeUpdate",
    "MemberState",
    "RelationGraph",
    "RelationSnapshot",
    "RelationUpdate",
    "View",
    "load_graph",
    "most_distressed_text",
]
