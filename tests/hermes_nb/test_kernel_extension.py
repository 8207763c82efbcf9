"""The extension in a real ipykernel: cells run on the kernel's running loop, as in a notebook."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.kernel import CellResult, KernelSession

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(180)]

AREA = '''%%tool --toolset geometry --emoji 📐
def area(width: float, height: float = 1.0) -> dict:
    """Area of a rectangle.

    Args:
        width: The width.
        height: The height.
    """
    return {"area": width * height}
'''


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KernelSession]:
    home = tmp_path_factory.mktemp("kernel_home")
    with KernelSession(cwd=home, env={"HERMES_NB_HOME": str(home)}) as k:
        load = k.run(
            "import sys, time\n_t = time.perf_counter()\n"
            "get_ipython().run_line_magic('load_ext', 'hermes_nb')\n"
            "print('LOAD_MS', (time.perf_counter() - _t) * 1000)\n"
            "print('HEAVY', 'openai' in sys.modules, 'mcp' in sys.modules)"
        )
        k.load_output = load.stdout  # type: ignore[attr-defined]
        # every test may say ``registry``, whichever runs first (alone, with -k, none has imported it before)
        k.run("from hermes_nb import registry")
        yield k


def run_reply(k: KernelSession, code: str) -> tuple[CellResult, dict[str, Any]]:
    """Run a cell and also return the execute_reply content (it carries ename for UsageError)."""
    msg_id = k.kc.execute(code, store_history=True)
    result = k.collect(msg_id, allow_error=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        reply = k.kc.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
        if reply["parent_header"].get("msg_id") == msg_id:
            return result, reply["content"]
    raise TimeoutError("no execute_reply")


def usage_error(k: KernelSession, code: str) -> str:
    result, reply = run_reply(k, code)
    assert reply["status"] == "error" and reply["ename"] == "UsageError", (reply, result)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("UsageError: "), result.stderr
    return lines[0]


def test_load_is_light_and_says_what_it_found(kernel: KernelSession) -> None:
    out = kernel.load_output  # type: ignore[attr-defined]
    assert "hermes_nb: %%tool, %tools, %toolsets, %%agent, %memory, %sessions, %trace, %mcp, %hermes, %plugins ready" in out
    assert "HEAVY False False" in out  # openai and mcp wait for first use
    ms = float(re.search(r"LOAD_MS ([\d.]+)", out).group(1))  # type: ignore[union-attr]
    print(f"%load_ext hermes_nb took {ms:.0f} ms in a fresh kernel (target 30 ms: bench/bench_load.py)")


def test_tool_cell_registers_and_shows_a_card(kernel: KernelSession) -> None:
    r = kernel.run(AREA)
    assert "area" in r.text and "geometry" in r.text and "available" in r.text
    assert "<details" in r.html and "JSON schema" in r.html and "📐" in r.html
    # the function stays an ordinary Python function
    assert kernel.run("print(area(2, 3))").stdout.strip() == "{'area': 6}"
    table = kernel.run("%tools").text
    assert re.search(r"area\s+geometry\s+notebook\s+available", table)
    show = kernel.run("%tools show area").text
    assert '"required": [\n' in show and "origin: cell" in show


def test_tools_call_goes_through_dispatch_and_sets_underscore(kernel: KernelSession) -> None:
    kernel.run(AREA)
    r = kernel.run('%tools call area {"width": 2, "height": 4}')
    assert '"area": 8' in r.text
    assert kernel.run("print(_.content)").stdout.strip() == '{"area": 8}'
    r = kernel.run("%tools call area width=3")
    assert '"area": 3' in r.text
    bad = kernel.run('%tools call area width="wide"')
    assert "error" in bad.text and "#b00020" in bad.html  # errors in red, not raised


def test_redefinition_moves_between_toolsets_without_duplicates(kernel: KernelSession) -> None:
    kernel.run(AREA)
    kernel.run(AREA.replace("--toolset geometry", "--toolset shapes"))
    out = kernel.run("from hermes_nb import registry\n"
                     "print(registry.get_toolset_for_tool('area'), registry.get_tool_names_for_toolset('geometry'),"
                     " registry.get_all_tool_names().count('area'))").stdout
    assert out.strip() == "shapes [] 1"


def test_default_toolset_is_configurable(kernel: KernelSession) -> None:
    kernel.run('%config ToolMagics.default_toolset = "scratch"')
    try:
        kernel.run("%%tool\ndef ping() -> str:\n    return 'pong'")
        assert kernel.run("print(registry.get_toolset_for_tool('ping'))").stdout.strip() == "scratch"
    finally:
        kernel.run('%config ToolMagics.default_toolset = "notebook"')


def test_rm_and_doctor(kernel: KernelSession) -> None:
    kernel.run("%%tool --requires-env HERMES_TEST_SECRET_VAR\ndef secret() -> str:\n    return 'x'")
    kernel.run("ready = False")
    kernel.run("%%tool --check ready\ndef gated() -> str:\n    return 'x'")
    kernel.run("%%tool --check 1/0\ndef broken() -> str:\n    return 'x'")
    doctor = kernel.run("%tools doctor").text
    assert re.search(r"secret.*missing environment variable HERMES_TEST_SECRET_VAR", doctor)
    assert re.search(r"gated.*check `ready` returned false", doctor)
    assert re.search(r"broken.*check `1/0` raised ZeroDivisionError", doctor)
    kernel.run("ready = True")
    assert "gated" not in kernel.run("%tools doctor").text  # the check is evaluated lazily
    kernel.run("%tools rm secret")
    assert "secret" not in kernel.run("%tools").text


def test_env_values_are_never_shown(kernel: KernelSession) -> None:
    secret = "s3cr3t-value-XYZ"
    kernel.run(f"import os\nos.environ['HERMES_TEST_SET_SECRET'] = {secret!r}")
    try:
        card = kernel.run("%%tool --requires-env HERMES_TEST_SET_SECRET --requires-env HERMES_TEST_UNSET_VAR\n"
                          "def keyed() -> str:\n    return 'x'")
        shown = [card, kernel.run("%tools doctor"), kernel.run("%tools"), kernel.run("%tools show keyed"),
                 kernel.run("%toolsets")]
        for r in shown:
            everything = r.stdout + r.stderr + "".join(str(o) for o in r.outputs)
            assert secret not in everything
        assert "HERMES_TEST_UNSET_VAR" in shown[1].text and "HERMES_TEST_SET_SECRET" in shown[3].text
    finally:
        kernel.run("%tools rm keyed\nimport os\nos.environ.pop('HERMES_TEST_SET_SECRET', None)")


def test_help_for_every_magic(kernel: KernelSession) -> None:
    out = kernel.run("ip = get_ipython()\n"
                     "for m in ('%tools', '%%tool', '%toolsets'):\n"
                     "    print('==', m, ip.object_inspect_text(m))").stdout
    tools, tool, toolsets = out.split("== ")[1:]
    for sub in ("show NAME", "call NAME", "rm NAME", "doctor"):
        assert sub in tools, sub
    assert "--requires-env" in tool and "--check" in tool
    assert "hermes_nb.toolsets.select" in toolsets


def test_bad_input_is_a_one_line_usage_error(kernel: KernelSession) -> None:
    assert "defines no function" in usage_error(kernel, "%%tool\nx = 1")
    assert "--name" in usage_error(kernel, "%%tool\ndef a(): pass\ndef b(): pass")
    assert "cannot express" in usage_error(kernel, "%%tool\nimport socket\ndef s(x: socket.socket): pass")
    assert "--as NAME" in usage_error(kernel, "%%tool\ndef read_file(path: str) -> str:\n    return ''")
    assert "no tool named" in usage_error(kernel, "%tools call nope")
    assert "unknown subcommand" in usage_error(kernel, "%tools frobnicate")
    # --name picks one of several
    kernel.run("%%tool --name b2\ndef a2(): pass\ndef b2() -> str:\n    return 'b'")
    assert "b2" in kernel.run("%tools").text


def test_syntax_error_shows_as_python_shows_it(kernel: KernelSession) -> None:
    number = int(kernel.run("print(get_ipython().execution_count)").stdout)  # the next cell's prompt
    r = kernel.run("%%tool\ndef f(:\n    pass", allow_error=True)
    assert r.error is not None and r.error["ename"] == "SyntaxError"
    shown = re.sub(r"\x1b\[[0-9;]*m", "", "".join(r.error["traceback"]))
    assert "hermes_nb" not in shown  # no magic internals in the traceback
    assert f"Cell In[{number}], line 2" in shown, shown  # the cell's own prompt and line (issue 26, item 7)
    assert kernel.run("print('next cell fine')").stdout.strip() == "next cell fine"


GREETER = '%%tool\ndef {}(who: str) -> str:\n    """Greet."""\n    return "Hi " + who'


def test_a_cell_owns_its_tools(kernel: KernelSession) -> None:
    """Renaming the function and re-running the cell replaces its tool (issue 26, item 2)."""
    kernel.run(GREETER.format("greet"), cell_id="own-1")
    r = kernel.run(GREETER.format("greeting"), cell_id="own-1")
    assert "removed greet: this cell now defines greeting" in r.stdout
    listed = kernel.run("print(sorted(e.name for e in registry.entries()))").stdout
    assert "'greeting'" in listed and "'greet'" not in listed


def test_async_tools_from_sync_and_async_cells(kernel: KernelSession) -> None:
    kernel.run("%%tool\nimport asyncio\nasync def later(n: int) -> str:\n"
               "    await asyncio.sleep(0.01)\n    return 'ok' * n")
    # the call's own result, not the last output: the picker may refresh its display after it (under load)
    (shown,) = [o for o in kernel.run("%tools call later n=2").outputs if o["type"] == "execute_result"]
    assert shown["data"]["text/plain"].splitlines()[-1] == "okok"
    sync = kernel.run("from hermes_nb import registry\nprint(registry.dispatch('later', {'n': 1}))")
    assert sync.stdout.strip() == "ok"
    top = kernel.run("print(await registry.dispatch_async('later', {'n': 3}))")
    assert top.stdout.strip() == "okokok"


def _interrupt_during(kernel: KernelSession, code: str, started: str) -> CellResult:
    """Run ``code`` and interrupt it once the file ``started`` (in the kernel's folder) exists: the tool writes
    it as it begins, so the interrupt lands inside the call. (The cell's first output came before the call, and
    an interrupt landing in between was the person's own code.)"""
    marker = kernel.cwd / started
    marker.unlink(missing_ok=True)
    msg_id = kernel.kc.execute(code)
    deadline = time.monotonic() + 30
    while not marker.exists():
        assert time.monotonic() < deadline, f"{started} was never written: the code did not start"
        time.sleep(0.02)  # polling for the file, with a deadline
    kernel.interrupt()
    return kernel.collect(msg_id, timeout=30, allow_error=True)


def test_interrupt_stops_a_long_async_tool(kernel: KernelSession) -> None:
    kernel.run("%%tool\nimport asyncio\nasync def nap() -> str:\n    open('nap-started', 'w').close()\n"
               "    await asyncio.sleep(30)\n    return 'woke'")
    start = time.monotonic()
    r = _interrupt_during(kernel, "print('go', flush=True)\nregistry.dispatch('nap', {})", "nap-started")
    assert r.error is not None and r.error["ename"] == "KeyboardInterrupt"
    # one line, as the agent's interrupt (issue 26, item 6), not ~8 frames of library code
    assert r.error["traceback"] == ["KeyboardInterrupt: interrupted while the tool call 'nap' ran; it was "
                                    "cancelled, the next cell runs as usual"]
    assert time.monotonic() - start < 20
    assert kernel.run("print('after')").stdout.strip() == "after"


def test_interrupt_stops_a_long_sync_tool(kernel: KernelSession) -> None:
    kernel.run("%%tool\nimport time\ndef doze() -> str:\n    open('doze-started', 'w').close()\n"
               "    for _ in range(600):\n        time.sleep(0.05)\n    return 'woke'")
    start = time.monotonic()
    r = _interrupt_during(kernel, "print('go', flush=True)\nget_ipython().run_line_magic('tools', 'call doze')",
                         "doze-started")
    assert r.error is not None and r.error["ename"] == "KeyboardInterrupt"
    assert len(r.error["traceback"]) == 1 and "interrupted while the tool call 'doze' ran" in r.error["traceback"][0]
    # the person's own code, interrupted outside hermes_nb, keeps IPython's traceback
    own = _interrupt_during(kernel, "import time\nopen('own-started', 'w').close()\n"
                           "for _ in range(600): time.sleep(0.05)", "own-started")
    assert own.error is not None and own.error["ename"] == "KeyboardInterrupt" and len(own.error["traceback"]) > 1
    assert time.monotonic() - start < 20
    assert kernel.run("print('after')").stdout.strip() == "after"


def test_toolsets_picker_in_kernel_follows_select(kernel: KernelSession) -> None:
    kernel.run(AREA)
    r = kernel.run("%toolsets")
    assert r.mime("application/vnd.jupyter.widget-view+json")
    assert any("toolsets:" in t for t in r.mime("text/plain"))
    kernel.run("import hermes_nb\nhermes_nb.toolsets.select(['geometry'])\n"
               "from hermes_nb import _state\npicker = _state.live[-1]")
    out = kernel.run("print(picker.checked(), picker.checkboxes['geometry'].value, picker.checkboxes['file'].value,"
                     " picker.model_tool_count())").stdout
    assert out.strip() == "['geometry'] True False 1"
    kernel.run("picker.toggle('file', True)")
    assert kernel.run("print(hermes_nb.toolsets.enabled_toolsets())").stdout.strip() == "['geometry', 'file']"
    kernel.run("hermes_nb.toolsets.select(None)")


def test_reload_and_unload_counts(kernel: KernelSession) -> None:
    count = ("ip = get_ipython()\nprint(sum(map(len, ip.magics_manager.magics.values())),"
             " sum(map(len, ip.events.callbacks.values())))")
    loaded = kernel.run(count).stdout
    for _ in range(3):
        kernel.run("%reload_ext hermes_nb")
    assert kernel.run(count).stdout == loaded
    kernel.run("%unload_ext hermes_nb")
    assert kernel.run("print('tools' in get_ipython().magics_manager.magics['line'])").stdout.strip() == "False"
    kernel.run("%load_ext hermes_nb")
    assert kernel.run(count).stdout == loaded


def test_nest_asyncio_opt_in_runs_on_the_kernel_loop(tmp_path: Path) -> None:
    # the tool awaits a Future of the kernel loop, resolved by that loop while the sync cell waits
    setup = "import asyncio\nloop = asyncio.get_event_loop()\nfut = loop.create_future()"
    tool = "%%tool\nasync def wait_fut() -> int:\n    return await fut"
    call = "loop.call_later(0.05, fut.set_result, 42)\nprint(registry.dispatch('wait_fut', {}))"
    with KernelSession(cwd=tmp_path, env={"HERMES_NB_HOME": str(tmp_path)}) as k:
        k.run("%load_ext hermes_nb\nfrom hermes_nb import registry")
        k.run(setup)
        k.run(tool)
        without = k.run(call).stdout
        assert "attached to a different loop" in without  # the default: the background loop cannot
        k.run("import hermes_nb\nhermes_nb.enable_nest_asyncio()")
        k.run(setup)
        k.run(tool)
        assert k.run(call).stdout.strip() == "42"
        assert k.run("print('next')").stdout.strip() == "next"


def test_extension_loads_from_a_profile(tmp_path: Path) -> None:
    profile = tmp_path / "ipython" / "profile_default"
    profile.mkdir(parents=True)
    (profile / "ipython_kernel_config.py").write_text('c.InteractiveShellApp.extensions = ["hermes_nb"]\n')
    with KernelSession(cwd=tmp_path, env={"IPYTHONDIR": str(tmp_path / "ipython"),
                                          "HERMES_NB_HOME": str(tmp_path)}) as k:
        r = k.run("print('tools' in get_ipython().magics_manager.magics['line'], "
                  "'hermes_nb' in get_ipython().extension_manager.loaded)")
        assert r.stdout.strip() == "True True"


@pytest.mark.slow
def test_notebook_01_as_static_html_keeps_a_record_of_the_picker(tmp_path: Path) -> None:
    """nbconvert's HTML cannot run widgets offline: the picker must leave static HTML beside its widget."""
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    root = Path(__file__).resolve().parents[2]
    nb = nbformat.read(root / "notebooks" / "01-tools-in-cells.ipynb", as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    picker_cell = next(c for c in nb.cells if c.cell_type == "code" and c.source.strip() == "%toolsets")
    widget_outputs = [o for o in picker_cell.outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    records = [o for o in picker_cell.outputs if "text/html" in o.get("data", {})
               and "application/vnd.jupyter.widget-view+json" not in o["data"]]
    assert len(widget_outputs) == 1 and len(records) == 1, picker_cell.outputs
    # one status line in text form (the picker's own text is the table)
    texts = [o["data"]["text/plain"] for o in picker_cell.outputs]
    assert sum(t.count("the model sees") for t in texts) == 1, texts

    body, _ = HTMLExporter().from_notebook_node(nb)
    visible = re.sub(r"<script\b.*?</script>", "", body, flags=re.S)  # what a reader sees without widget JS
    assert "the model sees" in visible
    for label in ("geometry (1 tool)", "text (1 tool)", "weather (1 tool)"):
        assert label in visible, label
    assert "Traceback" not in visible and "Error displaying widget" not in visible
    (tmp_path / "01.html").write_text(body)


def test_tool_traceback_and_printed_output_reach_the_person_only(kernel: KernelSession) -> None:
    kernel.run('%%tool\ndef shaky(n: int) -> int:\n    """Prints, then fails on 0."""\n'
               '    print("checking", n)\n    return 10 // n')
    ok = kernel.run("%tools call shaky n=2")
    assert "checking 2" not in ok.stdout  # captured, not flooding the cell
    assert "the model does not see printed output" in ok.html
    failed = kernel.run("%tools call shaky n=0")
    assert "Tool execution failed: ZeroDivisionError" in failed.html
    assert "hermes-nb-traceback" in failed.html and "10 // n" in failed.html
    assert "checking 1" in kernel.run("shaky(1)").stdout  # the function itself still prints
