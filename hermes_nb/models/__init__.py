"""The model seam: one turn of an OpenAI-compatible chat model, with our own retry loop.

This package is the seam between the agent loop and a model (issue 34 moved it out of ``hermes_nb.agent``,
whose old paths still import these same modules): here ``OpenAIModel``; ``replay`` (record and replay),
``local`` with its ``local_prompt`` and ``grammar`` (the embedded model), ``model_choice`` (a name to a
model), ``requests``, ``server_errors``, ``listing``, ``stops``, ``usage`` and ``wire`` (what a server is
sent, answers and lists), ``conversation_drift`` (a replay asked another conversation).

``Model`` is the protocol the agent loop calls; ``OpenAIModel`` speaks chat completions to OpenAI,
OpenRouter, Ollama, vLLM or LM Studio (configuration only); ``hermes_nb.models.replay`` provides the offline
twin. The openai client's own retries are off (``max_retries=0``) so that this loop can say
"retrying in N s", honour ``Retry-After`` and report the last failure clearly.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any, Protocol
from urllib.parse import urlparse

from hermes_nb.models.listing import is_listed, listing, not_found_message
from hermes_nb.models.requests import RequestOptions, request_body
from hermes_nb.models.server_errors import backoff, error_key, retry_after, server_message
from hermes_nb.models.stops import checked_turn, length_notice, named_as_required  # noqa: F401  (length_notice: imported from here too)
from hermes_nb.models.usage import (  # noqa: F401  (imported from here too)
    Usage,
    add_usage,
    empty_usage,
    unreported_usage,
    usage_from,
)
from hermes_nb.models.wire import complete_text, json_object, post_body
from hermes_nb.tools.calls.results import clean_text
from hermes_nb.tools.errors import HermesNbError, OneLineError

__all__ = [
    "is_local_url",
    "Model",
    "ModelConfigError",
    "ModelError",
    "ModelTurn",
    "OpenAIModel",
    "ToolCallSpec",
    "Usage",
    "add_usage",
]

#: Callbacks the loop passes in: streamed text, and "retrying in N s" notices.
TextCallback = Callable[[str], None]
RetryCallback = Callable[[str], None]

_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}
_RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}
#: Statuses that say "not now" (retried while they last); any other answered twice alike is the answer.
_BUSY_STATUS = {408, 429, 503}
#: Sent when no model is named and the server lists none (OpenAI's own API, or a listing that failed).
DEFAULT_MODEL = "gpt-4o-mini"

#: One model turn, retries included, ends by then: a server trickling keep-alives resets no read
#: timeout but cannot pass this. Ten minutes: long answers from slow local models still fit.
DEFAULT_TURN_TIMEOUT = 600.0
#: Silence (no chunk) this long is shown as "waiting for the model", once per silence.
WAIT_NOTICE_AFTER = 15.0


class ModelError(HermesNbError, RuntimeError):
    """The model could not answer (after retries); the message says why and what to check."""


class ModelConfigError(OneLineError, ValueError):
    """The model is not configured (no key, no base URL); raised when a run starts (shown as one line: a
    setup step to take)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallSpec:
    """One tool call as the model emitted it (arguments stay the raw JSON text)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelTurn:
    """What one model call returned."""

    content: str = ""
    tool_calls: tuple[ToolCallSpec, ...] = ()
    usage: Usage = field(default_factory=lambda: Usage(prompt_tokens=0, completion_tokens=0, total_tokens=0))
    finish_reason: str | None = None
    #: The model the server says answered ("" when it did not say), shortened to a file name for a path.
    model: str = ""
    #: Which limit ended a ``length`` turn, when the model knows ("max_tokens=512", "the context window
    #: (...)", "a runaway call: ..."); "" leaves ``length_notice`` to judge from the usage.
    length_cause: str = ""
    #: What the model seam noticed about this turn (a server that ignored a demanded call), said once each.
    notices: tuple[str, ...] = ()
    #: The request as sent, beyond the messages: the body's other fields for a server (``tools``,
    #: ``tool_choice``...), the rendered ``prompt`` for the local model. ``None``: not recorded.
    sent: Mapping[str, Any] | None = None


class Model(Protocol):
    """A chat model the agent loop can call; ``complete`` runs on the background loop."""

    name: str

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        on_text: TextCallback | None = None,
        on_retry: RetryCallback | None = None,
    ) -> ModelTurn: ...


def shown_model_name(name: str) -> str:
    """A model id as a transcript shows it: a server's file path (llama.cpp lists its GGUF) as its name."""
    return PurePosixPath(name).name if "/" in name and name.lower().endswith((".gguf", ".bin")) else name


class OpenAIModel:
    """Chat completions through ``openai.AsyncOpenAI`` (created lazily on the loop that calls it)."""

    def __init__(
        self,
        *,
        model: str | None,
        base_url: str | None,
        api_key: str | None,
        stream: bool = True,
        temperature: float | None = None,
        parallel_tool_calls: bool | None = True,
        timeout: float | None = None,
        max_retries: int = 3,
        turn_timeout: float | None = DEFAULT_TURN_TIMEOUT,
        aiohttp: bool = False,
        tool_choice: Any = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        from hermes_nb.models.requests import check_tool_choice

        # No name given: the server's own (its one listed model), asked at the first turn; OpenAI's default
        # for OpenAI itself. Sending "gpt-4o-mini" to a llama.cpp server made the header name the wrong model.
        self._ask_server_for_name = not model and bool(base_url)
        self.name = model or ("(the server's model)" if self._ask_server_for_name else DEFAULT_MODEL)
        self.base_url = base_url
        self.api_key = api_key
        self.stream = stream
        self.options = RequestOptions(tool_choice=check_tool_choice(tool_choice),
                                      parallel_tool_calls=parallel_tool_calls, max_tokens=max_tokens,
                                      temperature=temperature, seed=seed, extra_body=dict(extra_body or {}))
        self.timeout = timeout
        self.max_retries = max_retries
        self.turn_timeout = turn_timeout  # the whole turn, retries included; the client's timeout is per read
        self.wait_notice_after = WAIT_NOTICE_AFTER
        # openai's aiohttp transport, when its extra is installed: about a third less CPU per request than
        # httpx, and CPU is what bounds many conversations at once in one process (evaluate's cases)
        self.aiohttp = aiohttp
        self._client: Any = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._named_as_required = False  # the server ignored a named tool_choice: send its accepted form
        # a name given for a server of one's own is checked against its listing once: servers echo any name
        self._confirm_name = bool(model) and bool(base_url)
        self._unconfirmed = False

    @property
    def max_tokens(self) -> int | None:
        return self.options.max_tokens

    @property
    def temperature(self) -> float | None:
        return self.options.temperature

    @property
    def parallel_tool_calls(self) -> bool | None:
        return self.options.parallel_tool_calls

    def __repr__(self) -> str:  # never the key: a repr lands in saved notebooks
        return f"OpenAIModel(model={self.name!r}, base_url={self.base_url!r})"

    def check_config(self) -> None:
        """Raise ``ModelConfigError`` when a real model cannot be reached as configured."""
        if not self.api_key and not self.base_url:
            raise ModelConfigError(
                "no model configured: set OPENAI_API_KEY (and optionally OPENAI_BASE_URL, HERMES_NB_MODEL), "
                "pass Agent(api_key=..., base_url=...) (%agent --base-url URL for a server on 127.0.0.1: no key "
                "needed), run the embedded model with Agent(model='local'), or replay a recording with "
                "Agent(model='replay:PATH')"
            )
        if not self.api_key:
            raise ModelConfigError(
                f"no API key for {self.base_url}: set OPENAI_API_KEY or pass Agent(api_key=...) "
                "(a key is only optional for servers on 127.0.0.1/localhost)"
            )

    def _get_client(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            from openai import AsyncOpenAI

            self.check_config()
            self._client = AsyncOpenAI(
                api_key=self.api_key,
                base_url=self.base_url,
                max_retries=0,
                timeout=self.timeout if self.timeout is not None else 600.0,
                **self._http_client(),
            )
            self._client_loop = loop
        return self._client

    def _http_client(self) -> dict[str, Any]:
        if not self.aiohttp:
            return {}
        try:
            from openai import DefaultAioHttpClient

            return {"http_client": DefaultAioHttpClient()}
        except (ImportError, RuntimeError):  # openai without its aiohttp extra: httpx, as everywhere else
            return {}

    async def aclose(self) -> None:
        """Close the client and its connections, on the loop that used it; a later turn opens a new one."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        on_text: TextCallback | None = None,
        on_retry: RetryCallback | None = None,
    ) -> ModelTurn:
        """One model turn, retrying connection failures, 408/409/429 and 5xx with backoff. A server that
        ignores a demanded call is noticed: a named ``tool_choice`` answered in prose is sent once more in
        the form llama.cpp's server takes (``"required"`` with only that tool), and said; prose after that
        ends the turn with a notice."""
        client = self._get_client()
        if self._ask_server_for_name:
            await self._name_from_server(client)
        elif self._confirm_name:
            await self._confirm(client)
        kwargs = request_body(self.name, messages, tools, self.options)
        if self._named_as_required:
            kwargs = named_as_required(kwargs)
        demanded = kwargs.get("tool_choice")
        forced = demanded == "required" or isinstance(demanded, dict)
        # a demanded call shows no text while it comes: prose is shown once, at the end, if it is the answer
        turn = await self._turn(client, kwargs, None if forced else on_text, on_retry)
        if forced and not turn.tool_calls and turn.finish_reason != "length":
            if isinstance(demanded, dict):
                self._named_as_required = True  # the rest of this model's turns send the accepted form
                kwargs = named_as_required(kwargs)
                if on_retry is not None:
                    on_retry(f"the server answered in prose to tool_choice naming {demanded['function']['name']!r} "
                             "(llama.cpp's server ignores the object form): sent again as tool_choice='required' "
                             "with only that tool offered")
                turn = await self._turn(client, kwargs, None, on_retry)
            if not turn.tool_calls and turn.finish_reason != "length":
                turn = replace(turn, notices=turn.notices + (
                    f"the server answered in prose although a tool call was required (tool_choice="
                    f"{kwargs.get('tool_choice')!r}): it ignored the demand, so this turn ends with its prose",))
            if turn.content and on_text is not None:
                on_text(turn.content)
        return replace(turn, sent={k: v for k, v in kwargs.items() if k != "messages"})

    async def _turn(self, client: Any, kwargs: dict[str, Any], on_text: TextCallback | None,
                    on_retry: RetryCallback | None) -> ModelTurn:
        """One request, with the retry loop."""
        import openai

        loop = asyncio.get_running_loop()
        deadline = None if self.turn_timeout is None else loop.time() + self.turn_timeout
        attempt, last_error = 0, ""
        while True:
            try:
                return checked_turn(await self._attempt(client, kwargs, on_text, on_retry, deadline), self.max_tokens)
            except _TurnDeadline:
                raise ModelError(self._deadline_message(attempt)) from None
            except openai.NotFoundError as exc:  # the model, or the whole path: /models tells which
                raise ModelError(await self._not_found(client)) from exc
            except openai.APIStatusError as exc:
                status, key = exc.status_code, error_key(exc)
                if status not in _RETRY_STATUS or attempt >= self.max_retries:
                    raise ModelError(self._describe(exc, attempt, kwargs)) from exc
                if key == last_error and status not in _BUSY_STATUS:  # the same answer twice: the server's answer
                    raise ModelError(self._describe(exc, attempt, kwargs) + " (the same error twice: not retried "
                                     "again)") from exc
                last_error = key
                delay = retry_after(exc) or backoff(attempt)
                reason = f"HTTP {status}"
            except (openai.APIConnectionError, openai.APITimeoutError) as exc:
                if attempt >= self.max_retries:
                    raise ModelError(self._describe(exc, attempt, kwargs)) from exc
                delay, reason = backoff(attempt), type(exc).__name__
            except UnicodeDecodeError as exc:  # bytes that are not UTF-8 in the answer: retrying would not help
                raise ModelError(f"the model server at {self.base_url or 'https://api.openai.com/v1'} sent text "
                                 f"that is not valid UTF-8 ({exc.reason} at byte {exc.start})") from exc
            if deadline is not None and loop.time() + delay >= deadline:
                raise ModelError(f"{self._deadline_message(attempt)}; the last attempt failed with {reason}")
            attempt += 1
            if on_retry is not None:
                on_retry(f"{reason} from the model; retrying in {delay:.1f} s (attempt {attempt + 1} "
                         f"of {self.max_retries + 1})")
            await asyncio.sleep(delay)

    async def _name_from_server(self, client: Any) -> None:
        """The model the server lists (its only one, or its first), asked once; the default if it lists none
        (a server without /models: the request names the default and the server decides)."""
        self._ask_server_for_name = False
        ids = (await listing(client))[1]
        self.name = clean_text(ids[0]) if ids else DEFAULT_MODEL

    async def _attempt(self, client: Any, kwargs: dict[str, Any], on_text: TextCallback | None,
                       on_retry: RetryCallback | None, deadline: float | None) -> ModelTurn:
        """One request, given up at the turn's deadline; a silence is shown once as "waiting"."""
        loop = asyncio.get_running_loop()
        heard = [loop.time()]  # when the last chunk came (a keep-alive comment is no chunk)
        work = asyncio.ensure_future(self._streamed(client, kwargs, on_text, heard) if self.stream
                                     else self._whole(client, kwargs, on_text))
        noted = None  # the silence already shown
        try:
            while True:
                now = loop.time()
                if deadline is not None and now >= deadline:
                    raise _TurnDeadline
                quiet_until = heard[0] + self.wait_notice_after
                if quiet_until <= now and noted != heard[0] and on_retry is not None:
                    noted = heard[0]
                    limit = f"; this turn gives up after {self.turn_timeout:g} s" if self.turn_timeout else ""
                    on_retry(f"waiting for the model: nothing for {now - heard[0]:.0f} s{limit}")
                wake = [t for t in (deadline, quiet_until if quiet_until > now else None) if t is not None]
                await asyncio.wait({work}, timeout=min(wake) - now if wake else None)
                if work.done():
                    return work.result()
        finally:
            if not work.done():
                work.cancel()  # closes the stream (its finally), so the connection is not left open
                await asyncio.gather(work, return_exceptions=True)

    def _deadline_message(self, attempt: int) -> str:
        tries = f" ({attempt + 1} attempts)" if attempt else ""
        return (f"the model server at {self.base_url or 'https://api.openai.com/v1'} did not finish this turn "
                f"within {self.turn_timeout:g} s{tries}: it stalled or only trickled keep-alives "
                f"(Agent(turn_timeout=...) sets the limit)")

    async def _whole(self, client: Any, kwargs: dict[str, Any], on_text: TextCallback | None) -> ModelTurn:
        # The body as text, parsed here: building openai's typed ChatCompletion costs more CPU than the rest
        # of the turn's own work, which caps how many conversations one process can keep going at once.
        try:
            data = json_object(await post_body(client, kwargs, stream=False, as_text=True), self.base_url)
        except ValueError as exc:  # not a chat completion: the seam's error, one line
            raise ModelError(str(exc)) from None
        choices = data.get("choices")
        choice: dict[str, Any] = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
        message = choice.get("message")
        msg: dict[str, Any] = message if isinstance(message, dict) else {}
        calls = tuple(
            ToolCallSpec(id=clean_text(str(tc.get("id") or f"call_{i}")),
                         name=clean_text(str((tc.get("function") or {}).get("name") or "")),
                         arguments=clean_text(str((tc.get("function") or {}).get("arguments") or "")))
            for i, tc in enumerate(msg.get("tool_calls") or ()) if isinstance(tc, dict)
        )
        content = clean_text(str(msg.get("content") or ""))
        if not choice or (not content and not calls and not choice.get("finish_reason")):
            raise ModelError(self._no_answer("an answer with no choices" if not choice else "an empty message"))
        if content and on_text is not None:
            on_text(content)
        usage = data.get("usage")
        return ModelTurn(content=content, tool_calls=calls, usage=usage_from(usage if isinstance(usage, dict) else None),
                         finish_reason=choice.get("finish_reason"), model=self._answered_by(data.get("model")))

    async def _confirm(self, client: Any) -> None:
        """Whether the server lists the model named (asked once); a listing without it marks the name."""
        self._confirm_name = False
        ids = [shown_model_name(i) for i in (await listing(client))[1]]
        self._unconfirmed = bool(ids) and not is_listed(shown_model_name(self.name), ids)

    async def _not_found(self, client: Any) -> str:
        status = (await listing(client))[0]
        return not_found_message(self.base_url or "https://api.openai.com/v1", self.name, models_missing=status == 404,
                                 defaulted=self.name == DEFAULT_MODEL and "model" not in self.options.extra_body)

    def _answered_by(self, name: Any) -> str:
        shown = shown_model_name(clean_text(name) if isinstance(name, str) and name else self.name)
        if self._unconfirmed and shown == shown_model_name(self.name):  # the server echoed a name it does not list
            return f"{shown} (not listed by the server)"
        return shown

    def _no_answer(self, what: str) -> str:
        return (f"the server sent no answer: the model server at {self.base_url or 'https://api.openai.com/v1'} "
                f"sent {what} (no text, no tool call, no finish reason)")

    async def _streamed(self, client: Any, kwargs: dict[str, Any], on_text: TextCallback | None,
                        heard: list[float]) -> ModelTurn:
        # Raw stream=True: openai 3.x's .stream() helper drops chunks without "object" set.
        stream = await post_body(client, {**kwargs, "stream": True, "stream_options": {"include_usage": True}},
                             stream=True)
        try:
            return await self._assemble(stream, on_text, heard)
        finally:
            await stream.close()

    async def _assemble(self, stream: Any, on_text: TextCallback | None, heard: list[float]) -> ModelTurn:
        loop = asyncio.get_running_loop()
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        pieces: dict[int, list[str]] = {}  # arguments joined once at the end: += would copy them per chunk
        usage: Usage | None = None
        finish, model, chunks = None, None, 0
        held = ""  # a high surrogate that ended a chunk: shown with the next one, where its other half is
        async for chunk in stream:
            heard[0] = loop.time()
            chunks += 1
            model = model or getattr(chunk, "model", None)
            if getattr(chunk, "usage", None):
                usage = usage_from(chunk.usage)
            for choice in chunk.choices or ():
                delta = choice.delta
                if choice.finish_reason:
                    finish = choice.finish_reason
                if delta is None:
                    continue
                if delta.content:
                    text.append(delta.content)
                    shown, held = complete_text(held + delta.content)
                    if on_text is not None and shown:
                        on_text(shown)
                for tc in delta.tool_calls or ():
                    slot = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                    if tc.id:
                        slot["id"] = tc.id
                    if tc.function is not None:
                        # llama-cpp-python repeats the whole name in every chunk; OpenAI sends it once
                        piece = tc.function.name or ""
                        slot["name"] = piece if slot["name"] == piece else slot["name"] + piece
                        pieces.setdefault(tc.index, []).append(tc.function.arguments or "")
        if held and on_text is not None:
            on_text(clean_text(held))
        # joined first, cleaned after: halves of one character in different chunks become that character
        specs = tuple(
            ToolCallSpec(id=clean_text(c["id"] or f"call_{i}"), name=clean_text(c["name"]),
                         arguments=clean_text("".join(pieces.pop(i, ()))))
            for i, c in sorted(calls.items())
        )
        content = clean_text("".join(text))
        if not content and not specs and finish is None:
            raise ModelError(self._no_answer("an empty stream" if not chunks else f"{chunks} chunk(s) with nothing in them"))
        return ModelTurn(content=content, tool_calls=specs, usage=usage or usage_from(None), finish_reason=finish,
                         model=self._answered_by(model))

    def _describe(self, exc: Exception, attempt: int, body: dict[str, Any] | None = None) -> str:
        import openai

        where = self.base_url or "https://api.openai.com/v1"
        tries = f" (after {attempt + 1} attempts)" if attempt else ""
        if isinstance(exc, openai.AuthenticationError):
            return f"the model server at {where} refused the API key (HTTP 401): check OPENAI_API_KEY"
        if isinstance(exc, openai.NotFoundError):
            return (f"model {self.name!r} was not found at {where} (HTTP 404): check HERMES_NB_MODEL "
                    f"or Agent(model=...) and OPENAI_BASE_URL")
        if isinstance(exc, openai.APIStatusError):
            text = f"the model server at {where} answered HTTP {exc.status_code}{tries}: {server_message(exc)}"
            if (body or {}).get("tool_choice") == "required" and exc.status_code >= 500:
                text += (" (tool_choice='required' was sent, which some servers cannot do: name the tool instead, "
                         "tool_choice={'type': 'function', 'function': {'name': ...}})")
            return text
        if isinstance(exc, openai.APITimeoutError):
            return f"the model server at {where} did not answer in time{tries}"
        return f"could not connect to the model server at {where}{tries}: {exc.__cause__ or exc}"


class _TurnDeadline(Exception):
    """The turn's deadline passed (turned into a ModelError that says so)."""


def is_local_url(base_url: str | None) -> bool:
    """Whether ``base_url`` points at this machine (no API key is needed there)."""
    if not base_url:
        return False
    return (urlparse(base_url).hostname or "") in _LOCAL_HOSTS
