"""The terminal tool: output and exit codes, the approval gate, and killing the whole process group."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

import hermes_nb.tools.file_tools  # noqa: F401  (registers write_file)
import hermes_nb.tools.terminal_tool as terminal_tool
from hermes_nb.tools.registry import registry
from tests.support.bubblewrap import live_pids


@pytest.fixture(autouse=True)
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(tmp_path))
    return tmp_path.resolve()


def run(**args: object) -> dict:
    return json.loads(registry.dispatch("terminal", args))


def test_output_and_exit_code(ws: Path) -> None:
    result = run(command="pwd; echo err >&2; cat missing.txt")
    assert result == {"output": f"{ws}\nerr\ncat: missing.txt: No such file or directory", "exit_code": 1,
                      "error": None,  # Hermes's shape; the streams apart beside it
                      "stdout": f"{ws}\n", "timed_out": False,
                      "stderr": "err\ncat: missing.txt: No such file or directory\n"}
    assert terminal_tool.run_command("exit 3")["exit_code"] == 3


def test_read_only_command_needs_no_approval(ws: Path) -> None:
    (ws / "a.txt").write_text("x")
    assert run(command="ls")["stdout"] == "a.txt\n"


def test_dangerous_command_blocked_without_callback(ws: Path) -> None:
    (ws / "keep.txt").write_text("x")
    result = run(command="rm keep.txt")
    assert result["blocked"] is True
    assert "BLOCKED" in result["error"] and "Do not retry" in result["error"]
    assert (ws / "keep.txt").exists()


def test_dangerous_command_runs_when_approved(ws: Path) -> None:
    asked: list[tuple[str, str]] = []

    def approve(command: str, key: str, description: str) -> str:
        asked.append((command, key))
        return "once"

    (ws / "gone.txt").write_text("x")
    result = json.loads(registry.dispatch("terminal", {"command": "rm gone.txt"}, approval_callback=approve))
    assert result["exit_code"] == 0
    assert [command for command, _ in asked] == ["rm gone.txt"]
    assert not (ws / "gone.txt").exists()


def test_output_is_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(terminal_tool, "OUTPUT_CAP", 1000)
    result = terminal_tool.run_command("head -c 5000 /dev/zero | tr '\\0' a")
    assert result["stdout"].startswith("a" * 1000)
    assert "[output truncated: 4000 more bytes not shown" in result["stdout"]


SLEEP = f"{sys.executable} -c 'import time; time.sleep(100)'"


def _gone(token: str) -> bool:
    deadline = time.monotonic() + 10  # SIGKILL was sent when the call ended; dying may take a moment
    while live_pids(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not live_pids(token)


def test_timeout_kills_the_process_group(ws: Path) -> None:
    started = time.monotonic()
    # 5 s, not 1: the sandbox and bash must start and print within it, which a busy 2-core runner can miss
    result = terminal_tool.run_command(f"{SLEEP} t-one-{os.getpid()} & {SLEEP} t-two-{os.getpid()} & "
                                       f"echo started; wait", timeout=5)
    assert result["timed_out"] is True and result["stdout"] == "started\n"
    assert result["exit_code"] is not None and result["exit_code"] < 0
    assert "timed out after 5 s" in result["stderr"]
    assert time.monotonic() - started < 30
    assert _gone(f"t-one-{os.getpid()}") and _gone(f"t-two-{os.getpid()}")


def test_background_leftovers_do_not_hang_the_tool(ws: Path) -> None:
    token = f"t-left-{os.getpid()}"
    result = terminal_tool.run_command(f"{SLEEP} {token} & echo done", timeout=30)
    assert result["stdout"] == "done\n" and result["timed_out"] is False
    assert _gone(token)


def test_registration() -> None:
    entry = registry.get_entry("terminal")
    assert entry.toolset == "terminal" and entry.emoji
    assert not entry.read_only and not entry.interactive and not entry.needs_approval


def test_a_bare_repository_the_model_wrote_cannot_run_programs(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every step is allowed without a person: write_file lays out a bare repository whose config names an
    # external diff program, and `git diff --no-index` is read-only. Git must not pick that config up.
    import shutil

    if shutil.which("git") is None:
        pytest.fail("git is needed for this test")
    for name, text in [("evil/HEAD", "ref: refs/heads/main\n"), ("a", "a\n"), ("b", "b\n"),
                       ("evil/config", "[core]\n\tbare = true\n[diff]\n\texternal = touch ../PWNED\n")]:
        assert "bytes_written" in registry.dispatch("write_file", {"path": name, "content": text})
    (ws / "evil" / "refs").mkdir()
    (ws / "evil" / "objects").mkdir()
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")  # the person's own command-scope settings survive
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "color.ui")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "never")
    result = run(command="cd evil && git diff --no-index ../a ../b; git config --get color.ui")
    assert not (ws / "PWNED").exists(), result
    assert result["stdout"].endswith("never\n"), result


def test_a_repository_config_the_model_wrote_cannot_run_an_fsmonitor(ws: Path) -> None:
    import subprocess

    subprocess.run(["git", "init", "-q", str(ws / "repo")], check=True)
    (ws / "repo" / "mon.sh").write_text("#!/bin/sh\ntouch ../ran\n")
    (ws / "repo" / "mon.sh").chmod(0o755)
    subprocess.run(["git", "-C", str(ws / "repo"), "config", "core.fsmonitor", "./mon.sh"], check=True)
    asked: list[str] = []
    result = json.loads(registry.dispatch("terminal", {"command": "cd repo && git status --short"},
                                          approval_callback=lambda *a: asked.append(a[0]) or "once"))
    assert asked and result["exit_code"] == 0  # a config naming a program asks (the classifier); said yes to,
    assert not (ws / "ran").exists()  # the command-scope guard still keeps git from running it
    # the guard is what stops it: without the command-scope setting git runs the program
    subprocess.run(["git", "status", "--short"], cwd=ws / "repo", capture_output=True)
    assert (ws / "ran").exists()
