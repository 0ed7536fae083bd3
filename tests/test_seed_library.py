"""The seed library's rules: enough couples and families, every pattern of each group, a large family, risk."""

from __future__ import annotations

from personas.library import load_library
from personas.taxonomy import patterns_for


def test_seed_library_rules():
    cases = load_library()
    couples = [c for c in cases if c.group == "couple"]
    families = [c for c in cases if c.group == "family"]
    assert len(cases) >= 16
    assert len(couples) >= 8 and len(families) >= 8
    assert {c.relation_pattern for c in couples} == set(patterns_for("couple"))
    assert {c.relation_pattern for c in families} == set(patterns_for("family"))
    assert any(len(c.members) >= 4 for c in families)
    assert sum(bool(c.risk_flags) for c in cases) >= 2
    assert all(c.provenance.source == "authored" for c in cases)  # RESCUE-derived cards are never shipped
