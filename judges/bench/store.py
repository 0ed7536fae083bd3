"""Per-instance results as JSONL, written as each request finishes, so a killed run loses nothing finished.

One line per finished (or failed) instance, keyed by instance id + config hash and carrying the instance's
fingerprint. A rerun with the same config skips instances whose latest line is `scored` or `missing` with the
same fingerprint; `failed` ones are tried again. Lines are appended (flushed and fsynced per request): a torn
last line from a killed process is skipped on reading, and the instance simply runs again.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from judges.bench.instance_format import Instance, Task
from personas.taxonomy import Group

RESULT_VERSION = 1
Status = Literal["scored", "missing", "failed"]
FINISHED: frozenset[str] = frozenset({"scored", "missing"})


class CallUsage(BaseModel):
    """Accounting of one model request (shared by every instance of a batch; count it once per request_id)."""

    model_config = ConfigDict(extra="forbid")

    request_id: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    latency_s: float = 0.0
    attempts: int = 1
    cache_hit: bool = False


class InstanceResult(BaseModel):
    """One line of the results JSONL: the outcome of one instance under one config."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = RESULT_VERSION
    instance_id: str
    config_hash: str
    fingerprint: str = Field(description="Instance.fingerprint() when it ran; a changed instance is rerun.")
    task: Task
    sample_id: str
    group: Group
    status: Status = Field(
        description="scored; missing = answered but nothing valid left (scored as wrong); "
        "failed = request or judge failed after retries (excluded, counted)."
    )
    stage: Literal["predict", "judge"] | None = Field(default=None, description="Where a failure happened.")
    failure: str | None = None
    prediction: dict[str, Any] | None = Field(default=None, description="The cleaned prediction.")
    off_taxonomy: list[str] = Field(default_factory=list, description="Entries dropped as outside the allowed lists.")
    duplicates: int = Field(default=0, description="Repeated entries dropped (first kept).")
    truncated: int = Field(default=0, description="Entries beyond the top 3 dropped.")
    scores: dict[str, float] = Field(
        default_factory=dict, description="rank; emotion/intensity; source_target/viewpoint."
    )
    judge_reason: str = ""
    usage: CallUsage | None = Field(default=None, description="The prediction request (shared within a batch).")
    judge_usage: CallUsage | None = None
    finished_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


class ResultStore:
    """The results JSONL next to the report file."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.torn_lines = 0

    def load(self, config_hash: str) -> dict[str, InstanceResult]:
        """Latest line per instance id for this config (other configs' lines are left alone)."""
        out: dict[str, InstanceResult] = {}
        self.torn_lines = 0
        if not self.path.is_file():
            return out
        with open(self.path, encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                try:
                    result = InstanceResult.model_validate_json(line)
                except ValidationError:
                    self.torn_lines += 1
                    continue
                if result.config_hash == config_hash:
                    out[result.instance_id] = result
        return out

    @staticmethod
    def is_done(result: InstanceResult | None, inst: Instance) -> bool:
        return result is not None and result.finished and result.fingerprint == inst.fingerprint()

    def append(self, results: list[InstanceResult]) -> None:
        if not results:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        blob = "".join(r.model_dump_json() + "\n" for r in results)
        if self._ends_torn():
            blob = "\n" + blob  # never glue a new line onto a torn one
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(blob)
            fh.flush()
            os.fsync(fh.fileno())

    def _ends_torn(self) -> bool:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                if fh.tell() == 0:
                    return False
                fh.seek(-1, os.SEEK_END)
                return fh.read(1) != b"\n"
        except FileNotFoundError:
            return False
