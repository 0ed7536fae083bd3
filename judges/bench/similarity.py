"""Optional semantic similarity (the paper's BERTScore), only with a model already on disk.

Nothing is ever downloaded: the Hugging Face libraries are put in offline mode before import, and only a local
model folder (`--bertscore-model` / RESCUE_SIM_BERTSCORE_MODEL) is used. Without one, reports say so in words
(`NOT_CONFIGURED`) instead of printing a number.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

Similarity = Callable[[list[str], list[str]], list[float]]  # (candidates, references) -> F1 per pair

BERTSCORE_ENV = "RESCUE_SIM_BERTSCORE_MODEL"
NOT_CONFIGURED = "not computed (no offline model configured)"


def _layers(folder: Path) -> int | None:
    override = os.environ.get("RESCUE_SIM_BERTSCORE_LAYERS")
    if override:
        return int(override)
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return config.get("num_hidden_layers") or config.get("n_layers")


def offline_bertscore(model_dir: str | Path | None) -> tuple[Similarity | None, str]:
    """(similarity function or None, status text for the report)."""
    if not model_dir:
        return None, NOT_CONFIGURED
    folder = Path(model_dir)
    if not folder.is_dir():
        return None, f"not computed (offline model folder {folder} not found)"
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        import bert_score  # type: ignore[import-not-found]
    except ImportError:
        return None, "not computed (the bert-score package is not installed)"
    layers = _layers(folder)

    def similarity(candidates: list[str], references: list[str]) -> list[float]:
        if not candidates:
            return []
        _, _, f1 = bert_score.score(candidates, references, model_type=str(folder), num_layers=layers, verbose=False)
        return [float(x) for x in f1]

    return similarity, f"F1 with the offline model {folder.name}"
