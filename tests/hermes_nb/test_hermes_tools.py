"""Hermes's own tools in the notebook, against the real hermes-agent 0.19.0 in its own venv (``.venv-hermes``).

A real kernel runs in that venv; the model is the scripted server on 127.0.0.1; Hermes's tools are
called through Hermes's own ``handle_function_call`` (or, for ``todo`` and ``clarify``, Hermes's registry
with the state its agent loop would hand them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_openai import FakeOpenAI, Reply, call
from tests.support.hermes_venv import hermes_python
from tests.support.kernel import KernelSession

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(300)]


def _env(tmp: Path) -> dict[str, str]:
    return {"HERMES_NB_HOME": str(tmp / "nb-home"), "HERMES_HOME": str(tmp / "hermes-home"),
            "HERMES_NB_WORKSPACE": str(tmp)}


GUARD_PLUGIN = '''
def register(ctx):
    def pre_tool_call(tool_name, args, **_):
        if tool_name == "search_files":
            return {"action": "block", "message": "searching is off today"}
        if tool_name == "write_file":
            return {"action": "approve", "message": "writes need a person's yes"}
        return None
    ctx.register_hook("pre_tool_call", pre_tool_call)
    # Hermes takes any schema; hermes_nb refuses an unknown JSON type: a doctor line, not a failed load
    odd = {"name": "odd_tool", "description": "Odd.",
           "parameters": {"type": "object", "properties": {"f": {"type": "file"}}}}
    ctx.register_tool(name="odd_tool", toolset="odd", schema=odd, handler=lambda args, **kw: "odd")
'''


@pytest.fixture(scope="module")
def hermes_kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KernelSession, Path]]:
    tmp = tmp_path_factory.mktemp("hermes-kernel")
    guard = tmp / "hermes-home" / "plugins" / "guard"  # a Hermes plugin with a pre_tool_call hook
    guard.mkdir(parents=True)
    (guard / "plugin.yaml").write_text("name: guard\nversion: 0.1.0\n")
    (guard / "__init__.py").write_text(GUARD_PLUGIN)
    (tmp / "hermes-home" / "config.yaml").write_text("plugins:\n  enabled: [guard]\n")
    with KernelSession(cwd=tmp, env=_env(tmp), python=hermes_python()) as k:
        k.run("%load_ext hermes_nb")
        status = k.run("_s = %hermes wait\nprint(repr(_s))").stdout
        assert "state='ready'" in status, status
        yield k, tmp


def _tool_messages(request: dict) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}


@pytest.mark.hermes
@pytest.mark.slow
def test_agent_run_calls_hermes_todo_and_read_file(hermes_kernel):
    k, tmp = hermes_kernel
    (tmp / "notes.txt").write_text("alpha\nbeta\n")
    item = {"id": "1", "content": "read the notes", "status": "in_progress"}
    script = [
        Reply(tool_calls=(call("hermes_todo", {"todos": [item]}, "t1"),)),  # hermes_nb has its own todo
        Reply(tool_calls=(call("hermes_read_file", {"path": str(tmp / "notes.txt")}, "r1"),)),
        Reply(tool_calls=(call("hermes_todo", {}, "t2"),)),  # a read: the same store answers
        Reply(content="Read them."),
    ]
    with FakeOpenAI(script) as srv:
        k.run(f"from hermes_nb import Agent\nagent = Agent(model='m', base_url={srv.base_url!r}, "
              "enabled_toolsets=['hermes-todo', 'hermes-file'], display=False)")
        out = k.run("result = agent.run('plan, then read notes.txt')\nprint(result.text)").stdout
    assert "Read them." in out
    offered = sorted(t["function"]["name"] for t in srv.requests[0]["tools"])
    assert offered == ["hermes_patch", "hermes_read_file", "hermes_search_files", "hermes_todo", "hermes_write_file"]
    answers = _tool_messages(srv.requests[-1])
    assert json.loads(answers["t1"])["todos"] == [item]
    assert json.loads(answers["t2"])["summary"]["in_progress"] == 1  # the store kept the first write
    read = json.loads(answers["r1"])
    assert "alpha" in read["content"] and "beta" in read["content"]


@pytest.mark.hermes
@pytest.mark.slow
def test_toolsets_are_named_for_hermes_with_its_reasons(hermes_kernel):
    k, _ = hermes_kernel
    rows = k.run("from hermes_nb.display.picker import toolset_rows\n"
                 "for r in toolset_rows():\n    print('ROW', r.name, len(r.tools), r.reason or '-')").stdout
    names = {line.split()[1] for line in rows.splitlines() if line.startswith("ROW")}
    assert {"hermes-todo", "hermes-file", "hermes-terminal", "hermes-discord"} <= names
    ran = k.run("%tools doctor")
    doctor = ran.text
    assert ran.stderr == "" and ran.stdout == ""  # Hermes's check_fn warnings stay out of the cell
    assert "discord" in doctor and "missing environment variable DISCORD_BOT_TOKEN" in doctor
    assert "delegate_task" in doctor and "needs Hermes's agent loop" in doctor
    assert re.search(r"odd_tool .*Hermes's tool 'odd_tool' not offered: .*unknown type 'file'", doctor)
    flags = k.run("from hermes_nb import registry\nfor n in ('hermes_read_file', 'hermes_write_file', 'hermes_terminal'):\n"
                  "    e = registry.get_entry(n)\n    print(n, e.read_only, e.path_params, e.interactive)").stdout
    # Hermes's own agent loop's scheduling lists: reads in parallel, path-scoped writes, the terminal may ask
    assert flags.splitlines() == ["hermes_read_file True ('path',) False", "hermes_write_file False ('path',) False",
                                  "hermes_terminal False () True"]
    shown = k.run("%tools show hermes_todo").text
    assert "hermes" in shown and "hermes_toolset: todo" in shown


@pytest.mark.hermes
@pytest.mark.slow
def test_dangerous_command_asks_the_notebook_not_a_terminal(hermes_kernel):
    k, tmp = hermes_kernel
    victim = tmp / "victim"
    victim.mkdir()
    (victim / "f").write_text("x")
    k.run("from hermes_nb.tools.approval import set_default_approval_callback\n"
          "asked = []\nanswer = ['deny']\n"
          "undo = set_default_approval_callback(lambda c, key, d: asked.append((c, d)) or answer[0])")
    denied = k.run(f"%tools call hermes_terminal command='rm -r {victim}'").text
    assert "BLOCKED" in denied and victim.exists()
    assert k.run("print(len(asked), asked[0][0])").stdout.split() == ["1", f"rm -r {victim}".split()[0], "-r",
                                                                        str(victim)]
    k.run("answer[0] = 'once'")
    k.run(f"%tools call hermes_terminal command='rm -r {victim}'")
    assert not victim.exists()
    k.run("undo()")


@pytest.mark.hermes
@pytest.mark.slow
def test_hermes_plugin_hooks_apply_to_notebook_calls(hermes_kernel):
    """Dispatch goes through Hermes's handle_function_call: a Hermes plugin's pre_tool_call hook blocks,
    and its "approve" directive reaches the notebook's approval prompt."""
    k, tmp = hermes_kernel
    blocked = k.run(f"%tools call hermes_search_files pattern=alpha path={tmp}").text
    assert "searching is off today" in blocked
    k.run("from hermes_nb.tools.approval import set_default_approval_callback\n"
          "asked = []\nanswer = ['deny']\n"
          "undo = set_default_approval_callback(lambda c, key, d: asked.append(d) or answer[0])")
    target = tmp / "written.txt"
    denied = k.run(f"%tools call hermes_write_file path={target} content=hello").text
    assert "BLOCKED" in denied and not target.exists()
    k.run("answer[0] = 'once'")
    k.run(f"%tools call hermes_write_file path={target} content=hello")
    assert target.read_text() == "hello"
    assert "writes need a person's yes" in k.run("print(asked)").stdout
    k.run("undo()")


@pytest.mark.hermes
@pytest.mark.slow
def test_clarify_asks_through_the_notebook(hermes_kernel):
    k, _ = hermes_kernel
    k.run("from hermes_nb.tools.clarify_tool import set_clarify_callback\n"
          "undo = set_clarify_callback(lambda q, choices: 'blue')")
    out = k.run("%tools call hermes_clarify question='Which colour?' choices='[\"red\", \"blue\"]'").text
    k.run("undo()")
    assert '"user_response": "blue"' in out


@pytest.mark.hermes
@pytest.mark.slow
def test_off_on_and_unload_leave_nothing_behind(tmp_path):
    with KernelSession(cwd=tmp_path, env=_env(tmp_path), python=hermes_python()) as k:
        k.run("%config HermesMagics.enabled = False")
        k.run("%load_ext hermes_nb")
        count = "from hermes_nb import registry\nprint(sum(e.source == 'hermes' for e in registry.entries()))"
        assert k.run(count).stdout.strip() == "0"
        # a picker made before Hermes's tools arrive shows them once they do (registry events)
        k.run("from hermes_nb.display.picker import ToolsetPicker\npicker = ToolsetPicker()")
        assert "hermes-todo" not in k.run("print([r.name for r in picker.rows])").stdout
        k.run("%hermes on")
        assert "toolsets named hermes-<toolset>" in k.run("%hermes wait").text
        k.run("picker.flush()")
        assert "hermes-todo" in k.run("print([r.name for r in picker.rows])").stdout
        assert "off" in k.run("%hermes off").text
        assert k.run(count).stdout.strip() == "0"
        k.run("%hermes reload")
        k.run("%hermes wait")
        assert int(k.run(count).stdout) > 20
        k.run("%unload_ext hermes_nb")
        assert k.run(count).stdout.strip() == "0"
        gone = k.run("%hermes", allow_error=True)
        assert "not found" in gone.stderr + str(gone.error)  # the magic went with the extension


def test_without_hermes_agent_the_magic_says_so(tmp_path):
    """This project's own venv has no hermes-agent: the load stays as it was and %hermes explains."""
    with KernelSession(cwd=tmp_path, env=_env(tmp_path)) as k:
        k.run("%load_ext hermes_nb")
        assert "hermes-agent is not installed" in k.run("%hermes").text
        help_text = k.run("print(get_ipython().object_inspect_text('%hermes'))").stdout
        assert "Example" in help_text and "%hermes wait" in help_text and "status (default), on, off" in help_text
        refused = k.run("%hermes on", allow_error=True)
        assert "pip install hermes-agent" in refused.stderr + str(refused.error)
        count = "from hermes_nb import registry\nprint(sum(e.source == 'hermes' for e in registry.entries()))"
        assert k.run(count).stdout.strip() == "0"


@pytest.mark.hermes
@pytest.mark.slow
def test_a_notebook_folder_with_its_own_tools_package_is_left_alone(tmp_path):
    """Jupyter puts the notebook's folder first on sys.path: its own tools/ shadows Hermes's. hermes_nb
    then does not import Hermes (which would run that folder's code and fail) and says why."""
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "__init__.py").write_text("MINE = True\nimport os\nos.environ['RAN'] = '1'\n")
    with KernelSession(cwd=tmp_path, env=_env(tmp_path), python=hermes_python()) as k:
        k.run("%load_ext hermes_nb")
        status = k.run("%hermes wait").text
        assert "'tools' is" in status and "not hermes-agent's" in status
        assert k.run("import os\nprint(os.environ.get('RAN'))").stdout.strip() == "None"  # nobody imported it
        assert k.run("import tools\nprint(tools.MINE)").stdout.strip() == "True"
        count = "from hermes_nb import registry\nprint(sum(e.source == 'hermes' for e in registry.entries()))"
        assert k.run(count).stdout.strip() == "0"
