"""Inline prompts that ask the person while a cell is still running: command approval and clarify.

With a widget frontend the prompt is a row of buttons under the running cell; widget messages are
pumped (``hermes_nb.display.cell_pump``) until a click (or a timeout). Once answered, the widget is replaced by
a static record of the decision, so a saved notebook reads well; during an agent run an approval's record goes on
the card of the call that asked, in the live transcript, and the prompt leaves nothing (``record_on_card``). Without a kernel the prompts fall
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

import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from traitlets import Bool, Float
from traitlets.config import Configurable

from hermes_nb.agent.events import ApprovalAnswered, NoticeLevel
from hermes_nb.display import cell_pump
from hermes_nb.display.escaping import escape_html
from hermes_nb.tools import interaction
from hermes_nb.tools.approval import set_default_approval_callback
from hermes_nb.tools.interaction import run_on_main
from hermes_nb.tools.safety.approvals.visible import make_visible

__all__ = ["ApprovalPrompt", "ClarifyPrompt", "Prompts", "approval_prompt", "clarify_prompt", "install",
           "no_one_to_ask", "record_on_card"]

DEFAULT_TIMEOUT = 300.0
UiEvents = Callable[[], AbstractContextManager[Callable[[int], Any]]]

_APPROVAL_LABELS = {"once": "Approve once", "session": "For this session", "always": "Always", "deny": "Deny"}
_VERDICTS = {"once": "Approved once", "session": "Approved for this session", "always": "Approved always",
             "deny": "Denied"}
# "always" has no colour of its own: ipywidgets' warning style is white on orange (2.7:1 in the light theme)
_APPROVAL_STYLES = {"once": "success", "session": "info", "always": "", "deny": "danger"}
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
# live transcripts on show (``HtmlView``): each takes an answer onto the card of the call that asked, or says False
_card_takers: list[Callable[[ApprovalAnswered], bool]] = []
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
    kernel = _kernel()
    if kernel is None or not _widgets_available():
        return False  # plain Python or a terminal IPython: the text prompt asks on stdin
    return not getattr(kernel, "_allow_stdin", True)


def _tell_no_one_to_ask() -> None:
    """One line under the running cell (once per cell), printed by the main thread."""
    cell = getattr(_kernel(), "execution_count", None)
    if cell in _told:
        return
    _told.add(cell)
    interaction.post(print, "hermes_nb: no one can answer a prompt in this run (the cell was sent without stdin, "
                     "as nbclient/nbconvert do), so approvals and questions get no answer at once; "
                     "%config Prompts.ask_without_stdin = True shows them anyway.")


def record_on_card(taker: Callable[[ApprovalAnswered], bool]) -> Callable[[], None]:
    """While a live transcript shows a run, an approval's answer is recorded on the card of the call that asked
    (``taker`` returns True when it has that call) and the prompt leaves nothing below the transcript; returns
    the undo. Only the main thread shows prompts and transcripts, so the list needs no lock."""
    _card_takers.append(taker)

    def undo() -> None:
        if taker in _card_takers:
            _card_takers.remove(taker)

    return undo


def _on_a_card(answer: ApprovalAnswered) -> bool:
    return any(taker(answer) for taker in reversed(_card_takers))


def _widgets_available() -> bool:
    """True inside a Jupyter kernel (a ZMQ shell), where widgets can render."""
    from hermes_nb.display.kernel import in_kernel

    return in_kernel(_get_ipython())


def _get_ipython() -> Any:
    from IPython import get_ipython

    return get_ipython()


def _kernel() -> Any:
    return getattr(_get_ipython(), "kernel", None)


def _default_ui_events() -> AbstractContextManager[Callable[[int], Any]]:
    return cell_pump.ui_events(_kernel())


if TYPE_CHECKING:
    import ipywidgets as widgets


def _widgets() -> Any:
    """ipywidgets, imported on first prompt: it costs ~100 ms, too much for ``%load_ext``."""
    import ipywidgets

    return ipywidgets


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
        self.record_text = ""  # the record's words, for the text/plain twin and the call's card
        self.on_card = False  # the record went onto a live transcript's card (nothing stays below it)

    @property
    def answered(self) -> bool:
        return self._answered.is_set()

    def show(self) -> None:
        """Display the widget under the running cell (with a text line for frontends without widgets)."""
        from IPython.display import display

        bundle = self.box._repr_mimebundle_()
        bundle["text/plain"] = self._text()
        self._handle = display(bundle, raw=True, display_id=True)
        self._cell_parent = cell_pump.current_parent(_kernel())

    def _text(self) -> str:
        return (f"{self._question()} — buttons need a frontend with Jupyter widgets; with none, this waits "
                f"{self.timeout:g} s (%config Prompts.timeout).")

    def _question(self) -> str:
        raise NotImplementedError

    def _finish(self, record_html: str, answer: ApprovalAnswered | None = None) -> None:
        self.record_html = record_html
        self.box.children = (_widgets().HTML(record_html),)
        # on the call's card when a live transcript has it (the record sat below the transcript, issue 35)
        self.on_card = answer is not None and _on_a_card(answer)
        if self._handle is not None:
            # The click arrives as a comm message, which becomes the kernel's current parent; the record
            # must go to the cell that showed the prompt, so that cell's saved output keeps static HTML.
            with cell_pump.as_parent(_kernel(), self._cell_parent):
                self._handle.update({"text/html": "", "text/plain": ""} if self.on_card
                                    else {"text/html": record_html, "text/plain": self.record_text}, raw=True)
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
            self.record_text = f"⏹ Interrupted before an answer: {self._record_words()}"
            self._finish(f"<div><b>⏹ Interrupted</b> before an answer: {self._record_subject()}</div>",
                         self._answer("interrupted", "denied"))

    def _answer(self, choice: str, level: NoticeLevel) -> ApprovalAnswered | None:
        """The record as a card's note (approvals only: a question's answer is its call's result already)."""
        return None

    def _record_words(self) -> str:
        raise NotImplementedError

    def _record_subject(self) -> str:
        raise NotImplementedError

    def _wait(self) -> None:
        if self.answered:
            return
        deadline = time.monotonic() + self.timeout
        try:
            if threading.current_thread() is threading.main_thread():
                with cell_pump.interrupt_raises_here(), self._ui_events() as poll:
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
            f"<b>Approve this command?</b> <code>{escape_html(pattern_key)}</code>: {escape_html(description)}"
            f"<pre style='white-space:pre-wrap'>{escape_html(make_visible(command))}</pre>")
        self.box.children = (header, _widgets().HBox(list(self.buttons.values())))

    def _buttons(self) -> list[widgets.Widget]:
        return list(self.buttons.values())

    def _question(self) -> str:
        return f"Approve this command? [{self.pattern_key}] {make_visible(self.command)}"

    def _record_subject(self) -> str:
        return f"<code>{escape_html(make_visible(self.command))}</code> did not run"

    def _record_words(self) -> str:
        return f"`{make_visible(self.command)}` did not run"

    def _answer(self, choice: str, level: NoticeLevel) -> ApprovalAnswered | None:
        return ApprovalAnswered(command=self.command, choice=choice, message=self.record_text, level=level)

    def choose(self, choice: str, *, note: str = "") -> None:
        """What clicking a button does: record the decision and replace the buttons with a static record."""
        if choice not in _APPROVAL_LABELS:
            raise ValueError(f"choice must be one of {sorted(_APPROVAL_LABELS)}, not {choice!r}")
        if self.answered:
            return
        self.choice = choice
        who = note or " by you"  # a click; a timeout says itself ("no answer within 300 s")
        self.record_text = f"{_VERDICTS[choice]}{who}: `{make_visible(self.command)}`"
        self._finish(f"<div><b>{_VERDICTS[choice]}</b>{escape_html(note)}: "
                     f"<code>{escape_html(make_visible(self.command))}</code></div>",
                     self._answer(choice, "denied" if choice == "deny" else "approval"))

    def _timed_out(self) -> None:
        self.timed_out = True
        self.choose("deny", note=f" (no answer within {self.timeout:g} s)")

    def wait(self) -> str:
        """Pump widget messages until a button is clicked or the timeout passes (then "no-answer": the
        gate denies it and tells the model nobody answered, not that the person said no).

        ■ meanwhile raises ``KeyboardInterrupt`` (after replacing the buttons with a record)."""
        self._wait()
        assert self.choice is not None
        return "no-answer" if getattr(self, "timed_out", False) else self.choice


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
        header = _widgets().HTML(f"<b>{escape_html(make_visible(question))}</b>")
        self.box.children = (header, _widgets().HBox(self.choice_buttons), _widgets().HBox([self.text, self.submit_button]))

    def _buttons(self) -> list[widgets.Widget]:
        return [*self.choice_buttons, self.text, self.submit_button]

    def _question(self) -> str:
        return make_visible(self.question)

    def _record_subject(self) -> str:
        return f"{escape_html(make_visible(self.question))} → <i>no answer</i>"

    def _record_words(self) -> str:
        return f"{make_visible(self.question)} → no answer"

    def choose(self, answer: str, *, note: str = "") -> None:
        """What clicking a choice does: answer with it and leave a static record."""
        if self.answered:
            return
        self.answer = answer
        self.record_text = f"{make_visible(self.question)} → {make_visible(answer) or 'no answer'}{note}"
        self._finish(f"<div><b>{escape_html(make_visible(self.question))}</b> → "
                     f"{escape_html(make_visible(answer)) or '<i>no answer</i>'}{escape_html(note)}</div>")

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
        return "no-answer"
    if not _widgets_available() or not cell_pump.clicks_deliverable(_kernel()):
        return _ask_text(command, pattern_key, description)
    with cell_pump.interrupt_raises_here():
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
    if not _widgets_available() or not cell_pump.clicks_deliverable(_kernel()):
        return _clarify_text(question, list(choices or []))
    with cell_pump.interrupt_raises_here():
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
