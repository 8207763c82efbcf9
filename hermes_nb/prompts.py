"""Inline prompts that ask the person while a cell is still running: command approval and clarify.

With a widget frontend the prompt is a row of buttons under the running cell; widget messages are
pumped with ``jupyter_ui_poll`` until a click (or a timeout). Once answered, the widget is replaced by
a static record of the decision, so a saved notebook reads well. Without a kernel the prompts fall
back to ``input()``; without stdin they deny (approval) or answer nothing (clarify).

Nobody to click (nbclient, nbconvert, papermill, an autograder): the prompt is not shown; one line under
the cell says so, and the model hears that no one was available to answer (not that the person said
no). ■ while a prompt waits is an interrupt like any other: the buttons become a record, and the
``KeyboardInterrupt`` stops the cell (``Agent.run`` stops and answers every call, as on any ■).

Settings (``%config Prompts.timeout = 60``): ``Prompts.timeout``, how long a prompt waits for a click;
``Prompts.ask_without_stdin``, show prompts even in runs that say nobody can answer (see ``no_one_to_ask``).

Each button's method does what clicking it does (``ApprovalPrompt.choose``, ``ClarifyPrompt.submit``),
so tests need no browser.
"""

from __future__ import annotations

import asyncio
import html
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from traitlets import Bool, Float
from traitlets.config import Configurable

from hermes_nb.tools import interaction
from hermes_nb.tools.approval import set_default_approval_callback
from hermes_nb.tools.interaction import run_on_main
from hermes_nb.tools.safety.visible import make_visible

__all__ = ["ApprovalPrompt", "ClarifyPrompt", "Prompts", "approval_prompt", "clarify_prompt", "install",
           "no_one_to_ask"]

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 300.0
UiEvents = Callable[[], AbstractContextManager[Callable[[int], Any]]]

_APPROVAL_LABELS = {"once": "Approve once", "session": "For this session", "always": "Always", "deny": "Deny"}
_VERDICTS = {"once": "Approved once", "session": "Approved for this session", "always": "Approved always",
             "deny": "Denied"}
_APPROVAL_STYLES = {"once": "success", "session": "info", "always": "warning", "deny": "danger"}
_TEXT_ANSWERS = {"o": "once", "once": "once", "s": "session", "session": "session", "a": "always",
                 "always": "always", "d": "deny", "deny": "deny", "n": "deny", "no": "deny", "": "deny"}


class Prompts(Configurable):
    """How the inline prompts wait; ``%config Prompts`` lists these."""

    timeout = Float(DEFAULT_TIMEOUT, min=0,
                    help="Seconds a prompt waits for a click; then approval counts as denied, clarify as no answer."
                    ).tag(config=True)
    ask_without_stdin = Bool(False, help="Show prompts even when the cell was sent with allow_stdin=False "
                             "(nbclient, nbconvert, papermill do; so does Voila, which can click). Off: such a run "
                             "is told at once that no one can answer.").tag(config=True)


settings = Prompts()  # replaced by the one ``install`` registers with the shell (for ``%config``)
_told: set[object] = set()  # the cells already told that no one can answer


def no_one_to_ask() -> bool:
    """True when the running cell came from a runner that no person watches.

    The signal is the request's own ``allow_stdin`` (``kernel._allow_stdin``, set for every execute
    request): nbclient, and so nbconvert, papermill and nbgrader, send ``False``; JupyterLab, Notebook,
    VS Code and ``jupyter console`` send ``True``. It is known before anything is shown, costs no wait,
    and holds on every ipykernel. A frontend's widget manager gives no positive sign per widget (a
    rendered widget sends nothing back), so waiting for one would only be a guess with a timeout.
    Readable from any thread (a plain attribute, not the context-local parent header).
    """
    if settings.ask_without_stdin:
        return False
    kernel: Any = getattr(_get_ipython(), "kernel", None)
    if kernel is None or not _widgets_available():
        return False  # plain Python or a terminal IPython: the text prompt asks on stdin
    return not getattr(kernel, "_allow_stdin", True)


def _tell_no_one_to_ask() -> None:
    """One line under the running cell (once per cell), printed by the main thread."""
    kernel: Any = getattr(_get_ipython(), "kernel", None)
    cell = getattr(kernel, "execution_count", None)
    if cell in _told:
        return
    _told.add(cell)
    interaction.post(print, "hermes_nb: no one can answer a prompt in this run (the cell was sent without stdin, "
                     "as nbclient/nbconvert do), so approvals and questions get no answer at once; "
                     "%config Prompts.ask_without_stdin = True shows them anyway.")


def _widgets_available() -> bool:
    """True inside a Jupyter kernel (a ZMQ shell), where widgets can render."""
    try:
        from ipykernel.zmqshell import ZMQInteractiveShell
    except ImportError:
        return False
    return isinstance(_get_ipython(), ZMQInteractiveShell)


def _main_shell_socket(kernel: Any) -> Any:
    """ipykernel 7's in-process socket that carries shell messages to the main thread, or None."""
    manager = getattr(getattr(kernel, "shell_channel_thread", None), "manager", None)
    socket = getattr(getattr(manager, "_shell_channel_to_main", None), "to_socket", None)
    return socket if socket is not None and hasattr(kernel, "dispatch_shell") else None


def _clicks_deliverable() -> bool:
    """Whether a click can reach a blocked cell in this kernel: ipykernel 7 through its main-thread socket,
    ipykernel 6 through ``do_one_iteration`` (``jupyter_ui_poll``). Another kernel gets the text prompt
    (``input()`` over the stdin channel) instead of buttons that could only wait out the timeout."""
    kernel: Any = getattr(_get_ipython(), "kernel", None)
    return _main_shell_socket(kernel) is not None or hasattr(kernel, "do_one_iteration")


def _default_ui_events() -> AbstractContextManager[Callable[[int], Any]]:
    kernel: Any = getattr(_get_ipython(), "kernel", None)
    socket = _main_shell_socket(kernel)
    if socket is not None:
        return _kernel7_events(kernel, socket)
    from jupyter_ui_poll import ui_events  # lazy: it touches the kernel when used

    return ui_events()


def _get_ipython() -> Any:
    from IPython import get_ipython

    return get_ipython()


@contextmanager
def _kernel7_events(kernel: Any, socket: Any) -> Iterator[Callable[[int], None]]:
    """Pump widget messages in a blocked sync cell on ipykernel 7.

    ipykernel 7 has no ``do_one_iteration``, so ``jupyter_ui_poll`` cannot deliver clicks there (measured
    with ipykernel 7.4). Shell messages reach the main thread through an in-process socket; read it
    directly, handle comm messages now (as ipykernel itself does for a running async cell), and hand
    everything else back to the kernel once the prompt is answered.
    """
    deferred: list[Any] = []

    def poll(n: int) -> None:
        for _ in range(n):
            if not socket.poll(0):
                return
            raw = socket.recv_multipart(copy=False)
            _, frames = kernel.session.feed_identities(raw, copy=False)
            msg_type = kernel.session.deserialize(frames, content=False, copy=False)["header"]["msg_type"]
            if msg_type not in ("comm_open", "comm_msg", "comm_close"):
                deferred.append(raw)
                continue
            parent = kernel.get_parent("shell")
            ident = kernel._parent_ident["shell"]
            coro = kernel.dispatch_shell(raw, subshell_id=None, concurrent=True)
            try:
                coro.send(None)  # comm handlers are synchronous: the coroutine ends without suspending
            except StopIteration:
                pass
            else:
                coro.close()
                log.warning("a widget message needed the event loop and was dropped")
            finally:
                kernel.set_parent(ident, parent, channel="shell")

    try:
        yield poll
    finally:
        _replay(kernel, deferred)


def _replay(kernel: Any, deferred: list[Any]) -> None:
    """Hand the requests held back during the prompt to the kernel, to run after this cell, in order.

    A request the kernel's stream read just before the prompt blocked is two tasks away from the
    kernel's lock (the stream's callback wraps ``shell_main`` in a task of its own). Scheduling
    ``shell_main`` directly put the held requests one step ahead of it, so the cell after the prompt ran
    last. Going through the stream's own callback gives every request the same path: arrival order.
    """
    pair = kernel.shell_channel_thread.manager._shell_channel_to_main
    stream: Any = getattr(pair, "to_stream", None)
    callback = getattr(stream, "_recv_callback", None)
    for raw in deferred:
        if callback is not None:
            stream._run_callback(callback, raw)
        else:  # the same two steps, should pyzmq rename its internals
            asyncio.ensure_future(_in_task(kernel.shell_main(None, raw)))


async def _in_task(coro: Any) -> Any:
    return await asyncio.create_task(coro)

if TYPE_CHECKING:
    import ipywidgets as widgets


def _widgets() -> Any:
    """ipywidgets, imported on first prompt: it costs ~100 ms, too much for ``%load_ext``."""
    import ipywidgets

    return ipywidgets


def _current_parent() -> Any:
    """(ident, header) of the request the kernel is answering now, or None outside ipykernel.

    ``_parent_ident["shell"]`` reads the same on ipykernel 6 (a dict) and 7 (a view of its context
    variables, kept for this use), so the record lands under the prompt's cell on both."""
    kernel: Any = getattr(_get_ipython(), "kernel", None)
    try:
        return kernel._parent_ident["shell"], kernel.get_parent("shell")
    except (AttributeError, KeyError, TypeError):
        return None


@contextmanager
def _as_parent(saved: Any) -> Iterator[None]:
    """Publish as a reply to ``saved`` (from ``_current_parent``) for the duration of the block."""
    kernel: Any = getattr(_get_ipython(), "kernel", None)
    current = _current_parent() if saved is not None else None
    if current is None:
        yield
        return
    kernel.set_parent(*saved, channel="shell")
    try:
        yield
    finally:
        kernel.set_parent(*current, channel="shell")


@contextmanager
def _interrupt_raises_here() -> Iterator[None]:
    """■ raises ``KeyboardInterrupt`` in the blocked wait, whichever handler the kernel set.

    For an async cell (``await agent.arun``) ipykernel's SIGINT handler cancels the cell's task on the
    event loop, and this wait is holding that loop: ■ would be queued until the timeout. Installed
    before the widgets are made, so ■ as soon as they appear lands here. A no-op off the main thread.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


class _Prompt:
    """Shared machinery: a widget box, a display handle, and a wait loop that pumps widget messages."""

    def __init__(self, *, timeout: float | None, poll_interval: float, ui_events: UiEvents | None) -> None:
        self.timeout = settings.timeout if timeout is None else timeout
        self.poll_interval = poll_interval
        self._ui_events = ui_events or _default_ui_events
        self._answered = threading.Event()
        self._handle: Any = None
        self._cell_parent: Any = None
        self.box = _widgets().VBox()
        self.record_html = ""

    @property
    def answered(self) -> bool:
        return self._answered.is_set()

    def show(self) -> None:
        """Display the widget under the running cell (with a text line for frontends without widgets)."""
        from IPython.display import display

        bundle = self.box._repr_mimebundle_()
        bundle["text/plain"] = self._text()
        self._handle = display(bundle, raw=True, display_id=True)
        self._cell_parent = _current_parent()

    def _text(self) -> str:
        return (f"{self._question()} — buttons need a frontend with Jupyter widgets; with none, this waits "
                f"{self.timeout:g} s (%config Prompts.timeout).")

    def _question(self) -> str:
        raise NotImplementedError

    def _finish(self, record_html: str) -> None:
        self.record_html = record_html
        self.box.children = (_widgets().HTML(record_html),)
        if self._handle is not None:
            from IPython.display import HTML

            # The click arrives as a comm message, which becomes the kernel's current parent; the record
            # must go to the cell that showed the prompt, so that cell's saved output keeps static HTML.
            with _as_parent(self._cell_parent):
                self._handle.update(HTML(record_html))
        for child in self._buttons():
            child.close()
        self._answered.set()

    def _buttons(self) -> list[widgets.Widget]:
        return []

    def _timed_out(self) -> None:
        raise NotImplementedError

    def interrupt(self) -> None:
        """What ■ does while the prompt waits: the buttons become a record that nothing was answered."""
        if not self.answered:
            self._finish(f"<div><b>⏹ Interrupted</b> before an answer: {self._record_subject()}</div>")

    def _record_subject(self) -> str:
        raise NotImplementedError

    def _wait(self) -> None:
        if self.answered:
            return
        deadline = time.monotonic() + self.timeout
        try:
            if threading.current_thread() is threading.main_thread():
                with _interrupt_raises_here(), self._ui_events() as poll:
                    while not self.answered and time.monotonic() < deadline:
                        poll(10)
                        if not self.answered:
                            self._answered.wait(self.poll_interval)
            else:  # only the kernel's main thread may pump widget messages; another thread just waits
                self._answered.wait(max(0.0, deadline - time.monotonic()))
        except KeyboardInterrupt:
            self.interrupt()  # no dead buttons left behind; the interrupt goes on to stop the cell
            raise
        if not self.answered:
            self._timed_out()


class ApprovalPrompt(_Prompt):
    """Four buttons (once / session / always / deny) under the escaped command."""

    def __init__(self, command: str, pattern_key: str, description: str, *, timeout: float | None = None,
                 poll_interval: float = 0.05, ui_events: UiEvents | None = None) -> None:
        super().__init__(timeout=timeout, poll_interval=poll_interval, ui_events=ui_events)
        self.command, self.pattern_key, self.description = command, pattern_key, description
        self.choice: str | None = None
        self.buttons: dict[str, widgets.Button] = {}
        for choice, label in _APPROVAL_LABELS.items():
            button = _widgets().Button(description=label, button_style=_APPROVAL_STYLES[choice],
                                    tooltip=f"{label}: {pattern_key}")
            button.on_click(lambda _b, c=choice: self.choose(c))
            self.buttons[choice] = button
        header = _widgets().HTML(
            f"<b>Approve this command?</b> <code>{html.escape(pattern_key)}</code>: {html.escape(description)}"
            f"<pre style='white-space:pre-wrap'>{html.escape(make_visible(command))}</pre>")
        self.box.children = (header, _widgets().HBox(list(self.buttons.values())))

    def _buttons(self) -> list[widgets.Widget]:
        return list(self.buttons.values())

    def _question(self) -> str:
        return f"Approve this command? [{self.pattern_key}] {make_visible(self.command)}"

    def _record_subject(self) -> str:
        return f"<code>{html.escape(make_visible(self.command))}</code> did not run"

    def choose(self, choice: str, *, note: str = "") -> None:
        """What clicking a button does: record the decision and replace the buttons with a static record."""
        if choice not in _APPROVAL_LABELS:
            raise ValueError(f"choice must be one of {sorted(_APPROVAL_LABELS)}, not {choice!r}")
        if self.answered:
            return
        self.choice = choice
        self._finish(f"<div><b>{_VERDICTS[choice]}</b>{html.escape(note)}: "
                     f"<code>{html.escape(make_visible(self.command))}</code></div>")

    def _timed_out(self) -> None:
        self.choose("deny", note=f" (no answer within {self.timeout:g} s)")

    def wait(self) -> str:
        """Pump widget messages until a button is clicked or the timeout passes (then "deny").

        ■ meanwhile raises ``KeyboardInterrupt`` (after replacing the buttons with a record)."""
        self._wait()
        assert self.choice is not None
        return self.choice


class ClarifyPrompt(_Prompt):
    """A question with one button per choice, plus a text box and Submit for a free answer."""

    def __init__(self, question: str, choices: Sequence[str] | None = None, *, timeout: float | None = None,
                 poll_interval: float = 0.05, ui_events: UiEvents | None = None) -> None:
        super().__init__(timeout=timeout, poll_interval=poll_interval, ui_events=ui_events)
        self.question, self.choices = question, list(choices or [])
        self.answer: str | None = None
        self.choice_buttons = [_widgets().Button(description=c[:40], tooltip=c) for c in self.choices]
        for button, choice in zip(self.choice_buttons, self.choices, strict=True):
            button.on_click(lambda _b, c=choice: self.choose(c))
        self.text = _widgets().Text(placeholder="Type an answer")
        self.submit_button = _widgets().Button(description="Submit", button_style="primary")
        self.submit_button.on_click(lambda _b: self.submit())
        header = _widgets().HTML(f"<b>{html.escape(make_visible(question))}</b>")
        self.box.children = (header, _widgets().HBox(self.choice_buttons), _widgets().HBox([self.text, self.submit_button]))

    def _buttons(self) -> list[widgets.Widget]:
        return [*self.choice_buttons, self.text, self.submit_button]

    def _question(self) -> str:
        return make_visible(self.question)

    def _record_subject(self) -> str:
        return f"{html.escape(make_visible(self.question))} → <i>no answer</i>"

    def choose(self, answer: str, *, note: str = "") -> None:
        """What clicking a choice does: answer with it and leave a static record."""
        if self.answered:
            return
        self.answer = answer
        self._finish(f"<div><b>{html.escape(make_visible(self.question))}</b> → "
                     f"{html.escape(make_visible(answer)) or '<i>no answer</i>'}{html.escape(note)}</div>")

    def submit(self) -> None:
        """What clicking Submit does: answer with the text box's value."""
        self.choose(self.text.value.strip())

    def _timed_out(self) -> None:
        self.choose("", note=f" (no answer within {self.timeout:g} s)")

    def wait(self) -> str:
        """Pump widget messages until answered or timed out (then "")."""
        self._wait()
        assert self.answer is not None
        return self.answer


# --- text fallback -------------------------------------------------------------------------------------

def _ask_text(command: str, pattern_key: str, description: str, input_fn: Callable[[str], str] | None = None) -> str:
    print(f"Approve this command? [{pattern_key}] {description}\n    {make_visible(command)}")
    try:
        answer = (input_fn or input)("[o]nce / [s]ession / [a]lways / [d]eny: ").strip().lower()
    except (EOFError, OSError):  # no stdin (a service, or pytest capturing it)
        return "deny"
    return _TEXT_ANSWERS.get(answer, "deny")


def _clarify_text(question: str, choices: Sequence[str], input_fn: Callable[[str], str] | None = None) -> str:
    print(make_visible(question))
    for i, choice in enumerate(choices, start=1):
        print(f"  {i}. {make_visible(choice)}")
    try:
        answer = (input_fn or input)("Answer (a number or text): ").strip()
    except (EOFError, OSError):
        return ""
    if answer.isdigit() and 1 <= int(answer) <= len(choices):
        return choices[int(answer) - 1]
    return answer


def approval_prompt(command: str, pattern_key: str, description: str) -> str:
    """Ask the person about a dangerous command: "once", "session", "always" or "deny".

    Asked from a worker thread while the main thread waits for that work, the prompt moves to the
    main thread (tools.interaction), the only one that can receive a click during a running cell.
    """
    return run_on_main(_approval_prompt, command, pattern_key, description)


def _approval_prompt(command: str, pattern_key: str, description: str) -> str:
    if no_one_to_ask():  # only when asked directly: installed, the callback is skipped (``_InlineApproval``)
        _tell_no_one_to_ask()
        return "deny"
    if not _widgets_available() or not _clicks_deliverable():
        return _ask_text(command, pattern_key, description)
    with _interrupt_raises_here():
        prompt = ApprovalPrompt(command, pattern_key, description)
        prompt.show()
        return prompt.wait()


def clarify_prompt(question: str, choices: Sequence[str] | None = None) -> str:
    """Ask the person a question; returns the chosen or typed answer ("" when there is none)."""
    return run_on_main(_clarify_prompt, question, choices)


def _clarify_prompt(question: str, choices: Sequence[str] | None = None) -> str:
    if no_one_to_ask():
        _tell_no_one_to_ask()
        return ""
    if not _widgets_available() or not _clicks_deliverable():
        return _clarify_text(question, list(choices or []))
    with _interrupt_raises_here():
        prompt = ClarifyPrompt(question, choices)
        prompt.show()
        return prompt.wait()


class _InlineApproval:
    """The installed approval callback: ``approval_prompt``, standing aside when no one can answer.

    ``CallbackStack.current`` skips a callback whose ``available()`` is False, so the approval policy
    finds no one to ask and tells the model exactly that ("no one is available to approve it"), rather
    than "the person denied this".
    """

    def __call__(self, command: str, pattern_key: str, description: str) -> str:
        return approval_prompt(command, pattern_key, description)

    def available(self) -> bool:
        if no_one_to_ask():
            _tell_no_one_to_ask()
            return False
        return True


def install(ip: Any = None) -> Callable[[], None]:
    """Make the inline prompts answer approvals and the ``clarify`` tool; returns the undo (for unload)."""
    global settings
    from hermes_nb.tools.clarify_tool import set_clarify_callback

    previous = settings
    settings = Prompts(parent=ip) if ip is not None else Prompts()
    configurables = getattr(ip, "configurables", None)
    if configurables is not None:
        configurables.append(settings)  # so ``%config Prompts.timeout = 60`` works
    undo_approval = set_default_approval_callback(_InlineApproval())
    undo_clarify = set_clarify_callback(clarify_prompt)

    def undo() -> None:  # every step is idempotent, so this one is too
        global settings
        undo_clarify()
        undo_approval()
        if configurables is not None and settings in configurables:
            configurables.remove(settings)
        settings = previous

    return undo
