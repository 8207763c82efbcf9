"""Questions from worker threads reach the main thread while it waits, and never get lost."""

from __future__ import annotations

import asyncio
import threading

from hermes_nb.tools import async_bridge, interaction


def test_runs_in_place_when_nobody_waits():
    seen = []

    def worker():
        seen.append(interaction.run_on_main(lambda: threading.current_thread().name))

    t = threading.Thread(target=worker, name="w1")
    t.start()
    t.join(10)
    assert seen == ["w1"]


def test_worker_question_runs_on_main_while_main_waits_in_run_sync():
    answered_on = []

    def ask():
        answered_on.append(threading.current_thread() is threading.main_thread())
        return "once"

    async def tool_in_worker():
        # what a sync tool in the pool does: ask the person from a worker thread
        return await asyncio.to_thread(interaction.run_on_main, ask)

    assert async_bridge.run_sync(tool_in_worker()) == "once"
    assert answered_on == [True]


def test_errors_come_back_to_the_asker():
    def ask():
        raise LookupError("no")

    async def tool_in_worker():
        try:
            await asyncio.to_thread(interaction.run_on_main, ask)
        except LookupError as exc:
            return str(exc)
        return "missing"

    assert async_bridge.run_sync(tool_in_worker()) == "no"


def test_request_left_when_main_stops_waiting_is_still_answered():
    release = threading.Event()
    result = []

    def worker():
        release.wait(10)
        result.append(interaction.run_on_main(lambda: "late"))

    t = threading.Thread(target=worker)
    t.start()
    with interaction.main_thread_waiting():
        release.set()
    t.join(10)
    assert result == ["late"]


def test_run_sync_is_waiting_before_its_task_can_ask(monkeypatch):
    # A task may ask the person in its very first step; if the main thread declared itself waiting only
    # after scheduling, the question would run on the worker (the race seen as a flaky test above).
    seen = []
    schedule = async_bridge._schedule

    def recording_schedule(coro, future):
        seen.append(interaction._waiting)
        schedule(coro, future)

    monkeypatch.setattr(async_bridge, "_schedule", recording_schedule)

    async def nothing():
        return 1

    assert async_bridge.run_sync(nothing()) == 1
    assert seen == [1]


def test_callback_stack_last_installed_answers_and_undo_in_any_order():
    stack: interaction.CallbackStack[str] = interaction.CallbackStack()
    assert stack.current() is None
    undo_a, undo_b = stack.push("a"), stack.push("b")
    assert stack.current() == "b"
    undo_a()
    assert stack.current() == "b"
    undo_b()
    undo_b()  # idempotent
    assert stack.current() is None


def test_interrupt_during_a_question_is_the_main_threads_and_the_asker_hears_after():
    """■ while the main thread shows a worker's question: KeyboardInterrupt leaves ``service()``; the asker
    gets ``Interrupted`` only once the main thread stops waiting; a question queued meanwhile is never shown."""
    shown: list[str] = []
    outcomes: dict[str, BaseException | str] = {}
    asked = threading.Barrier(3)

    def question(name):
        shown.append(name)
        raise KeyboardInterrupt  # where SIGINT lands: inside the prompt's wait

    def worker(name):
        asked.wait(10)
        try:
            outcomes[name] = interaction.run_on_main(question, name)
        except BaseException as exc:
            outcomes[name] = exc

    with interaction.main_thread_waiting():
        threads = [threading.Thread(target=worker, args=(n,)) for n in ("first", "second")]
        for t in threads:
            t.start()
        asked.wait(10)
        while interaction._requests.qsize() < 2:  # both questions queued (no fixed sleep: a condition)
            threading.Event().wait(0.01)
        try:
            interaction.service()
        except KeyboardInterrupt:
            interrupted = True
        else:
            interrupted = False
        assert interrupted
        assert outcomes == {}  # nobody answered while the main thread still stops the run
        interaction.service()  # later servicing in the same wait shows nothing more
    for t in threads:
        t.join(10)
    assert len(shown) == 1
    assert all(isinstance(o, interaction.Interrupted) for o in outcomes.values()), outcomes
    assert not interaction._interrupted and not interaction._held


def test_callback_stack_skips_a_callback_that_cannot_answer_now():
    stack: interaction.CallbackStack[object] = interaction.CallbackStack()

    class Away:
        def available(self):
            return False

    first, away = object(), Away()
    stack.push(first)
    stack.push(away)
    assert stack.current() is first


def test_a_question_left_queued_after_an_interrupt_is_not_asked_in_the_worker(monkeypatch):
    """The main thread stopped waiting because of ■: a worker that then claims its own queued question
    must not show it from its thread (where no click can arrive) but hear ``Interrupted``."""
    asked, outcome = [], []
    monkeypatch.setattr(interaction, "_waiting", 1)
    monkeypatch.setattr(interaction, "_interrupted", True)

    def worker():
        try:
            outcome.append(interaction.run_on_main(asked.append, "shown"))
        except BaseException as exc:
            outcome.append(exc)

    t = threading.Thread(target=worker)
    t.start()
    while interaction._requests.qsize() < 1:  # queued for the main thread (a condition, not a sleep)
        threading.Event().wait(0.01)
    interaction._waiting = 0  # the main thread left its wait without servicing the queue
    t.join(10)
    assert asked == [] and len(outcome) == 1 and isinstance(outcome[0], interaction.Interrupted)
    while interaction.service():  # drop the claimed leftover from the queue
        pass
