"""The room measures of issue 42 (simulator.turn_checks.read_line), measured where the answer is known.

    python tests/benchmarks/room_bench.py known [--file F] [--ask]   # hand-labelled lines (data/room_lines.yaml)
    python tests/benchmarks/room_bench.py rescue [--src FILE]   # RESCUE's real member lines
    python tests/benchmarks/room_bench.py sessions RUN_OR_SESSIONS_DIR ...   # simulated sessions

`known`: per measure, how the rule reads lines whose answer was written before the rule existed (hits, false
alarms, misses, agreement). `--file data/room_lines_blind.yaml` reads the blind held-out set (written by a helper
that read only the case cards); `--file data/room_lines_sealed.yaml --counts-only` the sealed one, printing no
line, so it stays unread by whoever tunes the checks. `--ask` also asks each yes/no question about every line, and
reports the question alone and as `ask_room` uses it: the rule first, the question only where the rule is silent.
`rescue`: real people. For each sample, a card is derived from its first third of rows (the importer's
`case_from_sample` on that part), and every member line of the other two thirds is read against it, with the
rows before it as the transcript: the share of real lines the rule calls grounded is the real-people reference
for grounding; the shares it calls counsellor voice, third person or echo are false-positive rates on real people
(a real member is never the counsellor; the third-person rule is reported with its lines, to be read). A real
member may state a figure the first third never gave, rightly: `invented_figure`'s share there is how often the
rule would re-ask a real person, not an error rate.
`sessions`: the four shares over the member turns of saved sessions (the audit's figures).
Prints its figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).parent
MEASURES = (
    "grounded",
    "counsellor_voice",
    "third_person",
    "echo",
    "wrong_address",
    "given_away",
    "invented_figure",
    "claimed",
)


def _turn(i: int, speaker: str, text: str, to: list[str]):
    from personas.taxonomy import SUPPORTER_NAME
    from simulator.records import Turn

    kind = "supporter" if speaker == SUPPORTER_NAME else "member"
    return Turn(index=i, speaker=speaker, kind=kind, addressees=to, text=text)


def _lines(file: Path) -> list[dict]:
    return yaml.safe_load(file.read_text())["lines"]


def _record(case, turns):
    """A one-off record of `turns` on `case`, for asking a question about its last line."""
    from simulator.records import EndReason, SessionRecord, SessionStatus

    return SessionRecord(session_id="known", case=case, supporter="-", models={}, seed=0, max_turns=1,
                         status=SessionStatus.COMPLETED, end_reason=EndReason.TURN_LIMIT, turns=turns)  # fmt: skip


def _rule_reads(lines: list[dict]) -> list:
    """Per line, how the rules read it (simulator.turn_checks.read_line)."""
    from personas.library import resolve_case
    from simulator.turn_checks import read_line

    out = []
    for ln in lines:
        case = resolve_case(ln["case"])
        earlier = [_turn(i + 1, e["speaker"], e["text"], []) for i, e in enumerate(ln.get("earlier", []))]
        out.append(read_line(ln["text"], ln["speaker"], ln["to"], case, earlier))
    return out


def known(file: Path, quiet: bool = False) -> None:
    lines = _lines(file)
    counts = {m: {"hit": 0, "false_alarm": 0, "miss": 0, "right_no": 0} for m in MEASURES}
    wrong: list[str] = []
    for ln, r in zip(lines, _rule_reads(lines), strict=True):
        for m in MEASURES:
            if m not in ln:  # a file may label one measure only (room_lines_echo.yaml, room_lines_address.yaml)
                continue
            got, want = getattr(r, m) is not None, bool(ln[m])
            key = "hit" if got and want else "false_alarm" if got else "miss" if want else "right_no"
            counts[m][key] += 1
            if got != want:
                wrong.append(f"  {m:<17} want {want!s:<5} got {getattr(r, m)!r}: {ln['speaker']}: {ln['text']}")
    print(f"{len(lines)} known-answer lines ({file})")
    print(f"{'measure':<18}{'hits':>6}{'false alarms':>14}{'misses':>8}{'right no':>10}{'agreement':>11}")
    for m, c in counts.items():
        if not (n := sum(c.values())):
            continue
        agree = (c["hit"] + c["right_no"]) / n
        print(f"{m:<18}{c['hit']:>6}{c['false_alarm']:>14}{c['miss']:>8}{c['right_no']:>10}{agree:>11.0%}")
    if wrong and not quiet:
        print("disagreements:")
        print("\n".join(wrong))


def known_ask(file: Path, model: str | None, quiet: bool = False) -> None:
    """The yes/no questions (judges.room_audit.room_questions, asked as `ask_room` asks them) on the known-answer
    lines: every line asked every question (not only where the rule is silent), so each question is measured on
    its own against the labels, and then as `ask_room` uses it (the rule's hit stands; the question decides only
    where the rule is silent). Counted yes at the question's own `yes_at`; the AUC says how well P(yes) ranks the
    lines whatever the threshold."""
    import asyncio

    from judges.room_audit import room_prompt, room_questions
    from judges.scoring._checklist import SAMPLES
    from personas.library import resolve_case
    from simulator.llm.client import LiteLLMClient, ModelSettings

    client = LiteLLMClient(ModelSettings(cache=False))
    model = model or client.model_for("judge")
    lines = _lines(file)
    rules = [{m: getattr(r, m) is not None for m in MEASURES} for r in _rule_reads(lines)]
    asked = tuple(room_questions())
    got: dict[str, list[tuple[bool, float, bool, str]]] = {m: [] for m in asked}

    async def run() -> None:
        for ln, rule in zip(lines, rules, strict=True):
            case = resolve_case(ln["case"])
            turns = [_turn(i + 1, e["speaker"], e["text"], []) for i, e in enumerate(ln.get("earlier", []))]
            turns.append(_turn(len(turns) + 1, ln["speaker"], ln["text"], ln["to"]))
            rec = _record(case, turns)
            for m in asked:
                prompt = room_prompt(rec, len(turns), m)
                a = await client.yes_probability(prompt, role="judge", model=model, samples=SAMPLES, seed=0)
                got[m].append((bool(ln[m]), a.p_yes, rule[m], f"{ln['speaker']}: {ln['text'][:90]}"))

    asyncio.run(run())
    print(f"questions on the known-answer lines, model {model}")
    mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")  # noqa: E731

    def tally(reads: list[tuple[bool, bool]]) -> str:
        hit = sum(w and g for w, g in reads)
        fa = sum(g and not w for w, g in reads)
        miss = sum(w and not g for w, g in reads)
        agree = sum(w == g for w, g in reads) / max(len(reads), 1)
        return f"{hit:>5}{fa:>6}{miss:>6}{agree:>7.0%}"

    print(f"{'':<18}{'':>4}{'question alone':^24}{'rule alone':^24}{'rule, then question':^24}")
    print(f"{'measure':<18}{'n':>4}" + f"{'hits':>5}{'f.a.':>6}{'miss':>6}{'agree':>7}" * 3
          + f"{'mean P|yes':>12}{'mean P|no':>11}")  # fmt: skip
    for m, rows in got.items():
        cut = room_questions()[m].yes_at
        alone = [(w, p >= cut) for w, p, _, _ in rows]
        rule = [(w, r) for w, _, r, _ in rows]
        both = [(w, r or p >= cut) for w, p, r, _ in rows]
        py = [p for w, p, _, _ in rows if w]
        pn = [p for w, p, _, _ in rows if not w]
        auc = sum((a > b) + 0.5 * (a == b) for a in py for b in pn) / max(len(py) * len(pn), 1)
        print(f"{m:<18}{len(rows):>4}{tally(alone)}{tally(rule)}{tally(both)}{mean(py):>12.2f}{mean(pn):>11.2f}"
              f"   AUC {auc:.2f}, yes at P >= {cut}")  # fmt: skip
    if quiet:
        return
    print("where rule-then-question disagrees with the label:")
    for m, rows in got.items():
        for w, p, r, text in rows:
            if w != (r or p >= room_questions()[m].yes_at):
                print(f"  {m:<17} want {w!s:<5} rule {r!s:<5} P {p:.2f}: {text}")


def rescue(src: Path, ask: str | None = None) -> None:
    from personas.rescue import case_from_sample, load_rescue
    from personas.taxonomy import SUPPORTER_NAME
    from simulator.turn_checks import read_line

    samples = load_rescue(src)
    asked: list = []
    total = {m: 0 for m in MEASURES}
    n = 0
    shown: dict[str, list[str]] = {m: [] for m in MEASURES}
    print(f"{'sample':<48}{'lines':>6}" + "".join(f"{m:>18}" for m in MEASURES))
    for s in samples:
        k = max(1, len(s.rows) // 3)
        head = s.model_copy(update={"rows": s.rows[:k]})
        try:
            case = case_from_sample(head)
        except Exception as err:  # a part too short to derive a card from is reported, not hidden
            print(f"{s.sample_id:<48} no card from its first {k} rows: {err}")
            continue
        members = set(case.member_names)
        if ask is not None:
            asked.append((case, s.rows[k:]))
        turns = []
        for i, row in enumerate(s.rows, 1):
            who = row.primary_speaker if row.primary_speaker in members else SUPPORTER_NAME
            to = [SUPPORTER_NAME if t not in members else t for t in row.target]
            turns.append(_turn(i, who, row.dialogue_cleaned, to))
        per = {m: 0 for m in MEASURES}
        lines = 0
        for i, t in enumerate(turns):
            if i < k or t.kind != "member" or not t.text.strip():
                continue
            lines += 1
            r = read_line(t.text, t.speaker, t.addressees, case, turns[:i])
            for m in MEASURES:
                if getattr(r, m) is not None:
                    per[m] += 1
                    if m != "grounded" and len(shown[m]) < 8:
                        shown[m].append(f"  {m}: {t.speaker} (to {', '.join(t.addressees)}): {t.text[:110]}  <- "
                                        f"{getattr(r, m)}")  # fmt: skip
        n += lines
        for m in MEASURES:
            total[m] += per[m]
        print(f"{s.sample_id:<48}{lines:>6}" + "".join(f"{per[m] / max(lines, 1):>18.0%}" for m in MEASURES))
    print(f"{'all real member lines':<48}{n:>6}" + "".join(f"{total[m] / max(n, 1):>18.0%}" for m in MEASURES))
    print("real lines a rule fired on (first 8 per measure):")
    for m in MEASURES:
        print("\n".join(shown[m]) or f"  {m}: none")
    if ask is not None:
        _rescue_ask(asked, ask or None)


def _rescue_ask(parts: list, model: str | None) -> None:
    """The questions on real lines (the rows after each derived card's part): a real member's line read as a
    therapist's is a false alarm on real people; a real therapist's line, put in a member's mouth, read as a
    therapist's is a hit (how much of real counselling talk the question can see)."""
    import asyncio

    from judges.room_audit import room_prompt, room_questions
    from judges.scoring._checklist import SAMPLES
    from simulator.llm.client import LiteLLMClient, ModelSettings

    client = LiteLLMClient(ModelSettings(cache=False))
    model = model or client.model_for("judge")
    seen: dict[str, dict[str, list[float]]] = {m: {"member": [], "therapist": []} for m in room_questions()}

    async def run() -> None:
        for case, rows in parts:
            members = list(case.member_names)
            for row in rows:
                text = row.dialogue_cleaned.strip()
                if len(text.split()) < 3:
                    continue
                kind = "member" if row.primary_speaker in members else "therapist"
                speaker = row.primary_speaker if kind == "member" else members[0]
                rec = _record(case, [_turn(1, speaker, text, [])])
                for m in room_questions():
                    a = await client.yes_probability(room_prompt(rec, 1, m), role="judge", model=model,
                                                     samples=SAMPLES, seed=0)  # fmt: skip
                    seen[m][kind].append(a.p_yes)

    asyncio.run(run())
    print(f"questions on RESCUE's real lines (3+ words), model {model}")
    for m, by in seen.items():
        cut = room_questions()[m].yes_at
        for kind, ps in by.items():
            held = sum(p >= cut for p in ps)
            print(f"  {m}: real {kind} lines read yes (P >= {cut}): {held}/{len(ps)}"
                  f" ({held / max(len(ps), 1):.0%}), mean P {sum(ps) / max(len(ps), 1):.2f}")  # fmt: skip


def sessions(folders: list[Path]) -> None:
    from judges.room_audit import audit_record
    from simulator.records import SessionRecord

    for folder in folders:
        d = folder / "sessions" if (folder / "sessions").is_dir() else folder
        recs = [SessionRecord.model_validate_json(p.read_text()) for p in sorted(d.glob("*.json"))]
        audits = [audit_record(r) for r in recs]
        n = sum(a.member_turns for a in audits)
        row = {m: sum(getattr(a.room, f"{m}_turns") for a in audits) for m in MEASURES}
        print(f"{folder}: {len(recs)} sessions, {n} member turns: " + ", ".join(
            f"{m} {row[m]} ({row[m] / max(n, 1):.0%})" for m in MEASURES))  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    k = sub.add_parser("known")
    k.add_argument(
        "--ask", action="store_true", help="also ask the yes/no questions on the embedded (or --model) judge"
    )
    k.add_argument("--model", help="the judge model for --ask (default: the embedded model)")
    k.add_argument("--counts-only", action="store_true", help="print no line (for a sealed file, read unseen)")
    k.add_argument("--file", type=Path, default=HERE / "data" / "room_lines.yaml", help="the labelled lines")
    r = sub.add_parser("rescue")
    r.add_argument(
        "--src", type=Path, default=Path(__file__).resolve().parents[3] / "shared" / "rescue" / "samples.jsonl"
    )
    r.add_argument(
        "--ask", nargs="?", const="", default=None, metavar="MODEL",
        help="also ask the room questions about the real lines (default model: the embedded judge)",
    )  # fmt: skip
    s = sub.add_parser("sessions")
    s.add_argument("folders", type=Path, nargs="+")
    args = ap.parse_args()
    if args.cmd == "known":
        known(args.file, args.counts_only)
        if args.ask:
            known_ask(args.file, args.model, args.counts_only)
    elif args.cmd == "rescue":
        rescue(args.src, args.ask)
    else:
        sessions(args.folders)


if __name__ == "__main__":
    sys.exit(main())
