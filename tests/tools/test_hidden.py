"""What the model sees (``tools.safety.sandbox.hidden``): the workspace, the system, the kernel's interpreter — never the
home outside the workspace, nor the home's dot-entries when the workspace holds the home, unless shown by choice.

Adversarial by class, each class a table with a reason per row, run twice: with the defence (nothing leaks) and
without it (``View.reason`` / the sandbox's view mounts switched off), where every row must leak, so the row is
honest. The home is a fake one in a temporary folder (``HOME`` overridden); the real home is never read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

import hermes_nb.tools.file_tools  # noqa: F401  (registers the tools)
from hermes_nb.tools.registry import registry
from hermes_nb.tools.safety.sandbox import bwrap, hidden
from hermes_nb.tools.terminal_tool import run_command
from tests.support.bubblewrap import require_bwrap

# Where people keep secrets in their home, none of them on any list: the first 12 got through before.
SECRETS = [
    (".kaggle/kaggle.json", "Kaggle's API key"),
    (".pgpass", "PostgreSQL's passwords"),
    (".config/git/credentials", "git's credential store (XDG place)"),
    (".my.cnf", "MySQL's client password"),
    (".s3cfg", "s3cmd's access keys"),
    (".config/rclone/rclone.conf", "rclone's remotes and their tokens"),
    (".databrickscfg", "Databricks' token"),
    (".config/pip/pip.conf", "an index URL with a password"),
    (".local/share/jupyter/notebook_secret", "Jupyter's notebook secret (beside, not in, the runtime folder)"),
    (".ipython/profile_default/history.sqlite", "IPython's history: every line the person typed"),
    (".dbt/profiles.yml", "dbt's warehouse credentials"),
    (".config/ngrok/ngrok.yml", "ngrok's auth token"),
    (".ssh/id_ed25519", "an ssh key (hidden before too)"),
    (".netrc", "machine passwords (hidden before too)"),
    (".aws/credentials", "AWS keys (hidden before too)"),
    (".bash_history", "commands typed with passwords in them"),
    (".env", "a dot-env file at the home's top"),
    (".Kaggle2/kaggle.json", "capitals: still a dot-entry"),
    (".cache/some-tool/token", "a token deep in a cache"),
]


def _token(i: int) -> str:
    return f"s3cr3t-{i:02d}-x"


@dataclass
class Home:
    home: Path  # the fake home, also the workspace (jupyter lab started in ~)
    ws: Path
    files: dict[int, Path]


def _fill(home: Path) -> dict[int, Path]:
    files = {}
    for i, (rel, _why) in enumerate(SECRETS):
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_token(i) + "\n")
        files[i] = path
    return files


@pytest.fixture
def at_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    home = tmp_path / "me"
    (home / "proj").mkdir(parents=True)
    files = _fill(home)
    (home / "proj" / "notes.txt").write_text("mine\n")
    for i, (rel, _why) in enumerate(SECRETS):  # links left in the workspace earlier, pointing into the dot-entries
        (home / "proj" / f"pre-{i}").symlink_to(home / rel)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(home))
    return Home(home=home.resolve(), ws=home.resolve(), files=files)


def call(name: str, **args: object) -> str:
    return registry.dispatch(name, args)


def _no_defence(monkeypatch: pytest.MonkeyPatch) -> None:
    """The file tools without the rule: every path is seen."""
    monkeypatch.setattr(hidden.View, "reason", lambda self, real: None)


def _no_view_mounts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sandbox without the view mounts: the home is neither emptied nor masked, nothing is bound back."""
    monkeypatch.setattr(bwrap, "emptied_mounts", lambda seen: [])
    monkeypatch.setattr(bwrap, "view_mounts", lambda seen, writable=(): [])


# -- the file tools --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Route:
    name: str
    path: Callable[[Home, int, str], str]  # the path read_file is given, for secret i at rel
    why: str


def _linked(h: Home, i: int, rel: str, whole: bool) -> str:
    """A link in the workspace (the model could make one through an earlier layer) into the dot-entry."""
    first = Path(rel).parts[0]
    link = h.ws / "proj" / f"link-{i}-{int(whole)}"
    if not link.is_symlink():
        link.symlink_to(h.home / (first if whole else rel))
    return str(Path("proj", link.name, *Path(rel).parts[1:])) if whole else f"proj/{link.name}"


ROUTES = [
    Route("relative", lambda h, i, rel: rel, "the workspace is the home: a plain relative path"),
    Route("absolute", lambda h, i, rel: str(h.home / rel), "the same file by its absolute path"),
    Route("tilde", lambda h, i, rel: "~/" + rel, "~ expands to the home"),
    Route("dotdot", lambda h, i, rel: "proj/../" + rel, "a .. walks up out of a visible folder"),
    Route("dotdot-abs", lambda h, i, rel: f"{h.home}/proj/../{rel}", "an absolute path with a .. in it"),
    Route("link-to-entry", lambda h, i, rel: _linked(h, i, rel, True), "a workspace link to the dot-entry"),
    Route("link-to-file", lambda h, i, rel: _linked(h, i, rel, False), "a workspace link to the file itself"),
    Route("double-slash", lambda h, i, rel: str(h.home) + "//" + rel.replace("/", "//"), "doubled separators"),
]
CASES = [(r, i) for r in ROUTES for i in range(len(SECRETS))]
IDS = [f"{r.name}-{SECRETS[i][0]}" for r, i in CASES]


@pytest.mark.parametrize(("route", "i"), CASES, ids=IDS)
def test_read_file_sees_no_dot_entry_of_the_home(at_home: Home, route: Route, i: int) -> None:
    rel, why = SECRETS[i]
    result = call("read_file", path=route.path(at_home, i, rel))
    assert _token(i) not in result, (route.why, why, result)
    assert "hidden from the model" in result or "never reads" in result, (route.why, result)


@pytest.mark.parametrize(("route", "i"), CASES, ids=IDS)
def test_without_the_rule_read_file_reads_them(at_home: Home, route: Route, i: int,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    _no_defence(monkeypatch)
    rel, why = SECRETS[i]
    assert _token(i) in call("read_file", path=route.path(at_home, i, rel)), (route.why, why)


SEARCHES = [
    ({"path": "."}, "the whole workspace, which is the home"),
    ({"path": ".", "file_glob": "*"}, "every file name"),
    ({"path": ".", "file_glob": ".*"}, "dot-file names"),
    ({"path": ".", "file_glob": "*.json"}, "a glob on the extension"),
    ({"path": ".", "file_glob": ".*/*"}, "a glob through the dot-entries"),
    ({"path": "proj"}, "a visible folder holding links into the dot-entries"),
    ({"path": "~"}, "the home by its tilde"),
]


@pytest.mark.parametrize(("args", "why"), SEARCHES, ids=[f"search-{n}" for n in range(len(SEARCHES))])
def test_search_files_walks_into_no_dot_entry(at_home: Home, args: dict, why: str) -> None:
    for i, (rel, _w) in enumerate(SECRETS):
        _linked(at_home, i, rel, False)
    result = call("search_files", pattern=r"s3cr3t-\d\d-x", **args)
    assert not any(_token(i) in result for i in range(len(SECRETS))), (why, result)


@pytest.mark.parametrize(("args", "why"), SEARCHES, ids=[f"search-{n}" for n in range(len(SEARCHES))])
def test_without_the_rule_search_files_finds_them(at_home: Home, args: dict, why: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    _no_defence(monkeypatch)
    for i, (rel, _w) in enumerate(SECRETS):
        _linked(at_home, i, rel, False)
    result = call("search_files", pattern=r"s3cr3t-\d\d-x", **args)
    assert any(_token(i) in result for i in range(len(SECRETS))), (why, result)


def test_search_files_refuses_a_dot_entry_named_as_its_path(at_home: Home) -> None:
    for rel in (".kaggle", ".config/git", "~/.ssh", "proj/../.aws"):
        assert "hidden from the model" in call("search_files", pattern="s3cr3t", path=rel), rel


@pytest.fixture
def outside_tmp() -> Path:
    """A folder outside /tmp (which the sandbox empties anyway), so that only the rule can hide the home."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="hermes-nb-hidden-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def inside_home(outside_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    """The workspace is a project inside the home: nothing of the home outside it is seen, dot or not."""
    home = outside_tmp / "me"
    ws = home / "proj"
    ws.mkdir(parents=True)
    files = _fill(home)
    (home / "thesis.txt").write_text("s3cr3t-99-x plain file beside the project\n")
    (ws / "notes.txt").write_text("mine\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(ws))
    return Home(home=home.resolve(), ws=ws.resolve(), files=files)


OUTSIDE = [
    ("../thesis.txt", "a plain file of the home beside the workspace"),
    ("~/thesis.txt", "the same by its tilde"),
    ("../.pgpass", "a dot-file of the home"),
    ("../.config/rclone/rclone.conf", "deeper in a dot-folder"),
    ("../../me/thesis.txt", "up and back down by name"),
]


@pytest.mark.parametrize(("path", "why"), OUTSIDE)
def test_the_home_outside_the_workspace_is_not_read(inside_home: Home, path: str, why: str) -> None:
    result = call("read_file", path=path)
    assert "s3cr3t-" not in result and "refusing to read" in result, (why, result)
    assert "mine" in call("read_file", path="notes.txt")


@pytest.mark.parametrize(("path", "why"), OUTSIDE)
def test_without_the_rule_the_home_outside_is_read(inside_home: Home, path: str, why: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    _no_defence(monkeypatch)
    assert "s3cr3t-" in call("read_file", path=path), why


def test_the_interpreter_is_read_wherever_it_lives(inside_home: Home) -> None:
    """The kernel's prefixes stay readable even inside the (otherwise hidden) home: here the real one, /root."""
    for path in (sys.base_prefix, sys.prefix):
        assert hidden.hidden_reason(Path(os.path.realpath(path)), inside_home.ws) is None, path
    site = sysconfig.get_paths()["stdlib"] + "/site.py"
    assert json.loads(call("read_file", path=site, limit=1))["content"].startswith("1|")


# -- shown by choice, and what no choice shows -------------------------------------------------------------------

def test_visible_shows_what_it_names_and_nothing_else(at_home: Home, hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"sandbox": {"visible": [".kaggle", "~/.config/git"]}}))
    shown = {".kaggle/kaggle.json", ".config/git/credentials"}
    for i, (rel, why) in enumerate(SECRETS):
        result = call("read_file", path=rel)
        assert (_token(i) in result) == (rel in shown), (rel, why, result)


ALWAYS = [
    (".local/share/jupyter/runtime/kernel-1.json", [".local"], "the kernel's connection file: its key runs code"),
    (".hermes_nb/config.yaml", [".hermes_nb"], "the hermes_nb home: approvals and rules"),
    (".hermes/.env", [".hermes"], "Hermes's home"),
]


@pytest.mark.parametrize(("rel", "visible", "why"), ALWAYS)
def test_no_choice_shows_the_kernels_keys(at_home: Home, hermes_home: Path, monkeypatch: pytest.MonkeyPatch,
                                          rel: str, visible: list[str], why: str) -> None:
    if rel.startswith(".hermes_nb"):
        monkeypatch.setenv("HERMES_NB_HOME", str(at_home.home / ".hermes_nb"))
        hermes_home = at_home.home / ".hermes_nb"
        hermes_home.mkdir()
    (at_home.home / rel).parent.mkdir(parents=True, exist_ok=True)
    (at_home.home / rel).write_text("s3cr3t-kernel\n")
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"sandbox": {"visible": visible}}))
    assert "s3cr3t-kernel" not in call("read_file", path=rel), why


@pytest.mark.parametrize("bad", [".kaggle", {"a": 1}, [1, None, ""], [".."], ["/"], ["~"], ["/etc"]])
def test_a_malformed_or_outside_visible_shows_nothing(at_home: Home, hermes_home: Path, bad: object) -> None:
    """Fail closed: only names inside the home are shown; the home itself, its parent, other places, not."""
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"sandbox": {"visible": bad}}))
    for i, (rel, _why) in enumerate(SECRETS):
        assert _token(i) not in call("read_file", path=rel), (bad, rel)


# -- the sandbox ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Cmd:
    command: str  # REL, ABS and I are filled in per secret; a command without them runs once for all
    why: str


COMMANDS = [
    Cmd("cat ~/REL", "the home's dot-entry by its tilde"),
    Cmd("cat ABS", "by its absolute path"),
    Cmd("cat proj/../REL", "up out of a visible folder"),
    Cmd("cat ./REL", "relative to the workspace, which is the home"),
    Cmd("ln -s ~/REL proj/s-I && cat proj/s-I", "a link the command makes into the dot-entry"),
    Cmd("cat proj/pre-I", "a link already in the workspace"),
    Cmd("cat -- $(readlink -f proj/pre-I)", "the path a link names, resolved inside"),
    Cmd("ln ~/REL proj/h-I 2>/dev/null; cat proj/h-I", "a hard link to the file, made inside"),
    Cmd("cp -r ~/REL proj/c-I 2>/dev/null; cat proj/c-I", "a copy into a visible folder"),
    Cmd("cat ~/.*/* ~/.*/*/* ~/.*/*/*/* ~/.* 2>/dev/null", "glob patterns through every dot-entry"),
    Cmd("grep -rsh s3cr3t ~", "a recursive search of the home"),
    Cmd("find ~ -type f -exec cat {} + 2>/dev/null", "find walks every folder"),
    Cmd("tar -cf - -C ~ . 2>/dev/null | tar -xOf - 2>/dev/null", "an archive of the whole home"),
]


def _run_all(h: Home, cmd: Cmd) -> str:
    if not any(mark in cmd.command for mark in ("REL", "ABS", "-I")):
        return str(run_command(cmd.command, timeout=60))
    parts = [cmd.command.replace("REL", rel).replace("ABS", str(h.home / rel)).replace("I", str(i))
             for i, (rel, _w) in enumerate(SECRETS)]
    return str(run_command("; ".join(f"{{ {p}; }}" for p in parts) + "; true", timeout=60))


@pytest.mark.sandbox
@pytest.mark.parametrize("cmd", COMMANDS, ids=[f"cmd-{n}" for n in range(len(COMMANDS))])
def test_a_sandboxed_command_sees_no_dot_entry_of_the_home(at_home: Home, cmd: Cmd) -> None:
    require_bwrap()
    out = _run_all(at_home, cmd)
    leaked = [SECRETS[i][0] for i in range(len(SECRETS)) if _token(i) in out]
    assert leaked == [], (cmd.why, leaked, out[-400:])


@pytest.mark.sandbox
@pytest.mark.parametrize("cmd", COMMANDS, ids=[f"cmd-{n}" for n in range(len(COMMANDS))])
def test_without_the_view_mounts_the_command_reads_them(at_home: Home, cmd: Cmd,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    require_bwrap()
    _no_view_mounts(monkeypatch)
    out = _run_all(at_home, cmd)
    missed = [SECRETS[i][0] for i in range(len(SECRETS)) if _token(i) not in out]
    assert missed == [], (cmd.why, missed, out[-400:])


OUTSIDE_COMMANDS = [
    Cmd("cat ../thesis.txt", "a plain file of the home beside the workspace"),
    Cmd("cat ~/.pgpass ~/.aws/credentials", "dot-files of the home"),
    Cmd("ls -a ~ ..; cat ~/* 2>/dev/null", "listing and globbing the home"),
    Cmd("grep -rsh s3cr3t ..", "searching upwards"),
]


@pytest.mark.sandbox
@pytest.mark.parametrize("cmd", OUTSIDE_COMMANDS, ids=[f"out-{n}" for n in range(len(OUTSIDE_COMMANDS))])
def test_a_sandboxed_command_sees_nothing_of_the_home_outside(inside_home: Home, cmd: Cmd,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    require_bwrap()
    inside = run_command(cmd.command, timeout=60)
    assert "s3cr3t-" not in inside["stdout"] and "thesis" not in inside["stdout"], (cmd.why, inside)
    _no_view_mounts(monkeypatch)
    outside = run_command(cmd.command, timeout=60)
    assert "s3cr3t-" in outside["stdout"] or "thesis" in outside["stdout"], (cmd.why, outside)


@pytest.mark.sandbox
def test_visible_shows_in_the_sandbox_too(at_home: Home, hermes_home: Path) -> None:
    require_bwrap()
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"sandbox": {"visible": [".kaggle", ".config/git"]}}))
    out = _run_all(at_home, COMMANDS[0])
    shown = [SECRETS[i][0] for i in range(len(SECRETS)) if _token(i) in out]
    assert shown == [".kaggle/kaggle.json", ".config/git/credentials"], out


@pytest.mark.sandbox
def test_a_writable_folder_inside_a_dot_entry_stays_writable(at_home: Home, hermes_home: Path) -> None:
    """``sandbox.writable`` names ~/.cache/huggingface: it is bound back inside the hidden ~/.cache."""
    require_bwrap()
    (at_home.home / ".cache/huggingface").mkdir(parents=True)
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"sandbox": {"writable": ["~/.cache/huggingface"]}}))
    result = run_command("echo model > ~/.cache/huggingface/m && cat ~/.cache/some-tool/token", timeout=30)
    assert (at_home.home / ".cache/huggingface/m").read_text() == "model\n"
    assert _token(18) not in result["stdout"], result


# -- the interpreter, wherever it lives --------------------------------------------------------------------------

RUN = """
import json, os, sys
from hermes_nb.tools.safety.sandbox import bwrap
from hermes_nb.tools.terminal_tool import run_command
if os.environ.get("NO_VIEW"):
    bwrap.view_mounts = lambda seen, writable=(): []
out = run_command(sys.executable + " -c 'import sys; print(sys.prefix)'; touch " + sys.prefix + "/planted; "
                  "ls " + os.path.dirname(sys.prefix), timeout=60)
print(json.dumps(out))
"""


def _venv(where: Path) -> Path:
    """A venv without pip whose Python finds hermes_nb through this one's site-packages (as a clone's does)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, capture_output=True)
    site = next(where.glob("lib/python*/site-packages"))
    (site / "hermes_nb_here.pth").write_text(f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    return where


def _sandboxed_from(venv: Path, ws: Path, home: Path, hermes_home: Path, *, no_view: bool = False) -> dict:
    env = {**os.environ, "HOME": str(home), "HERMES_NB_WORKSPACE": str(ws), "HERMES_NB_HOME": str(hermes_home)}
    env.pop("NO_VIEW", None)
    if no_view:
        env["NO_VIEW"] = "1"
    done = subprocess.run([str(venv / "bin/python"), "-c", RUN], env=env, cwd=ws, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.sandbox
def test_an_interpreter_under_tmp_runs_in_the_sandbox(tmp_path: Path, hermes_home: Path) -> None:
    """A fresh clone under /tmp: the sandbox empties /tmp, and the kernel's own .venv/bin/python must still run
    (before: "bwrap: execvp .../.venv/bin/python: No such file"), read-only."""
    require_bwrap()
    assert str(tmp_path).startswith(("/tmp/", "/var/tmp/")) or os.environ.get("TMPDIR"), tmp_path
    venv = _venv(tmp_path / "clone" / ".venv")
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    result = _sandboxed_from(venv, ws, home, hermes_home)
    assert result["stdout"].splitlines()[0] == str(venv), result
    assert "Read-only file system" in result["stderr"] and not (venv / "planted").exists(), result
    without = _sandboxed_from(venv, ws, home, hermes_home, no_view=True)
    assert "No such file" in without["stderr"] and str(venv) not in without["stdout"], without


@pytest.mark.sandbox
def test_an_interpreter_inside_a_hidden_dot_entry_runs_and_its_siblings_stay_hidden(tmp_path: Path,
                                                                                    hermes_home: Path) -> None:
    """The workspace is the home and the kernel's venv lives in ~/.venvs/k: the venv is shown read-only, the
    other venvs in ~/.venvs are not."""
    require_bwrap()
    home = tmp_path / "me"
    venv = _venv(home / ".venvs" / "k")
    (home / ".venvs" / "other").mkdir()
    result = _sandboxed_from(venv, home, home, hermes_home)
    lines = result["stdout"].splitlines()
    assert lines[0] == str(venv) and lines[1:] == ["k"], result
    assert not (venv / "planted").exists()


# -- the Landlock fallback (where bubblewrap cannot run): contents, not names ------------------------------------

def _landlock(hermes_home: Path, monkeypatch: pytest.MonkeyPatch, *, bounded: bool) -> None:
    from hermes_nb.tools.safety.sandbox import box as sandbox

    if sandbox.landlock_abi() < 1:
        pytest.skip("this kernel has no Landlock")
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"sandbox": {"mechanism": "landlock"}}))
    assert sandbox.status().mechanism.startswith("landlock")
    if not bounded:  # Landlock as it was: writes bounded, reads not
        monkeypatch.setattr(sandbox, "_readable", lambda workspace, tmp: None)


@pytest.mark.sandbox
@pytest.mark.parametrize("cmd", COMMANDS, ids=[f"cmd-{n}" for n in range(len(COMMANDS))])
def test_under_landlock_a_command_reads_no_dot_entry_of_the_home(at_home: Home, cmd: Cmd, hermes_home: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _landlock(hermes_home, monkeypatch, bounded=True)
    out = _run_all(at_home, cmd)
    leaked = [SECRETS[i][0] for i in range(len(SECRETS)) if _token(i) in out]
    assert leaked == [], (cmd.why, leaked, out[-400:])
    assert "mine" in run_command("cat proj/notes.txt")["stdout"]  # the rest of the workspace is read


@pytest.mark.sandbox
@pytest.mark.parametrize("cmd", COMMANDS, ids=[f"cmd-{n}" for n in range(len(COMMANDS))])
def test_under_landlock_without_read_rules_the_command_reads_them(at_home: Home, cmd: Cmd, hermes_home: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    _landlock(hermes_home, monkeypatch, bounded=False)
    out = _run_all(at_home, cmd)
    missed = [SECRETS[i][0] for i in range(len(SECRETS)) if _token(i) not in out]
    assert missed == [], (cmd.why, missed, out[-400:])


@pytest.mark.sandbox
@pytest.mark.parametrize("cmd", OUTSIDE_COMMANDS, ids=[f"out-{n}" for n in range(len(OUTSIDE_COMMANDS))])
def test_under_landlock_nothing_of_the_home_outside_is_read(inside_home: Home, cmd: Cmd, hermes_home: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    _landlock(hermes_home, monkeypatch, bounded=True)
    inside = run_command(cmd.command + f"; {sys.executable} -c 'print(6 * 7)'", timeout=60)
    assert "s3cr3t-" not in inside["stdout"] and "42" in inside["stdout"], (cmd.why, inside)
    _landlock(hermes_home, monkeypatch, bounded=False)
    assert "s3cr3t-" in run_command(cmd.command, timeout=60)["stdout"], cmd.why


def test_a_writable_folder_in_the_home_is_read_by_the_file_tools_too(inside_home: Home, hermes_home: Path) -> None:
    """What the sandbox binds writable (``sandbox.writable``), the file tools read: one view for both."""
    (inside_home.home / ".cache/huggingface").mkdir(parents=True)
    (inside_home.home / ".cache/huggingface/model.txt").write_text("weights\n")
    assert "refusing to read" in call("read_file", path="~/.cache/huggingface/model.txt")
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"sandbox": {"writable": ["~/.cache/huggingface"]}}))
    assert "weights" in call("read_file", path="~/.cache/huggingface/model.txt")
    assert _token(18) not in call("read_file", path="~/.cache/some-tool/token")
