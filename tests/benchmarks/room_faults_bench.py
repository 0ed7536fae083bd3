"""How often the floor alone leaves a member silent or lets one hold the floor: the room faults (member_silent,
member_dominates) over every shipped case, on fake members and a fake counsellor, so only the turn-taking decides.

    python tests/benchmarks/room_faults_bench.py [--seeds 4] [--turns 6]

Two counsellors: one that addresses the first partner (or first family member) every turn, the failure the issue
saw on the embedded model, and one that addresses the whole group. Member lines are distinct, so no other fault
kind interferes; no model is called. Prints, per counsellor and group, the sessions showing each room fault.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from personas.case import Case  # noqa: E402
from personas.library import load_library  # noqa: E402
from simulator.faults import detect_faults  # noqa: E402
from simulator.llm.fake import FakeModelClient  # noqa: E402
from simulator.records import FaultKind, SessionRecord  # noqa: E402
from simulator.runner.session import SessionSpec, run_one  # noqa: E402
from simulator.session_state import SessionConfig  # noqa: E402
from simulator.supporters import ModelSupporter  # noqa: E402
from tests._sim_fakes import RoomScript  # noqa: E402

ROOM_KINDS = (FaultKind.MEMBER_SILENT, FaultKind.MEMBER_DOMINATES)
COUNSELLORS: dict[str, Callable[[Case], list[str] | None]] = {
    "addresses one member": lambda case: [case.member_names[0]],
    "addresses the group": lambda case: None,
}


async def session(case: Case, seed: int, turns: int, targets: list[str] | None) -> SessionRecord:
    lines = (f"Line {i}: something I had not said yet about the two of us." for i in itertools.count())
    script = RoomScript(case, targets=targets)

    def reply(call):
        if call.schema is None and not call.prompt.prefill.rsplit("\n", 1)[-1].startswith("Does it"):
            return next(lines)
        return script(call)

    client = FakeModelClient(default=reply)
    spec = SessionSpec(
        session_id=f"{case.id}-{seed}",
        case=case,
        supporter="fake/counsellor",
        seed=seed,
        config=SessionConfig(max_turns=turns, tracker_every=3, seed=seed),
    )
    supporter = ModelSupporter(client=client, model="fake/counsellor", spec="fake/counsellor")
    return await run_one(spec, client, supporter, models={"member": "fake/member"})


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--turns", type=int, default=6, help="member turns per session")
    args = ap.parse_args()
    cases = load_library()
    print(f"{len(cases)} cases x {args.seeds} seeds, {args.turns} member turns, fake members and counsellor")
    for label, targets in COUNSELLORS.items():
        counts: Counter[tuple[str, str]] = Counter()
        for case in cases:
            for seed in range(args.seeds):
                record = await session(case, seed, args.turns, targets(case))
                counts[(case.group, "sessions")] += 1
                for kind in {f.kind for f in detect_faults(record) if f.kind in ROOM_KINDS}:
                    counts[(case.group, kind.value)] += 1
        for group in ("couple", "family"):
            n = counts[(group, "sessions")]
            cells = ", ".join(f"{k.value} {counts[(group, k.value)]}/{n}" for k in ROOM_KINDS)
            print(f"  {label}, {group}: {cells}")


if __name__ == "__main__":
    asyncio.run(main())
