"""Does a simulated member tell a blaming counsellor line from an attuned one? Measured on lines of known kind.

    python tests/benchmarks/reading_bench.py [--seeds 0-3] [--model local/qwen2.5-coder-1.5b] [--out FILE]
    python tests/benchmarks/reading_bench.py --appraisal     # `simulator.members.appraise` alone, on labelled lines
    python tests/benchmarks/reading_bench.py --appraisal --questions lectured,specific   # the rungs' checks

The ladder can only order supporters on the room's trajectory if a member reacts to what the counsellor did.
This bench holds everything else fixed: one case (dana-and-theo), the same two opening member lines, then one
counsellor line of a known kind, and asks each member for their next turn (self-report and line, the real
`member_turn`, no call cache) over several seeds:

- `attuned`: acknowledges each side in their own terms and slows down (fits Theo's softeners);
- `blame`: takes Dana's side and lists what Theo got wrong (fits Theo's triggers);
- `lecture`: generic advice that names no one's feelings.

The known answer: Theo reads `blame` as `set_off` and `attuned` as not; after `blame` his tension toward Dana and
his intensity rise against `attuned`. Printed per (line, member): readings, moves, and the change in intensity,
felt-heard and tension from the card's baseline; then the discrimination figures for Theo: P(set_off | blame) -
P(set_off | attuned) and the mean differences blame minus attuned, with the share of seeds in which they point
the known way. No timing or pass/fail: figures to compare a member-prompt change against.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

CASE = "dana-and-theo"
OPENING = (
    ("Dana", ["Theo"], "You're never home anymore, Theo. I spend every evening alone in that flat."),
    ("Theo", ["Dana"], "I'm working for us, Dana. Do you think I enjoy twelve-hour days?"),
)
LINES = {
    "attuned": (
        ["Theo", "Dana"],
        "Theo, I can hear how hard you are trying to hold it all together with the new job. Dana, it sounds "
        "like you have been very alone with this; can we slow down and take one thing at a time?",
    ),
    "blame": (
        ["Theo"],
        "Theo, Dana is right: you chose the job over her and you keep letting her down. You need to stop making "
        "excuses and start showing up.",
    ),
    "lecture": (
        ["Dana and Theo"],
        "Couples need to schedule quality time. Make a weekly plan together and stick to it.",
    ),
}


# Labelled lines for `simulator.members.appraise` (does the line blame or criticise this member? show them
# understanding?).
# DEV: the lines its examples were chosen on: the 1.5B's own `sides:`/M lines from sensitivity runs, the scripted
# supporter's, and lines written for the purpose. HELD_OUT: written before the examples were tuned, another
# couple, measured once. (addressees, line, {member: blamed}); UNDERSTOOD_*: {member: understood} per line, labelled
# after the blame examples had been chosen and before the understanding ones were.
DEV = [
    (["Theo"], "I understand that Theo has been neglecting his responsibilities and is not being responsive to our "
     "conversations. It's important that we address this issue together to ensure a healthy relationship.",
     {"Theo": 1, "Dana": 0}),
    (["Theo"], "it looks like Theo is checking again. I think we should stop that habit of checking in on each other "
     "more often.", {"Theo": 1, "Dana": 0}),
    (["Theo"], LINES["blame"][1], {"Theo": 1, "Dana": 0}),
    (["Dana"], "Dana, you have every reason to be upset. Theo has let you down again and again, and that is on him.",
     {"Theo": 1, "Dana": 0}),
    (["Theo"], "Theo, you need to stop checking your phone when Dana talks to you. It is disrespectful.",
     {"Theo": 1, "Dana": 0}),
    (["Dana"], "Dana, you're being dramatic. Theo is working twelve-hour days for both of you and you should "
     "appreciate it.", {"Theo": 0, "Dana": 1}),
    (["Dana"], "I think sometimes you're just not listening to me. Let's try a different approach and see if we can "
     "make this better together.", {"Theo": 0, "Dana": 1}),
    (["Theo"], "Hey Theo, I know you're feeling a bit alone right now with your promotion. It's important to take some "
     "time for yourself and find a way to support both of you without putting too much pressure on either of you.",
     {"Theo": 0, "Dana": 0}),
    (["Theo"], "It sounds like you're feeling overwhelmed by your work. Can we talk about this together? It would be "
     "really helpful if we could find a way to support both of you.", {"Theo": 0, "Dana": 0}),
    (["Dana", "Theo"], "Dana and Theo, it's important to acknowledge that your relationship has been challenging. "
     "Let's focus on finding a way forward together.", {"Theo": 0, "Dana": 0}),
    (["Dana"], "I understand how you feel. Being left alone like your father was can be a scary experience, but it "
     "doesn't mean you're not valuable or important.", {"Theo": 0, "Dana": 0}),
    (["Dana", "Theo"], "Can I pause us for a moment? I notice that when one of you pushes, the other steps back, and "
     "round it goes.", {"Theo": 0, "Dana": 0}),
    (["Theo"], "Theo, underneath the frustration, what is the part of this that hurts the most?",
     {"Theo": 0, "Dana": 0}),
    (["Dana"], "Dana, could you turn to Theo and tell him that directly, in your own words?", {"Theo": 0, "Dana": 0}),
    (["Theo", "Dana"], LINES["attuned"][1], {"Theo": 0, "Dana": 0}),
    (["Dana"], "Dana, I want to slow us right down. What you are carrying sounds heavy, and your safety matters most "
     "here. Are you safe right now?", {"Theo": 0, "Dana": 0}),
]  # fmt: skip
HELD_OUT = [
    (["Omar"], "Omar, Lena has a point: you walk out every time she raises money.", {"Omar": 1, "Lena": 0}),
    (["Lena"], "Lena, you keep bringing up the past and that is not fair on Omar.", {"Omar": 0, "Lena": 1}),
    (["Lena"], "I understand Omar has been hiding things from you, and that has to stop.", {"Omar": 1, "Lena": 0}),
    (["Omar"], "Omar, you are the one who broke her trust here.", {"Omar": 1, "Lena": 0}),
    (["Lena", "Omar"], "It sounds like you both feel unheard when money comes up.", {"Omar": 0, "Lena": 0}),
    (["Omar"], "Omar, what goes on for you when Lena raises her voice?", {"Omar": 0, "Lena": 0}),
    (["Lena"], "Lena, thank you for saying that; it took courage.", {"Omar": 0, "Lena": 0}),
    (["Omar"], "Omar, you should listen to Lena more instead of arguing.", {"Omar": 1, "Lena": 0}),
    (["Lena"], "Lena, you need to calm down before we go on.", {"Omar": 0, "Lena": 1}),
    (["Lena", "Omar"], "Let's slow down and take one thing at a time.", {"Omar": 0, "Lena": 0}),
    (["Omar"], "Omar, I hear how tired you are after the night shifts.", {"Omar": 0, "Lena": 0}),
    (["Lena"], "Honestly, Lena, Omar is doing his best and you never see it.", {"Omar": 0, "Lena": 1}),
]

UNDERSTOOD_DEV = [
    {"Theo": 0, "Dana": 0},
    {"Theo": 0, "Dana": 0},
    {"Theo": 0, "Dana": 0},
    {"Theo": 0, "Dana": 1},
    {"Theo": 0, "Dana": 0},
    {"Theo": 1, "Dana": 0},
    {"Theo": 0, "Dana": 0},
    {"Theo": 1, "Dana": 0},
    {"Theo": 1, "Dana": 0},
    {"Theo": 0, "Dana": 0},
    {"Theo": 0, "Dana": 1},
    {"Theo": 0, "Dana": 0},
    {"Theo": 1, "Dana": 0},
    {"Theo": 0, "Dana": 0},
    {"Theo": 1, "Dana": 1},
    {"Theo": 0, "Dana": 1},
]
UNDERSTOOD_HELD_OUT = [
    {"Omar": 0, "Lena": 0},
    {"Omar": 0, "Lena": 0},
    {"Omar": 0, "Lena": 0},
    {"Omar": 0, "Lena": 0},
    {"Omar": 1, "Lena": 1},
    {"Omar": 1, "Lena": 0},
    {"Omar": 0, "Lena": 1},
    {"Omar": 0, "Lena": 0},
    {"Omar": 0, "Lena": 0},
    {"Omar": 0, "Lena": 0},
    {"Omar": 1, "Lena": 0},
    {"Omar": 1, "Lena": 0},
]

# The ladder's `lecture` and `generic` manipulation checks (rung_bench.py), on lines of known answer. Written
# (2026-12-04, at 0a688af) after the questions' Sam/Alex examples in personas/prompts/member_appraisal.yaml and
# before any measurement of these lines; nothing was tuned on them. (addressees, line, {member: truth}). A lecture
# tells the member what to do or how to behave (advice, rules, a lesson); blame without advice is not one.
LECTURED = [
    (["Dana", "Theo"], LINES["lecture"][1], {"Dana": 1, "Theo": 1}),
    (["Theo"], "Theo, you should come home by seven every night; work can wait.", {"Dana": 0, "Theo": 1}),
    (["Dana"], "Dana, the best thing you can do is give Theo space when he gets home.", {"Dana": 1, "Theo": 0}),
    (["Dana", "Theo"], "Communication is the foundation of every relationship. You both need to practise active "
     "listening.", {"Dana": 1, "Theo": 1}),
    (["Omar", "Lena"], "Every couple fights about money. The rule is simple: agree a budget and never hide a "
     "purchase.", {"Omar": 1, "Lena": 1}),
    (["Lena"], "Lena, you must stop bringing up the past if you want this to work.", {"Omar": 0, "Lena": 1}),
    (["Theo", "Dana"], LINES["attuned"][1], {"Dana": 0, "Theo": 0}),
    (["Theo"], "Theo, underneath the frustration, what is the part of this that hurts the most?",
     {"Dana": 0, "Theo": 0}),
    (["Omar"], "Omar, I hear how tired you are after the night shifts.", {"Omar": 0, "Lena": 0}),
    (["Lena", "Omar"], "It sounds like you both feel unheard when money comes up.", {"Omar": 0, "Lena": 0}),
    (["Lena"], "Lena, thank you for saying that; it took courage.", {"Omar": 0, "Lena": 0}),
    (["Omar"], "Omar, you are the one who broke her trust here.", {"Omar": 0, "Lena": 0}),
]  # fmt: skip
# Specific: the line speaks to something particular that this member said, did or wants; a reflection that would
# fit anyone is not.
SPECIFIC = [
    (["Theo"], "Theo, you said the twelve-hour days leave you with nothing left by the evening.",
     {"Dana": 0, "Theo": 1}),
    (["Dana"], "Dana, you spend every evening alone in the flat, waiting for him.", {"Dana": 1, "Theo": 0}),
    (["Dana", "Theo"], "That sounds really difficult for both of you.", {"Dana": 0, "Theo": 0}),
    (["Theo"], "It sounds like you are going through a lot right now.", {"Dana": 0, "Theo": 0}),
    (["Dana"], "I understand how you feel. It's important for us to support each other.", {"Dana": 0, "Theo": 0}),
    (["Omar"], "Omar, you said the night shifts leave you too tired to talk about money.", {"Omar": 1, "Lena": 0}),
    (["Lena"], "Lena, you want to see the bank statements every month, not just hear that things are fine.",
     {"Omar": 0, "Lena": 1}),
    (["Lena", "Omar"], "Relationships can be hard sometimes, and that is okay.", {"Omar": 0, "Lena": 0}),
    (["Omar"], "Thank you for sharing. Let's keep talking about this.", {"Omar": 0, "Lena": 0}),
    (["Lena", "Omar"], "Lena wants to know where the money goes, and Omar wants to be trusted without checking.",
     {"Omar": 1, "Lena": 1}),
    (["Theo"], "Theo, I can see this matters to you.", {"Dana": 0, "Theo": 0}),
    (["Dana", "Theo"], "Dana misses the dinners you used to cook together, and Theo feels the new job is finally his "
     "chance.", {"Dana": 1, "Theo": 1}),
]  # fmt: skip


def _labelled(question: str) -> list[tuple[str, list[tuple[list[str], str, dict[str, int]]]]]:
    """(set name, [(addressees, line, {member: truth})]) per labelled set of `question`."""
    if question == "lectured":
        return [("held-out", LECTURED)]
    if question == "specific":
        return [("held-out", SPECIFIC)]
    understood = {"dev": UNDERSTOOD_DEV, "held-out": UNDERSTOOD_HELD_OUT}
    sets = []
    for name, items in (("dev", DEV), ("held-out", HELD_OUT)):
        if question == "understood":
            items = [(to, text, u) for (to, text, _), u in zip(items, understood[name], strict=True)]
        sets.append((name, items))
    return sets


async def _appraisal(model: str | None, questions: list[str]) -> None:
    from simulator.llm.client import LiteLLMClient, ModelSettings
    from simulator.members import appraise, is_yes
    from simulator.records import Turn

    client = LiteLLMClient(ModelSettings(cache=False, roles={"member": model} if model else {}))
    for question in questions:
        for name, items in _labelled(question):
            counts = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
            lines_right = 0  # the rung's own decision: does anyone read it so? (rung_bench's `took`)
            for to, text, labels in items:
                said = Turn(index=3, speaker="Therapist", kind="supporter", addressees=to, text=text)
                answers = []
                for member, truth in labels.items():
                    yes = is_yes((await appraise(client, question, said, member, list(labels))).text)
                    answers.append(yes)
                    counts[("t" if yes == bool(truth) else "f") + ("p" if yes else "n")] += 1
                    if yes != bool(truth):
                        print(f"  {question} {name}: {member} {truth}, said {'yes' if yes else 'no'}: {text[:64]!r}")
                lines_right += any(answers) == any(labels.values())
            pos, neg = counts["tp"] + counts["fn"], counts["tn"] + counts["fp"]
            print(f"{question}, {name}: anyone reads it so, right on {lines_right} of {len(items)} lines")
            print(
                f"{question}, {name}: {len(items)} lines, {pos + neg} (line, member) items: true and said yes "
                f"{counts['tp']}/{pos} (recall {counts['tp'] / pos:.2f}); not true and said yes {counts['fp']}/{neg} "
                f"(false-positive rate {counts['fp'] / neg:.2f})",
                flush=True,
            )


def _seeds(text: str) -> list[int]:
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(s) for s in text.split(",")]


async def _measure(seeds: list[int], model: str | None) -> list[dict]:
    from personas.library import resolve_case
    from simulator.llm.client import LiteLLMClient, ModelSettings
    from simulator.members import current_state, member_turn
    from simulator.records import Turn

    case = resolve_case(CASE)
    client = LiteLLMClient(ModelSettings(cache=False, roles={"member": model} if model else {}))
    opening = [
        Turn(index=i + 1, speaker=who, kind="member", addressees=to, text=text)
        for i, (who, to, text) in enumerate(OPENING)
    ]
    rows = []
    for kind, (to, text) in LINES.items():
        turns = [
            *opening,
            Turn(index=len(opening) + 1, speaker="Therapist", kind="supporter", addressees=to, text=text),
        ]
        for member in case.member_names:
            base = current_state(case, member, turns)
            other = next(n for n in case.member_names if n != member)
            base_tension = next(f.tension for f in base.toward if f.member == other)
            for seed in seeds:
                t0 = time.perf_counter()
                turn = await member_turn(client, case, turns, member, ["Therapist"], seed=seed, window=16)
                inner = turn.inner
                tension = next((f.tension for f in inner.toward if f.member == other), base_tension)
                rows.append(
                    {
                        "line": kind,
                        "member": member,
                        "seed": seed,
                        "reading": turn.reading,
                        "move": turn.move,
                        "d_intensity": inner.intensity - base.intensity,
                        "d_heard": inner.felt_heard - base.felt_heard,
                        "d_tension": tension - base_tension,
                        "landed": inner.landed,
                        "text": turn.text,
                        "seconds": round(time.perf_counter() - t0, 1),
                    }
                )
                r = rows[-1]
                print(
                    f"{kind:8} {member:5} s{seed}: {r['reading']:9} {r['move']:16} "
                    f"Δint {r['d_intensity']:+d} Δheard {r['d_heard']:+d} Δtension {r['d_tension']:+g}  "
                    f"({r['seconds']} s) {r['text'][:70]!r}",
                    flush=True,
                )
    return rows


def _summary(rows: list[dict]) -> None:
    print("\nline     member  n  set_off  softened  missed  Δintensity  Δfelt-heard  Δtension  moves")
    for kind in LINES:
        for member in sorted({r["member"] for r in rows}):
            sel = [r for r in rows if r["line"] == kind and r["member"] == member]
            if not sel:
                continue
            share = {k: sum(r["reading"] == k for r in sel) / len(sel) for k in ("set_off", "softened", "missed")}
            moves = {}
            for r in sel:
                moves[r["move"]] = moves.get(r["move"], 0) + 1
            print(
                f"{kind:8} {member:6} {len(sel):2}  {share['set_off']:7.2f}  {share['softened']:8.2f}  "
                f"{share['missed']:6.2f}  {statistics.mean(r['d_intensity'] for r in sel):+10.2f}  "
                f"{statistics.mean(r['d_heard'] for r in sel):+11.2f}  {statistics.mean(r['d_tension'] for r in sel):+8.2f}"
                f"  {', '.join(f'{m} {n}' for m, n in sorted(moves.items(), key=lambda kv: -kv[1]))}"
            )
    theo = {k: {r["seed"]: r for r in rows if r["member"] == "Theo" and r["line"] == k} for k in LINES}
    seeds = sorted(set(theo["blame"]) & set(theo["attuned"]))
    if not seeds:
        return
    p = {k: sum(theo[k][s]["reading"] == "set_off" for s in seeds) / len(seeds) for k in ("blame", "attuned")}
    print(f"\nTheo, blame vs attuned over {len(seeds)} seeds:")
    print(
        f"  P(set_off | blame) - P(set_off | attuned) = {p['blame']:.2f} - {p['attuned']:.2f} = {p['blame'] - p['attuned']:+.2f}"
    )
    for field, want in (("d_tension", 1), ("d_intensity", 1), ("d_heard", -1)):
        diffs = [theo["blame"][s][field] - theo["attuned"][s][field] for s in seeds]
        right = sum((d * want) > 0 for d in diffs)
        print(
            f"  {field[2:]:9} blame - attuned: mean {statistics.mean(diffs):+.2f}; the known way in {right} of "
            f"{len(seeds)} seeds, the wrong way in {sum((d * want) < 0 for d in diffs)}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0-3")
    ap.add_argument("--model", default=None, help="member model (default: the configured one, the embedded model)")
    ap.add_argument("--out", type=Path, default=None, help="write the rows as JSON here")
    ap.add_argument("--report", type=Path, default=None, help="summarise rows written before instead of running")
    ap.add_argument("--appraisal", action="store_true", help="measure `appraise` on the labelled lines")
    ap.add_argument(
        "--questions",
        default="blamed,understood",
        help="with --appraisal: blamed, understood, lectured, specific (comma-separated)",
    )
    args = ap.parse_args()
    if args.appraisal:
        asyncio.run(_appraisal(args.model, args.questions.split(",")))
        return
    if args.report:
        _summary(json.loads(args.report.read_text()))
        return
    t0 = time.perf_counter()
    rows = asyncio.run(_measure(_seeds(args.seeds), args.model))
    _summary(rows)
    print(f"\nwall {time.perf_counter() - t0:.0f} s")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
