"""The inline approval and clarify prompts, driven through their button methods (no browser)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from hermes_nb.display import prompts
from hermes_nb.display.prompts import ApprovalPrompt, ClarifyPrompt, approval_prompt, clarify_prompt, install
from hermes_nb.tools.approval import check_dangerous_command, reset_session_approvals


def clicking(action: Callable[[], None]) -> Callable[[], Any]:
    """A stand-in for ``jupyter_ui_poll.ui_events``: the first poll delivers one click."""

    @contextmanager
    def ui_events() -> Iterator[Callable[[int], None]]:
        calls: list[int] = []

        def poll(n: int) -> None:
            calls.append(n)
            if len(calls) == 1:
                action()

        yield poll

    return ui_events


@pytest.fixture(autouse=True)
def _clean_session() -> Iterator[None]:
    reset_session_approvals()
    yield
    reset_session_approvals()


@pytest.mark.parametrize(("choice", "verdict"), [
    ("once", "<b>Approved once</b>"),
    ("session", "<b>Approved for this session</b>"),
    ("always", "<b>Approved always</b>"),
    ("deny", "<b>Denied</b>"),
])
def test_approval_choose_records_the_decision(choice: str, verdict: str) -> None:
    prompt = ApprovalPrompt("rm -rf build", "rm", "`rm` deletes files.")
    prompt.choose(choice)
    assert prompt.choice == choice and prompt.answered
    assert verdict in prompt.record_html and "rm -rf build" in prompt.record_html
    assert len(prompt.box.children) == 1  # buttons replaced by the static record
    assert prompt.wait() == choice  # already answered: returns at once


def test_record_says_each_verdict_once() -> None:
    """Not "Approved (approve once)": the record names the decision in plain words, without repeating it."""
    prompt = ApprovalPrompt("rm x", "rm", "d")
    prompt.choose("once")
    assert prompt.record_html.count("pprove") == 1


def test_approval_buttons_do_what_choose_does() -> None:
    prompt = ApprovalPrompt("rm x", "rm", "d")
    assert [b.description for b in prompt.buttons.values()] == ["Approve once", "For this session", "Always", "Deny"]
    prompt.buttons["session"].click()
    assert prompt.choice == "session"
    prompt.choose("deny")  # a second answer is ignored
    assert prompt.choice == "session"


def test_approval_shows_the_command_escaped() -> None:
    prompt = ApprovalPrompt("echo ok\rrm -rf /\x1b[8m <b>", "carriage-return", "hidden")
    header = prompt.box.children[0].value
    assert "echo ok\\rrm -rf /\\x1b[8m &lt;b&gt;" in header
    assert "\r" not in header and "\x1b" not in header


def test_approval_wait_pumps_until_clicked() -> None:
    prompt: ApprovalPrompt
    prompt = ApprovalPrompt("rm x", "rm", "d", ui_events=clicking(lambda: prompt.buttons["once"].click()))
    assert prompt.wait() == "once"


def test_approval_times_out_to_no_answer_which_the_gate_denies() -> None:
    from hermes_nb.tools.registry import registry
    from hermes_nb.tools.safety.approvals.gate import decide

    prompt = ApprovalPrompt("rm x", "rm", "d", timeout=0, ui_events=clicking(lambda: None))
    assert prompt.wait() == "no-answer"
    assert "no answer within 0 s" in prompt.record_html
    registry.register("needs_ok", "t", {"description": "d"}, lambda a, **kw: "ran", needs_approval=True)
    entry = registry.get_entry("needs_ok")
    decision = decide(entry, {}, lambda *a: prompt.wait())
    assert not decision.approved and "nobody answered" in decision.message


def test_invalid_choice_is_an_error() -> None:
    with pytest.raises(ValueError, match="choice must be one of"):
        ApprovalPrompt("rm x", "rm", "d").choose("maybe")


def test_clarify_choice_and_free_text() -> None:
    prompt = ClarifyPrompt("Which file?", ["a.py", "b.py"])
    prompt.choice_buttons[1].click()
    assert prompt.answer == "b.py" and "b.py" in prompt.record_html

    typed = ClarifyPrompt("Name?")
    typed.text.value = "  hermes  "
    typed.submit_button.click()
    assert typed.wait() == "hermes"
    assert "Name?" in typed.record_html and len(typed.box.children) == 1


def test_clarify_wait_and_timeout() -> None:
    prompt: ClarifyPrompt
    prompt = ClarifyPrompt("Go?", ["yes", "no"], ui_events=clicking(lambda: prompt.choose("yes")))
    assert prompt.wait() == "yes"
    silent = ClarifyPrompt("Go?", timeout=0, ui_events=clicking(lambda: None))
    assert silent.wait() == ""


@pytest.mark.parametrize(("typed", "expected"), [
    ("o", "once"), ("session", "session"), ("A", "always"), ("d", "deny"), ("", "deny"), ("whatever", "deny"),
])
def test_approval_text_fallback(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                typed: str, expected: str) -> None:
    monkeypatch.setattr("builtins.input", lambda _prompt: typed)
    assert approval_prompt("rm\x1b x", "rm", "`rm` deletes files.") == expected
    assert "rm\\x1b x" in capsys.readouterr().out


def test_text_fallback_without_stdin_denies(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_stdin(_prompt: str) -> str:
        raise EOFError

    monkeypatch.setattr("builtins.input", no_stdin)
    assert approval_prompt("rm x", "rm", "d") == "deny"
    assert clarify_prompt("Which?", ["a"]) == ""


def test_clarify_text_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = iter(["2", "something else"])
    monkeypatch.setattr("builtins.input", lambda _prompt: next(answers))
    assert clarify_prompt("Which?", ["a", "b"]) == "b"
    assert clarify_prompt("Which?", ["a", "b"]) == "something else"


def test_install_makes_the_prompt_the_default_and_undo_removes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("builtins.input", lambda _prompt: "o")
    assert check_dangerous_command("rm x")["approved"] is False
    undo = install(None)
    try:
        assert check_dangerous_command("rm x")["scope"] == "once"
    finally:
        undo()
        undo()  # idempotent
    assert check_dangerous_command("rm x")["approved"] is False


def test_install_routes_the_clarify_tool_through_the_prompt(monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_nb.tools import clarify_tool

    asked: list[tuple[str, object]] = []
    monkeypatch.setattr(prompts, "_clarify_prompt", lambda q, c=None: asked.append((q, c)) or "blue")
    undo = install(None)
    try:
        assert clarify_tool.clarify("Which colour?", ["red", "blue"])["user_response"] == "blue"
    finally:
        undo()
    assert asked == [("Which colour?", ["red", "blue"])]
    monkeypatch.setattr("builtins.input", lambda _prompt: "typed")
    assert clarify_tool.clarify("Which colour?")["user_response"] == "typed"  # undone: back to input()


def test_widgets_are_not_available_outside_a_kernel() -> None:
    assert prompts._widgets_available() is False


@pytest.mark.kernel
def test_click_reaches_a_blocked_sync_cell_in_a_real_kernel() -> None:
    """The real thing: a sync cell waits, a widget click arrives over the shell channel, the cell goes on,
    and a cell queued meanwhile still runs afterwards."""
    import queue
    import time

    from tests.support.kernel import KernelSession

    code = (
        "from hermes_nb.display.prompts import ApprovalPrompt, _widgets_available\n"
        "p = ApprovalPrompt('rm -rf build', 'rm', 'd', timeout=60)\n"
        "p.show()\n"
        "print('MODEL', p.buttons['session'].model_id, _widgets_available(), flush=True)\n"
        "print('CHOICE', p.wait())\n"
    )
    with KernelSession() as ks:
        first = ks.kc.execute(code)
        model_id = None
        deadline = time.monotonic() + 60
        while model_id is None and time.monotonic() < deadline:
            try:
                msg = ks.kc.get_iopub_msg(timeout=1)
            except queue.Empty:
                continue
            if msg["msg_type"] == "stream" and msg["content"]["text"].startswith("MODEL"):
                _, model_id, available = msg["content"]["text"].split()
                assert available == "True"
        assert model_id is not None
        second = ks.kc.execute("print('second cell ran')")  # queued while the first cell waits
        click = {"comm_id": model_id, "data": {"method": "custom", "content": {"event": "click"}}}
        ks.kc.shell_channel.send(ks.kc.session.msg("comm_msg", click))
        assert "CHOICE session" in ks.collect(first, timeout=30).stdout
        assert "second cell ran" in ks.collect(second, timeout=30).stdout


@pytest.mark.kernel
def test_clarify_from_a_batch_worker_is_answered_by_a_real_click() -> None:
    """The clarify tool runs in a pool thread of ``run_tool_batch`` inside a sync cell; its widget is shown
    from the waiting main thread and a real comm click over the shell channel answers it."""
    import queue
    import time

    from tests.support.kernel import KernelSession

    code = (
        "import json, threading\n"
        "from hermes_nb.tools.batch.scheduling import run_tool_batch\n"
        "threads = []\n"
        "args = json.dumps({'question': 'Which colour?', 'choices': ['red', 'blue']})\n"
        "calls = [{'id': 'c1', 'type': 'function', 'function': {'name': 'clarify', 'arguments': args}}]\n"
        "[r] = run_tool_batch(calls, on_event=lambda e: threads.append(threading.current_thread().name))\n"
        "print('THREADS', sorted(set(threads)))\n"
        "print('ANSWER', r.content)\n"
    )
    with KernelSession() as ks:
        ks.run("%load_ext hermes_nb")
        running = ks.kc.execute(code)
        button = None
        deadline = time.monotonic() + 60
        while button is None and time.monotonic() < deadline:
            try:
                msg = ks.kc.get_iopub_msg(timeout=1)
            except queue.Empty:
                continue
            state = msg["content"].get("data", {}).get("state", {}) if msg["msg_type"] == "comm_open" else {}
            if state.get("_model_name") == "ButtonModel" and state.get("description") == "blue":
                button = msg["content"]["comm_id"]
        assert button is not None, "the clarify prompt never appeared"
        click = {"comm_id": button, "data": {"method": "custom", "content": {"event": "click"}}}
        ks.kc.shell_channel.send(ks.kc.session.msg("comm_msg", click))
        out = ks.collect(running, timeout=60).stdout
    assert "THREADS ['hermes-nb-tool" in out, out  # the handler really ran in a worker thread
    assert 'ANSWER {"question": "Which colour?", "choices_offered": ["red", "blue"], "user_response": "blue"}' in out, out


def interrupting() -> Callable[[], Any]:
    """A stand-in for the widget pump: the first poll is where ■ (SIGINT) lands."""

    @contextmanager
    def ui_events() -> Iterator[Callable[[int], None]]:
        def poll(n: int) -> None:
            raise KeyboardInterrupt

        yield poll

    return ui_events


@pytest.mark.parametrize("kind", ["approval", "clarify"])
def test_interrupt_while_waiting_leaves_a_record_and_raises(kind: str) -> None:
    prompt: ApprovalPrompt | ClarifyPrompt
    if kind == "approval":
        prompt = ApprovalPrompt("rm -rf build", "rm", "d", ui_events=interrupting())
    else:
        prompt = ClarifyPrompt("Which file?", ["a.py"], ui_events=interrupting())
    with pytest.raises(KeyboardInterrupt):
        prompt.wait()
    assert "Interrupted" in prompt.record_html and prompt.answered
    assert len(prompt.box.children) == 1  # no buttons left that look clickable
    assert all(b.comm is None for b in prompt._buttons())  # and the button models are closed


def test_timeout_is_a_config_trait() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    undo = install(ip)
    try:
        ip.run_line_magic("config", "Prompts.timeout = 7")
        assert ApprovalPrompt("rm x", "rm", "d").timeout == 7
        assert ClarifyPrompt("Go?").timeout == 7
        assert ApprovalPrompt("rm x", "rm", "d", timeout=3).timeout == 3
    finally:
        undo()
    assert prompts.settings not in ip.configurables
    assert ApprovalPrompt("rm x", "rm", "d").timeout == prompts.DEFAULT_TIMEOUT


class _HeadlessKernel:
    """What ipykernel holds while nbclient runs a cell: ``allow_stdin`` False in the request."""

    _allow_stdin = False
    execution_count = 3


def test_no_one_to_ask_fails_fast_and_the_model_hears_no_answer(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from types import SimpleNamespace

    monkeypatch.setattr(prompts, "_get_ipython", lambda: SimpleNamespace(kernel=_HeadlessKernel()))
    monkeypatch.setattr(prompts, "_widgets_available", lambda: True)
    monkeypatch.setattr(prompts, "_told", set())
    monkeypatch.setattr(ApprovalPrompt, "show", lambda self: pytest.fail("a prompt was shown with no one to click"))
    assert prompts.no_one_to_ask()
    undo = install(None)
    try:
        first = check_dangerous_command("rm -rf build")
        second = check_dangerous_command("rm -rf dist")
        assert clarify_prompt("Which?", ["a"]) == ""
    finally:
        undo()
    for verdict in (first, second):
        assert verdict["approved"] is False
        assert "no one is available" in verdict["message"] and "denied" not in verdict["message"]
    lines = [line for line in capsys.readouterr().out.splitlines() if line]
    assert len(lines) == 1 and lines[0].startswith("hermes_nb: no one can answer"), lines  # once per cell


def test_ask_without_stdin_shows_the_prompt_anyway(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    monkeypatch.setattr(prompts, "_get_ipython", lambda: SimpleNamespace(kernel=_HeadlessKernel()))
    monkeypatch.setattr(prompts, "_widgets_available", lambda: True)
    monkeypatch.setattr(prompts.settings, "ask_without_stdin", True)
    assert not prompts.no_one_to_ask()


def test_prompt_display_carries_a_text_line_for_frontends_without_widgets(monkeypatch: pytest.MonkeyPatch) -> None:
    """``jupyter console`` or a frontend without the widget manager shows text/plain: a clear line saying
    what is asked and how long it waits, not a widget repr."""
    import IPython.display

    shown: list[dict[str, Any]] = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: shown.append(obj))
    prompt = ApprovalPrompt("rm\x1b -rf build", "rm", "d", timeout=42)
    prompt.show()
    [bundle] = shown
    assert "application/vnd.jupyter.widget-view+json" in bundle
    text = bundle["text/plain"]
    assert text.startswith("Approve this command? [rm] rm\\x1b -rf build") and "waits 42 s" in text


def test_a_kernel_that_cannot_deliver_clicks_gets_the_text_prompt(monkeypatch: pytest.MonkeyPatch) -> None:
    """No way to pump widget messages in a blocked cell (neither ipykernel 7's socket nor ``do_one_iteration``):
    ask with ``input()`` over stdin rather than show buttons that could only wait out the timeout."""
    from types import SimpleNamespace

    monkeypatch.setattr(prompts, "_get_ipython", lambda: SimpleNamespace(kernel=SimpleNamespace(_allow_stdin=True)))
    monkeypatch.setattr(prompts, "_widgets_available", lambda: True)
    monkeypatch.setattr(ApprovalPrompt, "show", lambda self: pytest.fail("buttons shown where no click can arrive"))
    monkeypatch.setattr("builtins.input", lambda _prompt: "s")
    assert approval_prompt("rm x", "rm", "d") == "session"
    monkeypatch.setattr("builtins.input", lambda _prompt: "2")
    assert clarify_prompt("Which?", ["a", "b"]) == "b"


def test_a_batch_that_asks_nothing_says_nothing_about_no_one_to_ask(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Under nbclient the "no one can answer" line belongs under a cell whose call asks, not every batch."""
    from types import SimpleNamespace

    from hermes_nb.tools.batch.scheduling import run_tool_batch
    from hermes_nb.tools.registry import ToolRegistry

    monkeypatch.setattr(prompts, "_get_ipython", lambda: SimpleNamespace(kernel=_HeadlessKernel()))
    monkeypatch.setattr(prompts, "_widgets_available", lambda: True)
    monkeypatch.setattr(prompts, "_told", set())
    reg = ToolRegistry()
    reg.register("echo", "t", {"name": "echo", "description": "Echo.", "parameters": {
        "type": "object", "properties": {"s": {"type": "string"}}}}, lambda a, **k: a.get("s", ""), read_only=True)
    reg.register("risky", "t", {"name": "risky", "description": "Asks first.", "parameters": {
        "type": "object", "properties": {}}}, lambda a, **k: "ran", needs_approval=True)
    undo = install(None)
    try:
        [quiet] = run_tool_batch([{"id": "1", "type": "function", "function": {"name": "echo", "arguments": '{"s": "hi"}'}}],
                                 registry=reg)
        assert quiet.content == "hi"
        assert capsys.readouterr().out == ""  # nothing asked: nothing said
        [asked] = run_tool_batch([{"id": "2", "type": "function", "function": {"name": "risky", "arguments": "{}"}}],
                                 registry=reg)
    finally:
        undo()
    assert "ran" not in asked.content
    assert capsys.readouterr().out.startswith("hermes_nb: no one can answer")
