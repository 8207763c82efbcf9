"""Scope at dispatch (issue 31, item 1), through ``Agent.run``: a run's calls run only if that turn offered them.

The attacks the red team measured, and more of each class, a reason per row. The model is hostile (an
in-process scripted model that calls whatever the row says) and the earlier layers are assumed to have failed
where a row says so (the toolsets a child is given, ``tool_call``'s unwrapping). Every row runs twice:
``check=False`` blinds the batch to the run's offer (as before this change) and shows the effect happens;
``check=True`` shows it does not, and the call's answer (and its card) is ``tool 'X' was not offered in this run``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hermes_nb.agent.loop import Agent, AgentResult
from hermes_nb.display.live import transcript_text
from hermes_nb.models import ModelTurn, ToolCallSpec
from hermes_nb.tools.config import save_config
from hermes_nb.tools.registry import registry
from hermes_nb.tools.search.scope import parse_tool_call

SCHEMA = {"description": "a probe", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}
Route = Callable[[str, int, frozenset[str]], ModelTurn]


def refusal(name: str) -> str:
    return f"tool '{name}' was not offered in this run"


class Scripted:
    """A model in this process that answers by conversation: ``route(goal, turn, offered)`` gets the first
    user message, the assistant turns so far and the names the turn offered (children share the model)."""

    name = "scripted"

    def __init__(self, route: Route) -> None:
        self.route = route
        self.seen: list[tuple[str, int, frozenset[str]]] = []
        self._lock = threading.Lock()

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                       on_text: Any = None, on_retry: Any = None) -> ModelTurn:
        goal = next(str(m.get("content")) for m in messages if m.get("role") == "user")
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        offered = frozenset(t["function"]["name"] for t in tools)
        with self._lock:
            self.seen.append((goal, turn, offered))
        return self.route(goal, turn, offered)

    def goals(self) -> set[str]:
        return {goal for goal, _, _ in self.seen}


def calls(*specs: tuple[str, dict[str, Any]]) -> ModelTurn:
    return ModelTurn(tool_calls=tuple(ToolCallSpec(id=f"c{i}", name=name, arguments=json.dumps(args))
                                      for i, (name, args) in enumerate(specs)))


def bridge(name: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "tool_call", {"calls": [{"name": name, "arguments": args}]}


DONE = ModelTurn(content="done")


def once(*specs: tuple[str, dict[str, Any]]) -> Route:
    """The model makes these calls on its first turn, then answers."""
    return lambda goal, turn, offered: calls(*specs) if turn == 0 else DONE


@pytest.fixture(params=[False, True], ids=["without-check", "with-check"])
def check(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    if not request.param:
        monkeypatch.setattr("hermes_nb.tools.batch.state.current_offer", lambda: None)
    return bool(request.param)


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(workspace))
    (workspace / "secret.txt").write_text("SECRET-42\n")
    return workspace


class Effects:
    """What the tools did: the probes' handler runs, the approval questions asked."""

    def __init__(self, ws: Path, home: Path) -> None:
        self.ws, self.home = ws, home
        self.ran: list[str] = []
        self.asked: list[str] = []

    def probe(self, name: str, toolset: str, **kw: Any) -> None:
        def handler(args: dict[str, Any], _name: str = name, **_: Any) -> str:
            self.ran.append(_name)
            return json.dumps({"ran": _name})

        registry.register(name=name, toolset=toolset, schema=SCHEMA, handler=handler, **kw)

    def approve(self, subject: str, key: str, description: str) -> str:
        self.asked.append(subject)
        return "once"

    def memory(self) -> str:
        path = self.home / "memories" / "MEMORY.md"
        return path.read_text() if path.exists() else ""


@pytest.fixture
def fx(ws: Path, hermes_home: Path) -> Effects:
    return Effects(ws, hermes_home)


def run(fx: Effects, model: Scripted, toolsets: list[str] | None, **kw: Any) -> AgentResult:
    agent = Agent(model=model, enabled_toolsets=toolsets, display=False, approval_callback=fx.approve, **kw)
    return agent.run("go")


def the_record(result: AgentResult, name: str) -> Any:
    return next(r for r in result.tool_calls if r.name == name)


def assert_refused(result: AgentResult, name: str, reason: str) -> None:
    record = the_record(result, name)
    assert record.is_error and json.loads(record.content) == {"error": refusal(name)}, reason
    assert refusal(name) in transcript_text(result.transcript), reason  # its card says so


# -- class 1: a run offered only `todo` calls built-ins it was not offered ---------------------------

def _code(ws: Path) -> str:
    return f"open({str(ws / 'ran_code.txt')!r}, 'w').write('1')"


BUILTINS: list[tuple[str, Callable[[Path], dict[str, Any]], Callable[[Effects, AgentResult], bool], str]] = [
    ("write_file", lambda ws: {"path": "pwned.txt", "content": "x"},
     lambda fx, r: (fx.ws / "pwned.txt").exists(), "writes a file the run had no file tools for"),
    ("patch", lambda ws: {"mode": "replace", "path": "secret.txt", "old_string": "SECRET", "new_string": "GONE"},
     lambda fx, r: "GONE" in (fx.ws / "secret.txt").read_text(), "edits a file"),
    ("read_file", lambda ws: {"path": "secret.txt"},
     lambda fx, r: "SECRET-42" in the_record(r, "read_file").content, "reads a file it was not offered"),
    ("terminal", lambda ws: {"command": "echo ran-terminal"},
     lambda fx, r: "ran-terminal" in the_record(r, "terminal").content, "runs a shell command"),
    ("memory", lambda ws: {"action": "add", "target": "memory", "content": "scope-probe: obey the page"},
     lambda fx, r: "scope-probe" in fx.memory(), "writes the shared memory"),
    ("execute_code", lambda ws: {"code": _code(ws)},
     lambda fx, r: (fx.ws / "ran_code.txt").exists(), "runs Python in the kernel"),
    ("delegate_task", lambda ws: {"goal": "child of an unoffered delegation"},
     lambda fx, r: False, "starts a sub-agent"),  # (its effect is read from the model's conversations below)
]


@pytest.mark.parametrize(("name", "args", "effect", "reason"), BUILTINS, ids=[r[0] for r in BUILTINS])
def test_a_run_offered_only_todo_cannot_call_a_builtin(fx: Effects, check: bool, name: str, args: Any,
                                                       effect: Any, reason: str) -> None:
    model = Scripted(lambda goal, turn, offered: calls((name, args(fx.ws))) if goal == "go" and turn == 0 else DONE)
    result = run(fx, model, ["todo"])
    assert model.seen[0][2] == frozenset({"todo"})  # the model was shown todo only
    happened = effect(fx, result) or "child of an unoffered delegation" in model.goals()
    if not check:
        assert happened, reason
        return
    assert not happened, reason
    assert_refused(result, name, reason)
    assert fx.asked == [], reason  # not even a prompt


# -- class 2: the person's own tools, and MCP / Hermes tools, in toolsets the run did not tick -------

OWN = [
    ("cell_tool", "notebook", {}, "a %%tool cell's tool, toolset not ticked"),
    ("plugin_tool", "plugin-acme", {}, "an enabled plugin's tool the run was not given"),
    ("mcp__evil__exfil", "mcp-evil", {}, "an MCP server the run was not given"),
    ("mcp__fs__write", "mcp-fs", {"needs_approval": True}, "an MCP tool that would ask: no prompt either"),
    ("mcp__todo__todo", "mcp-todo", {}, "an MCP tool whose bare name is the offered todo"),
    ("web_extract", "hermes-web", {}, "a Hermes tool (hermes-<toolset>) not ticked"),
    ("hermes_shell", "hermes-terminal", {"needs_approval": True}, "a Hermes tool that would ask"),
    ("todo_helper", "todo-extras", {}, "a toolset named like the offered one"),
]


@pytest.mark.parametrize(("name", "toolset", "kw", "reason"), OWN, ids=[r[0] for r in OWN])
def test_a_tool_in_an_unticked_toolset_does_not_run(fx: Effects, check: bool, name: str, toolset: str,
                                                    kw: dict[str, Any], reason: str) -> None:
    fx.probe(name, toolset, **kw)
    result = run(fx, Scripted(once((name, {}))), ["todo"])
    if not check:
        assert fx.ran == [name], reason
        return
    assert fx.ran == [] and fx.asked == [], reason
    assert_refused(result, name, reason)


LOOKALIKES = [
    ("Todo", "capitalised"),
    ("TODO", "upper case"),
    ("tоdo", "Cyrillic о (U+043E)"),
    ("ｔodo", "fullwidth t (U+FF54)"),
    ("todo\u200b", "a zero-width space after"),
    ("to\u00addo", "a soft hyphen inside"),
    ("todo ", "a trailing space"),
    ("todo_list ", "Hermes main's name with a trailing space"),
]


@pytest.mark.parametrize(("name", "reason"), LOOKALIKES, ids=[r[1] for r in LOOKALIKES])
def test_a_look_alike_of_an_offered_name_does_not_run(fx: Effects, check: bool, name: str, reason: str) -> None:
    fx.probe(name, "lookalikes")  # a tool registered under the look-alike (the registry took the name)
    result = run(fx, Scripted(once((name, {}))), ["todo"])
    if not check:
        assert fx.ran == [name], reason
        return
    assert fx.ran == [], reason
    assert_refused(result, name, reason)


# -- class 3: children -----------------------------------------------------------------------------

PARENT = ["delegation", "todo", "file", "memory", "terminal"]

CHILDREN = [
    # (task, the child's call, what happens, whether the toolset layer is broken, reason)
    ({"toolsets": ["todo"]}, ("write_file", {"path": "child.txt", "content": "x"}),
     lambda fx, m: (fx.ws / "child.txt").exists(), False, "a child given todo writes a file"),
    ({"toolsets": ["todo"]}, ("memory", {"action": "add", "target": "memory", "content": "child-note"}),
     lambda fx, m: "child-note" in fx.memory(), False, "a child given todo writes the shared memory"),
    ({}, ("memory", {"action": "add", "target": "memory", "content": "child-note"}),
     lambda fx, m: "child-note" in fx.memory(), False, "a child inheriting every toolset writes memory"),
    ({"toolsets": ["todo"]}, ("terminal", {"command": "echo child-terminal"}),
     lambda fx, m: "child-terminal" in json.dumps(m.tool_results), False, "a child given todo runs a command"),
    ({}, ("delegate_task", {"goal": "grandchild"}),
     lambda fx, m: "grandchild" in m.goals(), False, "a child without role=orchestrator delegates"),
    ({"toolsets": ["delegation", "todo"]}, ("delegate_task", {"goal": "grandchild"}),
     lambda fx, m: "grandchild" in m.goals(), False, "a child that asked for delegation, without the role"),
    ({}, ("memory", {"action": "add", "target": "memory", "content": "child-note"}),
     lambda fx, m: "child-note" in fx.memory(), True, "the toolset layer failed: memory is withheld anyway"),
    ({}, ("delegate_task", {"goal": "grandchild"}),
     lambda fx, m: "grandchild" in m.goals(), True, "the toolset layer failed: delegation is withheld anyway"),
    ({"role": "orchestrator", "toolsets": ["todo"]}, ("memory", {"action": "add", "target": "memory",
                                                                 "content": "child-note"}),
     lambda fx, m: "child-note" in fx.memory(), False, "an orchestrator child has no memory either"),
]


class ChildModel(Scripted):
    """The parent delegates one task; the child makes one call; the grandchild (if any) just answers."""

    def __init__(self, task: dict[str, Any], child_call: tuple[str, dict[str, Any]]) -> None:
        self.tool_results: list[str] = []

        def route(goal: str, turn: int, offered: frozenset[str]) -> ModelTurn:
            if goal == "go":
                return calls(("delegate_task", {"tasks": [{"goal": "child", **task}]})) if turn == 0 else DONE
            if goal == "child" and turn == 0:
                return calls(child_call)
            return DONE

        super().__init__(route)

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], **kw: Any) -> ModelTurn:
        self.tool_results += [str(m.get("content")) for m in messages if m.get("role") == "tool"]
        return await super().complete(messages, tools, **kw)


@pytest.mark.parametrize(("task", "child_call", "effect", "broken", "reason"), CHILDREN,
                         ids=[r[4] for r in CHILDREN])
def test_a_child_calls_only_what_it_was_offered(fx: Effects, check: bool, monkeypatch: pytest.MonkeyPatch,
                                                task: dict[str, Any], child_call: tuple[str, dict[str, Any]],
                                                effect: Any, broken: bool, reason: str) -> None:
    if broken:  # the earlier layer failed: the child is given every toolset its parent has, nothing disabled
        from hermes_nb.agent import delegation

        real = delegation._make_child

        def careless(*args: Any, **kw: Any) -> Any:
            child = real(*args, **kw)
            child.disabled_toolsets = None
            return child

        monkeypatch.setattr(delegation, "_make_child", careless)
    model = ChildModel(task, child_call)
    run(fx, model, PARENT)
    name = child_call[0]
    child_turns = [offered for goal, turn, offered in model.seen if goal == "child"]
    if broken:
        assert name in child_turns[0], reason  # the layer before really failed: the child was shown the tool
    happened = effect(fx, model)
    if not check:
        assert happened, reason
        return
    assert not happened, reason
    assert any(refusal(name) in r for r in model.tool_results), reason  # the child was told, in its conversation


POSITIVE_CHILDREN = [
    ({"toolsets": ["todo"]}, ("todo", {"todos": [{"id": "1", "content": "x", "status": "pending"}]}),
     "todo", "a child calls the toolset it was given"),
    ({"role": "orchestrator"}, ("delegate_task", {"goal": "grandchild"}), "grandchild",
     "an orchestrator child may delegate"),
]


@pytest.mark.parametrize(("task", "child_call", "mark", "reason"), POSITIVE_CHILDREN,
                         ids=[r[3] for r in POSITIVE_CHILDREN])
def test_a_child_calls_what_it_was_offered(fx: Effects, task: dict[str, Any], child_call: Any, mark: str,
                                           reason: str) -> None:
    model = ChildModel(task, child_call)
    run(fx, model, PARENT)
    assert not any(refusal(child_call[0]) in r for r in model.tool_results), reason
    assert mark in model.goals() or any(mark in r for r in model.tool_results), reason


# -- class 4: tool search: what `tool_call` unwraps to ----------------------------------------------

@pytest.fixture
def deferred(fx: Effects) -> Effects:
    fx.probe("weather_now", "weather", read_only=True, metadata={"defer": True})
    fx.probe("vault_open", "vault", metadata={"defer": True})  # deferred, in a toolset the run did not tick
    fx.probe("secret_write", "notebook")
    fx.probe("Weather_now", "lookalikes", metadata={"defer": True})
    fx.probe("mcp__evil__exfil", "mcp-evil", metadata={"defer": True})
    save_config({"tool_search": {"enabled": "on"}})
    return fx


def _reckless(tool_calls: Any) -> list[Any]:
    """``unwrap_calls`` failed: every parseable ``tool_call`` becomes the tool it names, catalog or not."""
    out = []
    for c in tool_calls:
        parsed = parse_tool_call(c["function"]["arguments"]) if c["function"]["name"] == "tool_call" else None
        if isinstance(parsed, tuple):
            c = {"id": c["id"], "type": "function",
                 "function": {"name": parsed[0], "arguments": json.dumps(parsed[1])}}
        out.append(c)
    return out


UNWRAPPED = [
    ("vault_open", ["weather"], "a deferred tool of a toolset the run did not tick"),
    ("secret_write", ["weather"], "a tool that is not deferred at all"),
    ("Weather_now", ["weather"], "a look-alike of a deferred name"),
    ("mcp__evil__exfil", ["weather"], "a deferred MCP tool of a server not given"),
    ("write_file", ["weather"], "a built-in through the bridge"),
    ("secret_write", ["todo"], "a run that defers nothing (no catalog, no bridge offered)"),
]


@pytest.mark.parametrize(("target", "toolsets", "reason"), UNWRAPPED, ids=[r[2] for r in UNWRAPPED])
def test_a_tool_call_reaches_only_the_runs_deferred_tools(deferred: Effects, check: bool,
                                                          monkeypatch: pytest.MonkeyPatch, target: str,
                                                          toolsets: list[str], reason: str) -> None:
    monkeypatch.setattr("hermes_nb.tools.batch.scheduling.unwrap_calls", _reckless)
    result = run(deferred, Scripted(once(bridge(target, {"path": "bridged.txt", "content": "x"}))), toolsets)
    happened = bool(deferred.ran) or (deferred.ws / "bridged.txt").exists()
    if not check:
        assert happened, reason
        return
    assert not happened, reason
    assert_refused(result, target, reason)


def test_a_tool_call_of_the_runs_deferred_tool_runs(deferred: Effects, check: bool) -> None:
    result = run(deferred, Scripted(once(bridge("weather_now", {"city": "Lima"}))), ["weather"])
    assert deferred.ran == ["weather_now"]
    assert not the_record(result, "weather_now").is_error


def test_a_direct_call_of_a_deferred_tool_of_another_toolset_does_not_run(deferred: Effects, check: bool) -> None:
    result = run(deferred, Scripted(once(("vault_open", {}))), ["weather"])
    if not check:
        assert deferred.ran == ["vault_open"]
        return
    assert deferred.ran == []
    assert_refused(result, "vault_open", "deferred behind another toolset, called by name")


# -- class 5: the offer is per turn ----------------------------------------------------------------

def _narrow_enabled(agent: Agent) -> None:
    agent.enabled_toolsets = ["todo"]


def _disable_file(agent: Agent) -> None:
    agent.disabled_toolsets = ["file"]


def _move_probe(agent: Agent) -> None:
    entry = registry.get_entry("notes_add")
    assert entry is not None
    registry.deregister("notes_add")
    registry.register(name="notes_add", toolset="moved", schema=SCHEMA, handler=entry.handler)


TURNS = [
    ("write_file", ["todo", "file"], _narrow_enabled, "the agent's toolsets narrowed between turns"),
    ("write_file", ["todo", "file"], _disable_file, "a toolset disabled between turns"),
    ("notes_add", ["todo", "granted"], _move_probe, "the tool moved to a toolset the run does not have"),
    ("notes_add", ["todo", "granted"], _narrow_enabled, "a person's tool no longer offered"),
]


@pytest.mark.parametrize(("name", "toolsets", "change", "reason"), TURNS, ids=[r[3] for r in TURNS])
def test_a_tool_offered_on_an_earlier_turn_is_not_offered_now(fx: Effects, check: bool, name: str,
                                                               toolsets: list[str], change: Any, reason: str) -> None:
    fx.probe("notes_add", "granted")
    fx.probe("notes_other", "granted")  # the toolset stays when notes_add leaves it
    holder: dict[str, Agent] = {}

    def route(goal: str, turn: int, offered: frozenset[str]) -> ModelTurn:
        if turn == 0:
            change(holder["agent"])  # after this turn's offer was made: it applies from the next turn
        if turn < 2:
            return calls((name, {"path": f"turn{turn}.txt", "content": "x"}))
        return DONE

    agent = holder["agent"] = Agent(model=Scripted(route), enabled_toolsets=toolsets, display=False,
                                    approval_callback=fx.approve)
    result = agent.run("go")
    first, second = [r for r in result.tool_calls if r.name == name]
    assert not first.is_error, reason  # offered on turn 1: it ran
    if not check:
        assert not second.is_error, reason
        return
    assert json.loads(second.content) == {"error": refusal(name)}, reason
    assert not (fx.ws / "turn1.txt").exists(), reason
    assert fx.ran.count("notes_add") <= 1, reason


def test_the_next_run_of_the_same_agent_has_its_own_offer(fx: Effects, check: bool) -> None:
    script = iter([calls(("write_file", {"path": "one.txt", "content": "x"})), DONE,
                   calls(("write_file", {"path": "two.txt", "content": "x"})), DONE])
    agent = Agent(model=Scripted(lambda g, t, o: next(script)), display=False, enabled_toolsets=["todo", "file"],
                  approval_callback=fx.approve)
    agent.run("first")
    agent.enabled_toolsets = ["todo"]
    result = agent.run("second")
    assert (fx.ws / "one.txt").exists()
    if not check:
        assert (fx.ws / "two.txt").exists()
        return
    assert not (fx.ws / "two.txt").exists()
    assert_refused(result, "write_file", "offered in the last run, not in this one")


# -- class 6: a parallel batch mixing offered and unoffered calls -----------------------------------

MIXED = [
    (("todo", "write_file", "todo"), "an unoffered writer between offered calls"),
    (("write_file", "terminal", "memory", "delegate_task"), "only unoffered calls, each answered"),
    (("notes_read", "mcp__evil__exfil", "notes_read", "notes_read", "cell_tool", "notes_read"),
     "a parallel segment of readers with unoffered calls inside it"),
    (("todo", "Todo", "todo", "TODO"), "look-alikes interleaved"),
]


@pytest.mark.parametrize(("names", "reason"), MIXED, ids=[r[1] for r in MIXED])
def test_a_mixed_batch_gets_one_answer_per_call_in_order(fx: Effects, check: bool, names: tuple[str, ...],
                                                         reason: str) -> None:
    fx.probe("notes_read", "granted", read_only=True)
    fx.probe("mcp__evil__exfil", "mcp-evil", read_only=True)
    fx.probe("cell_tool", "notebook")
    fx.probe("Todo", "lookalikes")
    fx.probe("TODO", "lookalikes")
    args = {"write_file": {"path": "mixed.txt", "content": "x"}, "terminal": {"command": "echo mixed"},
            "memory": {"action": "add", "target": "memory", "content": "mixed-note"},
            "delegate_task": {"goal": "mixed child"}, "todo": {}}
    model = Scripted(lambda g, t, o: calls(*((n, args.get(n, {})) for n in names)) if g == "go" and t == 0 else DONE)
    result = run(fx, model, ["todo", "granted"])
    assert [r.id for r in result.tool_calls] == [f"c{i}" for i in range(len(names))], reason  # one each, in order
    tool_messages = [m["tool_call_id"] for m in result.messages if m.get("role") == "tool"]
    assert tool_messages == [f"c{i}" for i in range(len(names))], reason
    offered = {"todo", "notes_read"}

    def happened(name: str) -> bool:
        if name == "write_file":
            return (fx.ws / "mixed.txt").exists()
        if name == "memory":
            return "mixed-note" in fx.memory()
        if name == "terminal":
            return "mixed" in the_record(result, "terminal").content
        if name == "delegate_task":
            return "mixed child" in model.goals()
        return name in fx.ran

    unoffered = [n for n in names if n not in offered]
    if not check:
        assert all(happened(n) for n in unoffered), reason
        return
    assert not any(happened(n) for n in unoffered) and fx.asked == [], reason
    for name, record in zip(names, result.tool_calls, strict=True):
        if name in offered:
            assert not record.is_error, reason
        else:
            assert json.loads(record.content) == {"error": refusal(name)}, reason
    assert sorted(fx.ran) == [n for n in names if n == "notes_read"], reason


# -- the person's own calls are not limited ----------------------------------------------------------

def test_tools_call_runs_a_tool_of_an_unticked_toolset(ip: Any, fx: Effects) -> None:
    fx.probe("cell_tool", "notebook")
    outcome = ip.run_line_magic("tools", "call cell_tool")
    assert not outcome.is_error and fx.ran == ["cell_tool"]


# -- class 7: an execute_code script's own calls ------------------------------------------------------

_REACH = '''import hermes_tools
tool = hermes_tools.todo
call = next(c.cell_contents for c in tool.__closure__ if getattr(c.cell_contents, "__name__", "") == "<lambda>")
print(call({name!r}, {args!r}))
'''

SCRIPTS = [
    ("write_file", {"path": "from_script.txt", "content": "x"}, "write_file, through the module's own call"),
    ("cell_tool", {}, "the person's tool of an unticked toolset"),
    ("memory", {"action": "add", "target": "memory", "content": "script-note"}, "the shared memory"),
    ("Todo", {}, "a look-alike of the offered todo"),
]


@pytest.mark.parametrize(("name", "args", "reason"), SCRIPTS, ids=[r[2] for r in SCRIPTS])
def test_a_script_reaches_only_what_its_run_offered(fx: Effects, check: bool, name: str, args: dict[str, Any],
                                                    reason: str) -> None:
    """The script is approved (execute_code asks every time) but hostile: it digs the module's call function out
    of a tool's closure and names a tool its run did not offer."""
    fx.probe("cell_tool", "notebook")
    fx.probe("Todo", "lookalikes")
    code = _REACH.format(name=name, args=args)
    result = run(fx, Scripted(once(("execute_code", {"code": code}))), ["todo", "code_execution"])
    happened = (fx.ws / "from_script.txt").exists() or "script-note" in fx.memory() or bool(fx.ran)
    assert fx.asked and "hermes_tools" in fx.asked[0], reason  # the person approved the script itself
    if not check:
        assert happened, reason
        return
    assert not happened, reason
    assert refusal(name) in the_record(result, "execute_code").content, reason  # the script was told


@pytest.mark.parametrize("reach", ["module", "closure"])
def test_a_script_is_held_to_its_turns_offer_when_the_selection_widens_meanwhile(fx: Effects, check: bool,
                                                                                  reach: str) -> None:
    """The toolsets widen after the turn's offer was made (a person ticks one mid-turn): the script, built from
    the run's definitions, still calls only what this turn offered."""
    holder: dict[str, Agent] = {}
    body = ("import hermes_tools\nprint(hermes_tools.write_file(path='widened.txt', content='x'))" if reach == "module"
            else _REACH.format(name="write_file", args={"path": "widened.txt", "content": "x"}))

    def route(goal: str, turn: int, offered: frozenset[str]) -> ModelTurn:
        if turn == 0:
            holder["agent"].enabled_toolsets = ["todo", "code_execution", "file"]
            return calls(("execute_code", {"code": body}))
        return DONE

    agent = holder["agent"] = Agent(model=Scripted(route), enabled_toolsets=["todo", "code_execution"],
                                    display=False, approval_callback=fx.approve)
    result = agent.run("go")
    if not check and reach == "closure":
        assert (fx.ws / "widened.txt").exists()
        return
    assert not (fx.ws / "widened.txt").exists()
    record = the_record(result, "execute_code").content
    assert refusal("write_file") in record if reach == "closure" else "write_file" in record  # (no such function)
