"""Warmth and tension from RESCUE's attitude text (RESCUE annotates attitudes as phrases, not numbers)."""

from __future__ import annotations

import re

# ---- warmth and tension from attitude text --------------------------------------------------------------------

LEXICON_VERSION = "attitude-lexicon-v1"
# RESCUE annotates attitudes as short phrases ("blaming and resentful"), not numbers. Each word of the attitude
# is matched against these stems (longest stem wins); its (warmth, tension) deltas are added to the 5/5 start.
# `slightly`/`mildly`/`somewhat` halve the next matched word, `very`/`deeply`/`profoundly`/`extremely` scale it
# by 1.5. Results are clamped to 0-10 and rounded to 0.5. Deterministic, and deliberately coarse.
ATTITUDE_LEXICON: dict[str, tuple[float, float]] = {
    # hostility and blame: tension up, warmth down
    "blam": (-1.0, 2.0),
    "accus": (-1.0, 2.0),
    "resent": (-1.5, 2.0),
    "contempt": (-2.5, 2.5),
    "hostil": (-2.5, 2.5),
    "condemn": (-2.0, 2.5),
    "bitter": (-1.5, 2.0),
    "angr": (-1.0, 2.0),
    "anger": (-1.0, 2.0),
    "furious": (-1.5, 3.0),
    "critic": (-1.0, 1.5),
    "judg": (-1.0, 1.5),
    "demand": (-0.5, 1.5),
    "frustrat": (-0.5, 1.5),
    "irritat": (-0.5, 1.5),
    "annoy": (-0.5, 1.0),
    "control": (-0.5, 1.5),
    "superior": (-1.5, 1.5),
    "condescend": (-1.5, 1.5),
    "mock": (-1.5, 2.0),
    "sarcas": (-1.0, 1.5),
    "dismiss": (-1.5, 1.0),
    "invalid": (-1.5, 1.0),
    "rejecting": (-2.5, 1.5),
    "reject": (-2.0, 1.5),
    "defensiv": (-0.5, 1.5),
    "incredul": (-0.5, 1.0),
    "betray": (-1.5, 2.0),
    # mistrust and hurt: some tension, less warmth
    "suspic": (-1.0, 1.5),
    "mistrust": (-1.5, 1.5),
    "distrust": (-1.5, 1.5),
    "untrust": (-1.5, 1.5),
    "doubt": (-0.5, 1.0),
    "wary": (-1.0, 1.0),
    "guarded": (-1.0, 1.0),
    "disappoint": (-1.0, 1.0),
    "hurt": (-0.5, 1.0),
    "devalu": (-1.0, 1.0),
    "jealous": (-0.5, 1.5),
    "fearful": (-0.5, 1.0),
    # distance and giving up: warmth down
    "disconnect": (-2.0, 0.5),
    "withdraw": (-1.5, 0.5),
    "distant": (-2.0, 0.0),
    "detached": (-2.0, 0.0),
    "cold": (-2.0, 0.5),
    "indifferen": (-2.5, 0.0),
    "avoid": (-1.0, 0.5),
    "resign": (-1.0, 0.0),
    "hopeless": (-2.0, 0.5),
    "despair": (-2.0, 1.0),
    "intellectualiz": (-1.0, 0.0),
    "analytical": (-0.5, 0.0),
    # warmth
    "affection": (2.5, -1.0),
    "apprecia": (2.0, -1.0),
    "hopeful": (1.5, -0.5),
    "understand": (1.5, -1.0),
    "lov": (2.5, -1.0),
    "warm": (2.0, -0.5),
    "support": (2.0, -0.5),
    "admir": (2.0, -0.5),
    "sympath": (2.0, -0.5),
    "respect": (1.5, -0.5),
    "encourag": (1.5, -0.5),
    "accept": (1.5, -1.0),
    "caring": (2.0, -0.5),
    "empath": (2.0, -0.5),
    "compassion": (2.0, -1.0),
    "tender": (2.0, -1.0),
    "grateful": (2.0, -1.0),
    "gratitude": (2.0, -1.0),
    "protect": (1.5, 0.0),
    "desir": (1.5, 0.0),
    "flirt": (2.0, -0.5),
    "trusting": (1.5, -1.0),
    "open": (1.0, -0.5),
    "curious": (1.0, -0.5),
    "concern": (1.0, 0.5),
    "seeking": (1.0, 0.0),
    "allian": (1.0, 0.0),
    "reassur": (1.5, -1.0),
    "forgiv": (2.0, -1.5),
    "apologetic": (1.0, -1.0),
    "remorse": (1.0, -0.5),
    "validat": (1.5, -1.0),
}
_SOFTEN = {"slightly": 0.5, "mildly": 0.5, "somewhat": 0.5, "a-bit": 0.5}
_STRENGTHEN = {"very": 1.5, "deeply": 1.5, "profoundly": 1.5, "extremely": 1.5, "intensely": 1.5}
_STEMS = sorted(ATTITUDE_LEXICON, key=len, reverse=True)


def warmth_tension(attitude: str) -> tuple[float, float]:
    """Warmth and tension (0-10) read from RESCUE attitude text with `ATTITUDE_LEXICON`; 5/5 when nothing matches.

    RESCUE has no numeric warmth or tension; this is our documented, deterministic approximation.
    """
    warmth, tension, scale = 5.0, 5.0, 1.0
    for word in re.findall(r"[a-z]+", attitude.lower()):
        if word in _SOFTEN or word in _STRENGTHEN:
            scale = _SOFTEN.get(word) or _STRENGTHEN[word]
            continue
        stem = next((s for s in _STEMS if word.startswith(s)), None)
        if stem is not None:
            dw, dt = ATTITUDE_LEXICON[stem]
            warmth, tension = warmth + scale * dw, tension + scale * dt
        scale = 1.0
    return _half_step(warmth), _half_step(tension)


def _half_step(x: float) -> float:
    return min(10.0, max(0.0, round(x * 2) / 2))
