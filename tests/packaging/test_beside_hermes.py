"""hermes-agent 0.19.0 from PyPI and the built wheel in one venv, in both install orders."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.packaging.test_wheel_alone import hermes_style_tool_file
from tests.support.venvs import _uv, cached_venv, installed_files, python_of, run_in, uninstalled, venv_kernel

pytestmark = [
    pytest.mark.packaging,
    pytest.mark.hermes,
    pytest.mark.kernel,
    pytest.mark.slow,
    pytest.mark.timeout(900),
]

#: Hermes with its MCP extra: that extra pins mcp==1.26.0, which hermes_nb's range must admit.
HERMES = "hermes-agent[mcp]==0.19.0"
OURS = ["{wheel}", "ipykernel"]
ORDERS = {"hermes-first": [[HERMES], OURS], "hermes-last": [OURS, [HERMES]]}

HERMES_DEFINITIONS = textwrap.dedent(
    """
    import json, model_tools
    definitions = model_tools.get_tool_definitions(quiet_mode=True)
    print(json.dumps({"file": model_tools.__file__,
                      "names": sorted(d["function"]["name"] for d in definitions)}))
    """
)


@pytest.fixture(scope="module", params=sorted(ORDERS))
def venv(request) -> Path:
    return cached_venv(request.param, ORDERS[request.param])


@pytest.fixture
def hermes_env(tmp_path) -> dict[str, str]:
    """Hermes and hermes_nb each with a private, empty home."""
    return {"HERMES_HOME": str(tmp_path / "hermes-home"), "HERMES_NB_HOME": str(tmp_path / "nb-home")}


def _site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


def test_the_two_wheels_share_no_installed_path(venv):
    ours, theirs = installed_files(venv, "hermes-nb"), installed_files(venv, "hermes-agent")
    assert ours and theirs
    assert not ours & theirs
    in_site_packages = {p.split("/")[0] for p in ours if not p.startswith("../")}
    # no top-level name but our own: the package, and `hermes-nb.py` (the distribution's name, for the one line
    # `%load_ext hermes-nb` gets; issue 35)
    assert in_site_packages == {"hermes_nb", "hermes-nb.py", "hermes_nb-0.1.0.dist-info"}
    scripts = {p.rsplit("/", 1)[-1] for p in ours if p.startswith("../")}
    assert scripts == {"hermes-nb-mcp-proxy"}  # and one console script, named for us
    check = run_in(venv, [_uv(), "pip", "check", "--python", str(python_of(venv))])
    assert check.returncode == 0, check.stdout + check.stderr


def test_hermes_works(venv, tmp_path, hermes_env):
    helped = run_in(venv, ["hermes", "--help"], cwd=tmp_path, env=hermes_env)
    assert helped.returncode == 0 and "usage: hermes" in helped.stdout, helped.stderr[-2000:]
    defined = run_in(venv, ["python", "-c", HERMES_DEFINITIONS], cwd=tmp_path, env=hermes_env)
    assert defined.returncode == 0, defined.stderr[-3000:]
    found = json.loads(defined.stdout.splitlines()[-1])
    assert Path(found["file"]) == _site_packages(venv) / "model_tools.py"  # Hermes's own module
    assert {"read_file", "terminal", "todo"} <= set(found["names"])


def test_load_ext_in_a_real_kernel(venv, tmp_path, hermes_env):
    hermes_style_tool_file(Path(hermes_env["HERMES_NB_HOME"]))
    with venv_kernel(venv, tmp_path, hermes_env) as kernel:
        kernel.run("%load_ext hermes_nb")
        kernel.run(
            '%%tool --toolset demo\ndef double(x: int) -> int:\n    """Twice x.\n\n    Args:\n'
            '        x: A number.\n    """\n    return 2 * x'
        )
        called = kernel.run("%tools call double x=21")
        assert "42" in called.stdout + called.text
        # Hermes's own modules still get Hermes's tools package in the same kernel
        theirs = kernel.run("from tools.terminal_tool import cleanup_vm\nimport tools\nprint(tools.__file__)")
        assert Path(theirs.stdout.strip()) == _site_packages(venv) / "tools" / "__init__.py"
        # ...while a Hermes-style file that hermes_nb loads ($HERMES_NB_HOME/tools) reached hermes_nb's
        # registry, not Hermes's
        where = kernel.run(
            "import tools.registry\n"
            "from hermes_nb.tools.registry import registry\n"
            "print(registry.dispatch('greet', {'who': 'Ada'}))\n"
            "print('greet' in tools.registry.registry.get_all_tool_names())"
        )
        assert where.stdout.splitlines() == ['{"greeting": "hello, Ada"}', "False"]


def test_uninstalling_either_leaves_the_other_working(venv, tmp_path, hermes_env):
    site = _site_packages(venv)
    hermes_files = installed_files(venv, "hermes-agent")
    with uninstalled(venv, "hermes-nb", reinstall=["{wheel}"]):
        assert all((site / p).exists() or p.startswith("../") for p in hermes_files)
        helped = run_in(venv, ["hermes", "--help"], cwd=tmp_path, env=hermes_env)
        assert helped.returncode == 0, helped.stderr[-2000:]
        defined = run_in(venv, ["python", "-c", HERMES_DEFINITIONS], cwd=tmp_path, env=hermes_env)
        assert defined.returncode == 0 and json.loads(defined.stdout.splitlines()[-1])["names"]

    our_files = installed_files(venv, "hermes-nb")
    with uninstalled(venv, "hermes-agent", reinstall=["hermes-agent==0.19.0"]):
        assert all((site / p).exists() or p.startswith("../") for p in our_files)
        loaded = run_in(
            venv,
            ["python", "-c",
             "from IPython.core.interactiveshell import InteractiveShell\n"
             "shell = InteractiveShell.instance()\n"
             "shell.extension_manager.load_extension('hermes_nb')\n"
             "from hermes_nb.tools.registry import registry\n"
             "print(len(registry.get_all_tool_names()) > 0, 'hermes_nb' in shell.extension_manager.loaded)"],
            cwd=tmp_path, env=hermes_env,
        )  # fmt: skip
        assert loaded.returncode == 0 and loaded.stdout.splitlines()[-1] == "True True", loaded.stderr[-3000:]


def test_mcp_client_on_the_mcp_that_hermes_pins(venv, tmp_path, hermes_env):
    """hermes-agent[mcp] pins mcp==1.26.0, the oldest the client supports: a real server, a call, a timeout."""
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "mcp_servers" / "dynamic_server.py"
    code = textwrap.dedent(
        f"""
        import importlib.metadata, json, sys
        from hermes_nb.tools.mcp_tool import add_mcp_server, shutdown_mcp_servers
        from hermes_nb.tools.mcp_client.config import parse_server
        from hermes_nb.tools.registry import registry
        cfg = parse_server("dyn", {{"command": sys.executable, "args": [{str(fixture)!r}], "timeout": 1}})
        names = add_mcp_server(cfg)
        print(json.dumps({{
            "mcp": importlib.metadata.version("mcp"),
            "names": names,
            "echo": registry.dispatch("mcp__dyn__echo", {{"text": "hi"}}),
            "slow": json.loads(registry.dispatch("mcp__dyn__slow", {{"seconds": 5}}))["error"],
            "wipe": registry.get_entry("mcp__dyn__wipe").needs_approval,
        }}))
        shutdown_mcp_servers()
        """
    )
    ran = run_in(venv, ["python", "-c", code], cwd=tmp_path, env=hermes_env, timeout=120)
    assert ran.returncode == 0, ran.stderr[-3000:]
    got = json.loads(ran.stdout.splitlines()[-1])
    assert got["mcp"] == "1.26.0"
    assert {"mcp__dyn__echo", "mcp__dyn__slow", "mcp__dyn__wipe"} <= set(got["names"])
    assert got["echo"] == "hi" and "timed out after 1 s" in got["slow"] and got["wipe"] is True
