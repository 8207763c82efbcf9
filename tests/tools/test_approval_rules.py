"""The person's rules (``approvals:`` in config.yaml): per tool and per command pattern, deny wins."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from hermes_nb.tools.approval import check_dangerous_command, reset_session_approvals
from hermes_nb.tools.registry import registry
from hermes_nb.tools.safety.approvals.gate import use_approver

OBJ = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


@pytest.fixture(autouse=True)
def _clean_session() -> Iterator[None]:
    reset_session_approvals()
    yield
    reset_session_approvals()


def _rules(home: Path, approvals: dict) -> None:
    (home / "config.yaml").write_text(yaml.safe_dump({"approvals": approvals}))


def never_asked(subject: str, key: str, description: str) -> str:
    raise AssertionError(f"asked about {subject!r}")


def test_command_deny_rule_blocks_with_its_reason_even_inside_a_line(hermes_home: Path) -> None:
    _rules(hermes_home, {"commands": [{"pattern": "git push*", "action": "deny", "reason": "we push by hand"}]})
    result = check_dangerous_command("git status && git push origin main", never_asked)
    assert result["approved"] is False
    assert "we push by hand" in result["message"] and "commands[0]" in result["message"]


def test_deny_wins_over_allow(hermes_home: Path) -> None:
    _rules(hermes_home, {"tools": {"terminal": "allow"},
                         "commands": [{"pattern": "rm *", "action": "deny", "reason": "no deleting"}]})
    assert check_dangerous_command("touch x", never_asked)["scope"] == "rule"
    assert check_dangerous_command("rm x", never_asked)["approved"] is False


def test_allow_pattern_holds_only_for_a_plain_line(hermes_home: Path) -> None:
    _rules(hermes_home, {"commands": [{"pattern": "make test*", "action": "allow"}]})
    assert check_dangerous_command("make test", never_asked)["scope"] == "rule"
    asked = []

    def person(subject: str, key: str, description: str) -> str:
        asked.append(subject)
        return "deny"

    for sneaky in ("make test; rm -rf ~", "make test && curl x | sh", "make test $(rm x)", "make test > /etc/x"):
        assert check_dangerous_command(sneaky, person)["approved"] is False
    assert len(asked) == 4


def test_ask_rule_asks_even_for_a_read_only_command(hermes_home: Path) -> None:
    _rules(hermes_home, {"commands": [{"pattern": "cat *secret*", "action": "ask"}]})
    assert check_dangerous_command("cat secret.txt", lambda *a: "deny")["approved"] is False
    assert check_dangerous_command("cat notes.txt", never_asked)["scope"] == "safe"


def test_tool_rules_by_name_and_pattern(hermes_home: Path) -> None:
    ran: list[int] = []
    registry.register("mcp__gh__delete_repo", "mcp-gh", {"description": "Delete.", "parameters": OBJ},
                      lambda a, **kw: ran.append(a["n"]) or "deleted", needs_approval=True)
    registry.register("plain_tool", "test", {"description": "Plain.", "parameters": OBJ},
                      lambda a, **kw: ran.append(a["n"]) or "ok")
    _rules(hermes_home, {"tools": {"mcp__gh__*": {"action": "deny", "reason": "read-only day"},
                                   "plain_tool": "ask"}})
    with use_approver(lambda *a: "once"):
        denied = json.loads(registry.dispatch("mcp__gh__delete_repo", {"n": 1}))
    assert denied["blocked"] is True and "read-only day" in denied["error"]
    seen = []
    with use_approver(lambda *a: seen.append(a[0]) or "deny: not now, please"):
        asked = json.loads(registry.dispatch("plain_tool", {"n": 2}))
    assert "Their reason: not now, please." in asked["error"]
    assert seen == ['plain_tool {"n": 2}']  # the prompt shows the tool and its arguments
    assert ran == []


def test_always_can_be_switched_off(hermes_home: Path) -> None:
    _rules(hermes_home, {"always": False})
    result = check_dangerous_command("rm -rf build", lambda *a: "always")
    assert result["approved"] and result["scope"] == "once" and "switched off" in result["message"]
    assert not (hermes_home / "always_approved.json").exists()
    assert check_dangerous_command("rm -rf build", lambda *a: "deny")["approved"] is False


def test_a_person_can_deny_with_a_reason_the_model_receives() -> None:
    result = check_dangerous_command("rm -rf build", lambda *a: "deny: the build folder is shared")
    assert result["approved"] is False and "Their reason: the build folder is shared" in result["message"]


# -- when config.yaml is read again (issue 15: the gate no longer stats the file on every call) --------------

def _deny_probe(home: Path) -> None:
    _rules(home, {"tools": {"probe": {"action": "deny", "reason": "not today"}}})


def _probe_registry():  # a tool that never asks by itself: the gate's cheap path
    from hermes_nb.tools.registry import ToolRegistry

    reg = ToolRegistry()
    reg.register("probe", "t", {"parameters": OBJ}, lambda args, **kw: "ran")
    return reg


def test_a_rule_saved_through_save_config_applies_to_the_next_call(hermes_home: Path) -> None:
    from hermes_nb.tools.config import save_config

    reg = _probe_registry()
    assert reg.dispatch("probe", {"n": 1}) == "ran"  # the rules are read (none) and kept
    save_config({"approvals": {"tools": {"probe": "deny"}}})
    assert "BLOCKED" in reg.dispatch("probe", {"n": 1})


def test_a_rule_written_by_hand_applies_after_reread_or_the_recheck_interval(
        hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_nb.tools.safety.approvals import rules

    reg = _probe_registry()
    assert reg.dispatch("probe", {"n": 1}) == "ran"
    _deny_probe(hermes_home)
    rules.reread()
    assert "not today" in reg.dispatch("probe", {"n": 1})
    (hermes_home / "config.yaml").write_text("approvals: {}\n")
    monkeypatch.setattr(rules, "RECHECK_SECONDS", 0.0)  # the interval has passed: the next call looks again
    rules.reread()
    assert reg.dispatch("probe", {"n": 1}) == "ran"
    _deny_probe(hermes_home)
    assert "not today" in reg.dispatch("probe", {"n": 1})  # no reread(): the stat saw the change


def test_a_moved_home_applies_at_once(hermes_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reg = _probe_registry()
    _deny_probe(hermes_home)
    assert "not today" in reg.dispatch("probe", {"n": 1})
    other = tmp_path / "other_home"
    other.mkdir()
    monkeypatch.setenv("HERMES_NB_HOME", str(other))  # no rules there
    assert reg.dispatch("probe", {"n": 1}) == "ran"
    monkeypatch.setenv("HERMES_NB_HOME", str(hermes_home))
    assert "not today" in reg.dispatch("probe", {"n": 1})


@pytest.mark.parametrize(("action", "expected"), [("deny", "BLOCKED"), ("ask", "asked"), ("allow", "ran")])
def test_cheap_path_still_obeys_every_tool_rule(hermes_home: Path, action: str, expected: str) -> None:
    reg = _probe_registry()
    _rules(hermes_home, {"tools": {"pro*": action}})

    def person(subject: str, key: str, description: str) -> str:
        return "deny: asked"

    with use_approver(person):
        assert expected in reg.dispatch("probe", {"n": 1})


def test_unreadable_config_fails_closed_for_tools_that_ask(hermes_home: Path) -> None:
    """A config that cannot be parsed relaxes nothing: a tool that asks still asks (and is denied here)."""
    from hermes_nb.tools.registry import ToolRegistry

    (hermes_home / "config.yaml").write_text("approvals: [unclosed\n")
    reg = ToolRegistry()
    reg.register("asks", "t", {"parameters": OBJ}, lambda args, **kw: "ran", needs_approval=True)
    assert "BLOCKED" in reg.dispatch("asks", {"n": 1})


def test_a_command_rule_written_by_hand_counts_for_the_very_next_check(hermes_home: Path) -> None:
    """What notebook 02 does: write a deny for ``git push*`` with ``write_text`` and check a push at once.
    Looking only every RECHECK_SECONDS, the push was asked instead of refused (and in the browser the
    prompt waited five minutes for a click)."""
    _rules(hermes_home, {})
    assert check_dangerous_command("git status", approval_callback=never_asked)["approved"]  # rules read, kept
    for action, reason in (("deny", "pushing is done by a person"), ("allow", "")):
        _rules(hermes_home, {"commands": [{"pattern": "git push*", "action": action, "reason": reason}]})
        verdict = check_dangerous_command("git push origin main", approval_callback=never_asked)
        assert verdict["approved"] is (action == "allow"), verdict
        if action == "deny":
            assert reason in verdict["message"]


@pytest.mark.parametrize("spelling", ["git -C . push", "/usr/bin/git push", "g''it push", "git --no-pager push origin",
                                      "git -c a.b=c push", "command git push", "sh -c 'git push'", "git $X",
                                      "echo git push | sh", "csh -c 'git push'", "rbash -c 'git push'"])
def test_a_git_push_deny_blocks_every_spelling_of_it(hermes_home: Path, spelling: str) -> None:
    _rules(hermes_home, {"commands": [{"pattern": "git push*", "action": "deny", "reason": "by hand"}]})
    result = check_dangerous_command(spelling, never_asked)
    assert result["approved"] is False and "BLOCKED by the person's rule" in result["message"], spelling


@pytest.mark.parametrize("spelling", ["cat sec''ret.txt", "cat se?ret.txt", "cat \"secret\".txt", "cat s*.txt"])
def test_a_secret_deny_blocks_quoted_and_globbed_names(hermes_home: Path, spelling: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(tmp_path))
    (tmp_path / "secret.txt").write_text("s")
    _rules(hermes_home, {"commands": [{"pattern": "*secret*", "action": "deny"}]})
    assert check_dangerous_command(spelling, never_asked)["approved"] is False, spelling
    assert check_dangerous_command("cat notes.txt", never_asked)["scope"] == "safe"


def test_a_deny_rule_reads_the_shell_script_a_command_runs(hermes_home: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(tmp_path))
    (tmp_path / "deploy.sh").write_text("echo building\ngit push origin main\n")
    (tmp_path / "build.sh").write_text("echo building\n")
    _rules(hermes_home, {"commands": [{"pattern": "git push*", "action": "deny"}]})
    assert check_dangerous_command("bash deploy.sh", never_asked)["approved"] is False
    asked: list[str] = []
    check_dangerous_command("bash build.sh", lambda s, k, d: asked.append(s) or "deny")
    assert asked == ["bash build.sh"]  # an ordinary prompt: its script pushes nothing


def test_a_command_the_rules_cannot_read_meets_every_deny_rule(hermes_home: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure inside the canonical reader is a command nobody can read: the deny applies, an allow does not
    (before, the exception left the gate and the call failed with a traceback instead of the rule)."""
    from hermes_nb.tools.safety.commands import canonical

    def broken(*_: object) -> None:
        raise RuntimeError("a construct the canonical reader cannot represent")

    monkeypatch.setattr(canonical, "scan", broken)
    _rules(hermes_home, {"commands": [{"pattern": "ls*", "action": "allow"},
                                      {"pattern": "git push*", "action": "deny", "reason": "by hand"}]})
    result = check_dangerous_command("ls", never_asked)  # read-only, were the reader working
    assert result["approved"] is False and "BLOCKED by the person's rule commands[1]" in result["message"], result


@pytest.mark.parametrize(("text", "why"), [
    (b"approvals: [unclosed\n", "not valid YAML"),
    (b"approvals: [deny]\n", "approvals is a list"),
    (b"approvals:\n  commands: {pattern: '*secret*', action: deny}\n", "commands is a mapping, not a list"),
    (b"approvals:\n  tools: {probe: deny}\n# caf\xe9\n", "not UTF-8 (every call failed with UnicodeDecodeError)"),
    (b"<loop>", "a link to itself: stat fails with ELOOP"),
], ids=["yaml", "section", "commands", "encoding", "stat"])
def test_rules_that_cannot_be_read_make_every_call_ask(hermes_home: Path, text: bytes, why: str) -> None:
    """A deny among rules nobody can read is still the person's deny: dropping them ran `cat secret.txt`
    (read-only, so nothing else asks) and every tool the rules meant to stop."""
    reg = _probe_registry()
    asked: list[str] = []
    if text == b"<loop>":  # a config that cannot even be looked at (stat fails) was taken for no config
        (hermes_home / "config.yaml").symlink_to(hermes_home / "config.yaml")
    else:
        (hermes_home / "config.yaml").write_bytes(text)
    with use_approver(lambda s, k, d: asked.append(d) or "deny"):
        assert "BLOCKED" in reg.dispatch("probe", {"n": 1}), why
        assert not check_dangerous_command("cat secret.txt")["approved"], why
    assert len(asked) == 2 and all("cannot be read" in d for d in asked), (why, asked)


def test_a_rule_whose_action_is_not_known_asks(hermes_home: Path) -> None:
    """``action: dney`` may have meant deny: it asks, for what its pattern names only."""
    _rules(hermes_home, {"tools": {"probe": "dney"}, "commands": [{"pattern": "*secret*", "action": "Deny"}]})
    reg = _probe_registry()
    asked: list[str] = []
    with use_approver(lambda s, k, d: asked.append(s) or "deny"):
        assert "BLOCKED" in reg.dispatch("probe", {"n": 1})
        assert not check_dangerous_command("cat secret.txt")["approved"]
        assert check_dangerous_command("cat notes.txt")["scope"] == "safe"
    assert len(asked) == 2 and asked[1] == "cat secret.txt", asked


def test_a_glob_too_deep_to_expand_now_stays_a_wildcard(hermes_home: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Expanding `cat /*/*/*/*/*/*/*/x` read the whole disk (40 s here) before the check answered; past three
    wildcard levels a glob is left a wildcard, which a deny rule still meets."""
    from hermes_nb.tools.safety.commands.canonical import candidates

    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(tmp_path))
    (tmp_path / "a/b/c/d").mkdir(parents=True)
    for name in ("a/b/c/secret.txt", "a/b/c/d/secret.txt"):
        (tmp_path / name).write_text("s")
    assert candidates("cat */*/*/secret.txt", root=tmp_path)[0].text == "cat a/b/c/secret.txt"  # expanded
    assert candidates("cat */*/*/*/secret.txt", root=tmp_path)[0].text == "cat */*/*/*/secret.txt"  # not read
    _rules(hermes_home, {"commands": [{"pattern": "cat a/b/c/d/secret.txt", "action": "deny"}]})
    assert check_dangerous_command("cat */*/*/*/secret.txt", never_asked)["approved"] is False
