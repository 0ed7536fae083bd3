"""Live progress of model calls, for whoever is watching (the CLI's spinners, the web page's live view); free when
nobody is. `call_line` words one call in flight the same way for both.

A watcher installs a hook with `watching(hook)`; every model call made inside it (in any task or worker thread
started from there) then reports a `CallProgress`: when it starts, as the embedded model reads the prompt and
writes tokens, and when it ends. With no watcher, `start()` is one context-variable lookup and returns None.
The hook may be called from a worker thread: it should only record what it is given.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field


@dataclass
class CallProgress:
    """One model call in flight. Token counts are what is known so far (hosted models report them at the end)."""

    role: str
    model: str
    started: float = field(default_factory=time.perf_counter)
    prompt_tokens: int | None = None  # tokens to read; known early for the embedded model only
    prompt_done: int = 0  # tokens read so far, including those served from the prefix cache
    cached_tokens: int = 0
    completion_tokens: int = 0
    finished: bool = False
    failed: bool = False
    hook: Callable[[CallProgress], None] | None = field(default=None, repr=False, compare=False)

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def update(self, **values: int) -> None:
        for key, value in values.items():
            setattr(self, key, value)
        if self.hook is not None:
            self.hook(self)

    def finish(self, *, failed: bool = False, **values: int) -> None:
        self.finished, self.failed = True, failed
        self.update(**values)


ProgressHook = Callable[[CallProgress], None]

_HOOK: ContextVar[ProgressHook | None] = ContextVar("rescue_sim_progress_hook", default=None)
_CURRENT: ContextVar[CallProgress | None] = ContextVar("rescue_sim_call_in_flight", default=None)


@contextmanager
def watching(hook: ProgressHook) -> Iterator[None]:
    """Report every model call made inside this block (and the tasks it starts) to `hook`."""
    token = _HOOK.set(hook)
    try:
        yield
    finally:
        _HOOK.reset(token)


def start(role: str, model: str) -> CallProgress | None:
    """A new call's progress, already reported to the watcher; None (and no work) when nobody watches."""
    hook = _HOOK.get()
    if hook is None:
        return None
    progress = CallProgress(role=role, model=model, hook=hook)
    hook(progress)
    return progress


@contextmanager
def in_flight(progress: CallProgress | None) -> Iterator[None]:
    """Mark `progress` as the call a model backend further down (the embedded provider) reports to."""
    if progress is None:
        yield
        return
    token = _CURRENT.set(progress)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current() -> CallProgress | None:
    """The call in flight in this context, if someone watches it."""
    return _CURRENT.get()


# -- one line per call in flight, as the terminal's spinners and the web page's live view show it --------------


def clock(seconds: float) -> str:
    """`42s`, `3:05`: a short elapsed time for a line that is redrawn."""
    seconds = max(0, int(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}" if seconds >= 60 else f"{seconds}s"


def fit_line(parts: list[str], drop: list[int], width: int | None) -> str:
    """`parts` joined with ` · `; where that is wider than `width`, the parts at the indices in `drop` are left out,
    one by one in that order, until it fits (a live line that wraps redraws as two: issue 43 counted 642 of 2,293
    frames wrapped at 80 columns). What is left is the caller's to cut."""
    kept = list(range(len(parts)))
    line = " · ".join(parts)
    for i in drop:
        if width is None or len(line) <= width:
            break
        kept.remove(i)
        line = " · ".join(parts[k] for k in kept)
    return line


def call_line(p: CallProgress, width: int | None = None) -> str:
    """`member · model · 12s · read 1,024/2,310 tokens (1,800 cached) · wrote 35` for one model call in flight; with
    `width`, the cached count, then the model (named once at the start of the run), then the word `tokens` are left
    out until it fits."""
    parts = [p.role, p.model, clock(p.elapsed)]
    if p.prompt_tokens:
        parts.append(f"read {p.prompt_done:,}/{p.prompt_tokens:,} tokens")
        if p.cached_tokens:
            parts[-1] += f" ({p.cached_tokens:,} cached)"
    if p.completion_tokens:
        parts.append(f"wrote {p.completion_tokens:,}")
    line = " · ".join(parts)
    if width is None or len(line) <= width:
        return line
    if p.prompt_tokens:
        parts[3] = f"read {p.prompt_done:,}/{p.prompt_tokens:,} tokens"
    line = fit_line(parts, [1], width)
    return line if len(line) <= width else line.replace(" tokens", "")


__all__ = [
    "CallProgress",
    "ProgressHook",
    "call_line",
    "clock",
    "current",
    "fit_line",
    "in_flight",
    "start",
    "watching",
]
