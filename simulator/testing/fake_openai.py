"""A local OpenAI-compatible fake server: `/v1/chat/completions` and `/v1/models` on 127.0.0.1 only.

Replies (`simulator.testing.fake_replies`) are made up but valid: when a request asks for structured output
(an OpenAI `response_format` with a `json_schema`, or a JSON schema spelled out in the prompt, as rescue-sim's
chat profile does), the reply is a JSON instance of that schema; otherwise a short line of speech. Replies are a
pure function of the seed and the request body, so the same request always gets the same answer. Faults are
drawn per request from a seeded generator at configurable rates: HTTP 429, HTTP 500, a hang (the request never
answers in time), a malformed body (not JSON), and bad content (a valid envelope whose text is not the requested JSON).

Use it in a thread (unit tests)::

    with FakeOpenAIServer(latency_s=0.01) as server:
        url = server.url            # http://127.0.0.1:PORT/v1
        ...
        server.stats()["max_in_flight"]

or as a separate process (benchmarks, so the server does not share the caller's interpreter)::

    with spawn_server(latency_s=0.2, faults=FaultRates(http_429=0.05)) as server: ...

or from a shell: `python -m simulator.testing.fake_openai --latency 0.2 --rate-429 0.05`.
`GET /_fake/stats` and `POST /_fake/reset` read and reset the counters; `GET /_fake/requests` returns the
recorded request bodies when started with `record=True` (benchmarks replay them with a bare client). With
`canonical=True` a reply depends on the request's JSON, not its bytes, so clients that serialise the same request
differently (litellm and the lean path) get the same answers.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import random
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from simulator.llm.fake import anchor_reading
from simulator.testing.fake_replies import instance_for_schema, reply_for, tokens_of

__all__ = ["FakeOpenAIServer", "FaultRates", "SpawnedServer", "instance_for_schema", "spawn_server"]

HOST = "127.0.0.1"  # loopback only, never a public interface


class FaultRates(BaseModel):
    """Share of requests (0-1) answered with each fault; the rest are answered normally."""

    model_config = ConfigDict(extra="forbid")

    http_429: float = Field(default=0.0, ge=0, le=1)
    http_500: float = Field(default=0.0, ge=0, le=1)
    hang: float = Field(default=0.0, ge=0, le=1, description="Never answers within `hang_s`.")
    malformed: float = Field(default=0.0, ge=0, le=1, description="HTTP 200 with a body that is not JSON.")
    bad_content: float = Field(default=0.0, ge=0, le=1, description="Valid envelope, content not the asked JSON.")

    @property
    def total(self) -> float:
        return self.http_429 + self.http_500 + self.hang + self.malformed + self.bad_content

    @classmethod
    def spread(cls, rate: float) -> FaultRates:
        """`rate` split evenly over the five kinds of fault."""
        return cls(http_429=rate / 5, http_500=rate / 5, hang=rate / 5, malformed=rate / 5, bad_content=rate / 5)


# -- the server --------------------------------------------------------------------------------------------------


@dataclass
class _Stats:
    requests: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    ok: int = 0
    http_429: int = 0
    http_500: int = 0
    hang: int = 0
    malformed: int = 0
    bad_content: int = 0


YesNo = Callable[[dict[str, Any]], float | None]


class _App:
    def __init__(
        self,
        *,
        latency_s: float,
        faults: FaultRates,
        seed: int,
        hang_s: float,
        record: bool,
        canonical: bool = False,
        yes_no: YesNo | None = None,
        logprobs: bool = True,
        anchors: dict[str, float] | None = None,
    ):
        self.anchors = anchors
        self.latency_s, self.faults, self.seed, self.hang_s, self.record = latency_s, faults, seed, hang_s, record
        self.canonical = canonical
        self.yes_no, self.logprobs = yes_no, logprobs
        self.rng = random.Random(seed)
        self.stats = _Stats()
        self.recorded: list[str] = []

    def build(self) -> Any:
        from aiohttp import web

        app = web.Application(client_max_size=64 * 1024**2)
        app.router.add_post("/v1/chat/completions", self.chat)
        app.router.add_post("/chat/completions", self.chat)
        app.router.add_get("/v1/models", self.models)
        app.router.add_get("/models", self.models)
        app.router.add_get("/_fake/stats", self.get_stats)
        app.router.add_post("/_fake/reset", self.reset)
        app.router.add_get("/_fake/requests", self.get_requests)
        return app

    def _fault(self) -> str | None:
        f = self.faults
        r = self.rng.random()
        for name in ("http_429", "http_500", "hang", "malformed", "bad_content"):
            rate = getattr(f, name)
            if r < rate:
                return name
            r -= rate
        return None

    async def chat(self, request: Any) -> Any:
        from aiohttp import web

        s = self.stats
        s.requests += 1
        s.in_flight += 1
        s.max_in_flight = max(s.max_in_flight, s.in_flight)
        try:
            raw = await request.read()
            if self.record:
                self.recorded.append(raw.decode("utf-8"))
            fault = self._fault()
            if fault == "hang":
                s.hang += 1
                await asyncio.sleep(self.hang_s)
                return web.Response(status=504, text="hung")
            await asyncio.sleep(self.latency_s)
            if fault == "http_429":
                s.http_429 += 1
                err = {"error": {"message": "Rate limit reached (fake)", "type": "rate_limit_error", "code": "429"}}
                return web.json_response(err, status=429, headers={"retry-after-ms": "50"})
            if fault == "http_500":
                s.http_500 += 1
                err = {"error": {"message": "Internal server error (fake)", "type": "server_error", "code": "500"}}
                return web.json_response(err, status=500)
            if fault == "malformed":
                s.malformed += 1
                return web.Response(
                    status=200, text='{"id": "chatcmpl-fake", "choices": [{"mess', content_type="application/json"
                )
            try:
                body = json.loads(raw)
            except json.JSONDecodeError:
                return web.json_response({"error": {"message": "request body is not JSON"}}, status=400)
            if fault == "bad_content":
                s.bad_content += 1
                text = "Sure! Here is what I think about that, in my own words."
            else:
                s.ok += 1
                # canonical: the reply depends on the JSON, not its key order or spacing, so two clients that
                # send the same request (litellm and the lean path, say) get the same answer
                key = json.dumps(body, sort_keys=True).encode() if self.canonical else raw
                text = reply_for(body, key, self.seed)
            p_yes = self.yes_no(body) if self.yes_no is not None else None
            if p_yes is not None:  # an anchored item's anchor line, read as a calibrated judge reads it
                asked = " ".join(str(m.get("content") or "") for m in body.get("messages") or [] if isinstance(m, dict))
                anchor = anchor_reading(asked, self.anchors)
                p_yes = p_yes if anchor is None else anchor
            logprobs = None
            if p_yes is not None:  # a yes/no question with a chosen answer probability
                text, logprobs = self._answer(body, p_yes)
            prompt_chars = sum(len(m.get("content") or "") for m in body.get("messages") or [] if isinstance(m, dict))
            payload = {
                "id": f"chatcmpl-fake{s.requests}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "fake"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                        **({"logprobs": logprobs} if logprobs is not None else {}),
                    }
                ],
                "usage": {
                    "prompt_tokens": max(1, prompt_chars // 4),
                    "completion_tokens": tokens_of(text),
                    "total_tokens": max(1, prompt_chars // 4) + tokens_of(text),
                },
            }
            return web.Response(body=json.dumps(payload).encode(), content_type="application/json")
        finally:
            s.in_flight -= 1

    def _answer(self, body: dict[str, Any], p_yes: float) -> tuple[str, dict[str, Any] | None]:
        """The reply to a yes/no question answered yes with probability `p_yes`: with log-probabilities when asked
        and this server gives them (the likelier word as text), else one answer sampled from its seed."""
        if body.get("logprobs") and self.logprobs:
            tops = [("yes", p_yes), ("no", 1 - p_yes)]
            tops = [(t, p) for t, p in sorted(tops, key=lambda tp: -tp[1]) if p > 0]
            first = tops[0][0]
            alts = [{"token": t, "logprob": math.log(p), "bytes": list(t.encode())} for t, p in tops]
            content = [
                {"token": first, "logprob": alts[0]["logprob"], "bytes": list(first.encode()), "top_logprobs": alts}
            ]
            return first, {"content": content}
        draw = random.Random(f"{self.seed}:{body.get('seed')}:{body.get('temperature')}").random()
        return ("yes" if draw < p_yes else "no"), None

    async def models(self, request: Any) -> Any:
        from aiohttp import web

        return web.json_response({"object": "list", "data": [{"id": "fake", "object": "model", "owned_by": "fake"}]})

    async def get_stats(self, request: Any) -> Any:
        from aiohttp import web

        return web.json_response(vars(self.stats))

    async def reset(self, request: Any) -> Any:
        from aiohttp import web

        self.stats = _Stats(in_flight=self.stats.in_flight)
        self.recorded = []
        self.rng = random.Random(self.seed)
        return web.json_response({"reset": True})

    async def get_requests(self, request: Any) -> Any:
        from aiohttp import web

        return web.json_response(self.recorded)


class FakeOpenAIServer:
    """The fake server in a background thread of this process (for unit tests). A context manager."""

    def __init__(
        self,
        *,
        latency_s: float = 0.0,
        faults: FaultRates | None = None,
        seed: int = 0,
        hang_s: float = 3600.0,
        record: bool = False,
        port: int = 0,
        canonical: bool = False,
        yes_no: YesNo | None = None,
        logprobs: bool = True,
        anchors: dict[str, float] | None = None,
    ):
        """`yes_no(body)`: P(yes) for a request that asks a yes/no question (None: answer it as any other); one
        quoting an anchor line reads as a calibrated judge reads it (`anchors`; None: simulator.llm.fake.DEFAULT_ANCHORS);
        `logprobs=False` plays a provider that gives no log-probabilities (answers are sampled instead)."""
        self._app = _App(
            latency_s=latency_s,
            faults=faults or FaultRates(),
            seed=seed,
            hang_s=hang_s,
            record=record,
            canonical=canonical,
            yes_no=yes_no,
            logprobs=logprobs,
            anchors=anchors,
        )
        self._port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: Any = None
        self.port: int | None = None

    @property
    def url(self) -> str:
        """Base URL for OpenAI clients (`.../v1`)."""
        return f"http://{HOST}:{self.port}/v1"

    def stats(self) -> dict[str, int]:
        return dict(vars(self._app.stats))

    def reset(self) -> None:
        self._app.stats = _Stats(in_flight=self._app.stats.in_flight)
        self._app.recorded = []
        self._app.rng = random.Random(self._app.seed)

    @property
    def recorded(self) -> list[str]:
        return list(self._app.recorded)

    def start(self) -> FakeOpenAIServer:
        ready = threading.Event()
        failure: list[BaseException] = []

        def main() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                self.port = loop.run_until_complete(self._start_site())
            except BaseException as err:  # noqa: BLE001 - reported to the starting thread
                failure.append(err)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=main, name="fake-openai", daemon=True)
        self._thread.start()
        ready.wait(30)
        if failure:
            raise failure[0]
        return self

    async def _start_site(self) -> int:
        from aiohttp import web

        self._runner = web.AppRunner(self._app.build(), access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, HOST, self._port, backlog=1024)
        await site.start()
        return site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop = self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class SpawnedServer:
    """The fake server in a child process; stats and recorded requests are read over HTTP."""

    def __init__(self, proc: subprocess.Popen, port: int):
        self.proc, self.port = proc, port

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    def _get(self, path: str, method: str = "GET") -> Any:
        req = urllib.request.Request(
            f"http://{HOST}:{self.port}{path}", method=method, data=b"" if method == "POST" else None
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())

    def stats(self) -> dict[str, int]:
        return self._get("/_fake/stats")

    def reset(self) -> None:
        self._get("/_fake/reset", method="POST")

    @property
    def recorded(self) -> list[str]:
        return self._get("/_fake/requests")

    def cpu_s(self) -> float:
        """CPU seconds the server process has used (Linux /proc)."""
        with open(f"/proc/{self.proc.pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        import os

        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)
        if self.proc.poll() is None:
            self.proc.kill()

    def __enter__(self) -> SpawnedServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def spawn_server(
    *,
    latency_s: float = 0.0,
    faults: FaultRates | None = None,
    seed: int = 0,
    hang_s: float = 3600.0,
    record: bool = False,
    canonical: bool = False,
) -> SpawnedServer:
    """Start the fake server as `python -m simulator.testing.fake_openai` and wait until it listens."""
    f = faults or FaultRates()
    cmd = (
        [
            sys.executable,
            "-c",
            "from simulator.testing.fake_openai import main; main()",
            "--latency",
            str(latency_s),
            "--seed",
            str(seed),
            "--hang-s",
            str(hang_s),
            "--rate-429",
            str(f.http_429),
            "--rate-500",
            str(f.http_500),
            "--rate-hang",
            str(f.hang),
            "--rate-malformed",
            str(f.malformed),
            "--rate-bad-content",
            str(f.bad_content),
        ]
        + (["--record"] if record else [])
        + (["--canonical"] if canonical else [])
    )
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline() if proc.stdout else ""
    if not line.startswith("listening "):
        proc.kill()
        raise RuntimeError(f"fake server did not start: {line!r}")
    port = int(line.strip().rsplit(":", 1)[1].split("/")[0])
    return SpawnedServer(proc, port)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m simulator.testing.fake_openai", description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--latency", type=float, default=0.2, help="Seconds before each answer.")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--hang-s", type=float, default=3600.0)
    p.add_argument("--rate-429", type=float, default=0.0)
    p.add_argument("--rate-500", type=float, default=0.0)
    p.add_argument("--rate-hang", type=float, default=0.0)
    p.add_argument("--rate-malformed", type=float, default=0.0)
    p.add_argument("--rate-bad-content", type=float, default=0.0)
    p.add_argument("--record", action="store_true", help="Keep request bodies for GET /_fake/requests.")
    p.add_argument(
        "--canonical", action="store_true", help="Replies depend on the request's JSON, not its bytes (key order)."
    )
    a = p.parse_args(argv)
    faults = FaultRates(
        http_429=a.rate_429,
        http_500=a.rate_500,
        hang=a.rate_hang,
        malformed=a.rate_malformed,
        bad_content=a.rate_bad_content,
    )
    app = _App(latency_s=a.latency, faults=faults, seed=a.seed, hang_s=a.hang_s, record=a.record, canonical=a.canonical)

    async def serve() -> None:
        from aiohttp import web

        runner = web.AppRunner(app.build(), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, HOST, a.port, backlog=1024)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        print(f"listening http://{HOST}:{port}/v1", flush=True)
        await asyncio.Event().wait()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())


if __name__ == "__main__":
    main()
