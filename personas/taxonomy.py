"""RESCUE's closed label sets, in our own words: the single source of truth for every label in rescue-sim.

Everything else imports labels from here (patterns, strategies, target kinds, risk kinds), so a label is
defined once and a typo anywhere is a validation error, not a silent new class.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

Group = Literal["couple", "family"]
GROUPS: tuple[Group, ...] = ("couple", "family")

# Relation patterns: the interaction structure that dominates a moment (about the relationship, not one person).
COUPLE_PATTERNS: dict[str, str] = {
    "pursue_withdraw": "One partner presses for contact or answers while the other backs away, deflects or goes quiet.",
    "attack_attack": "Both partners trade blame, criticism and counter-accusation, so the fight feeds itself.",
    "withdraw_withdraw": "Neither partner reaches for the other; both stay flat, minimal or avoid the core issue.",
    "repair_softening": "A negative loop starts to loosen: less defence, some vulnerability or reaching back, still fragile.",
    "constructive_alignment": "The partners hold a steady joint stance and work on the problem as a shared one.",
    "mixed_transition": "Two strong patterns compete, or the moment is a visible pivot between patterns.",
}
FAMILY_PATTERNS: dict[str, str] = {
    "escalation_conflict": "Two or more members push an open disagreement higher through blame, interruption or heat.",
    "pursue_withdraw": "One member pushes for engagement while another evades, goes silent or pulls out.",
    "mutual_disengagement": "The key members sidestep the central issue together, say little and stay flat.",
    "cross_generational_coalition": "Members of different generations ally in a way that sidelines or pressures another member.",
    "boundary_hierarchy_strain": "Blurred roles, shaky hierarchy or role reversal (a child drawn into adult matters) shape the exchange.",
    "repair_softening": "A rigid or hostile exchange starts to ease with some validation, apology or wish to reconnect.",
    "cooperative_family_alliance": "Several members coordinate steadily around shared understanding or joint problem solving.",
    "mixed_transition": "Several family dynamics are strongly present at once, or the moment is an evident pivot.",
}

# Support strategies: what a supporter turn is for (RESCUE labels therapist turns with these).
COUPLE_STRATEGIES: dict[str, str] = {
    "track": "Follow and name the live back-and-forth or recurring cycle so it becomes visible, without changing its meaning.",
    "reframe": "Recast a conflict from one person's fault into a shared relational or attachment pattern.",
    "evoke": "Draw a partner below anger or defence toward deeper feelings and needs: hurt, fear, shame, longing.",
    "enact": "Have one partner say a feeling, need or acknowledgement directly to the other in the room.",
    "join": "Help one partner's vulnerable experience be taken in and answered by the other.",
    "detach": "Help both step back from blame and look at their cycle together as a common problem.",
    "repair": "Steer toward mending a rupture: apology, clarified intentions, acknowledged injury, rebuilt trust.",
    "counterbalance": "Give voice, room or influence back to a partner who is being drowned out or dismissed.",
    "safeguard": "Shield a vulnerable partner from being flooded, humiliated or attacked; slow or stop a harmful exchange.",
    "goal_align": "Steer away from side fights and blame, back to a shared task or joint working frame.",
}
FAMILY_STRATEGIES: dict[str, str] = {
    "join": "Build rapport, trust and a working alliance with the family so members stay engaged.",
    "track": "Follow and name a recurring family process (escalation, triangulation, coalition) so the family sees it.",
    "counterbalance": "Bring a quieter, lower-power or marginalised member back into the conversation.",
    "enact": "Get members to talk to each other directly so the live pattern can be seen and reshaped.",
    "boundary": "Clarify or restructure roles, hierarchy, subsystems or generational lines.",
    "reframe": "Move a problem's meaning from one member's fault to a shared, systemic or externalised process.",
    "repair": "Support apology, acknowledgement of hurt and reconnection after a rupture.",
    "safeguard": "Protect a vulnerable member from scapegoating, attack, shame or overwhelm; slow or interrupt the exchange.",
}

PATTERNS: dict[Group, dict[str, str]] = {"couple": COUPLE_PATTERNS, "family": FAMILY_PATTERNS}
STRATEGIES: dict[Group, dict[str, str]] = {"couple": COUPLE_STRATEGIES, "family": FAMILY_STRATEGIES}

# The label that names the whole group as a support target.
GROUP_TARGET_LABELS: dict[Group, str] = {"couple": "Couple", "family": "Family"}
SUPPORTER_NAME = "Therapist"  # RESCUE's speaker name for the supporter; never a member.

# Patterns read as negative (conflict or disconnection) vs repair/alignment, for trajectory metrics.
NEGATIVE_PATTERNS = frozenset(
    {
        "pursue_withdraw",
        "attack_attack",
        "withdraw_withdraw",
        "escalation_conflict",
        "mutual_disengagement",
        "cross_generational_coalition",
        "boundary_hierarchy_strain",
    }
)
REPAIR_PATTERNS = frozenset({"repair_softening", "constructive_alignment", "cooperative_family_alliance"})

INTENSITY_MIN, INTENSITY_MAX = 0, 10  # emotion intensity scale (RESCUE §5)
SCALE_MIN, SCALE_MAX = 0.0, 10.0  # warmth and tension scale used by case cards and relation graphs


class TargetKind(StrEnum):
    """Who a supporter turn is addressed to."""

    INDIVIDUAL = "individual"
    SUBGROUP = "subgroup"
    WHOLE_GROUP = "whole_group"


class RiskKind(StrEnum):
    """Risk flags a case can carry, for stress tests and safety scoring."""

    SUICIDAL_IDEATION = "suicidal_ideation"
    SELF_HARM = "self_harm"
    COERCIVE_CONTROL = "coercive_control"
    INTIMATE_PARTNER_VIOLENCE = "intimate_partner_violence"
    CHILD_SAFETY = "child_safety"
    SUBSTANCE_CRISIS = "substance_crisis"


def patterns_for(group: str) -> dict[str, str]:
    """The relation patterns valid for a group, label -> definition."""
    return PATTERNS[_check_group(group)]


def strategies_for(group: str) -> dict[str, str]:
    """The support strategies valid for a group, label -> definition."""
    return STRATEGIES[_check_group(group)]


def group_target_label(group: str) -> str:
    """`Couple` or `Family`: the target label that means the whole group."""
    return GROUP_TARGET_LABELS[_check_group(group)]


def target_kind(targets: list[str], members: list[str], group: str) -> TargetKind:
    """Classify a target list: one member, a proper subset of members, or the whole group.

    A list naming every member, or the group label, is the whole group; two of three family members
    stay a subgroup (RESCUE data distinguishes these, its released scripts do not).
    """
    names = [t for t in targets if t and t != SUPPORTER_NAME]
    if not names:
        raise ValueError("a target list needs at least one member or the group label")
    if group_target_label(group) in names or set(names) >= set(members):
        return TargetKind.WHOLE_GROUP
    if len(set(names)) == 1:
        return TargetKind.INDIVIDUAL
    return TargetKind.SUBGROUP


def _check_group(group: str) -> Group:
    if group not in PATTERNS:
        raise ValueError(f"unknown group {group!r}; allowed: {', '.join(GROUPS)}")
    return group  # type: ignore[return-value]


# Member moves: what a member's turn does in the room, chosen before they speak (recorded with every member turn).
# Simulated clients drift into agreeing; naming the move makes resistance and compliance measurable per member.
MEMBER_MOVES: dict[str, str] = {
    "defend": "Justify or protect oneself against blame or a perceived charge.",
    "attack": "Blame, criticise or accuse another member.",
    "withdraw": "Go quiet, shut down, give minimal answers or pull out of the exchange.",
    "deflect": "Change the subject, joke, minimise or point elsewhere instead of engaging.",
    "pursue": "Press another member for contact, answers or change.",
    "complain": "Air a grievance or how hard things are, without a direct attack.",
    "test_counsellor": "Question the counsellor's neutrality, competence or the point of being here.",
    "disclose": "Reveal a feeling, fear, need or fact that had not been said.",
    "repair_attempt": "Reach toward another member: apologise, acknowledge, offer or ask to reconnect.",
    "soften": "Drop some defence and let in what was said; less heat, more openness.",
}
# Moves that lower the temperature: they need an earning cause in the supporter's last turn (see simulator.turn_checks).
SOFTENING_MOVES = frozenset({"repair_attempt", "soften"})
# RESCUE's client-row `utterance_type` read as the nearest member move (for comparing simulated rooms with real
# ones). Coarse by design: `recollection` (recounting what happened) and `reflection` (thinking aloud about
# oneself) both reveal something unsaid, so they map to `disclose`; `validation` (granting the other's point)
# is a softening move; `other` maps to nothing.
RESCUE_UTTERANCE_MOVES: dict[str, str] = {
    "accusation": "attack",
    "defense": "defend",
    "disclosure": "disclose",
    "request": "pursue",
    "recollection": "disclose",
    "reflection": "disclose",
    "repair": "repair_attempt",
    "withdrawal": "withdraw",
    "validation": "soften",
}
