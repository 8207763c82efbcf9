"""``terminal``'s background jobs and the ``process`` tool (issue 33 item 2), through the registry as the model
calls them: each parameter, each action, the sandbox and the landing policy for a job's writes, the approval
gate judging a background command as a foreground one, a kill that leaves nothing behind, notices in the run.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import hermes_nb.tools.process_tool  # registers process
import hermes_nb.tools.terminal_tool  # noqa: F401  (registers terminal)
from hermes_nb.tools import jobs
from hermes_nb.tools.config import save_config
from hermes_nb.tools.registry import registry
from tests.support.bubblewrap import live_pids, require_bwrap

HERMES_BACKGROUND_KEYS = {"output", "session_id", "pid", "exit_code", "error"}  # terminal_tool.py 0.19.0
SLEEP = f"{sys.executable} -c 'import time; time.sleep(300)'"


@pytest.fixture(autouse=True)
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    require_bwrap()
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(tmp_path))
    yield tmp_path.resolve()
    jobs.end_all("test end")  # no test leaves a job behind


def command_only(subject: str, key: str, description: str) -> str:
    """Says yes to running a command, no to landing a file that asks (a module the kernel could import)."""
    return "deny" if key.startswith("landing") else "once"


def call(name: str, approve: bool = False, **args: Any) -> dict[str, Any]:
    kw = {"approval_callback": command_only} if approve else {}
    out = registry.dispatch(name, args, **kw)
    return json.loads(out) if isinstance(out, str) else out


def start(command: str, **args: Any) -> str:
    result = call("terminal", approve=True, command=command, background=True, **args)
    assert "session_id" in result, result
    return result["session_id"]


def wait(sid: str, timeout: int = 60) -> dict[str, Any]:
    result = call("process", action="wait", session_id=sid, timeout=timeout)
    assert result["status"] == "exited", result
    return result


def marked(token: str) -> list[int]:
    """The live processes given ``token`` as an argument of their own (not the shells and the bwrap whose
    script text merely holds it)."""
    from pathlib import Path as P

    found = []
    for pid in live_pids(token):
        try:
            if token.encode() in P(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
                found.append(pid)
        except OSError:
            pass
    return found


def started(token: str, count: int) -> None:
    deadline = time.monotonic() + 30
    while len(marked(token)) < count:
        assert time.monotonic() < deadline, f"the job did not start its {count} marked processes"
        time.sleep(0.05)


def gone(token: str) -> bool:
    deadline = time.monotonic() + 10  # killed already; the kernel may take a moment to reap
    while marked(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not marked(token)


class Notes(jobs.Inbox):
    """An inbox a test can wait on."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived = threading.Event()

    def put(self, line: str) -> None:
        super().put(line)
        self.arrived.set()


# -- terminal's parameters ------------------------------------------------------------------------------

def test_background_answers_at_once_with_hermes_keys() -> None:
    begun = time.monotonic()
    result = call("terminal", approve=True, command=SLEEP, background=True)
    assert time.monotonic() - begun < 20  # the job sleeps 300 s: the answer did not wait for it
    assert HERMES_BACKGROUND_KEYS <= set(result) and result["output"] == "Background process started"
    assert result["exit_code"] == 0 and result["error"] is None and result["session_id"].startswith("proc_")
    assert "hint" in result  # neither notify_on_complete nor watch_patterns: told how to learn the outcome
    assert call("process", action="poll", session_id=result["session_id"])["status"] == "running"


def test_command_and_its_output() -> None:
    sid = start("echo out; echo err >&2; exit 3")
    done = wait(sid)
    assert done["exit_code"] == 3 and done["completion_reason"] == "exited"
    assert set(done["output"].split()) == {"out", "err"}  # stdout and stderr together, as Hermes keeps them


def test_a_background_timeout_ends_the_job() -> None:
    sid = start(SLEEP, timeout=1)
    done = wait(sid)
    assert done["completion_reason"] == "timeout" and done["exit_code"] != 0


def test_a_foreground_timeout_over_the_limit_is_one_line() -> None:
    result = call("terminal", command="true", timeout=7200)
    assert "background=true" in result["error"] and "\n" not in result["error"]
    assert call("terminal", command="true", timeout=2.5)["error"]  # Hermes's type: an integer


def test_pty_gives_the_job_a_terminal() -> None:
    probe = "test -t 0 && test -t 1 && echo TTY || echo PIPES"
    assert "TTY" in wait(start(probe, pty=True))["output"]
    assert "PIPES" in wait(start(probe))["output"]
    assert "pty_note" in call("terminal", command="true", pty=True)  # a foreground command says it had pipes


def test_pty_falls_back_to_pipes_with_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    import pty

    def no_pty() -> tuple[int, int]:
        raise OSError("out of pseudo-terminals")

    monkeypatch.setattr(pty, "openpty", no_pty)
    result = call("terminal", approve=True, command="test -t 1 && echo TTY || echo PIPES", background=True,
                  pty=True)
    assert "out of pseudo-terminals" in result["pty_note"]
    assert "PIPES" in wait(result["session_id"])["output"]


WORKDIRS_INSIDE = [  # (workdir, the folder it names under the workspace, why it is inside)
    ("sub", "sub", "relative to the workspace root"),
    ("sub/deeper", "sub/deeper", "nested"),
    (".", "", "the root itself"),
    ("sub/../sub", "sub", "a climb that stays inside"),
    ("{ws}/sub", "sub", "absolute, inside"),
]


@pytest.mark.parametrize("background", [False, True], ids=["foreground", "background"])
@pytest.mark.parametrize(("workdir", "folder", "why"), WORKDIRS_INSIDE, ids=[r[2] for r in WORKDIRS_INSIDE])
def test_workdir_inside_the_workspace(ws: Path, background: bool, workdir: str, folder: str, why: str) -> None:
    (ws / "sub" / "deeper").mkdir(parents=True)
    args = {"command": "pwd", "workdir": workdir.format(ws=ws)}
    if background:
        out = wait(start(**args))["output"]
    else:
        out = call("terminal", **args)["stdout"]
    assert out.strip() == str(ws / folder) if folder else str(ws), why


WORKDIRS_OUTSIDE = [  # (workdir, why it is outside)
    ("/etc", "an absolute system folder"),
    ("..", "the workspace's parent"),
    ("sub/../..", "a climb through a real folder"),
    ("link-out", "a link inside leading outside"),
    ("link-out/..", "through that link, then up"),
    ("~", "the home (outside this workspace)"),
    ("/", "the root"),
]


@pytest.mark.parametrize("check", [False, True], ids=["without-check", "with-check"])
@pytest.mark.parametrize(("workdir", "why"), WORKDIRS_OUTSIDE, ids=[r[1] for r in WORKDIRS_OUTSIDE])
def test_workdir_outside_the_workspace_is_one_line(ws: Path, tmp_path_factory: pytest.TempPathFactory,
                                                    monkeypatch: pytest.MonkeyPatch, check: bool, workdir: str,
                                                    why: str) -> None:
    (ws / "sub").mkdir()
    (ws / "link-out").symlink_to(tmp_path_factory.mktemp("elsewhere"))
    if not check:  # without the check the folder is taken as given: the command runs outside the workspace
        from hermes_nb.tools import terminal_tool

        monkeypatch.setattr(terminal_tool, "resolve_workdir",
                            lambda w, root: Path(os.path.realpath(root / os.path.expanduser(w))))
    for result in (call("terminal", approve=True, command="pwd", workdir=workdir),
                   call("terminal", approve=True, command="pwd", workdir=workdir, background=True)):
        if check:
            assert "outside the workspace" in result["error"] and "\n" not in result["error"], why
            assert "session_id" not in result
        else:
            out = result.get("stdout") if "stdout" in result else wait(result["session_id"])["output"]
            assert out.strip() != str(ws), why  # it ran (or tried to run) in a folder outside
    assert not [j for j in jobs.jobs() if not j.exited and check]


def test_workdir_must_be_a_folder(ws: Path) -> None:
    (ws / "f.txt").write_text("x")
    assert "not a folder" in call("terminal", command="pwd", workdir="f.txt")["error"]
    assert "not a folder" in call("terminal", command="pwd", workdir="missing", background=True)["error"]


def test_notify_on_complete_is_a_notice_for_the_run_that_started_it() -> None:
    notes = Notes()
    undo = jobs.use_inbox(notes)
    try:
        quiet = start("echo a")
        told = start("echo b", notify_on_complete=True)
    finally:
        undo()
    wait(quiet)
    wait(told)
    assert notes.arrived.wait(10)
    lines = notes.drain()
    assert len(lines) == 1 and told in lines[0] and "ended" in lines[0] and quiet not in lines[0]


def test_watch_patterns_are_a_notice_when_a_line_holds_one() -> None:
    notes = Notes()
    undo = jobs.use_inbox(notes)
    try:
        sid = start(f"echo starting; echo 'server READY on 8000'; {SLEEP}", watch_patterns=["READY"])
    finally:
        undo()
    assert notes.arrived.wait(30)
    (line,) = notes.drain()
    assert sid in line and "READY on 8000" in line
    assert call("process", action="poll", session_id=sid)["status"] == "running"  # told while it runs


def test_notify_and_watch_together_drop_watch_as_hermes_does() -> None:
    result = call("terminal", approve=True, command="echo READY", background=True, notify_on_complete=True,
                  watch_patterns=["READY"])
    assert "watch_patterns_ignored" in result and result["notify_on_complete"] is True
    assert "watch_patterns" not in result


# -- process's actions ------------------------------------------------------------------------------------

def test_list_shows_every_job_with_hermes_keys() -> None:
    one, two = start(SLEEP), start("echo done")
    wait(two)
    listed = {p["session_id"]: p for p in call("process", action="list")["processes"]}
    assert {one, two} <= set(listed)
    assert {"session_id", "command", "cwd", "pid", "started_at", "uptime_seconds", "status",
            "output_preview"} <= set(listed[one])
    assert listed[one]["status"] == "running" and listed[two]["status"] == "exited"
    assert listed[two]["exit_code"] == 0


def test_poll_running_then_exited() -> None:
    sid = start("read x; echo got $x")
    running = call("process", action="poll", session_id=sid)
    assert running["status"] == "running" and "exit_code" not in running
    call("process", action="submit", session_id=sid, data="it")
    wait(sid)
    done = call("process", action="poll", session_id=sid)
    assert done["status"] == "exited" and done["exit_code"] == 0 and "got it" in done["output_preview"]
    assert {"completion_reason", "termination_source", "uptime_seconds", "pid", "command"} <= set(done)


def test_log_pages_by_lines() -> None:
    sid = start("seq 1 500")
    wait(sid)
    tail = call("process", action="log", session_id=sid)
    assert tail["total_lines"] == 500 and tail["showing"] == "200 lines"
    assert tail["output"].split("\n") == [str(i) for i in range(301, 501)]  # Hermes's default: the last 200
    page = call("process", action="log", session_id=sid, offset=10, limit=5)
    assert page["output"].split("\n") == ["11", "12", "13", "14", "15"] and page["showing"] == "5 lines"
    assert call("process", action="log", session_id=sid, offset=600, limit=5)["output"] == ""


def test_wait_times_out_with_partial_output() -> None:
    sid = start(f"echo partial; {SLEEP}")
    deadline = time.monotonic() + 30
    while "partial" not in call("process", action="poll", session_id=sid)["output_preview"]:
        assert time.monotonic() < deadline
        jobs.find(sid).ended.wait(0.05)  # type: ignore[union-attr]
    result = call("process", action="wait", session_id=sid, timeout=1)
    assert result["status"] == "timeout" and "partial" in result["output"] and "timeout_note" in result


def test_kill_then_kill_again() -> None:
    token = f"job-kill-{os.getpid()}"
    sid = start(f"{SLEEP} {token} & {SLEEP} {token}")
    started(token, 2)
    killed = call("process", action="kill", session_id=sid)
    assert killed["status"] == "killed" and killed["termination_source"] == "process.kill"
    assert gone(token)
    assert call("process", action="kill", session_id=sid)["status"] == "already_exited"


def test_write_submit_and_close_reach_stdin() -> None:
    sid = start("cat; echo END")
    assert call("process", action="write", session_id=sid, data="ab")["bytes_written"] == 2
    assert call("process", action="submit", session_id=sid, data="c")["status"] == "ok"
    assert call("process", action="close", session_id=sid)["status"] == "ok"
    assert wait(sid)["output"].split() == ["abc", "END"]
    assert call("process", action="write", session_id=sid, data="late")["status"] == "already_exited"
    assert call("process", action="close", session_id=sid)["status"] == "already_exited"


def test_a_pty_job_takes_input_and_eof() -> None:
    sid = start("cat", pty=True)
    call("process", action="submit", session_id=sid, data="hello")
    call("process", action="close", session_id=sid)
    assert "hello" in wait(sid)["output"]


BAD_CALLS = [  # (arguments, what the answer says, why)
    ({"action": "poll"}, "session_id is required", "no session_id"),
    ({"action": "kill", "session_id": ""}, "session_id is required", "an empty one"),
    ({"action": "wait", "session_id": "proc_nope"}, "No process with ID proc_nope", "unknown"),
    ({"action": "write", "session_id": "proc_nope", "data": "x"}, "No process", "unknown, for stdin"),
    ({"action": "restart", "session_id": "x"}, "restart", "an action outside the enum"),
    ({"action": "log", "session_id": "x", "limit": 0}, "limit", "limit below its minimum"),
]


@pytest.mark.parametrize(("args", "said", "why"), BAD_CALLS, ids=[r[2] for r in BAD_CALLS])
def test_bad_calls_get_one_answer(args: dict[str, Any], said: str, why: str) -> None:
    result = call("process", **args)
    assert said in result["error"], why


# -- the sandbox, the landing policy, the gate ------------------------------------------------------------

REFUSED = [  # (path a job writes, why it must not land)
    (".git/hooks/pre-commit", "git runs it at the next commit"),
    (".git/config", "git runs the programs it names"),
    ("pkg/__pycache__/m.cpython-311.pyc", "bytecode runs instead of its source"),
    ("evil.pth", "runs at every Python start"),
    ("sitecustomize.py", "runs at every Python start"),
    (".ipython/profile_default/startup/a.py", "IPython runs it at the next start"),
    ("pip.conf", "where packages come from"),
    (".env", "asks (dotenv loads it into programs), and the person says no"),
    ("pyproject.toml", "asks (pip runs its build backend), and the person says no"),
]


@pytest.mark.parametrize("landing", [False, True], ids=["unsandboxed", "sandboxed"])
@pytest.mark.parametrize(("path", "why"), REFUSED, ids=[r[0] for r in REFUSED])
def test_a_background_jobs_writes_go_through_the_landing_policy(ws: Path, landing: bool, path: str,
                                                               why: str) -> None:
    if not landing:  # the sandbox switched off by the person: writes land as made, showing what it prevents
        save_config({"sandbox": {"enabled": False}})
    sid = start(f"mkdir -p $(dirname {path}) && echo x > {path} && echo data > ok.csv")
    done = wait(sid)
    assert (ws / "ok.csv").read_text() == "data\n"  # an ordinary file lands either way
    assert (ws / path).exists() is (not landing), why
    if landing:
        assert "[hermes_nb:" in done["output"] and "not landed" in done["output"], done


def test_nothing_lands_before_the_job_ends(ws: Path) -> None:
    sid = start("echo early > early.txt; echo written; read x")
    job = jobs.find(sid)
    assert job is not None
    while "written" not in job.output():  # the file is written (in the overlay) before this line is printed
        assert not job.ended.wait(0.05), job.output()
    assert not (ws / "early.txt").exists()  # not in the workspace while the job runs
    call("process", action="submit", session_id=sid, data="")
    wait(sid)
    assert (ws / "early.txt").read_text() == "early\n"


GATE = [  # (command, why the gate decides as it does)
    ("rm keep.txt", "deletes a file"),
    ("echo x > keep.txt", "writes a file"),
    ("curl https://example.com", "network"),
    ("pip install requests", "installs"),
    ("bash -c 'rm keep.txt'", "a nested shell"),
    ("eval \"rm keep.txt\"", "eval"),
    ("ls", "read-only"),
    ("cat keep.txt", "read-only"),
]


@pytest.mark.parametrize(("command", "why"), GATE, ids=[r[1] + ":" + r[0] for r in GATE])
def test_the_gate_judges_a_background_command_as_a_foreground_one(ws: Path, command: str, why: str) -> None:
    (ws / "keep.txt").write_text("kept\n")
    foreground = call("terminal", command=command)
    before = len(jobs.jobs())
    background = call("terminal", command=command, background=True)
    assert bool(foreground.get("blocked")) == bool(background.get("blocked")), why
    if background.get("blocked"):
        assert len(jobs.jobs()) == before  # nothing started
    else:
        wait(background["session_id"])
    assert (ws / "keep.txt").read_text() == "kept\n"


def test_a_job_started_from_a_call_that_was_approved_runs() -> None:
    result = call("terminal", approve=True, command="echo x > made.txt", background=True)
    assert wait(result["session_id"])["exit_code"] == 0


@pytest.mark.parametrize("sandboxed", [False, True], ids=["unsandboxed", "sandboxed"])
def test_a_job_cannot_outlive_tools_processes_kill(ip_shell: Any, sandboxed: bool) -> None:
    """A grandchild that left the job's session (setsid) is still in the job's pid namespace: the kill ends it.
    Unsandboxed (the person switched the sandbox off) it escapes: the namespace is the defence."""
    if not sandboxed:
        save_config({"sandbox": {"enabled": False}})
    token = f"job-escape-{os.getpid()}-{sandboxed}"
    start(f"setsid {SLEEP} {token} & {SLEEP} {token}")
    started(token, 2)
    ip_shell.run_line_magic("tools", "processes kill")
    try:
        assert gone(token) is sandboxed
        assert all(j.exited for j in jobs.jobs())
    finally:
        for pid in live_pids(token):
            os.kill(pid, 9)


PY = sys.executable
ESCAPES = [  # (how a hostile job tries to outlive its kill, the shell line (TOKEN marks its processes), whether
    #          it leaves the job's process group, which only the sandbox's pid namespace still holds)
    ("setsid: a session of its own", "setsid {sleep} &", True),
    ("a double fork: reparented away from the job", "( ( {sleep} & ) & )", False),
    ("nohup and disown", "nohup {sleep} >/dev/null 2>&1 & disown", False),
    ("a process group of its own",
     PY + " -c 'import os, time; os.setpgid(0, 0); print(\"ready\", flush=True); time.sleep(300)' TOKEN &", True),
    ("a daemon: fork, setsid, fork", PY + " -c 'import os, time\nif os.fork(): os._exit(0)\nos.setsid()\n"
                                          "if os.fork(): os._exit(0)\nprint(\"ready\", flush=True)\n"
                                          "time.sleep(300)' TOKEN &", True),
    ("SIGTERM ignored (inherited through exec)", "(trap '' TERM; exec {sleep}) &", False),
    ("SIGHUP and SIGTERM ignored by python",
     PY + " -c 'import signal, time; [signal.signal(s, signal.SIG_IGN) for s in (1, 15)]; "
          "print(\"ready\", flush=True); time.sleep(300)' TOKEN &", False),
]


@pytest.mark.parametrize("sandboxed", [False, True], ids=["unsandboxed", "sandboxed"])
@pytest.mark.parametrize(("why", "line", "leaves_group"), ESCAPES, ids=[r[0] for r in ESCAPES])
def test_no_escape_outlives_tools_processes_kill(ip_shell: Any, sandboxed: bool, why: str, line: str,
                                                 leaves_group: bool) -> None:
    if not sandboxed:  # the person switched the sandbox off: what leaves the group escapes, the rest still dies
        save_config({"sandbox": {"enabled": False}})
    token = f"job-esc-{os.getpid()}-{abs(hash(why))}-{sandboxed}"
    sleep = f"{PY} -c 'import time; time.sleep(300)' {token}"
    sid = start(line.format(sleep=sleep).replace("TOKEN", token) + f"\n{sleep}")
    started(token, 2)
    job = jobs.find(sid)
    assert job is not None
    while "ready" in line and "ready" not in job.output():  # escaped (its group or session left) before the kill
        assert not job.ended.wait(0.05), job.output()
    ip_shell.run_line_magic("tools", "processes kill")
    try:
        assert gone(token) is (sandboxed or not leaves_group), why
    finally:
        for pid in live_pids(token):
            os.kill(pid, 9)


@pytest.fixture
def ip_shell() -> Any:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "hermes_nb")
    yield shell
    shell.run_line_magic("unload_ext", "hermes_nb")


def test_tools_processes_lists_and_kills_by_id(ip_shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from IPython.core.error import UsageError

    one, two = start(SLEEP), start(SLEEP)
    table = ip_shell.run_line_magic("tools", "processes")
    assert one in table.text() and two in table.text()
    ip_shell.run_line_magic("tools", f"processes kill {one}")
    assert jobs.find(one).exited and not jobs.find(two).exited  # type: ignore[union-attr]
    assert f"ended 1 background process: {one}" in capsys.readouterr().out
    with pytest.raises(UsageError, match="no background process 'proc_nope'"):
        ip_shell.run_line_magic("tools", "processes kill proc_nope")


def test_unloading_the_extension_ends_the_jobs(ip_shell: Any) -> None:
    sid = start(SLEEP)
    ip_shell.run_line_magic("unload_ext", "hermes_nb")
    try:
        assert jobs.find(sid).exited  # type: ignore[union-attr]
    finally:
        ip_shell.run_line_magic("load_ext", "hermes_nb")


# -- scope and the run ------------------------------------------------------------------------------------

def test_process_belongs_to_the_terminal_toolset() -> None:
    from hermes_nb.tools.toolsets import resolve_toolset

    assert registry.get_entry("process").toolset == "terminal"
    assert {"terminal", "process"} <= set(resolve_toolset("terminal"))


class Scripted:
    """A model that calls what ``script(turn, messages)`` says."""

    name = "scripted"

    def __init__(self, script: Any) -> None:
        self.script, self.turns = script, 0

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], **_: Any) -> Any:
        self.turns += 1
        return self.script(self.turns - 1, messages, {t["function"]["name"] for t in tools})


def _calls(*specs: tuple[str, dict[str, Any]]) -> Any:
    from hermes_nb.models import ModelTurn, ToolCallSpec

    return ModelTurn(tool_calls=tuple(ToolCallSpec(id=f"c{i}", name=n, arguments=json.dumps(a))
                                      for i, (n, a) in enumerate(specs)))


def test_a_run_not_offered_terminal_cannot_reach_process() -> None:
    from hermes_nb.agent.loop import Agent
    from hermes_nb.models import ModelTurn

    sid = start(SLEEP)
    model = Scripted(lambda turn, m, offered: _calls(("process", {"action": "kill", "session_id": sid}))
                     if turn == 0 else ModelTurn(content="done"))
    result = Agent(model=model, enabled_toolsets=["file"], display=False).run("go")
    assert "was not offered" in result.tool_calls[0].content
    assert not jobs.find(sid).exited  # type: ignore[union-attr]


def test_notify_on_complete_reaches_the_model_in_the_run_that_started_the_job() -> None:
    from hermes_nb.agent.loop import Agent
    from hermes_nb.models import ModelTurn

    def script(turn: int, messages: list[dict[str, Any]], offered: set[str]) -> Any:
        if turn == 0:
            return _calls(("terminal", {"command": "echo built", "background": True, "notify_on_complete": True}))
        if turn == 1:
            sid = json.loads(messages[-1]["content"])["session_id"]
            return _calls(("process", {"action": "wait", "session_id": sid, "timeout": 60}))
        return ModelTurn(content="done")

    result = Agent(model=Scripted(script), enabled_toolsets=["terminal"], display=False).run("build it")
    notices = [m["content"] for m in result.messages if m.get("role") == "user" and "notice" in str(m["content"])]
    assert len(notices) == 1 and "ended: exited, exit code 0" in notices[0]
