"""A sandboxed command writes an overlay, and only what the landing policy lets through reaches the workspace.

Each row is an attack a command makes after it was approved (``run_command`` directly, as if the person said
yes), grouped by class with the reason it is one. It runs twice: once with the sandbox switched off, where its
effect must happen (the row is honest), and once sandboxed, where the overlay's write-set goes through the
landing policy and the effect must not happen. The effect is what the person's own next step would suffer:
their next ``import``, ``git status`` or commit, pip or npx run, or a write that follows a link out."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from hermes_nb.tools.safety.approvals.gate import use_approver
from hermes_nb.tools.safety.sandbox import box as sandbox
from hermes_nb.tools.safety.sandbox import overlay
from hermes_nb.tools.safety.writes import lander
from hermes_nb.tools.terminal_tool import run_command
from tests.support.bubblewrap import require_bwrap
from tests.tools.test_sandbox import World, _make_world

pytestmark = pytest.mark.sandbox


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    w = _make_world(tmp_path, monkeypatch)
    # The home elsewhere: with the workspace holding it, the home's dot-entries are hidden before any write
    # (tests/tools/test_hidden.py); here that layer has failed and the landing policy alone must hold.
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "elsewhere"))
    monkeypatch.chdir(w.ws)  # the notebook folder: the kernel imports from it
    (w.ws / "utils.py").write_text("def helper():\n    return 1\n")
    (w.ws / "prep.py").write_text(PREP.replace("OUT", str(w.out)))
    (w.out / "target").write_text("outside\n")
    w.out.joinpath("target").chmod(0o644)
    yield w
    w.listener.close()
    w.victim.kill()
    w.victim.wait()


# The measured attack: bytecode for the person's utils.py, stamped with its mtime and size, so the next
# `import utils` runs the payload while utils.py itself is unchanged.
PREP = """import importlib._bootstrap_external as ext, importlib.util, os, sys
st = os.stat("utils.py")
code = compile("open('OUT/pyc', 'w')", "utils.py", "exec")
path = importlib.util.cache_from_source("utils.py")
os.makedirs(os.path.dirname(path), exist_ok=True)
open(path, "wb").write(ext._code_to_timestamp_pyc(code, st.st_mtime, st.st_size))
"""


def _person(w: World, *argv: str, cwd: str = "") -> subprocess.CompletedProcess[str]:
    """The person's own next step, unsandboxed, without the terminal's git guard."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_CONFIG")}
    return subprocess.run(argv, cwd=w.ws / cwd, capture_output=True, text=True, check=False, env=env, timeout=60)


def _commit(w: World, where: str = "") -> None:
    _person(w, "git", "add", "-A", cwd=where)
    _person(w, "git", "-c", "user.name=p", "-c", "user.email=p@x", "commit", "-qm", "p", cwd=where)


def _imports(w: World, name: str, marker: str) -> bool:
    """Whether the person's next ``import name`` runs the model's code (it leaves ``marker``)."""
    _person(w, sys.executable, "-c", f"import {name}")
    return (w.out / marker).exists()


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


@dataclass(frozen=True)
class Row:
    cls: str
    command: str
    effect: Callable[[World], bool]  # True when the attack worked
    why: str


COMMONDIR = ("mkdir -p data/c && cp -r .git/objects .git/refs data/c/ && printf '[core]\\n\\trepositoryformatversion = 0"
             "\\n\\tfsmonitor = \"touch OUT/fsmonitor; false\"\\n' > data/c/config && echo ../data/c > .git/commondir")
HOOK = "printf '#!/bin/sh\\ntouch OUT/HOOKNAME\\n' > WHERE/.git/hooks/pre-commit && chmod +x WHERE/.git/hooks/pre-commit"

ROWS = [
    # bytecode
    Row("bytecode", f"{sys.executable} prep.py", lambda w: _imports(w, "utils", "pyc"),
        "a stamped .pyc runs at the next `import utils`; utils.py is unchanged"),
    Row("bytecode", "echo 'open(\"OUT/sourceless\",\"w\")' > e.py && " + sys.executable
        + " -c 'import py_compile; py_compile.compile(\"e.py\", cfile=\"sourceless.pyc\")' && rm e.py",
        lambda w: (_person(w, sys.executable, "-c", "import sourceless"), (w.out / "sourceless").exists())[1],
        "a sourceless .pyc in an import folder is a module of its own"),
    # git, at any depth and through any file of .git
    Row("git", COMMONDIR, lambda w: (_person(w, "git", "status"), (w.out / "fsmonitor").exists())[1],
        ".git/commondir moves git's config to a folder naming core.fsmonitor: the next plain `git status` runs it"),
    Row("git", "git init -q data/raw/2024 && " + HOOK.replace("WHERE", "data/raw/2024").replace("HOOKNAME", "deep")
        + " && echo x > data/raw/2024/f", lambda w: (_commit(w, "data/raw/2024"), (w.out / "deep").exists())[1],
        "a fresh repository below depth 2 with a hook (the old scan stopped at depth 2)"),
    Row("git", "git init -q a/b/c/d/e && " + HOOK.replace("WHERE", "a/b/c/d/e").replace("HOOKNAME", "depth5")
        + " && echo x > a/b/c/d/e/f", lambda w: (_commit(w, "a/b/c/d/e"), (w.out / "depth5").exists())[1],
        "the same at depth 5"),
    Row("git", "git config core.fsmonitor 'touch OUT/config; false'",
        lambda w: (_person(w, "git", "status"), (w.out / "config").exists())[1], "the repository's own config"),
    Row("git", "echo '* diff=x' > .gitattributes", lambda w: (w.ws / ".gitattributes").exists(),
        "attributes pick the diff drivers and filters git runs"),
    # installer configuration read by the uvx / npx / pip that start MCP servers and environments here
    *(Row("installer", f"mkdir -p sub && echo 'index-url = http://127.0.0.1:9/simple' > {name}",
          lambda w, name=name: (w.ws / name).exists(), f"{name}: where packages come from and what runs at install")
      for name in ("pip.conf", "pip.ini", "uv.toml", ".npmrc", ".pypirc", ".condarc", "sub/uv.toml")),
    # links out of the overlay
    Row("links", "ln -s OUT/target lnk", lambda w: (w.ws / "lnk").is_symlink(),
        "a link out: the person's next write to lnk changes a file outside the workspace"),
    Row("links", "mkdir -p d && ln -s ../../outside d/up", lambda w: (w.ws / "d/up").is_symlink(),
        "a relative link whose .. climb out"),
    Row("links", "ln OUT/target hard 2>/dev/null || ln -s OUT/target hard",
        lambda w: _same_file(w.ws / "hard", w.out / "target"),
        "a hard (or, where the sandbox refuses, symbolic) link to a file outside: writing it writes that file"),
    Row("links", "ln -s .git/hooks h && printf '#!/bin/sh\\ntouch OUT/viahook\\n' > h/pre-commit && chmod +x h/pre-commit",
        lambda w: (_commit(w), (w.out / "viahook").exists())[1], "a link inside, into .git, written through"),
    # renames onto a refused path
    Row("rename", "printf 'touch OUT/rc\\n' > x && mv x .bashrc", lambda w: "touch" in (w.ws / ".bashrc").read_text(),
        "renamed onto a shell start-up file"),
    Row("rename", "printf '#!/bin/sh\\ntouch OUT/mvhook\\n' > h && chmod +x h && mv h .git/hooks/pre-commit",
        lambda w: (_commit(w), (w.out / "mvhook").exists())[1], "renamed into .git/hooks"),
    Row("rename", "mv .git .git-old && mkdir .git && cp -r .git-old/* .git/ && printf '[core]\\n\\trepositoryformatversion"
        " = 0\\n\\tfsmonitor = \"touch OUT/swap; false\"\\n' > .git/config",
        lambda w: (_person(w, "git", "status"), (w.out / "swap").exists())[1], ".git swapped for a copy"),
    # deletions of refused paths
    Row("delete", "rm -rf .git", lambda w: not (w.ws / ".git").exists(), "the person's history"),
    Row("delete", "rm -f .venv/bin/pip .venv/pyvenv.cfg", lambda w: not (w.ws / ".venv/pyvenv.cfg").exists(),
        "an environment's programs and its marker"),
    Row("delete", "rm .bashrc", lambda w: not (w.ws / ".bashrc").exists(), "a start-up file"),
    # environments, .pth, start-up of IPython and the shell
    Row("environment", "echo 'import os; os.system(\"touch OUT/pth\")' > .venv/lib/python3.11/site-packages/x.pth",
        lambda w: (w.ws / ".venv/lib/python3.11/site-packages/x.pth").exists(), "runs at every start of the venv"),
    Row("environment", "rm .venv/pyvenv.cfg && echo evil > .venv/bin/activate.extra",
        lambda w: (w.ws / ".venv/bin/activate.extra").exists(),
        "the marker deleted in the same write-set: still the environment it was before"),
    Row("environment", "mkdir -p env2/conda-meta env2/bin && echo x > env2/bin/python",
        lambda w: (w.ws / "env2/bin/python").exists(), "a conda environment's interpreter"),
    Row("ipython", "mkdir -p .ipython/profile_default/startup && echo 'open(\"OUT/ip\",\"w\")' > "
        ".ipython/profile_default/startup/0.py", lambda w: (w.ws / ".ipython/profile_default/startup/0.py").exists(),
        "IPython runs start-up files at the next kernel"),
    Row("ipython", "echo 'c = get_config()' > ipython_config.py", lambda w: (w.ws / "ipython_config.py").exists(),
        "IPython loads config from its working folder"),
    Row("special", "mkfifo pipe", lambda w: os.path.lexists(w.ws / "pipe"), "a fifo hangs its next reader"),
]


def _run(w: World, command: str) -> dict:
    return dict(run_command(command.replace("OUT", str(w.out)), timeout=60))


@pytest.mark.parametrize("row", ROWS, ids=[f"{r.cls}-{i}" for i, r in enumerate(ROWS)])
def test_without_the_overlay_the_row_does_its_harm(world: World, row: Row) -> None:
    (world.home / "config.yaml").write_text(yaml.safe_dump({"sandbox": {"enabled": False}}))
    _run(world, row.command)
    assert row.effect(world), (row.cls, row.why)


@pytest.mark.parametrize("row", ROWS, ids=[f"{r.cls}-{i}" for i, r in enumerate(ROWS)])
def test_the_overlay_and_the_landing_policy_stop_the_row(world: World, row: Row) -> None:
    require_bwrap()
    assert sandbox.status().writes == sandbox._OVERLAY, sandbox.status().writes
    with use_approver(lambda subject, key, description: "deny"):
        result = _run(world, row.command)
    assert "was not landed" in result["stderr"] or "was not deleted" in result["stderr"], (row.why, result)
    assert not row.effect(world), (row.cls, row.why, result)


def test_what_was_refused_is_kept_in_the_home_and_named(world: World) -> None:
    require_bwrap()
    result = _run(world, "echo x > .npmrc && mkdir -p a/b && git init -q a/b && echo fine > data.txt")
    assert (world.ws / "data.txt").read_text() == "fine\n"
    kept = world.home / "kept-aside"
    (where,) = kept.iterdir()
    assert (where / ".npmrc").read_text() == "x\n" and (where / "a/b/.git/HEAD").exists()
    assert f".npmrc was not landed: .npmrc configures an installer (package sources, scripts); kept at {where}/.npmrc" \
        in result["stderr"]
    assert "a/b/.git (and " in result["stderr"]  # a refused folder is said once, with a count
    assert not (world.ws / ".npmrc").exists() and not (world.ws / "a/b/.git").exists()


def test_a_module_the_command_writes_asks_with_its_diff(world: World) -> None:
    """h2 is httpx's optional import: nothing installed is shadowed, the kernel would still import it."""
    require_bwrap()
    asked: list[tuple[str, str]] = []

    def answer(yes: bool) -> Callable[[str, str, str], str]:
        def approver(subject: str, key: str, description: str) -> str:
            asked.append((subject, description))
            return "once" if yes else "deny"
        return approver

    command = "printf 'open(\"OUT/h2\", \"w\")\\n' > h2.py && echo 'def helper():\n    return 2' > utils.py"
    with use_approver(answer(False)):
        result = _run(world, command)
    assert len(asked) == 2 and "through an overlay" in asked[0][1] and "+open(" in asked[0][1], asked
    assert "-    return 1" in asked[1][1] and "+    return 2" in asked[1][1]
    assert not (world.ws / "h2.py").exists() and "return 1" in (world.ws / "utils.py").read_text(), result
    asked.clear()
    with use_approver(answer(False)):  # a package declined leaves no empty folder to import as a namespace
        _run(world, "mkdir -p socksio/sub && echo x=1 > socksio/__init__.py && echo y > socksio/sub/data.txt")
    assert len(asked) == 1 and not (world.ws / "socksio" / "__init__.py").exists()
    assert (world.ws / "socksio/sub/data.txt").exists()  # a folder that holds what landed stays
    _run(world, "mkdir h3 && echo x=1 > h3/__init__.py")
    assert not (world.ws / "h3").exists()
    assert not _imports(world, "h2", "h2")
    recorded: list[dict] = []
    world.out.joinpath("h2").unlink(missing_ok=True)
    with use_approver(answer(True)):
        original = lander._checkpoint
        try:
            lander._checkpoint = lambda **kw: recorded.append(kw)  # the seam to the checkpoint store
            _run(world, command)
        finally:
            lander._checkpoint = original
    assert (world.ws / "h2.py").exists() and "return 2" in (world.ws / "utils.py").read_text()
    assert sorted(recorded[0]["trusted"]) == sorted([str(world.ws / "h2.py"), str(world.ws / "utils.py")])


def test_ordinary_work_lands_exactly(world: World) -> None:
    """Created, changed, deleted, renamed, modes, a folder replaced: the workspace ends as the command left
    its view of it, and the call's record lists the files with their diffs."""
    require_bwrap()
    (world.ws / "old").mkdir()
    (world.ws / "old/a.txt").write_text("a\n")
    (world.ws / "gone.txt").write_text("bye\n")
    (world.ws / "swap").mkdir()
    (world.ws / "swap/inner").mkdir()
    (world.ws / "swap/inner/stale.txt").write_text("stale\n")
    command = ("echo new > made.txt && echo changed >> notes.txt && rm gone.txt && mv old renamed && "
               "chmod 700 renamed && echo '#!/bin/sh' > run.sh && chmod 755 run.sh && rm -r swap && "
               "mkdir -p swap/inner && echo fresh > swap/inner/new.txt && ln -s made.txt alias")
    from hermes_nb.tools.calls.call_hooks import call_context

    with call_context(tool_call_id="call-ordinary"):
        result = _run(world, command)
    assert result["exit_code"] == 0 and "not landed" not in result["stderr"], result
    ws = world.ws
    assert (ws / "made.txt").read_text() == "new\n" and (ws / "notes.txt").read_text().endswith("changed\n")
    assert not (ws / "gone.txt").exists() and not (ws / "old").exists()
    assert (ws / "renamed/a.txt").read_text() == "a\n" and (ws / "renamed").stat().st_mode & 0o777 == 0o700
    assert (ws / "run.sh").stat().st_mode & 0o777 == 0o755
    assert sorted(os.listdir(ws / "swap/inner")) == ["new.txt"]
    assert os.readlink(ws / "alias") == "made.txt"
    changes = {c.path: c for c in lander.take_changes("call-ordinary")}
    assert changes["made.txt"].kind == "created" and changes["gone.txt"].kind == "deleted"
    assert "+changed" in (changes["notes.txt"].diff or "") and changes["swap/inner/stale.txt"].kind == "deleted"


def test_the_write_set_is_read_from_the_upper_folder_alone(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """No scan of the workspace: the reader looks at the workspace only for the entries the upper folder names."""
    require_bwrap()
    looked: list[str] = []
    real_listdir = os.listdir

    def listdir(path: object = ".") -> list[str]:
        looked.append(str(path))
        return real_listdir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(overlay.os, "listdir", listdir)
    _run(world, "echo a > one.txt")
    assert not any(p.startswith(str(world.ws)) for p in looked), looked


def test_the_prompt_and_the_doctor_say_how_writes_land(monkeypatch: pytest.MonkeyPatch) -> None:
    require_bwrap()
    from hermes_nb.magics.tools import _doctor
    from hermes_nb.tools.approval import command_ask

    state = sandbox.status()
    assert "overlay" in state.detail and state.writes == sandbox._OVERLAY
    ask = command_ask("rm -rf build")
    assert ask is not None and state.writes in ask.description
    monkeypatch.setattr(overlay, "probe", lambda: "no user namespaces")
    state = sandbox.status()
    assert state.writes.startswith("no overlay (no user namespaces): a full-depth scan")
    assert state.writes in command_ask("rm -rf build").description  # type: ignore[union-attr]
    rows = [r for r in _doctor().rows if r[1] == "sandbox"]
    assert "full-depth scan" in rows[0][3]


def test_without_an_overlay_a_full_depth_scan_moves_refused_writes_out(world: World,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The fallback (bubblewrap without user namespaces for an overlay, Landlock, not Linux): no depth limit."""
    require_bwrap()
    monkeypatch.setattr(overlay, "probe", lambda: "no user namespaces")
    deep = "a/b/c/d/e/f/g"
    result = _run(world, f"git init -q {deep} && echo x > {deep}/data.txt && echo y > uv.toml && echo ok")
    assert result["stdout"] == "ok\n"
    assert not (world.ws / deep / ".git").exists() and (world.ws / deep / "data.txt").exists()
    assert not (world.ws / "uv.toml").exists() and "uv.toml was not landed" in result["stderr"]
    assert any((world.home / "kept-aside").glob(f"*/{deep}/.git/HEAD"))


def test_a_mark_the_reader_does_not_follow_fails_closed(tmp_path: Path) -> None:
    """redirect_dir and metacopy stay off; an upper folder carrying their marks is not guessed at."""
    ws, upper = tmp_path / "ws", tmp_path / "upper"
    ws.mkdir()
    (upper / "moved").mkdir(parents=True)
    (upper / "moved" / "a.txt").write_text("a\n")
    assert [c.kind for c in overlay.write_set(upper, ws).changes] == ["created", "created"]
    try:
        os.setxattr(upper / "moved", "user.overlay.redirect", b"/elsewhere")
    except OSError as exc:
        pytest.skip(f"this file system takes no user xattrs: {exc}")
    with pytest.raises(OSError, match="redirect or metacopy"):
        overlay.write_set(upper, ws)
