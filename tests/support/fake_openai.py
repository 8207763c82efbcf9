"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for the real ``openai`` client.

``FakeOpenAI(script)`` serves ``POST /v1/chat/completions`` from a list of ``Reply`` objects, one per
request, in order: a message (content and/or tool calls), or an HTTP error (429 with Retry-After,
500, 401, 404), optionally after a delay, or a stream that only trickles keep-alives; text may be chunked by UTF-16 units (split surrogate pairs); an answer may leave usage out, end "length", name another model
or be empty. ``GET /v1/models`` lists ``model``. Streaming requests get SSE chunks with
``"object": "chat.completion.chunk"`` and tool-call arguments split across chunks. Every request body
is kept in ``requests`` so tests assert what the model was sent.

Run ``python -m tests.support.fake_openai`` for a quick manual server with a canned answer.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeOpenAI", "Reply", "call"]


@dataclass(frozen=True, kw_only=True)
class Reply:
    """One scripted answer: a message, or ``status`` (an HTTP error) with optional headers."""

    content: str = ""
    tool_calls: tuple[dict[str, str], ...] = ()
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    #: Split text into stream chunks by UTF-16 code units (as JavaScript servers do), so a character
    #: outside the BMP (an emoji) can arrive as two halves in different chunks.
    utf16_chunks: bool = False
    #: Seconds between SSE keep-alive comments sent instead of an answer, until the client hangs up or
    #: the server closes (a server that trickles: every read succeeds, no answer ever comes).
    trickle: float = 0.0
    #: ``None``: the server reports no usage (no usage chunk, no usage field), as llama-cpp-python's streams.
    usage: dict[str, int] | None = field(default_factory=lambda: {"prompt_tokens": 10, "completion_tokens": 5,
                                                                   "total_tokens": 15})
    #: Overrides the finish reason ("length": cut at max_tokens).
    finish_reason: str | None = None
    #: The model the answer names (default: the one the request named).
    model: str | None = None
    #: Every streamed argument chunk names the function again, as llama-cpp-python's server does.
    repeat_name: bool = False
    #: HTTP 200 and nothing in it: a stream with no data lines, a body with no choices (an error: no message).
    empty: bool = False


class _Server(ThreadingHTTPServer):
    # socketserver listens with a backlog of 5: a client that opens 32 connections at once (evaluate at
    # concurrency 32) overflows it, and each dropped connection attempt is retried only after 1 s
    request_queue_size = 128
    daemon_threads = True


def call(name: str, arguments: Any = None, id: str | None = None) -> dict[str, str]:
    """A tool call for a ``Reply``; ``arguments`` may be a dict or a raw (maybe broken) JSON string."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return {"id": id or f"call_{name}_{abs(hash(args)) % 10_000}", "name": name, "arguments": args}


class FakeOpenAI:
    """Context manager: ``with FakeOpenAI([...]) as srv: Agent(base_url=srv.base_url, ...)``."""

    def __init__(self, script: list[Reply], *, model: str = "fake-model", keep_requests: bool = True) -> None:
        self.script = list(script)
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.keep_requests = keep_requests  # off for soak runs: every body holds the whole history
        self.request_count = 0
        self.closed = threading.Event()  # ends delays and trickles, so no handler thread outlives the server
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _make_handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-openai", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.closed.set()
        self._server.shutdown()
        self._server.server_close()

    def next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.request_count += 1
            if self.keep_requests:
                self.requests.append(body)
            if not self.script:
                return Reply(status=500, content="fake server script exhausted")
            return self.script.pop(0)


def _finish(reply: Reply) -> str:
    return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")


def _message_json(reply: Reply, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
    if reply.tool_calls:
        message["tool_calls"] = [{"id": c["id"], "type": "function",
                                  "function": {"name": c["name"], "arguments": c["arguments"]}}
                                 for c in reply.tool_calls]
    body = {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [] if reply.empty else [{"index": 0, "message": message, "finish_reason": _finish(reply)}]}
    if reply.usage is not None:
        body["usage"] = reply.usage
    return body


def _chunks(reply: Reply, model: str, include_usage: bool) -> list[dict[str, Any]]:
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out = [chunk({"role": "assistant", "content": ""})]
    text = _utf16_units(reply.content) if reply.utf16_chunks else reply.content
    for i in range(0, len(text), 7):
        out.append(chunk({"content": text[i:i + 7]}))
    for index, c in enumerate(reply.tool_calls):
        out.append(chunk({"tool_calls": [{"index": index, "id": c["id"], "type": "function",
                                          "function": {"name": c["name"], "arguments": ""}}]}))
        args = _utf16_units(c["arguments"]) if reply.utf16_chunks else c["arguments"]
        for i in range(0, len(args), 5):  # arguments split across chunks, as real servers do
            function = {"arguments": args[i:i + 5], **({"name": c["name"]} if reply.repeat_name else {})}
            out.append(chunk({"tool_calls": [{"index": index, "function": function}]}))
    out.append(chunk({}, _finish(reply)))
    if include_usage and reply.usage is not None:
        out.append({**base, "choices": [], "usage": reply.usage})
    return out


def _utf16_units(text: str) -> str:
    """``text`` with each character outside the BMP written as its two surrogates (one str item each)."""
    out = []
    for ch in text:
        cp = ord(ch)
        if cp > 0xFFFF:
            cp -= 0x10000
            out += [chr(0xD800 + (cp >> 10)), chr(0xDC00 + (cp & 0x3FF))]
        else:
            out.append(ch)
    return "".join(out)


def _make_handler(server: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

        def _send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _trickle(self, interval: float) -> None:
            self.close_connection = True
            try:
                while not server.closed.wait(interval):
                    self.wfile.write(b": keep-alive\n\n")
                    self.wfile.flush()
            except OSError:  # the client gave up and hung up
                return

        def do_GET(self) -> None:
            if self.path.endswith("/models"):
                self._send_json(200, {"object": "list", "data": [{"id": server.model, "object": "model"}]})
            else:
                self._send_json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if not self.path.endswith("/chat/completions"):
                self._send_json(404, {"error": {"message": f"no route {self.path}"}})
                return
            reply = server.next_reply(body)
            if reply.delay and server.closed.wait(reply.delay):
                return
            if reply.status != 200:
                message = "" if reply.empty else reply.content or f"HTTP {reply.status}"  # empty: a bare AssertionError
                self._send_json(reply.status, {"error": {"message": message,
                                                         "type": "fake", "code": reply.status}}, reply.headers)
                return
            model = reply.model or body.get("model", server.model)
            if not body.get("stream"):
                self._send_json(200, _message_json(reply, model))
                return
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            if reply.trickle:
                self._trickle(reply.trickle)
                return
            for c in [] if reply.empty else _chunks(reply, model, include_usage):
                self.wfile.write(f"data: {json.dumps(c)}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

    return Handler


if __name__ == "__main__":
    with FakeOpenAI([Reply(content="Hello from the fake server.")] * 100) as srv:
        print(f"fake OpenAI server at {srv.base_url}; Ctrl-C to stop")
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
