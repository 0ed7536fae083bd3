"""Does a ladder rung do what its name says, on every case? The manipulation check behind `rescue-sim sensitivity`.

    python tests/benchmarks/rung_bench.py [--cases all] [--rungs sides,lecture,generic] [--seeds 0-1]
                                          [--model local/qwen2.5-coder-1.5b] [--out rungs.json]

The ladder can only test the metrics if its rungs are of known quality: `sides:M` must blame the members it
sides against, `lecture:M` must lecture, `generic:M` must say nothing particular. For each case this bench plays
the room's own opening (two member turns with a silent counsellor, the real members, seed 0, through the call
cache so a rerun replays it), then asks each rung for its first decision over several seeds (the real
`ModelSupporter`, re-asked as the engine re-asks), and every member answers the room's own kind of question about
the line (`simulator.members.appraise`, personas/prompts/member_appraisal.yaml):

- `sides`: `blamed`, asked of every member; the manipulation took when a member other than the ally (the first
  member, whom the rung sides with) reads it as blaming them;
- `lecture`: `lectured`, asked of every member; took when anyone reads it as a lecture;
- `generic`: `specific`, asked of every member; took when nobody reads it as about them in particular.

With `--judge`, every line is also read by the checklist judge's side-taking items (the rubric's `side_taking`
dimension, asked and scored as `rescue-sim judge` does on the transcript up to the line): `judge_side` is the
probability the judge gives that the line takes a side (the strongest item's P(yes) when it names a side, else 1
minus the neutral reading), `judge_label` the label it scores. The totals compare `sides` with `model` (paired by
case and seed): AUC, the thresholded share against the probability, and the units each would need for 80% power.

Every rung's lines are also counted when said in a member's voice (`simulator.transcript.in_member_voice`): each
rung draws again on such a line, so this share is what is left after the draws.

`model` (M with the counsellor prompt) is the reference (`--model-draws K`: when M passes, as it may after two
member turns, it is asked again with seed + 1000, + 2000... up to K decisions, so the reference has a line): its lines are asked all three questions, so each check's
rate on a decent counsellor is printed beside the rung's. Printed: every line, then a table per case and the
totals. No pass/fail: figures to compare a ladder-prompt change against.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

CHECKS = {"sides": "blamed", "lecture": "lectured", "generic": "specific"}


def took(rung: str, row: dict) -> bool:
    """Whether the rung's manipulation took on one line (see the module docstring)."""
    answers = row["answers"]
    if rung == "sides":
        return any(answers["blamed"][m] for m in answers["blamed"] if m != row["ally"])
    if rung == "lecture":
        return any(answers["lectured"].values())
    if rung == "generic":
        return not any(answers["specific"].values())
    raise ValueError(rung)


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


async def _opening(client, case):
    """The room's own first two member turns, with nobody in the counsellor's chair."""
    from simulator.engine import run_session
    from simulator.session_state import SessionConfig
    from simulator.supporters import SilentSupporter

    rec = await run_session(case, SilentSupporter(), client, SessionConfig(max_turns=2, seed=0), session_id="bench")
    return [t for t in rec.turns if t.kind == "member"]


async def judge_side(client, model: str, case, opening, said, rubric_path: Path | None = None) -> dict:
    """The checklist judge's reading of the line as `rescue-sim judge` scores it (the rubric's `side_taking`
    dimension alone): P(the line takes a side), the label, and every item's P(yes)."""
    from judges.scoring._checklist import judge_checklist
    from judges.scoring._panel import not_neutral
    from judges.scoring._rubric import load_rubric
    from simulator.records import SessionRecord, SessionStatus

    rubric = load_rubric(rubric_path)
    dim = rubric.get("side_taking")
    record = SessionRecord(
        session_id="bench", case=case, supporter=model, models={}, seed=0, max_turns=6,
        status=SessionStatus.COMPLETED, turns=[*opening, said],
    )  # fmt: skip
    verdict = await judge_checklist(record, client, model, rubric.model_copy(update={"dimensions": [dim]}))
    (scored,) = [sc for sc in verdict.scores if sc.dimension == "side_taking"]
    side = not_neutral(dim, scored)
    items = {f"{a.item}:{a.member}": round(a.p_yes, 4) for a in scored.answers}
    return {"judge_side": round(side, 4), "judge_label": scored.label, "judge_items": items}


async def measure(
    client,
    case_ids: list[str],
    rungs: list[str],
    seeds: list[int],
    model: str,
    judge: bool = False,
    model_draws: int = 1,
    rubric: Path | None = None,
) -> list[dict]:
    """Every rung's first line on every case and seed, with the room's answers to the rung's check questions."""
    from personas.library import resolve_case
    from simulator.members import appraise, is_yes
    from simulator.records import Turn
    from simulator.supporters import parse_supporter_spec
    from simulator.view import build_view

    rows: list[dict] = []
    for case_id in case_ids:
        case = resolve_case(case_id)
        names = list(case.member_names)
        opening = await _opening(client, case)
        for rung in rungs:
            spec = model if rung == "model" else f"{rung}:{model}"
            questions = list(CHECKS.values()) if rung == "model" else [CHECKS[rung]]
            for seed in seeds:
                t0 = time.perf_counter()
                view = build_view(case, opening, member_turns=len(opening), max_turns=6)
                passes = 0
                for _ in range(model_draws if rung == "model" else 1):  # M may rightly stay silent: draw again
                    supporter = parse_supporter_spec(spec, client, seed=seed + 1000 * passes)
                    decision = await _decide(supporter, view)
                    if decision is None or decision.speak:
                        break
                    passes += 1
                row = {"case": case_id, "group": case.group, "rung": rung, "seed": seed, "ally": names[0]}
                if rung == "model":
                    row["passes"] = passes
                if decision is None or not decision.speak:
                    rows.append({**row, "text": None, "answers": {}})
                    print(f"{rung:8} {case_id:18} s{seed}: {'invalid' if decision is None else 'pass'}", flush=True)
                    continue
                said = Turn(
                    index=len(opening) + 1, speaker="Therapist", kind="supporter",
                    addressees=list(decision.targets), text=decision.text,
                )  # fmt: skip
                answers = {
                    q: {m: is_yes((await appraise(client, q, said, m, names)).text) for m in names} for q in questions
                }
                if judge:
                    row.update(await judge_side(client, model, case, opening, said, rubric))
                rows.append(
                    {**row, "text": decision.text, "targets": list(decision.targets), "answers": answers,
                     "draws": decision.draws}
                )  # fmt: skip
                marks = " ".join(f"{q}:{','.join(m for m, y in a.items() if y) or '-'}" for q, a in answers.items())
                if judge:
                    marks += f" judge:{row['judge_label']} {row['judge_side']:.2f}"
                print(
                    f"{rung:8} {case_id:18} s{seed} to {','.join(decision.targets):16} {marks:34} "
                    f"draws {decision.draws} ({time.perf_counter() - t0:.0f} s) {decision.text[:90]!r}",
                    flush=True,
                )
    return rows


def summary(rows: list[dict], rungs: list[str]) -> list[dict]:
    """Per case and rung: lines spoken and the share on which the rung's manipulation took (for `model`, each
    check's rate on its lines), then the totals."""
    from simulator.transcript import in_member_voice

    table = []
    for case_id in dict.fromkeys(r["case"] for r in rows):
        for rung in rungs:
            spoke = [r for r in rows if r["case"] == case_id and r["rung"] == rung and r["text"]]
            entry = {"case": case_id, "rung": rung, "lines": len(spoke)}
            checks = CHECKS if rung == "model" else {rung: CHECKS[rung]}
            for check in checks:
                entry[check] = sum(took(check, r) for r in spoke)
            entry["voice"] = sum(in_member_voice(r["text"]) for r in spoke)  # said as a member, not a counsellor
            if rung == "sides":  # the rung draws again until a line blames: how many took at once
                entry["first_draw"] = sum(r.get("draws", 1) == 1 and took(rung, r) for r in spoke)
            table.append(entry)
    return table


def judge_summary(rows: list[dict]) -> None:
    """The judge's side-taking reading of `sides` against `model`, paired by case and seed."""
    from simulator.runner.sensitivity_stats import sessions_for_power

    judged = {(r["case"], r["seed"], r["rung"]): r for r in rows if r.get("judge_side") is not None}
    pairs = [(judged[(c, s, "sides")], judged[(c, s, "model")]) for c, s, rung in judged if rung == "sides"
             and (c, s, "model") in judged]  # fmt: skip
    if not pairs:
        return
    sides = [a["judge_side"] for a, _ in pairs]
    ref = [b["judge_side"] for _, b in pairs]
    auc = sum((x > y) + 0.5 * (x == y) for x in sides for y in ref) / (len(sides) * len(ref))
    print(f"\njudge side-taking, {len(pairs)} paired lines (sides vs model): AUC {auc:.2f}")
    for name, value in (
        ("share of lines labelled a side", lambda r: float(r["judge_label"] != "none")),
        ("probability of a side", lambda r: r["judge_side"]),
    ):
        diffs = [value(a) - value(b) for a, b in pairs]
        mean = sum(diffs) / len(diffs)
        need = sessions_for_power(diffs, mean) if mean else None
        print(
            f"  {name:32}: sides {sum(value(a) for a, _ in pairs) / len(pairs):.2f}, model "
            f"{sum(value(b) for _, b in pairs) / len(pairs):.2f}, paired difference {mean:+.2f}; "
            f"units for 80% power: {need if need is not None else '-'}"
        )


def _print(table: list[dict], rungs: list[str]) -> None:
    cols = [r for r in rungs if r != "model"]
    print(f"\n{'case':18} " + " ".join(f"{c + ':M':>10}" for c in cols) + "   M as " + "/".join(cols))
    for case_id in dict.fromkeys(e["case"] for e in table):
        own = {e["rung"]: e for e in table if e["case"] == case_id}
        cells = [f"{own[c][c]}/{own[c]['lines']}" if c in own else "-" for c in cols]
        ref = own.get("model")
        refs = "/".join(f"{ref[c]}" for c in cols) + f" of {ref['lines']}" if ref else "-"
        print(f"{case_id:18} " + " ".join(f"{c:>10}" for c in cells) + f"   {refs}")
    for rung in rungs:
        es = [e for e in table if e["rung"] == rung]
        n = sum(e["lines"] for e in es)
        for check in CHECKS if rung == "model" else [rung]:
            k = sum(e[check] for e in es)
            most = sum(e[check] * 2 > e["lines"] for e in es if e["lines"])
            print(
                f"total {rung:8} read as {check:8}: {k}/{n} lines ({k / max(n, 1):.0%}); most lines on {most}/{len(es)} cases"
            )
        voiced = sum(e.get("voice", 0) for e in es)
        print(f"total {rung:8} in a member's voice: {voiced}/{n} lines ({voiced / max(n, 1):.0%})")
        if rung == "sides":
            first = sum(e["first_draw"] for e in es)
            print(f"total sides    read as sides on its first draw: {first}/{n} lines ({first / max(n, 1):.0%})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="all", help="comma-separated case ids, or all (the 17 shipped cases)")
    ap.add_argument("--rungs", default="sides,lecture,generic,model")
    ap.add_argument("--seeds", default="0-1")
    ap.add_argument("--model", default="local/qwen2.5-coder-1.5b")
    ap.add_argument("--out", type=Path, help="write every line and the table as JSON")
    ap.add_argument("--judge", action="store_true", help="also read every line with the judge's side-taking items")
    ap.add_argument("--rubric", type=Path, help="a rubric (added to the shipped one, as `judge --rubric`) for --judge")
    ap.add_argument(
        "--model-draws", type=int, default=1,
        help="when M passes, ask it again with another seed (seed + 1000 k), up to this many decisions in all",
    )  # fmt: skip
    ap.add_argument(
        "--tables", type=Path, nargs="+", help="print the table of earlier --out files together; run nothing"
    )
    args = ap.parse_args()
    if args.tables:
        rows = [r for f in args.tables for r in json.loads(f.read_text(encoding="utf-8"))["rows"]]
        rungs = list(dict.fromkeys(r["rung"] for r in rows))
        _print(summary(rows, rungs), rungs)
        judge_summary(rows)
        return
    from personas.library import load_library
    from simulator.cli.run_cmd import parse_seeds
    from simulator.llm.client import LiteLLMClient, ModelSettings

    roles = ("member", "tracker", "supporter", "judge")
    client = LiteLLMClient(ModelSettings(roles={role: args.model for role in roles}))

    cases = [c.id for c in load_library()] if args.cases == "all" else args.cases.split(",")
    rungs = args.rungs.split(",")
    t0 = time.perf_counter()
    seeds = parse_seeds(0, args.seeds)
    rows = asyncio.run(measure(client, cases, rungs, seeds, args.model, args.judge, args.model_draws, args.rubric))
    table = summary(rows, rungs)
    _print(table, rungs)
    judge_summary(rows)
    if args.out:
        args.out.write_text(json.dumps({"rows": rows, "table": table}, indent=1), encoding="utf-8")
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
