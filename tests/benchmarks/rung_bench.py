"""Does a ladder rung do what its name says? The manipulation check behind `rescue-sim sensitivity`.

    python tests/benchmarks/rung_bench.py [--rungs model,sides] [--seeds 0-3] [--model local/qwen2.5-coder-1.5b]

The ladder can only test the metrics if its rungs are of known quality: `sides:M` must take a side. This bench
holds the room fixed (two couples, two opening member lines each, written for the purpose) and asks each rung for
its first decision over several seeds (the real `ModelSupporter`, no call cache); then every member answers the
room's own blame question (`simulator.members.appraise`, the question `blamed_share` counts) about the line.

Printed per line: the rung, the seed, who it addressed, the line, and which members read it as blaming them.
Then per rung: the share of lines that blame a member other than the ally (the first member) - for `sides` the
share in which its manipulation took - and the share that blame anyone. No timing or pass/fail: figures to
compare a ladder-prompt change against.
"""

from __future__ import annotations

import argparse
import asyncio
import time

OPENINGS = {
    "dana-and-theo": (
        ("Dana", ["Theo"], "You're never home anymore, Theo. I spend every evening alone in that flat."),
        ("Theo", ["Dana"], "I'm working for us, Dana. Do you think I enjoy twelve-hour days?"),
    ),
    "lena-and-omar": (
        ("Omar", ["Lena"], "My father can barely walk, Lena. He needs us in Beirut, and you won't even talk about it."),
        ("Lena", ["Omar"], "I won't take Zofia to a country where the banks ate people's savings. You know that."),
    ),
}


# what the room says after each counsellor line when a rung is asked for more than one (`--lines`)
REPLIES = {
    "dana-and-theo": (
        ("Theo", ["Therapist"], "So it's all on me again. I took the job so we could finally pay for the IVF."),
        ("Dana", ["Therapist"], "He says that every time, and then he's gone until midnight."),
    ),
    "lena-and-omar": (
        ("Omar", ["Therapist"], "You always take her side. It's my father, and he may not have long."),
        ("Lena", ["Therapist"], "I'm not cold. I just won't gamble with our daughter's future."),
    ),
}


async def _decide(supporter, view):
    from simulator.nodes import SUPPORTER_REASKS
    from simulator.supporters import InvalidDecision

    reask = None
    for _ in range(SUPPORTER_REASKS + 1):  # as the engine re-asks invalid output (simulator/nodes.py gate)
        try:
            return await supporter.decide(view, reask)
        except InvalidDecision as err:
            reask = err.reason
    return None


async def _measure(rungs: list[str], seeds: list[int], model: str, lines: int) -> dict[str, list[dict]]:
    from personas.library import resolve_case
    from simulator.fidelity import overlap
    from simulator.llm.client import LiteLLMClient, ModelSettings
    from simulator.members import appraise, is_yes
    from simulator.records import Turn
    from simulator.supporters import parse_supporter_spec
    from simulator.view import build_view

    client = LiteLLMClient(ModelSettings(cache=False, roles={"member": model}))
    rows: dict[str, list[dict]] = {r: [] for r in rungs}
    for case_id, opening in OPENINGS.items():
        case = resolve_case(case_id)
        names = list(case.member_names)
        for rung in rungs:
            spec = model if rung == "model" else f"{rung}:{model}"
            for seed in seeds:
                supporter = parse_supporter_spec(spec, client, seed=seed)
                turns = [
                    Turn(index=i + 1, speaker=who, kind="member", addressees=to, text=text)
                    for i, (who, to, text) in enumerate(opening)
                ]
                own: list[str] = []
                for n in range(lines):
                    t0 = time.perf_counter()
                    view = build_view(case, turns, member_turns=sum(t.kind == "member" for t in turns), max_turns=6)
                    decision = await _decide(supporter, view)
                    if decision is None or not decision.speak:
                        rows[rung].append({"case": case_id, "seed": seed, "line": n, "text": None, "blamed": []})
                        print(f"{rung:8} {case_id:14} s{seed} #{n}: {'invalid' if decision is None else 'pass'}")
                        continue
                    said = Turn(
                        index=len(turns) + 1, speaker="Therapist", kind="supporter",
                        addressees=list(decision.targets), text=decision.text,
                    )  # fmt: skip
                    blamed = [m for m in names if is_yes((await appraise(client, "blamed", said, m, names)).text)]
                    repeat = any(overlap(decision.text, o) >= 0.5 for o in own)
                    own.append(decision.text)
                    rows[rung].append(
                        {"case": case_id, "seed": seed, "line": n, "text": decision.text, "blamed": blamed,
                         "ally": names[0], "repeat": repeat}
                    )  # fmt: skip
                    print(
                        f"{rung:8} {case_id:14} s{seed} #{n} to {','.join(decision.targets):10} "
                        f"blamed {','.join(blamed) or '-':10}{' REPEAT' if repeat else ''} "
                        f"({time.perf_counter() - t0:.0f} s) {decision.text[:100]!r}"
                        + (f" [{decision.rationale[:50]}]" if decision.rationale else ""),
                        flush=True,
                    )
                    who, to, text = REPLIES[case_id][n % len(REPLIES[case_id])]
                    turns += [said, Turn(index=len(turns) + 2, speaker=who, kind="member", addressees=to, text=text)]
    return rows


def _summary(rows: dict[str, list[dict]]) -> None:
    print("\nrung      lines  spoke  blame a non-ally  blame anyone  repeat an own line")
    for rung, rs in rows.items():
        spoke = [r for r in rs if r["text"]]
        others = sum(any(b != r["ally"] for b in r["blamed"]) for r in spoke)
        anyone = sum(bool(r["blamed"]) for r in spoke)
        repeats = sum(r["repeat"] for r in spoke)
        n = len(spoke) or 1
        print(
            f"{rung:8} {len(rs):6} {len(spoke):6} {others:5} ({others / n:.0%})      {anyone:4} ({anyone / n:.0%})"
            f"     {repeats:4} ({repeats / n:.0%})"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rungs", default="model,sides")
    ap.add_argument("--seeds", default="0-3")
    ap.add_argument("--model", default="local/qwen2.5-coder-1.5b")
    ap.add_argument("--lines", type=int, default=1, help="counsellor lines per rung and seed (a fixed reply between)")
    args = ap.parse_args()
    from simulator.cli.run_cmd import parse_seeds

    t0 = time.perf_counter()
    rows = asyncio.run(_measure(args.rungs.split(","), parse_seeds(0, args.seeds), args.model, args.lines))
    _summary(rows)
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
