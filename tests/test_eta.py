"""Waiting with something on screen (issue 43, item 4): the judging ETA leaves out the first item, which paid for
reading the shared prompt, and a long prompt read says what is read and for about how long. Fake clocks with known
durations; no model."""

from __future__ import annotations

import io

from rich.console import Console

from simulator.cli._render import LONG_READ, Tally, Waiting
from simulator.llm.progress import CallProgress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def judging(first_s: float, each_s: float, total: int, *, warmup: bool):
    """A tally of `total` judge calls: the first takes `first_s`, the rest `each_s`; the ETA after each."""
    clock = Clock()
    tally = Tally("judging", total, warmup=warmup, clock=clock)
    etas = []
    for i in range(total):
        clock.now += first_s if i == 0 else each_s
        tally.done += 1
        etas.append(tally.eta())
    return etas


def test_the_judging_eta_leaves_out_the_first_call():
    """README command 1's judging as the issue saw it: a 47 s first call (the case cards and transcript read), then
    79 calls of about 1.6 s. The old pace opened at 61 minutes; this one says nothing after the first call and
    then the truth (78 calls x 1.6 s)."""
    etas = judging(47.0, 1.6, 80, warmup=True)
    assert etas[0] is None
    assert round(etas[1], 6) == round(78 * 1.6, 6)
    assert round(etas[40], 6) == round(39 * 1.6, 6) and etas[-1] is None
    old = judging(47.0, 1.6, 80, warmup=False)
    assert round(old[0]) == 79 * 47  # the old reading: 61:53 for a job with 2:06 left


def test_the_eta_follows_a_pace_that_changes():
    clock = Clock()
    tally = Tally("judging", 10, warmup=True, clock=clock)
    for step in (30.0, 2.0, 4.0):  # the first, then 2 s and 4 s: 3 s a call over the two, 7 calls left
        clock.now += step
        tally.done += 1
    assert tally.eta() == 21.0
    assert tally.line() == "judging 3/10 · 36s · ETA 21s"
    clock.now += 10  # nothing finished: the ETA is the pace's, elapsed moves on
    assert tally.line() == "judging 3/10 · 46s · ETA 21s"


def test_items_done_at_once_count_as_one_step():
    """Sessions skipped on resume (or calls served from the cache) finish together: without warmup the pace is the
    mean over everything; with it, the first step, however many it finished, is left out."""
    clock = Clock()
    sessions = Tally("sessions", 6, clock=clock)
    clock.now += 60
    sessions.done = 2
    assert sessions.eta() == 120.0  # 30 s a session so far, 4 left
    clock.now += 60
    tally = Tally("judging", 10, warmup=True, clock=clock)
    clock.now += 1
    tally.done = 4  # four answers from the cache at once
    assert tally.eta() is None
    clock.now += 5
    tally.done = 5
    assert tally.eta() == 25.0


def read(waiting: Waiting, clock: Clock, call: CallProgress, done: int, after_s: float) -> None:
    clock.now += after_s
    call.prompt_done = done
    waiting.hook(call)


def test_a_long_read_says_what_is_read_and_for_how_long_once():
    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=False, color_system=None)
    clock = Clock()
    waiting = Waiting(console, clock=clock)
    call = CallProgress(role="member", model="local/qwen")
    waiting.hook(call)  # started: the tokens are not known yet (the model may still be loading)
    call.prompt_tokens = 1024
    read(waiting, clock, call, 0, 20.0)  # the prompt is tokenised: the reading starts
    assert out.getvalue() == ""
    read(waiting, clock, call, 256, 10.0)  # the first chunk: 25.6 tokens/s, 768 tokens left
    read(waiting, clock, call, 512, 10.0)
    assert out.getvalue() == "reading the member prompt: 1,024 tokens, about 30s at 26 tokens/s\n"
    call.finish()
    waiting.hook(call)
    assert waiting._reads == {}


def test_a_short_read_or_a_cached_prompt_prints_nothing():
    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=False, color_system=None)
    clock = Clock()
    waiting = Waiting(console, clock=clock)
    short = CallProgress(role="judge", model="m", prompt_tokens=LONG_READ - 1)
    cached = CallProgress(role="judge", model="m", prompt_tokens=2000, cached_tokens=1900, prompt_done=1900)
    for call, end in ((short, LONG_READ - 1), (cached, 2000)):
        waiting.hook(call)
        read(waiting, clock, call, end, 3.0)
    assert out.getvalue() == ""
    judge = CallProgress(role="judge", model="m", prompt_tokens=1480, cached_tokens=400, prompt_done=400)
    waiting.hook(judge)
    read(waiting, clock, judge, 656, 8.0)
    assert out.getvalue() == "reading the judge prompt: 1,480 tokens (400 cached), about 25s at 32 tokens/s\n"
