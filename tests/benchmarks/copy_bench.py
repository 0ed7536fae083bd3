"""How much of each supporter turn is members' words, over session records on disk: the data behind COPY_MIN_COVERAGE
(and, with --repeats, how much is the supporter's own earlier words: the data behind REPEAT_MIN_COVERAGE).

    python tests/benchmarks/copy_bench.py RUN_DIR [RUN_DIR ...] [--rescue ../shared/rescue/samples.jsonl] [--repeats]

For every supporter turn it measures the copied-run coverage the judges' copy fact uses (`judges.scoring.copy_runs`,
at any level), then prints per folder how many turns cross COPY_MIN_COVERAGE and lists the borderline ones (within
`--margin` of it) with their sources, so a change of threshold or run length can be read against real turns.
`--rescue` adds RESCUE's human therapist turns, the known answer (none parrots a member). `--repeats` measures
`judges.scoring.repeat_runs` instead: each supporter turn against the supporter's own earlier turns.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from judges.scoring import (  # noqa: E402
    COPY_MIN_COVERAGE,
    COPY_RUN_WORDS,
    REPEAT_MIN_COVERAGE,
    REPEAT_RUN_WORDS,
    CopiedLine,
    RepeatedLine,
    copy_runs,
    repeat_runs,
)
from simulator.records import SessionRecord, Turn  # noqa: E402
from simulator.runfolder import RunFolder, RunFolderError  # noqa: E402

BINS = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.01)


def measured(turns: list[Turn], repeats: bool = False) -> list[tuple[Turn, CopiedLine | RepeatedLine | None]]:
    measure = repeat_runs if repeats else copy_runs
    return [(t, measure(t, turns[:i])) for i, t in enumerate(turns) if t.kind == "supporter" and t.text.strip()]


def rescue_turns(path: Path) -> dict[str, list[Turn]]:
    from personas.rescue import load_rescue

    return {
        s.sample_id: [
            Turn(
                index=r.row_index,
                speaker=r.primary_speaker,
                kind="supporter" if r.is_therapist else "member",
                text=r.dialogue_cleaned or "",
            )
            for r in s.rows
        ]
        for s in load_rescue(path)
    }


def folder_turns(path: Path) -> dict[str, list[Turn]]:
    folder = RunFolder(path)
    out: dict[str, list[Turn]] = {}
    for sid in folder.session_ids():
        try:
            record: SessionRecord = folder.load_session(sid)
        except RunFolderError as err:  # an older record layout: say so, measure the rest
            print(f"  skipped {sid}: {str(err).splitlines()[0]}")
            continue
        out[sid] = record.turns
    return out


def report(name: str, sessions: dict[str, list[Turn]], margin: float, repeats: bool = False) -> None:
    rows = [(sid, t, c) for sid, turns in sessions.items() for t, c in measured(turns, repeats)]
    cov = [c.coverage if c else 0.0 for _, _, c in rows]
    threshold = REPEAT_MIN_COVERAGE if repeats else COPY_MIN_COVERAGE
    crossing = sum(v >= threshold for v in cov)
    hist = " ".join(
        f"[{lo:.1f},{min(hi, 1.0):.1f}{']' if hi > 1 else ')'}:{sum(lo <= v < hi for v in cov)}"
        for lo, hi in zip(BINS, BINS[1:], strict=False)
    )
    print(f"{name}: {len(rows)} supporter turns in {len(sessions)} sessions; {crossing} at or over {threshold}")
    print(f"  coverage {hist}")
    for sid, t, c in rows:
        if c is not None and abs(c.coverage - threshold) <= margin:
            if isinstance(c, RepeatedLine):
                src = f"own t{c.repeats_turn}"
            else:
                src = ", ".join(f"t{s.turn} {s.member} {s.coverage:.2f}" for s in c.sources)
            print(f"  {c.coverage:.2f} {sid} t{t.index} <- {src}: {t.text[:140]!r}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="*", type=Path, help="run folders (manifest.json, sessions/)")
    ap.add_argument("--rescue", type=Path, help="RESCUE samples.jsonl: human therapist turns")
    ap.add_argument("--margin", type=float, default=0.1, help="list turns this close to the threshold")
    ap.add_argument("--repeats", action="store_true", help="measure repeats of the supporter's own earlier turns")
    args = ap.parse_args()
    if args.repeats:
        print(
            f"runs of {REPEAT_RUN_WORDS}+ words from one own earlier turn; a repeat at coverage >= {REPEAT_MIN_COVERAGE}"
        )
    else:
        print(f"copied runs of {COPY_RUN_WORDS}+ words; a copy at coverage >= {COPY_MIN_COVERAGE}")
    if args.rescue:
        report(f"RESCUE {args.rescue}", rescue_turns(args.rescue), args.margin, args.repeats)
    for run in args.runs:
        report(str(run), folder_turns(run), args.margin, args.repeats)


if __name__ == "__main__":
    main()
