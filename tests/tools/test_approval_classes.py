"""Adversarial tables by class, driven through the real terminal tool: each row's effect (a marker file, a
commit) does not happen when the person says no or a rule denies, and does happen when bash runs the row
directly (so no row proves nothing). Classes: the classifier (expansions and program options), the
person's rules (canonical commands), session scope (files that changed, MCP clients), the prompt's text.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

import hermes_nb.tools.terminal_tool  # noqa: F401  (registers terminal)
from hermes_nb.tools.approval import reset_session_approvals
from hermes_nb.tools.registry import registry
from hermes_nb.tools.safety.approvals.gate import use_approver
from hermes_nb.tools.safety.approvals.remembered import asked_by
from hermes_nb.tools.safety.approvals.visible import make_visible

HEX = "00000000: 6869 0a                                  hi.\n"


@pytest.fixture(autouse=True)
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "ws"
    root.mkdir()
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(root))
    reset_session_approvals()
    yield root.resolve()
    reset_session_approvals()


def _repo(root: Path) -> None:
    for args in (["init", "-q"], ["config", "user.name", "t"], ["config", "user.email", "t@example.invalid"]):
        subprocess.run(["git", *args], cwd=root, check=True)
    (root / "notes.txt").write_text("foo\n")
    subprocess.run(["git", "add", "notes.txt"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "one"], cwd=root, check=True)


def _commits(root: Path) -> int:
    out = subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=root, capture_output=True, text=True)
    return int(out.stdout.strip() or 0)


def _setup(root: Path, needs: str) -> None:
    if "hex" in needs:
        (root / "hex.txt").write_text(HEX)
    if "git" in needs:
        _repo(root)
    if "secret" in needs:
        (root / "secret.txt").write_text("s3cret\n")


class Person:
    def __init__(self, *answers: str) -> None:
        self.answers, self.asked = list(answers), []

    def __call__(self, subject: str, key: str, description: str) -> str:
        self.asked.append(subject)
        return self.answers.pop(0) if self.answers else "deny"


def terminal(command: str, person: Person) -> dict:
    with use_approver(person):
        return json.loads(registry.dispatch("terminal", {"command": command}))


def _happens_in_bash(command: str, root: Path, needs: str, tmp_path: Path) -> None:
    """The row is real: run by bash itself in a copy of the setup, it makes the marker."""
    other = tmp_path / "direct"
    other.mkdir()
    _setup(other, needs)
    before = _commits(other) if "git" in needs else 0
    subprocess.run(["bash", "-c", command], cwd=other, capture_output=True, timeout=30)
    made = (other / "m").exists() or ("git" in needs and _commits(other) > before)
    assert made, f"{command!r} does nothing in bash: the row proves nothing"


# -- class: the classifier (what it judged read-only before, each writes or runs) --------------------------

CLASSIFIER = [
    ("echo ~$(touch m)", "", "bashlex makes `~$(...)` one tilde node; bash runs the substitution"),
    ("echo ~root$(touch m)", "", "a tilde prefix then a substitution"),
    ("echo $'\\'' ; touch m #'", "", "ANSI-C quoting: `\\'` does not end it, so `touch` is a command"),
    ("echo ${x:-$(touch m)}", "", "a default value runs its substitution"),
    ("cat <<EOF\n~$(touch m)\nEOF", "", "a substitution in a here-document body"),
    ("xxd -rc hex.txt m", "hex", "xxd reads `-rc` as `-r`: the second operand is its output file"),
    ("xxd -r -cols 4 hex.txt m", "hex", "`-cols` is `-c` with its value in the next word"),
    ("awk 'BEGIN { system \\\n(\"touch m\") }'", "", "a backslash-newline hides system() from a literal stripper"),
    ("awk 'BEGIN { print /\"/; system(\"touch m\"); /\"/ }'", "", "a regex holding a quote, read as a division"),
    ("git grep -iO'touch m' foo", "git", "-O clustered after -i opens the matches in a pager that is any command"),
    ("git grep -nOtouch\\ m foo", "git", "the same, the command attached with an escaped space"),
    ("find . -maxdepth 0 -newer hex.txt -o -fprint m", "hex", "an action behind -o"),
    ("cat <<EOF\n\tEOF\ndon't\nEOF\necho $(touch m) #'", "",
     "`<<` ends only at an untabbed delimiter: a reader that strips tabs sees the rest as quoted"),
]


@pytest.mark.parametrize(("command", "needs", "reason"), CLASSIFIER, ids=[r for _, _, r in CLASSIFIER])
def test_classifier_row_is_asked_and_a_no_leaves_no_effect(command: str, needs: str, reason: str, ws: Path,
                                                           tmp_path: Path) -> None:
    _setup(ws, needs)
    _happens_in_bash(command, ws, needs, tmp_path)
    person = Person("deny")
    result = terminal(command, person)
    assert person.asked == [command], reason
    assert result.get("blocked") is True
    assert not (ws / "m").exists(), reason


def test_a_repository_whose_config_names_a_program_asks_for_every_git_command(ws: Path) -> None:
    _repo(ws)
    person = Person()
    assert terminal("git status", person)["exit_code"] == 0 and person.asked == []
    subprocess.run(["git", "config", "diff.external", "sh -c 'touch m'"], cwd=ws, check=True)
    for command in ("git diff HEAD", "git log -p -1", "git status", "git show"):
        (ws / "notes.txt").write_text("changed\n")
        assert terminal(command, person).get("blocked") is True, command
    assert len(person.asked) == 4 and not (ws / "m").exists()


# -- class: the person's rules match the canonical command -------------------------------------------------

RULES = [
    ("t''ouch m", "", "touch *", "empty quotes inside the program name"),
    ("/usr/bin/touch m", "", "touch *", "the program by its full path"),
    ("/usr/bin/to?ch m", "", "touch *", "a glob that expands to the program"),
    ("command touch m", "", "touch *", "a wrapper runs it"),
    ("env LC_ALL=C touch m", "", "touch *", "env with an assignment runs it"),
    ("bash -c 'touch m'", "", "touch *", "shell code in a string"),
    ("rbash -c 'touch m'", "", "touch *", "a restricted bash still runs its code (the rules knew fewer shells)"),
    ("eval 'touch m'", "", "touch *", "eval"),
    ("echo m | xargs touch", "", "touch *", "xargs adds the arguments"),
    ("T=touch; $T m", "", "touch *", "a variable names the program: it could be anything"),
    ("echo \"${x:-\"}\"}\" ; touch m", "", "touch *", "nested quotes in ${...}: not proven, so the rule applies"),
    ("printf 'touch m' | xargs -0 sh -c", "", "touch *", "xargs hands its input to sh -c: code nobody saw"),
    ("$'\\x74ouch' m", "", "touch *", "ANSI-C escapes spell the program"),
    ("cp sec''ret.txt m", "secret", "*secret*", "quotes split the name"),
    ("cp se?ret.txt m", "secret", "*secret*", "a glob that matches the file"),
    ("cp s*t.txt m", "secret", "*secret*", "a wider glob"),
    ("cat sec[r]et.txt > m", "secret", "*secret*", "a bracket glob and a redirection"),
    ("git -C . commit --allow-empty -qm x", "git", "git commit*", "git's -C global option"),
    ("/usr/bin/git commit --allow-empty -qm x", "git", "git commit*", "git by its full path"),
    ("g''it commit --allow-empty -qm x", "git", "git commit*", "quotes in git's name"),
    ("git --no-pager commit --allow-empty -qm x", "git", "git commit*", "a flag among the global options"),
]


@pytest.mark.parametrize(("command", "needs", "pattern", "reason"), RULES, ids=[r for *_, r in RULES])
def test_deny_rule_blocks_the_canonical_command_not_an_ordinary_prompt(
        command: str, needs: str, pattern: str, reason: str, ws: Path, hermes_home: Path, tmp_path: Path) -> None:
    _setup(ws, needs)
    _happens_in_bash(command, ws, needs, tmp_path)
    before = _commits(ws) if "git" in needs else 0
    (hermes_home / "config.yaml").write_text(yaml.safe_dump(
        {"approvals": {"commands": [{"pattern": pattern, "action": "deny", "reason": "not here"}]}}))
    person = Person("once")  # a person who would say yes: only the rule stands in the way
    result = terminal(command, person)
    assert person.asked == [], f"{reason}: an ordinary prompt instead of BLOCKED"
    assert result.get("blocked") is True and "BLOCKED by the person's rule" in result["error"], reason
    assert not (ws / "m").exists() and (_commits(ws) == before if "git" in needs else True)


def test_rules_still_let_other_commands_through(ws: Path, hermes_home: Path) -> None:
    (ws / "notes.txt").write_text("n\n")
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"approvals": {"commands": [
        {"pattern": "*secret*", "action": "deny"}, {"pattern": "git push*", "action": "deny"}]}}))
    for command in ("cat notes.txt", "cat *.txt", "git status", "echo push"):
        assert "blocked" not in terminal(command, Person()), command


# -- class: what the check reads must end (a pipe or a device is code nobody can read) ------------------------

def _endless(root: Path) -> None:
    """A named pipe in the workspace, a repository whose config is one, and a linked worktree whose
    ``commondir`` is one: reading any of them blocks until something writes to it."""
    os.mkfifo(root / "fifo")
    sub = root / "sub"
    sub.mkdir()
    _repo(sub)
    (sub / ".git" / "config").unlink()
    os.mkfifo(sub / ".git" / "config")
    (root / "wt").mkdir()
    (root / "wt" / ".git").write_text("gitdir: ../wtgit\n")
    (root / "wtgit").mkdir()
    os.mkfifo(root / "wtgit" / "commondir")


ENDLESS = [
    ("python3 /dev/zero", "the approval is tied to the script's content: hashing /dev/zero never ended"),
    ("python3 fifo", "the script to fingerprint is a named pipe: its open blocked"),
    ("bash fifo", "a shell script that is a named pipe"),
    ("cd sub && git status", "the repository's config is a named pipe: the check of its settings blocked"),
    ("cd wt && git status", "a linked worktree's commondir is a named pipe"),
]


@pytest.mark.timeout(60)  # before, each of these held the kernel for good
@pytest.mark.parametrize(("command", "reason"), ENDLESS, ids=[r for _, r in ENDLESS])
def test_a_pipe_or_a_device_the_check_reads_asks_and_never_hangs(command: str, reason: str, ws: Path) -> None:
    _endless(ws)
    person = Person("deny")
    result = terminal(command, person)
    assert person.asked == [command], reason
    assert result.get("blocked") is True, (reason, result)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("command", "reason"), [
    ("bash fifo", "the script is a named pipe: nobody can read what it runs"),
    ("sh ./fifo", "the same, by a relative path"),
    ("bash 'a\x00b'", "a NUL in the script's name (opening it raised ValueError, a crash instead of the rule)"),
], ids=["pipe", "pipe-relative", "nul"])
def test_a_script_nobody_can_read_meets_every_deny_rule(command: str, reason: str, ws: Path,
                                                        hermes_home: Path) -> None:
    _endless(ws)
    (hermes_home / "config.yaml").write_text(yaml.safe_dump(
        {"approvals": {"commands": [{"pattern": "git push*", "action": "deny"}]}}))
    person = Person("once")
    result = terminal(command, person)
    assert person.asked == [], reason
    assert result.get("blocked") is True and "BLOCKED by the person's rule" in result["error"], (reason, result)


# -- class: "for this session" approves exactly what ran -----------------------------------------------------

SESSION = [
    ("python3 train.py", "train.py", "print('training')\n", "open('m', 'w').close()\n", "a script"),
    ("bash build.sh", "build.sh", "echo build\n", "touch m\n", "a shell script"),
    ("./run.sh", "run.sh", "#!/bin/sh\necho run\n", "#!/bin/sh\ntouch m\n", "a program in the workspace"),
    ("make", "Makefile", "all:\n\t@echo ok\n", "all:\n\t@touch m\n", "a Makefile target"),
    ("python3 -m tool", "tool.py", "print(1)\n", "open('m', 'w').close()\n", "a module run with -m"),
    ("cd sub && bash b.sh", "sub/b.sh", "echo b\n", "touch ../m\n", "a script in a folder the line enters"),
    ("cd a; cd b; bash s.sh", "a/b/s.sh", "echo s\n", "touch ../../m\n", "a script in a folder two cds reach"),
    ("timeout 60 python3 train.py", "train.py", "print(1)\n", "open('m', 'w').close()\n", "a script a wrapper runs"),
    ("env A=1 nice -n 5 bash w.sh", "w.sh", "echo w\n", "touch m\n", "wrappers around wrappers"),
]


@pytest.mark.parametrize(("command", "path", "first", "second", "reason"), SESSION, ids=[r for *_, r in SESSION])
def test_a_session_approval_asks_again_when_the_file_it_runs_changed(
        command: str, path: str, first: str, second: str, reason: str, ws: Path) -> None:
    script = ws / path
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(first)
    script.chmod(0o755)
    person = Person("session", "deny")
    assert terminal(command, person).get("exit_code") == 0
    assert terminal(command, person).get("exit_code") == 0 and len(person.asked) == 1  # unchanged: not asked
    script.write_text(second)
    result = terminal(command, person)
    assert len(person.asked) == 2, f"{reason}: the rewritten file ran on the old approval"
    assert result.get("blocked") is True and not (ws / "m").exists()


def test_a_session_approval_of_a_script_asks_again_when_a_module_beside_it_changed(ws: Path) -> None:
    (ws / "train.py").write_text("import model\n")
    (ws / "model.py").write_text("x = 1\n")
    person = Person("session", "deny")
    assert terminal("python3 train.py", person).get("exit_code") == 0
    (ws / "model.py").write_text("open('m', 'w').close()\n")  # what `import model` finds first
    assert terminal("python3 train.py", person).get("blocked") is True
    assert len(person.asked) == 2 and not (ws / "m").exists()


def test_an_always_approval_is_tied_to_the_file_too(ws: Path) -> None:
    (ws / "train.py").write_text("print(1)\n")
    assert terminal("python3 train.py", Person("always")).get("exit_code") == 0
    reset_session_approvals()
    assert terminal("python3 train.py", Person()).get("exit_code") == 0  # remembered
    (ws / "train.py").write_text("open('m', 'w').close()\n")
    person = Person("deny")
    assert terminal("python3 train.py", person).get("blocked") is True
    assert person.asked and not (ws / "m").exists()


def test_a_notebook_session_approval_does_not_extend_to_mcp_clients(ws: Path, hermes_home: Path) -> None:
    (ws / "m").write_text("")
    notebook = Person("session")
    assert terminal("rm m", notebook).get("exit_code") == 0 and len(notebook.asked) == 1
    (ws / "m").write_text("")
    client = Person("deny")
    with asked_by("mcp:client-1"):
        assert terminal("rm m", client).get("blocked") is True
    assert client.asked == ["rm m"] and (ws / "m").exists()  # asked, denied: nothing removed
    with asked_by("mcp:client-1"):
        assert terminal("rm m", Person("session")).get("exit_code") == 0
    (ws / "m").write_text("")
    other = Person("deny")
    with asked_by("mcp:client-2"):  # one client's answer is not another's
        assert terminal("rm m", other).get("blocked") is True
    assert other.asked == ["rm m"] and (ws / "m").exists()
    assert terminal("rm m", Person()).get("exit_code") == 0  # the notebook's own approval still holds


def test_the_person_can_extend_notebook_session_answers_to_mcp(ws: Path, hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"approvals": {"session_extends_to_mcp": True}}))
    (ws / "m").write_text("")
    assert terminal("rm m", Person("session")).get("exit_code") == 0
    (ws / "m").write_text("")
    with asked_by("mcp:client-1"):
        assert terminal("rm m", Person()).get("exit_code") == 0


# -- class: the prompt's text ------------------------------------------------------------------------------

HIDDEN = ["\u3164", "\u115f", "\u1160", "\uffa0", "\u034f", "\ufe0f", "\u180b", "\U000e0100", "\u200b", "\u202e",
          "\u2066", "\u00ad", "\u061c", "\u00a0", "\u3000", "\u2800", "\U000e0041", "\ue000", "\u0378", "\u0336",
          "\u20e5"]


@pytest.mark.parametrize("ch", HIDDEN, ids=[f"U+{ord(c):04X}" for c in HIDDEN])
def test_hidden_characters_ask_and_the_prompt_shows_them(ch: str, ws: Path) -> None:
    command = f"ls{ch} && touch m{ch}"
    person = Person("deny")
    assert terminal(command, person).get("blocked") is True
    shown = make_visible(person.asked[0])
    assert ch not in shown and f"<U+{ord(ch):04X}>" in shown or f"\\x{ord(ch):02x}" in shown
    assert not list(ws.iterdir())
    quiet = Person()
    assert terminal(f"ls{ch}", quiet).get("blocked") is True  # even a read-only command asks with one


def test_emoji_sequences_stay_as_they_are() -> None:
    for text in ("\u2764\ufe0f", "\U0001f469\u200d\U0001f4bb", "caf\u00e9", "\u65e5\u672c"):
        assert make_visible(text) == text


def test_an_mcp_clients_name_reaches_the_prompt_escaped() -> None:
    pytest.importorskip("mcp")
    import threading

    from hermes_nb.serve.app import ServedApp

    app = SimpleNamespace(_lock=threading.Lock(), _sessions={}, clients={})
    info = SimpleNamespace(name="\u202eyour own notebook agent\u2066")
    ctx = SimpleNamespace(session=SimpleNamespace(client_params=SimpleNamespace(client_info=info)),
                          request=SimpleNamespace(headers={"mcp-session-id": "abcdef123456"}))
    _, stats = ServedApp._client(app, ctx)  # type: ignore[arg-type]
    assert "\u202e" not in stats.name and "<U+202E>" in stats.name and "<U+2066>" in stats.name


def test_always_answers_are_never_read_or_written_through_a_link(ws: Path, hermes_home: Path) -> None:
    planted = ws / "planted.json"
    planted.write_text(json.dumps({"version": 1, "tools": {"terminal": ["touch m"]}}))
    (hermes_home / "always_approved.json").symlink_to(planted)
    person = Person("always")
    assert terminal("touch m", person).get("exit_code") == 0 and person.asked == ["touch m"]  # the link approved nothing
    assert not (hermes_home / "always_approved.json").is_symlink()  # replaced, not followed
    assert json.loads(planted.read_text())["tools"] == {"terminal": ["touch m"]}  # the planted file is untouched


def test_a_repository_the_line_enters_is_checked_too(ws: Path) -> None:
    sub = ws / "sub"
    sub.mkdir()
    _repo(sub)
    person = Person()
    assert terminal("cd sub && git status", person).get("exit_code") == 0 and person.asked == []
    subprocess.run(["git", "config", "core.pager", "touch ../m; cat"], cwd=sub, check=True)
    assert terminal("cd sub && git -p log", person).get("blocked") is True
    assert terminal("cd sub && git log", person).get("blocked") is True
    assert len(person.asked) == 2 and not (ws / "m").exists()


@pytest.mark.parametrize("command", ["cd a && git -C b diff HEAD", "cd a; cd b; git diff HEAD",
                                     "cd a && cd b && git diff HEAD"])
def test_a_repository_the_line_reaches_by_cds_one_after_another_is_checked(ws: Path, command: str) -> None:
    """Each ``cd`` was checked alone against the workspace, so the repository in a/b (reached through a,
    then b) was never looked at, and its diff.external ran without asking."""
    repo = ws / "a" / "b"
    repo.mkdir(parents=True)
    _repo(repo)
    subprocess.run(["git", "config", "diff.external", "sh -c 'touch m'"], cwd=repo, check=True)
    (repo / "notes.txt").write_text("changed\n")
    person = Person()
    assert terminal(command, person).get("blocked") is True and person.asked == [command]
    assert not (repo / "m").exists()
    subprocess.run(["bash", "-c", command], cwd=ws, capture_output=True, timeout=30)
    assert (repo / "m").exists(), "the row is real: bash itself runs the program"


def test_a_session_yes_for_a_command_does_not_cover_it_in_another_folder(ws: Path) -> None:
    (ws / "sub").mkdir()
    (ws / "m").write_text("")
    (ws / "sub" / "m").write_text("")
    person = Person("session", "deny", "deny")
    assert terminal("rm m", person).get("exit_code") == 0
    assert terminal("cd sub && rm m", person).get("blocked") is True  # another file: asked again
    assert terminal("X=1; rm m", person).get("blocked") is True  # an assignment before it: asked again
    assert len(person.asked) == 3 and (ws / "sub" / "m").exists()


def test_a_tools_own_reason_reaches_the_prompt_with_hidden_characters_visible() -> None:
    from hermes_nb.tools.registry import ToolRegistry

    reg = ToolRegistry()
    reg.register("srv_delete", "t", {"parameters": {"type": "object", "properties": {}}}, lambda a, **kw: "gone",
                 needs_approval=True, metadata={"approval_reason": "harmless\u202e etadpu"})
    seen: list[str] = []
    with use_approver(lambda s, k, d: seen.append(d) or "deny"):
        assert "BLOCKED" in reg.dispatch("srv_delete", {})
    assert "\u202e" not in seen[0] and "<U+202E>" in seen[0]
