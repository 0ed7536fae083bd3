"""RESCUE-format data: one parser for the case importer and the benchmark.

Reading (`load_rescue`) gives `RescueSample`s whose `RescueRow`s smooth over the quirks of the published data
(see the RESCUE notes, TAXONOMY §4 and §9):

- the relation pattern sits in `relation_pattern`, in `relation_cycle_state`, or in both, depending on the
  sample; `RescueRow.pattern` is the first non-null of the two, in that order. `""` means "reviewed, no dominant
  pattern" and stays distinct from `None` ("no label"). One exception: a `""` whose own reason field is present
  but blank and whose evidence list is empty is a blank placeholder (family client rows carry
  `relation_cycle_state: ""` with an empty reason on every row), so it reads as `None`;
- therapist rows are rows whose `primary_speaker` is `Therapist`;
- support targets keep subgroups (`["Heather", "Ben"]`) distinct from the whole-group label (`["Family"]`);
- the group comes from `scenario`, else from a `family_therapy/` id prefix or a `Family` label in the rows.

Deriving: `gold_from_sample` turns a sample into a `GoldTrajectory` (versioned, what a benchmark scores
against); `case_from_sample` turns it into a case card; `import_rescue` writes both for every sample.

The package holds one concern a module: `_format` (reading), `_gold` (gold trajectories), `_lexicon` (attitude
text to numbers) and `_cards` (case cards and the importer).
"""

from personas.rescue._cards import (
    Enricher,
    ImportReport,
    case_from_sample,
    import_rescue,
)
from personas.rescue._format import (
    PATTERN_FIELDS,
    PatternField,
    RescueEmotion,
    RescueFormatError,
    RescueRow,
    RescueSample,
    RescueStrategy,
    RescueViewpoint,
    SampleCounts,
    load_rescue,
    rescue_case_id,
)
from personas.rescue._gold import (
    GOLD_SCHEMA_VERSION,
    GoldEmotion,
    GoldRow,
    GoldStrategy,
    GoldTrajectory,
    GoldViewpoint,
    gold_from_sample,
    load_gold,
)
from personas.rescue._lexicon import (
    ATTITUDE_LEXICON,
    LEXICON_VERSION,
    warmth_tension,
)

__all__ = [
    "LEXICON_VERSION",
    "PatternField",
    "ATTITUDE_LEXICON",
    "GOLD_SCHEMA_VERSION",
    "PATTERN_FIELDS",
    "Enricher",
    "GoldEmotion",
    "GoldRow",
    "GoldStrategy",
    "GoldTrajectory",
    "GoldViewpoint",
    "ImportReport",
    "RescueEmotion",
    "RescueFormatError",
    "RescueRow",
    "RescueSample",
    "RescueStrategy",
    "RescueViewpoint",
    "SampleCounts",
    "case_from_sample",
    "gold_from_sample",
    "import_rescue",
    "load_gold",
    "load_rescue",
    "rescue_case_id",
    "warmth_tension",
]
