"""The agent loop: model turn → tool batch (scheduler) → result budget → tool messages → model turn...

The loop's core is a coroutine on the one background loop (``tools.async_bridge``), where the async
OpenAI client and MCP sessions live. The calling thread (a cell, or plain Python) waits for it and
drains its events into the display, so output only ever comes from the calling thread (ARCHITECTURE,
rule 6).

Interrupts: a kernel interrupt (``KeyboardInterrupt``) cancels the core; before it stops, every tool
call the model made gets an answer in the history (finished results are kept, the rest say
"interrupted by the user"). ``run`` then *returns* ``AgentResult(stopped_reason="interrupted")`` rather
than re-raising, so the cell shows the transcript so far and the next ``run`` continues a valid
conversation. Model failures after retries return ``stopped_reason="error"``; configuration mistakes
(no key) and replay drift raise, because no amount of waiting fixes them.
"""

from __future__ import annotations

import asyncio
import json
import queue
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from hermes_nb.agent.arguments import check_prompt, toolset_list
from hermes_nb.agent.code_host import install_code_host
from hermes_nb.agent.cost import run_cost
from hermes_nb.agent.events import (
    AgentEvent,
    ApprovalAnswered,
    BatchDone,
    Emit,
    ModelNamed,
    Notice,
    TextDelta,
    ToolCallQueued,
    TurnDone,
    TurnStarted,
    UsageUpdate,
    tool_event,
)
from hermes_nb.agent.failures import DEFAULT_REPEATED_FAILURES, repeated_failure
from hermes_nb.agent.history import (
    assistant_message,
    cut_answer,
    hearing,
    repair_history,
    unique_ids,
    with_parts,
)
from hermes_nb.agent.offer_size import oversize_notice
from hermes_nb.agent.results import INTERRUPTED, AgentResult, ToolCallRecord, record_of
from hermes_nb.agent.routes import begin as begin_run
from hermes_nb.agent.todos import TodoStore
from hermes_nb.agent.tool_search import Assembly, turn_tools, unwrap_calls, with_listing
from hermes_nb.agent.turns import Turn, new_turn
from hermes_nb.models import (
    DEFAULT_TURN_TIMEOUT,
    Model,
    ModelError,
    ToolCallSpec,
    add_usage,
    empty_usage,
    length_notice,
    unreported_usage,
)
from hermes_nb.models.model_choice import resolve_model
from hermes_nb.tools import async_bridge, interaction
from hermes_nb.tools.batch.scope import NOTHING, reset_offer, set_offer
from hermes_nb.tools.calls.results import clean_text
from hermes_nb.tools.errors import BridgeError
from hermes_nb.tools.jobs import inbox_for, use_inbox
from hermes_nb.tools.registry import registry
from hermes_nb.traces.caller import caller_context

if TYPE_CHECKING:
    from hermes_nb.display.live import View

__all__ = ["Agent", "AgentResult", "ToolCallRecord"]


class Agent:
    """A conversation with an OpenAI-compatible model that can call the registry's tools."""

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        enabled_toolsets: list[str] | None = None,
        disabled_toolsets: list[str] | None = None,
        system_prompt: str | None = None,
        max_iterations: int = 20,
        stream: bool = True,
        record: str | None = None,
        temperature: float | None = None,
        parallel_tool_calls: bool = True,
        timeout: float | None = None,
        max_retries: int = 3,
        display: bool | str | None = None,
        approval_callback: Callable[[str, str, str], str] | None = None,
        tool_timeout: float | None = None,
        max_workers: int = 8,
        turn_timeout: float | None = DEFAULT_TURN_TIMEOUT,
        tool_choice: str | dict[str, Any] | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        extra_body: dict[str, Any] | None = None,
        code_vars: dict[str, Any] | None = None,
        max_repeated_failures: int | None = DEFAULT_REPEATED_FAILURES,
    ) -> None:
        self.model: Model = resolve_model(
            model, base_url, api_key, stream=stream, temperature=temperature,
            parallel_tool_calls=parallel_tool_calls, timeout=timeout, max_retries=max_retries,
            turn_timeout=turn_timeout, tool_choice=tool_choice, max_tokens=max_tokens, seed=seed, extra_body=extra_body)
        if record is not None:
            from hermes_nb.models.replay import RecordingModel

            self.model = RecordingModel(self.model, record)
        self.enabled_toolsets = toolset_list(enabled_toolsets, "enabled_toolsets")  # one line here, not at run()
        self.disabled_toolsets = toolset_list(disabled_toolsets, "disabled_toolsets")
        self.system_prompt = system_prompt
        self.max_iterations = max_iterations
        self.display = display
        self.approval_callback = approval_callback
        self.tool_timeout = tool_timeout
        self.max_workers = max_workers
        self.code_vars = code_vars  # what execute_code's scripts see besides their own variables
        self.max_repeated_failures = max_repeated_failures  # the same failing call this often ends the run
        self.messages: list[dict[str, Any]] = []
        self._task: asyncio.Task[Any] | None = None
        self.todo_store = TodoStore()  # the todo tool's plan: kept across runs, cleared by reset()
        self.reset()

    def reset(self) -> None:
        """Start a new conversation (a replay model starts again from its first turn)."""
        self.messages = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        self.todo_store.clear()
        rewind = getattr(self.model, "rewind", None)
        if rewind is not None:
            rewind()

    def __repr__(self) -> str:
        return f"Agent(model={self.model.name!r}, messages={len(self.messages)})"

    # -- entry points -----------------------------------------------------------------------------

    def run(self, prompt: str) -> AgentResult:
        """Run until the model answers without tool calls; safe in a cell and in plain Python."""
        if async_bridge.in_loop_thread():
            raise BridgeError("Agent.run() was called on the hermes_nb background loop; await agent.arun() instead")
        self._check_config(prompt)
        events: queue.Queue[AgentEvent] = queue.Queue()
        view = self._make_view(prompt)
        self._trace_caller = caller_context()  # the person's current span, if any: the run's spans go under it
        future = async_bridge.submit(self._core(prompt, events.put_nowait))
        try:
            # Approval and clarify prompts asked by tools in worker threads are shown from here, the
            # main thread, which is the only one that can receive a widget click while the cell runs.
            with interaction.main_thread_waiting():
                while True:
                    try:
                        try:
                            result = future.result(timeout=async_bridge.WAIT_SLICE)
                            break
                        except TimeoutError:
                            _drain(events, view)
                            interaction.service()  # ■ while a prompt waits raises here
                    except KeyboardInterrupt:  # stopped inside the wait: the prompt's asker hears after
                        result = self._stop(future, events, view)
                        break
        except Exception as exc:  # replay drift, an unknown toolset...: the display says so, then it raises
            _drain(events, view)
            view.abort(f"{type(exc).__name__}: {exc}")
            raise
        return self._finish(result, events, view)

    async def arun(self, prompt: str) -> AgentResult:
        """``run`` for top-level ``await`` in a cell (or any event loop)."""
        self._check_config(prompt)
        events: queue.Queue[AgentEvent] = queue.Queue()
        view = self._make_view(prompt)
        self._trace_caller = caller_context()
        future = async_bridge.submit(self._core(prompt, events.put_nowait))
        waiter = asyncio.wrap_future(future)
        try:
            # As in run(): prompts asked by tools in worker threads are shown from here, in the cell's
            # own context, so they (and their records) land under this cell.
            with interaction.main_thread_waiting():
                try:
                    while not waiter.done():
                        await asyncio.wait({waiter}, timeout=async_bridge.WAIT_SLICE)
                        _drain(events, view)
                        interaction.service()  # ■ while a prompt waits raises here
                    result = waiter.result()
                except (KeyboardInterrupt, asyncio.CancelledError):  # stopped inside the wait, as in run()
                    result = self._stop(future, events, view)
        except Exception as exc:
            _drain(events, view)
            view.abort(f"{type(exc).__name__}: {exc}")
            raise
        return self._finish(result, events, view)

    # -- entry point for code already on the background loop (issue 13: evaluate's cases) ----------

    async def run_on_loop(self, prompt: str) -> AgentResult:
        """``run`` for a coroutine already on hermes_nb's background loop (``tools.async_bridge``), such as
        ``hermes_nb.evaluate``'s cases: nothing is displayed; cancelling the awaiting task returns
        ``stopped_reason="interrupted"`` with every tool call answered. From a cell: ``run`` or ``await arun``."""
        if not async_bridge.in_loop_thread():
            raise BridgeError("Agent.run_on_loop() runs on the hermes_nb background loop; "
                              "call agent.run() or await agent.arun() instead")
        self._check_config(prompt)
        return await self._core(prompt, lambda event: None)

    # -- plumbing between the calling thread and the core -----------------------------------------

    def _check_config(self, prompt: Any) -> None:
        check_prompt(prompt)
        check = getattr(self.model, "check_config", None)
        if check is not None:
            check()

    def _make_view(self, prompt: str) -> View:
        from hermes_nb.display import live
        return live.make_view(self.display, prompt=prompt, model=self.model.name)

    def _stop(self, future: Any, events: queue.Queue[AgentEvent], view: View) -> AgentResult:
        """Cancel the core and wait for it to answer every open tool call; interrupts here are ignored."""
        task = self._task
        if task is not None:
            async_bridge.get_loop().call_soon_threadsafe(task.cancel)
        deadline = time.monotonic() + 30
        while True:
            try:
                return future.result(timeout=async_bridge.WAIT_SLICE)
            except TimeoutError:
                _drain(events, view)
                if time.monotonic() > deadline:
                    raise
            except KeyboardInterrupt:  # a second interrupt while the history is being fixed
                continue

    def _finish(self, result: AgentResult, events: queue.Queue[AgentEvent], view: View) -> AgentResult:
        _drain(events, view)
        result = replace(result, transcript=view.transcript, cost=run_cost(
            result.turns, self.model, [c.cost for c in result.children if c.cost is not None]))
        view.finish(result)
        if result.trace is not None:
            from hermes_nb.traces.runs import remember
            remember(result.trace)  # %trace draws the last run from a cell
        return result

    # -- the core, on the background loop ---------------------------------------------------------

    async def _core(self, prompt: str, emit: Emit) -> AgentResult:
        from hermes_nb.traces import runs as traces

        self._task = asyncio.current_task()
        tracer, trace_token = traces.begin(self)  # the run's spans, made from its own events (hermes_nb.traces)
        emit = tracer.hear(emit)
        run = begin_run(self, prompt, emit)  # agent-loop tools' routes, memory in the system prompt, storing
        self.messages.append({"role": "user", "content": clean_text(prompt)})
        records: list[ToolCallRecord] = []
        turns: list[Turn] = []
        usage = empty_usage()
        iterations, text, reason, error = 0, "", "done", None
        oversize_said = False
        pending: tuple[ToolCallSpec, ...] = ()
        finished: dict[str, Any] = {}
        undo = self._install_approval(emit)
        shown = self.model.name
        undo_code = install_code_host(self, emit)  # execute_code's scripts call this run's tools
        undo_jobs = use_inbox(inbox_for(self))  # notices of the background jobs this agent starts
        offer = set_offer(NOTHING)  # scope: nothing runs but what a turn offers (each turn sets its own)
        partial: list[str] = []  # the text of the model turn under way: kept if the turn is cut
        emit = hearing(emit, partial)
        try:
            while True:
                run.store(self.messages)  # for session_search: the run so far, turn by turn
                if iterations >= self.max_iterations:
                    reason = "max_iterations"
                    text = (f"Stopped after {iterations} model turns (max_iterations={self.max_iterations}) "
                            "before the model gave a final answer; run again to continue.")
                    emit(Notice(message=text, level="warning"))
                    break
                iterations += 1
                emit(TurnStarted(iteration=iterations))
                await registry.abefore_batch()  # e.g. tools an MCP server changed during the last batch
                tools = self._definitions()  # tool search: deferred tools behind the bridge, the run's catalog set
                if not oversize_said and (line := oversize_notice(tools.definitions, self.model)):
                    oversize_said = True  # once a run, in one line, with the count
                    emit(Notice(message=line, level="warning"))
                for line in inbox_for(self).drain():  # a job it started ended, or printed what it watched for
                    emit(Notice(message=line))
                    self.messages.append({"role": "user", "content": f"[hermes_nb notice: {line}]"})
                sent = with_listing(list(self.messages), tools.listing)
                turn = await self._complete(sent, tools, emit)
                turns.append(new_turn(iterations, sent, tools.definitions, turn, self.model,
                                      turns[-1] if turns else None))
                emit(TurnDone(turn=turns[-1]))
                add_usage(usage, turn.usage)
                emit(UsageUpdate(usage=usage.copy()))
                if turn.model and turn.model != shown:  # the server named the model that answered
                    shown = turn.model
                    emit(ModelNamed(name=shown))
                for said in turn.notices:  # a server that ignored what was asked, noticed by the model seam
                    emit(Notice(message=said, level="warning"))
                if turn.finish_reason == "length":  # cut at a limit: a half answer or half a call is no answer
                    self.messages.append(assistant_message(turn.content, ()))
                    reason, text = "length", turn.content
                    emit(Notice(message=length_notice(self.model, turn), level="warning"))
                    break
                calls = unique_ids(turn.tool_calls, self.messages)
                self.messages.append(assistant_message(turn.content, calls))
                if not calls:
                    text = turn.content
                    break
                pending, finished = calls, {}
                records += await self._run_batch(pending, finished, iterations, emit)
                pending = ()
                stuck = repeated_failure(records, self.max_repeated_failures)
                if stuck:
                    reason, text = "repeated_failure", stuck
                    emit(Notice(message=stuck, level="warning"))
                    break
        except (asyncio.CancelledError, KeyboardInterrupt):
            reason, text = "interrupted", "Interrupted by the user."
            records += self._answer_pending(pending, finished, iterations, emit)
            emit(Notice(message="Interrupted: every tool call has an answer in the history; the next run (re-running "
                               "this cell too) continues the conversation; %agent reset or agent.reset() starts "
                               "fresh.", level="warning"))
            if not pending and len(turns) < iterations:  # cut inside a model turn: its tokens are unknown
                add_usage(usage, unreported_usage())
            kept_line = cut_answer(self.messages, "".join(partial), "interrupted by the user")
            if kept_line:
                emit(Notice(message=kept_line, level="warning"))
        except ModelError as exc:
            reason, error, text = "error", str(exc), f"Model error: {exc}"
            emit(Notice(message=text, level="error"))
            kept_line = cut_answer(self.messages, "".join(partial), "the model's turn failed")
            if kept_line:
                emit(Notice(message=kept_line, level="warning"))
        finally:
            reset_offer(offer)
            undo_code()
            undo_jobs()
            undo()
            run.end(self.messages)
            self._task = None
            trace = traces.end(tracer, trace_token, reason, error)
        for child in run.children:  # a run's tokens include its sub-agents' (issue 35: 600 shown, 1 800 used)
            add_usage(usage, child.usage)
        return AgentResult(text=text, messages=self.messages, tool_calls=records, usage=usage,
                           iterations=iterations, stopped_reason=reason, error=error,  # type: ignore[arg-type]
                           model=shown, turns=tuple(turns), todos=tuple(self.todo_store.read()),
                           children=tuple(run.children), trace=trace)

    async def _complete(self, sent: list[dict[str, Any]], tools: Assembly, emit: Emit) -> Any:
        """One model turn sent ``sent`` (the history with the turn's tool listing); text that cannot be sent
        (a lone surrogate, a non-JSON value) never escapes."""
        for attempt in (1, 2):
            try:
                return await self.model.complete(
                    sent, tools.definitions,
                    on_text=lambda d: emit(TextDelta(delta=d)),
                    on_retry=lambda m: emit(Notice(message=m, level="retry")))
            except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
                if repair_history(self.messages):
                    raise ModelError(f"the conversation held text that could not be sent ({type(exc).__name__}: "
                                     f"{exc}); it was repaired (U+FFFD marks what was replaced), so the next "
                                     f"run continues") from exc
                if attempt == 2 or not repair_history(tools.definitions):
                    raise
                # a tool's own definition (an MCP server's description, say): cleaned for this turn, said once
                emit(Notice(message=f"a tool definition held text that could not be sent ({exc}); "
                                    "sent with U+FFFD in its place", level="warning"))
        raise AssertionError("unreachable")

    def _definitions(self) -> Assembly:
        from hermes_nb.agent.delegation import withheld
        from hermes_nb.selection import offered_by

        # the picker's selection when the agent names none, read afresh every turn; it is also the turn's
        # offer, the only tools its calls may run (a child's never include what it is withheld)
        return turn_tools(offered_by(self.enabled_toolsets), self.disabled_toolsets, self.model.name,
                          withheld=withheld(self))

    def _install_approval(self, emit: Emit) -> Callable[[], None]:
        """Make this agent's approval callback the approver of this run only (a context variable of the
        run's task, so concurrent runs keep their own); its answers show in the transcript."""
        callback = self.approval_callback
        if callback is None:
            return lambda: None  # the default (the inline prompt) puts its record on the card itself
        from hermes_nb.tools.safety.approvals.gate import use_approver

        def answer(command: str, key: str, description: str) -> str:
            choice = callback(command, key, description)
            # Its own event kind, so the display puts it with the call that asked, before the result.
            emit(ApprovalAnswered(command=command, choice=choice,
                                  message=f"approval asked for `{command}` ({description.rstrip('.')}) → {choice}",
                                  level="approval" if choice in ("once", "session", "always") else "denied"))
            return choice

        scope = use_approver(answer)
        scope.__enter__()

        def undo() -> None:
            scope.__exit__(None, None, None)

        return undo

    async def _run_batch(self, calls: tuple[ToolCallSpec, ...], finished: dict[str, Any], iteration: int,
                         emit: Emit) -> list[ToolCallRecord]:
        from hermes_nb.tools.batch.scheduling import BatchEvent, arun_tool_batch
        from hermes_nb.tools.budget import enforce_turn_budget, maybe_persist_tool_result

        def on_event(event: BatchEvent) -> None:  # worker threads: only queue it
            if event.kind == "end" and event.result is not None:
                finished[event.tool_call_id] = event.result
            emit(tool_event(event))

        batch = unwrap_calls([{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                              for c in calls])  # a tool_call of a deferred tool: its card and record name the tool
        for i, call in enumerate(batch):
            emit(ToolCallQueued(index=i, id=call["id"], **{k: call["function"][k] for k in ("name", "arguments")}))
        results = await arun_tool_batch(batch, max_workers=self.max_workers, timeout=self.tool_timeout,
                                        on_event=on_event)
        messages = [
            {**r.to_message(), "name": calls[r.index].name,  # the name the model called (tool_call, say)
             "content": maybe_persist_tool_result(r.content, r.name, r.tool_call_id)}
            for r in results
        ]
        messages = enforce_turn_budget(messages)
        self.messages.extend(map(with_parts, messages))
        records = [record_of(r, m["content"], iteration) for r, m in zip(results, messages, strict=True)]
        emit(BatchDone(records=tuple(records)))
        return records

    def _answer_pending(self, pending: tuple[ToolCallSpec, ...], finished: dict[str, Any], iteration: int,
                        emit: Emit) -> list[ToolCallRecord]:
        """After an interrupt: one tool message per open call, finished results kept, in call order."""
        answered = {m.get("tool_call_id") for m in self.messages if m.get("role") == "tool"}
        records = []
        for call in pending:
            if call.id in answered:
                continue
            result = finished.get(call.id)
            if result is not None and not result.interrupted:
                content = result.content
                records.append(record_of(result, content, iteration))
            else:
                content = json.dumps({"error": f"Tool {call.name} was {INTERRUPTED} before it finished"})
                records.append(ToolCallRecord(id=call.id, name=call.name, arguments=call.arguments,
                                              content=content, iteration=iteration, is_error=True,
                                              interrupted=True))
            self.messages.append(with_parts({"role": "tool", "tool_call_id": call.id, "name": call.name,
                                              "content": content}))
        if records:
            emit(BatchDone(records=tuple(records)))
        return records


def _drain(events: queue.Queue[AgentEvent], view: View) -> None:
    while True:
        try:
            event = events.get_nowait()
        except queue.Empty:
            break
        view.handle(event)
    view.tick()

