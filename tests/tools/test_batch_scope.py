"""Scope at dispatch (issue 31, item 1), at the batch: inside a run a call runs only if the run offered its tool.

Adversarial by class, a reason per row; the model is hostile and the earlier layers (what the model was shown,
what the registry accepts as a name) are assumed to have failed. Every row runs twice: ``check=False`` makes
the batch blind to the run's offer (as before this change) and shows the call takes effect; ``check=True``
shows the call gets exactly ``tool 'X' was not offered in this run``, its handler never runs, nobody is asked.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from hermes_nb.tools.batch.scheduling import arun_tool_batch, run_tool_batch
from hermes_nb.tools.batch.scope import NOTHING, Offer, current_offer, offer_of, use_offer
from hermes_nb.tools.model_tools import handle_function_call
from hermes_nb.tools.registry import registry
from hermes_nb.tools.safety.approvals.gate import use_approver

SCHEMA = {"description": "a probe", "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}

#: The toolsets the run offers in these tests; every other probe toolset is unticked.
OFFERED = ("granted",)


def refusal(name: str) -> dict[str, str]:
    return {"error": f"tool '{name}' was not offered in this run"}


class Probes:
    """Tools that record the calls that reached their handler, and the approval questions asked."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.asked: list[str] = []
        self._lock = threading.Lock()

    def add(self, name: str, toolset: str, **kw: Any) -> None:
        def handler(args: dict[str, Any], _name: str = name, **_: Any) -> str:
            with self._lock:
                self.ran.append(_name)
            return json.dumps({"ran": _name})

        registry.register(name=name, toolset=toolset, schema=SCHEMA, handler=handler, **kw)

    def approver(self, subject: str, key: str, description: str) -> str:
        self.asked.append(subject)
        return "once"


@pytest.fixture
def probes() -> Probes:
    p = Probes()
    p.add("notes_add", "granted")
    p.add("notes_read", "granted", read_only=True)
    p.add("granted_ask", "granted", needs_approval=True)
    return p


@pytest.fixture(params=[False, True], ids=["without-check", "with-check"])
def check(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """``False``: the batch never sees the run's offer (the defence removed), so the effect must show."""
    if not request.param:
        monkeypatch.setattr("hermes_nb.tools.batch.state.current_offer", lambda: None)
    return bool(request.param)


def call(name: str, call_id: str = "c", args: Any = None) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args or {})}}


def the_offer(toolsets: tuple[str, ...] = OFFERED) -> Offer:
    """What a run offering these toolsets offers: the names of the definitions it would send."""
    from hermes_nb.tools.toolsets import resolve_multiple_toolsets

    return offer_of(registry.get_definitions(resolve_multiple_toolsets(toolsets)))


def run_in_run(probes: Probes, calls: list[dict[str, Any]], offer: Offer | None = None) -> list[Any]:
    with use_offer(offer if offer is not None else the_offer()), use_approver(probes.approver):
        return run_tool_batch(calls)


# -- class 1: a tool of an unticked toolset, named exactly ------------------------------------------

UNOFFERED = [
    # (name, toolset, registration keywords, reason)
    ("secret_write", "notebook", {}, "the person's own %%tool in a toolset the run did not tick"),
    ("plugin_tool", "plugin-acme", {}, "a plugin's tool, plugin not offered to this run"),
    ("mcp__evil__exfil", "mcp-evil", {}, "an MCP server's tool, server not offered"),
    ("mcp__time__get_current_time", "mcp-time", {"read_only": True}, "a read-only MCP tool is still not offered"),
    ("mcp__granted__notes_add", "mcp-granted", {}, "an MCP tool whose bare name is an offered tool's"),
    ("web_search", "hermes-web", {}, "a Hermes tool (hermes-<toolset>) not turned on for this run"),
    ("hermes_terminal", "hermes-terminal", {"needs_approval": True}, "a Hermes tool that would ask first"),
    ("granted_extra", "granted-extra", {}, "a toolset whose name starts with an offered one's"),
    ("late_joiner", "late", {}, "registered after the turn's offer was made"),
    ("unticked_ask", "danger", {"needs_approval": True}, "an approval prompt must not even be shown"),
]


@pytest.mark.parametrize(("name", "toolset", "kw", "reason"), UNOFFERED, ids=[r[0] for r in UNOFFERED])
def test_a_tool_the_run_did_not_offer_does_not_run(probes: Probes, check: bool, name: str, toolset: str,
                                                   kw: dict[str, Any], reason: str) -> None:
    offer = the_offer()  # made before the probe exists: a tool registered later is not in this turn's offer
    probes.add(name, toolset, **kw)
    [result] = run_in_run(probes, [call(name)], offer)
    if not check:
        assert probes.ran == [name], reason
        return
    assert json.loads(result.content) == refusal(name) and result.is_error, reason
    assert probes.ran == [] and probes.asked == [], reason


UNKNOWN = [
    ("nope", "a name nobody registered"),
    ("", "an empty name"),
    ("notes_add\x00", "a NUL after an offered name"),
    ("x" * 300, "a very long name"),
]


@pytest.mark.parametrize(("name", "reason"), UNKNOWN, ids=["unknown", "empty", "nul", "long"])
def test_an_unknown_name_in_a_run_is_unoffered_too(probes: Probes, name: str, reason: str) -> None:
    [result] = run_in_run(probes, [call(name)])
    assert json.loads(result.content) == refusal(name), reason
    assert probes.ran == [], reason


PREEMPTED = [
    ("{not json", {}, "arguments that are not JSON: no parse error that names the tool's schema"),
    (json.dumps({"x": 5}), {}, "arguments the schema refuses: no validation message about the tool"),
    ("{}", {"disabled_reason": "switched off"}, "a disabled tool: its reason is not told"),
    ("{}", {"check_fn": lambda: False}, "an unavailable tool: its availability is not looked at"),
]


@pytest.mark.parametrize(("arguments", "kw", "reason"), PREEMPTED, ids=[r[2].split(":")[0] for r in PREEMPTED])
def test_scope_comes_before_lookup_and_validation(probes: Probes, arguments: str, kw: dict[str, Any],
                                                  reason: str) -> None:
    offer = the_offer()
    probes.add("hidden_tool", "unticked", **kw)
    with use_offer(offer), use_approver(probes.approver):
        [result] = run_tool_batch([{"id": "c", "type": "function",
                                    "function": {"name": "hidden_tool", "arguments": arguments}}])
    assert json.loads(result.content) == refusal("hidden_tool"), reason
    assert probes.ran == [] and probes.asked == [], reason


# -- class 2: look-alikes of an offered name --------------------------------------------------------

LOOKALIKES = [
    ("Notes_add", "capitalised"),
    ("NOTES_ADD", "upper case"),
    ("notes_Add", "one letter's case"),
    ("nоtes_add", "Cyrillic о (U+043E) for o"),
    ("notes_аdd", "Cyrillic а (U+0430) for a"),
    ("ｎotes_add", "fullwidth n (U+FF4E): NFKC folds it to n"),
    ("notes＿add", "fullwidth low line (U+FF3F)"),
    ("notes\u200badd", "a zero-width space inside"),
    ("notes_add\u200d", "a zero-width joiner after"),
    ("notes_add ", "a trailing space"),
    (" notes_add", "a leading space"),
    ("notes_add\t", "a trailing tab"),
    ("notes-add", "hyphen for underscore"),
    ("notes_ad\u0064\u0307", "a combining dot above the last letter"),
    ("ℕotes_add".lower(), "a letterlike symbol, lower-cased"),
]


@pytest.mark.parametrize(("name", "reason"), LOOKALIKES, ids=[r[1] for r in LOOKALIKES])
def test_a_look_alike_of_an_offered_name_is_another_name(probes: Probes, check: bool, name: str, reason: str) -> None:
    probes.add(name, "lookalikes")  # the registry accepts the name (the earlier layer failed)
    [result] = run_in_run(probes, [call(name)])
    if not check:
        assert probes.ran == [name], reason
        return
    assert json.loads(result.content) == refusal(name), reason
    assert probes.ran == [], reason


def test_the_offered_name_itself_runs(probes: Probes, check: bool) -> None:
    [result] = run_in_run(probes, [call("notes_add")])
    assert not result.is_error and probes.ran == ["notes_add"]


# -- class 3: Hermes's renames reach what was offered, and only that ---------------------------------

RENAMES = [
    # (registered name, its toolset, the name called, runs?, reason)
    ("cronjob", "granted", "cronjob_manage", True, "Hermes main's name for an offered tool"),
    ("process_manage", "granted", "process", True, "0.19's name for an offered tool registered under main's"),
    ("cronjob", "cron", "cronjob_manage", False, "Hermes main's name for a tool that was not offered"),
    ("process_manage", "cron", "process", False, "0.19's name for a tool that was not offered"),
]


@pytest.mark.parametrize(("registered", "toolset", "called", "runs", "reason"), RENAMES,
                         ids=[r[4] for r in RENAMES])
def test_renames_follow_the_offer(probes: Probes, check: bool, registered: str, toolset: str, called: str,
                                  runs: bool, reason: str) -> None:
    for name in ("cronjob", "cronjob_manage", "process", "process_manage"):
        if name in registry:
            registry.deregister(name)
    probes.add(registered, toolset)
    [result] = run_in_run(probes, [call(called)])
    if runs or not check:
        assert probes.ran == [registered] and not result.is_error, reason
    else:
        assert json.loads(result.content) == refusal(called) and probes.ran == [], reason


# -- class 4: batches mixing offered and unoffered calls ---------------------------------------------

MIXES = [
    (("notes_read", "mcp__evil__exfil", "notes_read"), "readers around an unoffered call"),
    (("secret_write", "notes_add", "secret_write"), "unoffered on both sides of an offered writer"),
    (("notes_add", "Notes_add", "notes_add", "NOTES_ADD"), "look-alikes interleaved with the real one"),
    (("mcp__evil__exfil",) * 4, "only unoffered calls"),
    (("notes_read",) * 3 + ("web_search",) * 3, "a parallel segment, then unoffered ones"),
    (("granted_ask", "unticked_ask", "granted_ask"), "asking tools: only the offered ones ask"),
    (("notes_read", "secret_write", "notes_read", "mcp__evil__exfil", "notes_read", "web_search", "notes_add"),
     "seven alternating"),
]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["run_tool_batch", "arun_tool_batch"])
@pytest.mark.parametrize(("names", "reason"), MIXES, ids=[r[1] for r in MIXES])
def test_a_mixed_batch_answers_every_call_once_in_order(probes: Probes, check: bool, asynchronous: bool,
                                                        names: tuple[str, ...], reason: str) -> None:
    for name, toolset, kw in (("mcp__evil__exfil", "mcp-evil", {"read_only": True}),
                              ("secret_write", "notebook", {}), ("web_search", "hermes-web", {"read_only": True}),
                              ("Notes_add", "lookalikes", {}), ("NOTES_ADD", "lookalikes", {}),
                              ("unticked_ask", "danger", {"needs_approval": True})):
        probes.add(name, toolset, **kw)
    calls = [call(n, f"c{i}") for i, n in enumerate(names)]
    if asynchronous:
        async def go() -> list[Any]:
            with use_offer(the_offer()), use_approver(probes.approver):
                return await arun_tool_batch(calls)
        results = asyncio.run(go())
    else:
        results = run_in_run(probes, calls)
    assert [r.tool_call_id for r in results] == [f"c{i}" for i in range(len(names))], reason  # one each, in order
    offered = [n for n in names if n.startswith(("notes_", "granted_"))]
    if not check:
        assert sorted(probes.ran) == sorted(names), reason
        return
    assert sorted(probes.ran) == sorted(offered), reason
    for name, result in zip(names, results, strict=True):
        if name in offered:
            assert json.loads(result.content) == {"ran": name}, reason
        else:
            assert json.loads(result.content) == refusal(name) and result.is_error, reason
    assert len(probes.asked) == names.count("granted_ask"), reason


# -- outside a run nothing is limited ------------------------------------------------------------------

PERSON = [
    ("registry.dispatch", lambda: registry.dispatch("secret_write", {})),
    ("registry.execute", lambda: registry.execute("secret_write", {}).content),
    ("handle_function_call", lambda: handle_function_call("secret_write", {})),
    ("run_tool_batch", lambda: run_tool_batch([call("secret_write")])[0].content),
    ("arun_tool_batch", lambda: asyncio.run(arun_tool_batch([call("secret_write")]))[0].content),
]


@pytest.mark.parametrize(("way", "make_call"), PERSON, ids=[r[0] for r in PERSON])
def test_the_persons_own_calls_outside_a_run_are_not_limited(probes: Probes, way: str, make_call: Any) -> None:
    probes.add("secret_write", "notebook")
    assert current_offer() is None
    assert json.loads(make_call()) == {"ran": "secret_write"}, way
    assert probes.ran == ["secret_write"]


def test_a_runs_offer_stays_in_its_own_context(probes: Probes) -> None:
    """A run's offer is a context variable of its task: the person's batch on another thread meanwhile is theirs."""
    probes.add("secret_write", "notebook")
    inside, outside = threading.Event(), threading.Event()
    seen: dict[str, Any] = {}

    def run() -> None:
        with use_offer(NOTHING):
            inside.set()
            outside.wait(10)
            seen["run"] = run_tool_batch([call("secret_write", "r")])[0].content

    worker = threading.Thread(target=run)
    worker.start()
    assert inside.wait(10)
    seen["person"] = run_tool_batch([call("secret_write", "p")])[0].content
    outside.set()
    worker.join(10)
    assert json.loads(seen["person"]) == {"ran": "secret_write"}
    assert json.loads(seen["run"]) == refusal("secret_write")
    assert probes.ran == ["secret_write"]


# -- the offer itself ------------------------------------------------------------------------------------

def test_the_offer_is_the_definitions_and_the_deferred_tools_less_what_is_withheld() -> None:
    definitions = [{"type": "function", "function": {"name": n}} for n in ("a", "b", "tool_call")]
    offer = offer_of(definitions, deferred=("d1", "d2"), withheld=("b", "d2"))
    assert offer.names == frozenset({"a", "tool_call", "d1"})
    assert NOTHING.names == frozenset()


@pytest.fixture
def no_offer_leak() -> Iterator[None]:
    yield
    assert current_offer() is None


def test_use_offer_restores_what_was_before(no_offer_leak: None) -> None:
    with use_offer(NOTHING):
        assert current_offer() is NOTHING
        with use_offer(Offer(names=frozenset({"a"}))):
            assert current_offer() is not NOTHING
        assert current_offer() is NOTHING
