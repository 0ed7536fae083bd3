"""Where the README's first command spends its time, measured (not asserted).

    python tests/benchmarks/first_command_bench.py RUN_DIR [RUN_DIR ...]     # breakdown of finished runs
    flock /tmp/rescue-embedded.lock python tests/benchmarks/first_command_bench.py --rates   # this machine's
                                                                               # llama.cpp prompt/generation speed
    flock /tmp/rescue-embedded.lock python tests/benchmarks/first_command_bench.py --sampler # grammar-constrained
                                                 # generation: llama-cpp-python's sampler vs ours, same prompt
    flock /tmp/rescue-embedded.lock python tests/benchmarks/first_command_bench.py --batch   # four judge-like
                                                 # calls one at a time vs decoded together
    flock /tmp/rescue-embedded.lock python tests/benchmarks/first_command_bench.py --draft   # structured calls
                                                 # with the schema's forced text drafted, and without

For each run folder (a session of `rescue-sim run --case dana-and-theo --turns 4`, plus its judgment): model
calls per role, prompt tokens read (and how many llama.cpp's prefix cache served), tokens generated, model
seconds, and the tokens per second these imply. On a shared machine the seconds are inflated by other load;
`--rates` measures the embedded model's prompt and generation speed now, and `--prompt-tps/--gen-tps` turn the
token counts into the time the same work takes at those speeds (e.g. on two uncontended cores). Target: session
plus judging under 6 minutes on 2 uncontended cores.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def breakdown(run_dir: Path) -> dict[str, dict[str, float]]:
    """role -> calls, prompt, cached, generated, seconds (session calls by role, plus `judge`)."""
    from judges import read_judgment
    from simulator.runfolder import RunFolder

    folder = RunFolder(run_dir)
    out: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for sid in folder.session_ids():
        record = folder.load_session(sid)
        calls = list(record.calls)
        judgment = read_judgment(folder, sid)
        if judgment is not None:
            calls += [c for v in judgment.verdicts for c in v.calls]
        for c in calls:
            row = out[c.role]
            row["calls"] += 1
            row["prompt"] += c.usage.prompt_tokens
            row["cached"] += c.usage.cached_prompt_tokens
            row["generated"] += c.usage.completion_tokens
            row["seconds"] += c.latency_s
    return out


def print_breakdown(run_dir: Path, prompt_tps: float | None, gen_tps: float | None) -> None:
    rows = breakdown(run_dir)
    print(f"\n{run_dir}")
    print(f"{'role':<10}{'calls':>6}{'prompt':>8}{'cached':>8}{'read':>8}{'written':>9}{'seconds':>9}{'at rates':>10}")
    total = defaultdict(float)
    for role in sorted(rows, key=lambda r: (r == "judge", r)):
        r = rows[role]
        read = r["prompt"] - r["cached"]
        est = read / prompt_tps + r["generated"] / gen_tps if prompt_tps and gen_tps else None
        print(
            f"{role:<10}{int(r['calls']):>6}{int(r['prompt']):>8}{int(r['cached']):>8}{int(read):>8}"
            f"{int(r['generated']):>9}{r['seconds']:>9.1f}{'' if est is None else f'{est:>10.1f}'}"
        )
        for k in ("calls", "prompt", "cached", "generated", "seconds"):
            total[k] += r[k]
        total["estimate"] += est or 0.0
        if role != "judge":
            total["session_seconds"] += r["seconds"]
            total["session_estimate"] += est or 0.0
    read = total["prompt"] - total["cached"]
    print(
        f"{'total':<10}{int(total['calls']):>6}{int(total['prompt']):>8}{int(total['cached']):>8}{int(read):>8}"
        f"{int(total['generated']):>9}{total['seconds']:>9.1f}"
        + (f"{total['estimate']:>10.1f}" if prompt_tps and gen_tps else "")
    )
    judging = total["seconds"] - total["session_seconds"]
    print(f"session model seconds {total['session_seconds']:.0f}, judging {judging:.0f}")
    if prompt_tps and gen_tps:
        print(
            f"at {prompt_tps:g} prompt tok/s and {gen_tps:g} generated tok/s: session "
            f"{total['session_estimate']:.0f}s, judging {total['estimate'] - total['session_estimate']:.0f}s, "
            f"together {total['estimate']:.0f}s"
        )


def measure_rates(repeats: int = 3) -> tuple[float, float]:
    """Prompt and generation tokens per second of the embedded model now (fresh prompts, no cache reuse)."""
    from simulator.llm.embedded import get_embedded_model

    model = get_embedded_model()
    prompt_rates, gen_rates = [], []
    for i in range(repeats):
        words = " ".join(f"w{i}x{j}" for j in range(300))
        messages = [{"role": "user", "content": f"{words}\n\nCount the words above, then tell a long story."}]
        model._llm.reset()
        model._states._snaps.clear()
        started = time.perf_counter()
        out = model.generate(messages, max_tokens=1, temperature=0.0, seed=0)
        prompt_rates.append(out.prompt_tokens / (time.perf_counter() - started))
        started = time.perf_counter()
        out = model.generate(messages, max_tokens=96, temperature=0.0, seed=0)
        gen_rates.append(out.completion_tokens / (time.perf_counter() - started))
    return max(prompt_rates), max(gen_rates)


def judge_like(turns: int, n_entries: int, quote_max: int, why_max: int, ask: str) -> tuple[list[dict[str, str]], dict]:
    """A judge-like prompt over a synthetic couple transcript of `turns` lines, and its reply schema."""
    from pydantic import BaseModel, Field

    class Entry(BaseModel):
        quote: str = Field(max_length=quote_max)
        why: str = Field(max_length=why_max)
        score: int = Field(ge=1, le=5)

    class Reply(BaseModel):
        entries: list[Entry] = Field(min_length=n_entries, max_length=n_entries)

    transcript = "\n".join(
        f"[{i}] {'Dana' if i % 2 else 'Theo'}: "
        + ("You are never home before nine and I eat alone." if i % 2 else "I am doing this for us, you know that.")
        for i in range(1, turns + 1)
    )
    messages = [
        {"role": "system", "content": "You rate a counselling session."},
        {"role": "user", "content": f"{transcript}\n\n{ask}"},
    ]
    return messages, Reply.model_json_schema()


def compare_samplers(max_tokens: int = 300) -> None:
    """Grammar-constrained greedy generation of one judge-like JSON reply, twice: through llama-cpp-python's
    `create_completion` (the grammar masks all 151k candidates at every token) and through
    `EmbeddedModel.generate` (the grammar is consulted about the sampled token only). Same prompt, same
    tokens out (checked), so the ratio is the sampler's cost alone."""
    from simulator.llm.embedded import _IM_END, get_embedded_model, render_chatml

    messages, schema = judge_like(
        8,
        6,
        60,
        120,
        "Rate six aspects of the session: quote the words, say why, give a score from 1 to 5. "
        "Answer with one JSON object.",
    )
    model = get_embedded_model()
    model.draft_json = False  # same tokens out as llama-cpp-python's sampler (drafts lay JSON out in one way)
    grammar = model._grammar(schema)
    tokens = model._llm.tokenize(render_chatml(messages).encode("utf-8"), add_bos=False, special=True)
    model.generate(messages, max_tokens=1, temperature=0.0, seed=0)  # warm: both runs start with the prompt read
    times, texts = {}, {}
    for name in ("llama-cpp-python", "rescue-sim"):
        started = time.perf_counter()
        if name == "rescue-sim":
            out = model.generate(messages, max_tokens=max_tokens, temperature=0.0, seed=0, json_schema=schema)
            texts[name], n = out.text, out.completion_tokens
        else:
            with model._lock:
                res = model._llm.create_completion(
                    tokens,
                    max_tokens=max_tokens,
                    temperature=0.0,
                    top_p=0.95,
                    repeat_penalty=1.1,
                    seed=0,
                    stop=[_IM_END],
                    grammar=grammar,
                )
            texts[name], n = res["choices"][0]["text"], res["usage"]["completion_tokens"]
        times[name] = (time.perf_counter() - started, n)
    for name, (secs, n) in times.items():
        print(f"{name:<18} {n:>4} tokens in {secs:6.1f}s = {n / secs:5.2f} tok/s")
    base, ours = times["llama-cpp-python"], times["rescue-sim"]
    print(
        f"speed-up {base[0] / base[1] * ours[1] / ours[0]:.2f}x per token; same text: {texts['rescue-sim'] == texts['llama-cpp-python']}"
    )


def compare_drafting(repeats: int = 2, only: str | None = None) -> None:
    """The same structured calls with the schema's forced text drafted (fed without sampling, one decode for a
    run of forced tokens) and without, interleaved, each from a freshly read prompt: a member's self-report and
    a lean judge's reply for one session. Generation only: both read the same prompt first."""
    from judges import load_rubric
    from judges.scoring._schema import LEAN, SchemaBuilder
    from simulator.llm.embedded import get_embedded_model
    from simulator.members import _state_schema
    from tests._session_fixtures import couple_session

    record = couple_session()
    turns = "\n".join(f'[{t.index}] {t.speaker}: "{t.text}"' for t in record.turns)
    judge = SchemaBuilder(record, load_rubric(), LEAN).reply(
        [t for t in record.turns if t.kind == "supporter"], session=False
    )
    calls = {
        "member state": (
            f"{turns}\n\nAs Dana, report how the last line landed and how you feel now, as JSON.",
            _state_schema(("Theo",), True).model_json_schema(),
            300,
        ),
        "lean judge": (
            f"{turns}\n\nRate each counsellor turn: cite an opening, say why, then score each aspect, as JSON.",
            judge.model_json_schema(),
            400,
        ),
    }
    model = get_embedded_model()
    rows: dict[tuple[str, bool], list[tuple[float, int, int]]] = defaultdict(list)
    for _ in range(repeats):
        for name, (ask, schema, max_tokens) in calls.items():
            if only and name != only:
                continue
            messages = [
                {"role": "system", "content": "You are part of a counselling simulation."},
                {"role": "user", "content": ask},
            ]
            for draft in (False, True):
                model.draft_json = draft
                model._llm.reset()
                model._states._snaps.clear()
                model.generate(messages, max_tokens=1, temperature=0.0, seed=0)  # the prompt, read for both alike
                drafted = model.stats.drafted_tokens
                started = time.perf_counter()
                out = model.generate(messages, max_tokens=max_tokens, temperature=0.7, seed=1, json_schema=schema)
                secs = time.perf_counter() - started
                rows[name, draft].append((secs, out.completion_tokens, model.stats.drafted_tokens - drafted))
                print(f"  {name}, drafting {'on' if draft else 'off'}: {rows[name, draft][-1]}", flush=True)
    model.draft_json = True
    print(f"{'call':<14}{'drafting':>9}{'tokens':>8}{'drafted':>9}{'seconds':>9}{'ms/token':>10}")
    for (name, draft), runs in rows.items():
        secs, toks, drafted = (sum(x) / len(runs) for x in zip(*runs))
        print(
            f"{name:<14}{'on' if draft else 'off':>9}{toks:>8.0f}{drafted:>9.0f}{secs:>9.2f}{1000 * secs / toks:>10.1f}"
        )
    for name in calls:
        if (name, True) not in rows:
            continue
        off, on = (sum(r[0] for r in rows[name, d]) for d in (False, True))
        print(f"{name}: drafting takes {on / off:.2f}x the time without it")


def compare_batching(n: int = 4, max_tokens: int = 200) -> None:
    """`n` judge-like calls sharing a long prefix (as a judge's per-intervention calls do), first one at a time,
    then issued together from `n` threads so the embedded model decodes them in one batch."""
    from concurrent.futures import ThreadPoolExecutor

    from simulator.llm.embedded import get_embedded_model

    asks, schema = [], {}
    for t in range(1, n + 1):
        messages, schema = judge_like(
            29,
            3,
            40,
            100,
            f"Rate turn {t}: three aspects, each with a quote, a reason and a score from 1 to 5, as JSON.",
        )
        asks.append(messages)
    model = get_embedded_model()

    def ask(messages):
        return model.generate(messages, max_tokens=max_tokens, temperature=0.0, seed=0, json_schema=schema)

    results = {}
    for name in ("one at a time", "together"):
        model._llm.reset()
        model._states._snaps.clear()
        started = time.perf_counter()
        if name == "together":
            with ThreadPoolExecutor(n) as pool:
                outs = list(pool.map(ask, asks))
        else:
            outs = [ask(m) for m in asks]
        secs = time.perf_counter() - started
        results[name] = secs
        gen = sum(o.completion_tokens for o in outs)
        read = sum(o.prompt_tokens - o.cached_prompt_tokens for o in outs)
        print(f"{name:<14} {n} calls: {read:>5} prompt tokens read, {gen:>4} generated in {secs:6.1f}s")
    print(
        f"speed-up {results['one at a time'] / results['together']:.2f}x (batched calls so far: {model.stats.batched_calls})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="*", type=Path)
    parser.add_argument("--rates", action="store_true", help="Measure the embedded model's speed now.")
    parser.add_argument("--sampler", action="store_true", help="Compare grammar-constrained samplers.")
    parser.add_argument("--batch", action="store_true", help="Compare calls one at a time with calls together.")
    parser.add_argument("--draft", action="store_true", help="Compare structured calls with and without drafting.")
    parser.add_argument("--prompt-tps", type=float, help="Prompt tokens per second to estimate times at.")
    parser.add_argument("--gen-tps", type=float, help="Generated tokens per second to estimate times at.")
    args = parser.parse_args()
    prompt_tps, gen_tps = args.prompt_tps, args.gen_tps
    if args.rates:
        prompt_tps, gen_tps = measure_rates()
        print(f"embedded model now: {prompt_tps:.1f} prompt tok/s, {gen_tps:.1f} generated tok/s")
    if args.sampler:
        compare_samplers()
    if args.batch:
        compare_batching()
    if args.draft:
        compare_drafting()
    for run in args.runs:
        print_breakdown(run, prompt_tps, gen_tps)


if __name__ == "__main__":
    main()
