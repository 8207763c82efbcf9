"""Built-in toolset ``terminal``: run a shell command in the workspace root, behind the approval gate.

The command runs as ``bash -c`` in its own session (process group), in the sandbox of
``hermes_nb.tools.safety.sandbox.box`` where there is one (bubblewrap, else Landlock); when it ends or times out
everything it started is killed (bubblewrap: its pid namespace; otherwise the group and the Landlock domain),
and what it wrote lands through the landing policy (``tools.safety.writes.lander``): what did not land is said at the end
of ``stderr``. Output is read by two threads so neither pipe can fill and stall the
command; each stream keeps its first ``OUTPUT_CAP`` bytes and says how much more there was.
"""

from __future__ import annotations

import os
import select
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any, TypedDict

from hermes_nb.tools.approval import command_ask
from hermes_nb.tools.registry import registry
from hermes_nb.tools.workspace import workspace_root

OUTPUT_CAP = 200_000  # bytes kept per stream
_KILL_GRACE = 2.0  # seconds between SIGTERM and SIGKILL
_MAX_TIMEOUT = 3600


class TerminalResult(TypedDict):
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool


class _Capture:
    """Reads one pipe to the end, keeping the first ``cap`` bytes and counting the rest."""

    def __init__(self, stream: IO[bytes], cap: int) -> None:
        self.kept = bytearray()
        self.dropped = 0
        self._stream, self._cap = stream, cap
        self.thread = threading.Thread(target=self._run, daemon=True, name="terminal-output")
        self.thread.start()

    def _run(self) -> None:
        try:
            while chunk := self._stream.read1(65536):  # type: ignore[attr-defined]
                room = self._cap - len(self.kept)
                if room > 0:
                    self.kept += chunk[:room]
                self.dropped += max(0, len(chunk) - max(room, 0))
        except (OSError, ValueError):
            pass  # the pipe was closed under us (process killed); what we have is the output

    def text(self) -> str:
        out = self.kept.decode("utf-8", errors="replace")
        if self.dropped:
            out += f"\n[output truncated: {self.dropped} more bytes not shown; redirect to a file and read it]"
        return out


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the whole process group, then SIGKILL whatever is left after a short grace."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=_KILL_GRACE)
    except subprocess.TimeoutExpired:
        pass
    try:  # children may outlive the leader: kill the group regardless
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _approval(command: str, callback: Any) -> dict[str, Any] | None:
    """``None`` when the command may run, else the blocked result for the model."""
    from hermes_nb.tools.approval import check_dangerous_command

    verdict = check_dangerous_command(command, approval_callback=callback)
    if verdict["approved"]:
        return None
    return {"error": verdict["message"], "blocked": True}


def _git_guard_env() -> dict[str, str]:
    """The environment with git told not to use bare repositories it merely finds.

    The file tools may write anywhere in the workspace, so the model could lay out a bare repository
    (``HEAD``, ``config`` with ``diff.external``...) and then run ``cd it && git diff --no-index a b``, which
    the approval check rightly calls read-only. ``safe.bareRepository=explicit`` is honoured only from
    protected scopes, which include these command-scope variables; other settings of the person are kept.
    """
    env = dict(os.environ)
    try:
        count = int(env.get("GIT_CONFIG_COUNT", "0"))
    except ValueError:
        count = 0
    # A repository's own .git/config (which write_file can reach) may name an fsmonitor program that
    # `git status` runs; command-scope settings win over it. Textconv and diff drivers stay the sandbox's job.
    for i, (key, value) in enumerate((("safe.bareRepository", "explicit"), ("core.fsmonitor", "false"))):
        env[f"GIT_CONFIG_KEY_{count + i}"] = key
        env[f"GIT_CONFIG_VALUE_{count + i}"] = value
    env["GIT_CONFIG_COUNT"] = str(count + 2)
    return env


def run_command(command: str, timeout: float = 60, workdir: str | None = None) -> TerminalResult:
    """Run ``command`` with bash in the workspace root (or ``workdir`` inside it), in the sandbox when there
    is one (no approval here); everything it started is killed when it ends, background jobs included."""
    from hermes_nb.tools.safety.sandbox.box import open_box

    timeout = min(max(float(timeout), 0.1), _MAX_TIMEOUT)
    env = _git_guard_env()
    tmp = tempfile.mkdtemp(prefix="hermes-nb-terminal-")
    env["TMPDIR"] = tmp  # the command's private temp dir (writable in the sandbox), removed afterwards
    root = workspace_root()
    command = in_folder(command, root, resolve_workdir(workdir, root))
    notes: list[str] = []
    box = None
    try:
        box = open_box(root, tmp)

        def spawn() -> subprocess.Popen[bytes]:
            return subprocess.Popen(["bash", "-c", command], cwd=root, env=env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)

        with _traced(box):  # the sandboxed command: a child span of its call's
            try:
                proc = box.spawn(command, env) if box is not None else spawn()
            except BaseException:
                if box is not None:
                    box.sweep()  # interrupted while spawning: whatever did start dies (the sweep runs after it)
                raise
            # leftovers that left the process group (setsid) are still in the call's sandbox
            result = _wait(proc, timeout, box.sweep if box is not None else lambda: 0)
    finally:
        if box is not None:
            notes = box.close()
        shutil.rmtree(tmp, ignore_errors=True)
    if notes:
        result["stderr"] += "".join(f"\n[hermes_nb: {line}]" for line in notes)
    return result


def resolve_workdir(workdir: str | None, root: Path) -> Path:
    """``workdir`` (absolute, or relative to the workspace root) as a folder inside the workspace; else a
    one-line ValueError. The check is on the real path: a link inside leading outside is outside."""
    if not workdir:
        return root
    real_root = Path(os.path.realpath(root))
    real = Path(os.path.realpath(root / os.path.expanduser(workdir)))
    if not real.is_relative_to(real_root):
        raise ValueError(f"workdir {workdir!r} is outside the workspace ({root}); give a folder inside it")
    if not real.is_dir():
        raise ValueError(f"workdir {workdir!r} is not a folder in the workspace")
    return real


def in_folder(command: str, root: Path, cwd: Path) -> str:
    """``command`` run from ``cwd``: a ``cd`` on a line of its own first, so the command's own text (heredocs,
    ``exit``) is untouched; the sandbox itself starts in the workspace root."""
    real_root = Path(os.path.realpath(root))
    if cwd in (root, real_root):
        return command
    return f"cd -- {shlex.quote(str(cwd))} || exit 126\n{command}"


def _traced(box: Any) -> Any:
    import contextlib

    if box is None:
        return contextlib.nullcontext()
    from hermes_nb.tools.calls.tracing import child

    return child("sandbox", "sandbox bash", {"hermes_nb.sandbox": type(box).__name__})


def _wait_exit(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """``proc.wait(timeout)`` without its polling (sleeps of up to 50 ms, on every call): wait on a pidfd
    in slices, so a kernel interrupt still lands within a quarter second."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux >= 5.3: the stdlib's polling wait
        proc.wait(timeout=timeout)
        return
    try:
        deadline = time.monotonic() + timeout
        while proc.poll() is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(proc.args, timeout)
            select.select([fd], [], [], min(left, 0.25))
    finally:
        os.close(fd)


def _wait(proc: subprocess.Popen[bytes], timeout: float, sweep: Any) -> TerminalResult:
    assert proc.stdout is not None and proc.stderr is not None
    out, err = _Capture(proc.stdout, OUTPUT_CAP), _Capture(proc.stderr, OUTPUT_CAP)
    timed_out = False
    try:
        _wait_exit(proc, timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
    except BaseException:  # KeyboardInterrupt: never leave the command running
        _kill_group(proc)
        sweep()
        raise
    # The command is done: whatever is left in its process group (background jobs, daemons that forked)
    # is a leftover and dies now, which also closes the pipes it held.
    _kill_leftovers(proc.pid)
    sweep()
    for capture in (out, err):
        capture.thread.join(timeout=5.0)
    stderr = err.text()
    if timed_out:
        stderr += f"\n[timed out after {timeout:g} s; the command and everything it started were killed]"
    return {"exit_code": proc.returncode, "stdout": out.text(), "stderr": stderr, "timed_out": timed_out}


def _kill_leftovers(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def terminal(command: str, timeout: float = 60, *, approval_callback: Any = None) -> dict[str, Any]:
    """The tool as a Python function: the approval decision, then ``run_command``."""
    if not command.strip():
        raise ValueError("command is empty")
    blocked = _approval(command, approval_callback)
    if blocked is not None:
        return blocked
    return dict(run_command(command, timeout))


def hermes_shaped(run: TerminalResult, timeout: float) -> dict[str, Any]:
    """A foreground result in Hermes's shape — ``output`` (stdout, then stderr), ``exit_code``, ``error``
    (None, or why it did not finish) — with hermes_nb's own keys beside it (``stdout``, ``stderr``,
    ``timed_out``: the streams apart)."""
    output = "\n".join(part.rstrip("\n") for part in (run["stdout"], run["stderr"]) if part.strip())
    error = f"Command timed out after {timeout:g} seconds" if run["timed_out"] else None
    return {"output": output, "exit_code": 124 if run["timed_out"] else run["exit_code"], "error": error, **{
        k: v for k, v in run.items() if k != "exit_code"}}


def _call(args: dict[str, Any]) -> dict[str, Any]:
    """The registry handler: a foreground command's result, or a background job's session id at once."""
    command = args["command"]
    if not command.strip():
        raise ValueError("command is empty")
    watch = tuple(args.get("watch_patterns") or ())
    if not args.get("background"):
        timeout = args.get("timeout", 60)
        if timeout > _MAX_TIMEOUT:
            raise ValueError(f"timeout {timeout} s is over the foreground limit of {_MAX_TIMEOUT} s; "
                             "use background=true for longer commands")
        result = hermes_shaped(run_command(command, timeout, args.get("workdir")), timeout)
        if args.get("pty"):
            result["pty_note"] = "pty applies to background jobs; this foreground command ran with pipes"
        return result
    from hermes_nb.tools import jobs

    root = workspace_root()
    cwd = resolve_workdir(args.get("workdir"), root)
    notify = bool(args.get("notify_on_complete"))
    ignored = None
    if notify and watch:  # as in Hermes: the two together would notify twice; completion wins
        ignored = "watch_patterns ignored: notify_on_complete is set (they are mutually exclusive)"
        watch = ()
    job, pty_note = jobs.start(command, line=in_folder(command, root, cwd), env=_git_guard_env(), workspace=root,
                               cwd=cwd, use_pty=bool(args.get("pty")),
                               notify_on_complete=notify, watch_patterns=watch, timeout=args.get("timeout"))
    out: dict[str, Any] = {"output": "Background process started", "session_id": job.id, "pid": job.pid,
                           "exit_code": 0, "error": None}
    if pty_note:
        out["pty_note"] = pty_note
    if ignored:
        out["watch_patterns_ignored"] = ignored
    if notify:
        out["notify_on_complete"] = True
    if watch:
        out["watch_patterns"] = list(watch)
    if not notify and not watch:
        out["hint"] = ("background=true without notify_on_complete=true: you will not be told when it ends; "
                       "use process(action='poll' or 'wait') to learn the outcome")
    return out


registry.register(
    name="terminal",
    toolset="terminal",
    schema={
        "description": (
            "Run a shell command with bash in the workspace root and return its exit code, stdout and stderr. "
            "Read-only commands run directly; anything that changes files, installs, or uses the network asks "
            "the person first. Non-interactive: stdin is empty. Each stream is capped at 200 000 bytes. "
            "background=true starts it as a job and returns its session_id at once: manage it with the "
            "process tool (poll, log, wait, kill, write to its stdin); it runs in the same sandbox and its "
            "writes land when it ends."),
        "parameters": {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The bash command line to run."},
                "background": {"type": "boolean", "default": False,
                               "description": "Start it as a background job and return its session_id at once; "
                                              "pair with notify_on_complete=true for anything that ends."},
                "timeout": {"type": "integer", "minimum": 1,
                            "description": f"Seconds before the command and all its children are killed "
                                           f"(default 60, foreground at most {_MAX_TIMEOUT}; a background job "
                                           "runs until it ends, is killed, or the kernel stops unless given)."},
                "workdir": {"type": "string",
                            "description": "The folder to run in (absolute, or relative to the workspace root); "
                                           "it must be inside the workspace."},
                "pty": {"type": "boolean", "default": False,
                        "description": "Background jobs: run in a pseudo-terminal (for tools that want a tty)."},
                "notify_on_complete": {"type": "boolean", "default": False,
                                       "description": "Background jobs: be told once, in this run, when it ends. "
                                                      "Exclusive with watch_patterns (which is then dropped)."},
                "watch_patterns": {"type": "array", "items": {"type": "string"},
                                   "description": "Background jobs: be told when its output has a line holding "
                                                  "one of these strings (at most one notice per 15 s)."},
            },
            "required": ["command"],
            "additionalProperties": False,
        },
    },
    # the gate (tools.safety.approvals.gate) judges every call with the shell classifier before this runs, background
    # or not: the same judge on the same command
    handler=lambda args, **kw: _call(args),
    emoji="💻",
    metadata={"approval_judge": lambda args: command_ask(args["command"]), "approval_command_param": "command"},
)
