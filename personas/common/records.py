"""The base of every record: a pydantic model that refuses keys it does not declare.

Records are written to run folders, reports and benchmark files and read back later; a misspelt or stale key is
an error with its name rather than a value silently dropped. Models that must differ (strip whitespace, frozen,
keep or ignore unknown keys) declare their own base beside them.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """A pydantic model with `extra="forbid"`: unknown keys are a validation error."""

    model_config = ConfigDict(extra="forbid")
