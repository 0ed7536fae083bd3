"""What a report shows next to a number: the validity of the instrument behind it (no heavy imports, so any
report module can carry it)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Instrument = Literal["tracker", "judge"]
INSTRUMENTS: tuple[Instrument, ...] = ("tracker", "judge")
NOT_VALIDATED = "not validated"


class ValidityNote(BaseModel):
    """The instrument's validity for one number, or "not validated" and why."""

    model_config = ConfigDict(extra="forbid")

    instrument: Instrument = Field(description="`tracker` or `judge`.")
    model: str | None = Field(description="Model id that produced the number; None when not recorded.")
    digest: str | None = Field(description="Prompt digest that produced it; None when not recorded.")
    measure: str | None = Field(default=None, description="Which measured ability vouches for the number.")
    validated: bool = Field(description="A matching card vouches for the number.")
    text: str = Field(description="One line: the validity figure with its n, or 'not validated (why)'.")
    card: str | None = Field(default=None, description="Card file it comes from.")
    brief: str = Field(
        default="",
        description="The same in a few words, for a cell beside the number: `strategy accuracy 33% (n=36)` (against "
        "RESCUE gold), or `not validated`; empty in notes written before it existed.",
    )
