"""A server in a thread that records every request (method, path, headers, body bytes) and answers as an
OpenAI-compatible or an Anthropic Messages endpoint would: for comparing what two client paths send."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

REPLY = '{"emotion": "hurt", "intensity": 7}'
_SLEEP = asyncio.sleep  # the real one: tests patch asyncio.sleep to skip the client's backoff


class CaptureServer:
    """Records every request (method, path, headers, body bytes); answers with `status` (0: a non-JSON body,
    -1: no answer for 2 s) or a reply in the `wire` format ("openai" or "anthropic")."""

    def __init__(self, status: int = 200, wire: str = "openai"):
        self.status, self.wire, self.requests = status, wire, []
        self._loop: asyncio.AbstractEventLoop | None = None

    async def _handle(self, request: Any) -> Any:
        from aiohttp import web

        raw = await request.read()
        self.requests.append((request.method, request.path, dict(request.headers), raw))
        if self.status == -1:  # never answers in time: a stalled provider
            await _SLEEP(2)
        if self.status == 0:  # a body that is not JSON: a proxy's error page, a truncated reply
            return web.Response(text="<html>bad gateway</html>", content_type="text/html")
        if self.status != 200:
            body = {"error": {"message": "slow down", "type": "rate_limit", "code": self.status}}
            return web.json_response(body, status=self.status)
        model = json.loads(raw)["model"]
        if self.wire == "anthropic":  # the Messages API's reply
            return web.json_response(
                {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [{"type": "text", "text": REPLY}],
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": {"input_tokens": 120, "output_tokens": 14},
                }
            )
        return web.json_response(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": REPLY}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 120, "completion_tokens": 14, "total_tokens": 134},
            }
        )

    def __enter__(self) -> CaptureServer:
        from aiohttp import web

        ready = threading.Event()

        def main() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            app = web.Application()
            app.router.add_post("/{tail:.*}", self._handle)
            self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
            loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            loop.run_until_complete(site.start())
            self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/v1"
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())

        self._thread = threading.Thread(target=main, daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
