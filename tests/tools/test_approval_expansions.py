"""Words built from bash's expansion grammar: every one that real bash expands into a command is asked.

Hypothesis composes words from the pieces of bash's EXPANSION section (command and process substitution,
parameter forms, arithmetic, tilde prefixes, ANSI-C and locale quoting, braces, globs), nested in double
quotes, tilde words and assignments, and puts them where bash reads words (arguments, assignments,
redirection targets, here-documents). Each line runs in real bash in a fresh folder: when bash created the
marker, the classifier must have asked. The run also counts how often bash did, so the test cannot pass
by generating nothing that runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_nb.tools.approval import detect_dangerous_command

BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="needs bash")

RUN = "touch m"  # the payload: creates ./m in the folder the line runs in
PIECES = [
    f"$({RUN})", f"`{RUN}`", f"${{x:-$({RUN})}}", f"${{x[$({RUN})]}}", f"$((a[$({RUN})]))", f"$[a[$({RUN})]]",
    f"<({RUN})", f">({RUN})", f"${{x/a/$({RUN})}}", "${x@P}", "${!x}", "$x", "${x}", "$?", "$1", f"\\$({RUN})",
    f"'$({RUN})'", "$'\\x41'", f"$\"$({RUN})\"", "~", "~root", "~+", "{a,b}", "*", "?", "[ab]", "a", "-", "x/",
    ".", "=", ":", "%", ",", "@", "\\ ", "\\\\",
]
CONTEXTS = ["echo {w}", "echo a{w}b", ": {w}", "x={w}", "x={w} true", "cat <<EOF\n{w}\nEOF", "echo >/dev/null {w}",
            "ls {w} 2>/dev/null", "true {w}", "cat < /dev/null{w} 2>/dev/null", "echo {w} | cat", "[ {w} ]",
            "cat <<< {w}"]


def words() -> st.SearchStrategy[str]:
    leaf = st.sampled_from(PIECES)
    return st.recursive(leaf, lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3).map("".join),
        st.lists(inner, max_size=3).map(lambda xs: '"' + "".join(xs).replace('"', "") + '"'),
        inner.map(lambda w: "~" + w),
        inner.map(lambda w: "x=" + w),
    ), max_leaves=6)


def bash_runs(line: str, folder: Path) -> bool:
    folder.mkdir()
    # `x` holds a subscript that runs code, as a hostile earlier command could have left it
    env = {"PATH": "/usr/bin:/bin", "HOME": str(folder)}
    subprocess.run([BASH, "-c", line + "\nwait"], cwd=folder, env=env, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10)
    return (folder / "m").exists()


@pytest.mark.slow
def test_every_word_bash_expands_into_a_command_is_asked(tmp_path: Path) -> None:
    counts = {"lines": 0, "ran": 0}

    @settings(max_examples=250, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(word=words(), context=st.sampled_from(CONTEXTS))
    def check(word: str, context: str) -> None:
        line = context.format(w=word)
        counts["lines"] += 1
        if bash_runs(line, tmp_path / f"run{counts['lines']}"):
            counts["ran"] += 1
            assert detect_dangerous_command(line)[0], f"bash ran a command from {line!r} and it was not asked"

    check()
    print(f"\nexpansion grammar: {counts['lines']} lines, bash ran the payload in {counts['ran']}, all asked")
    assert counts["ran"] >= counts["lines"] // 5  # the generator does reach what runs


@pytest.mark.parametrize(("command", "reason"), [
    ("echo ~$(touch m)", "a tilde word: bashlex makes one tilde node, bash expands the substitution"),
    ("echo ~root$(touch m)", "a tilde prefix then a substitution"),
    ("x=~$(touch m) true", "a tilde in an assignment"),
    ("echo >~$(touch m)", "a tilde in a redirection target"),
    ("cat <<EOF\n~$(touch m)\nEOF", "a here-document body"),
    ("cat <<EOF\n${x:-`touch m`}\nEOF", "backticks inside a default value in a here-document"),
    ("echo ${x:-$(touch m)}", "a default value runs its substitution when x is unset"),
    ("x=a; echo \"${x/a/$(touch m)}\"", "a replacement string in double quotes"),
    ("echo $'\\'' ; touch m #'", "ANSI-C quoting: \\' does not end the string, so touch is a command"),
    ("echo a\\\n$(touch m)", "a backslash-newline joins the substitution to the word"),
    ("ls $(: ')' ; touch m)", "a quoted parenthesis inside a substitution"),
    ("echo \"`touch m`\"", "backticks inside double quotes"),
    (": $[$(touch m)]", "old-style arithmetic"),
    ("cat < <(touch m)", "process substitution as a redirection source"),
])
def test_expansion_rows_are_asked_and_bash_really_runs_them(command: str, reason: str, tmp_path: Path) -> None:
    assert bash_runs(command, tmp_path / "run"), f"the row does not run anything in bash: {reason}"
    assert detect_dangerous_command(command)[0], reason


@pytest.mark.parametrize("command", ["echo $HOME", "echo ${HOME}", "ls -la ~", "ls ~/data", "echo \"$PWD\"",
                                     "echo '$(touch m)'", "echo \\$\\(touch m\\)", "echo $?"])
def test_bare_parameter_reads_and_quoted_text_pass(command: str) -> None:
    assert not detect_dangerous_command(command)[0]


def test_generated_lines_run_where_the_marker_is_looked_for(tmp_path: Path) -> None:
    assert bash_runs(f"echo $({RUN})", tmp_path / "yes")
    assert not bash_runs("echo '$(touch m)'", tmp_path / "no")
    assert os.listdir(tmp_path / "no") == []


@settings(max_examples=120, deadline=None, database=None)
@given(text=st.text(alphabet=st.sampled_from(list("ab $`'\"\\(){}[]<>|&;~#*?=!\n\t-+:,./@%^0")), max_size=30))
def test_the_reader_never_fails_and_what_it_cannot_finish_asks(text: str) -> None:
    from hermes_nb.tools.safety.commands.canonical import candidates, matches
    from hermes_nb.tools.safety.commands.shell_words import scan

    scanned = scan(text)  # an unfinished text is "incomplete", never an exception
    forms = candidates(text)
    if not scanned.complete:
        assert detect_dangerous_command(text)[0], text
        assert any(matches("rm -rf *", f) for f in forms)  # a deny rule applies to what cannot be read


# --- the parser's own edges: what bashlex cannot finish or represent asks, and never hangs or raises ---------

#: A ``${`` whose word ends before its ``}``: bashlex loops forever on these (it takes the missing ``}`` as
#: position -1 and reads the word again), so without the pre-check the approval check hangs the kernel.
UNCLOSED = ["echo a'${'b", "echo '${' ok", 'echo "${"', "echo ${", "x=${ true", "echo \\${ a", "cat <<< a${",
            "echo ${a ; touch m", "echo ${a:-x y}", "ls ${ | cat"]
#: Closing a descriptor (``>&-``): bashlex hands the target over as a bare string, which the reader took
#: for a word and raised on.
FD_CLOSE = ["ls >&-", "ls 2>&-", "exec 3>&-", "cat <&-", "ls 1>&- 2>&-"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("command", UNCLOSED)
def test_an_unclosed_parameter_expansion_asks_without_hanging(command: str) -> None:
    dangerous, key, _ = detect_dangerous_command(command)
    assert dangerous, command
    assert key in {"unparseable", "indirection", "command-substitution"}, key


@pytest.mark.parametrize("command", FD_CLOSE)
def test_closing_a_descriptor_is_read_as_a_redirection(command: str, tmp_path: Path) -> None:
    from hermes_nb.tools.safety.commands.classifier import analyse

    analysis = analyse(command)  # raised AttributeError before
    assert all(f.key != "unparseable" for f in analysis.findings), analysis.findings
    assert analysis.commands, "the simple command behind the redirection was lost"
    assert not bash_runs(command, tmp_path / "fd")  # and bash agrees nothing runs from it


def test_a_reader_that_fails_on_a_line_makes_it_ask(monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_nb.tools.safety.commands import walker

    def broken(*_: object) -> None:
        raise RuntimeError("a construct the reader cannot represent")

    monkeypatch.setattr(walker, "walk", broken)
    dangerous, key, description = detect_dangerous_command("ls")  # read-only, were the reader working
    assert dangerous and key == "unparseable", (key, description)


@settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(alphabet=st.sampled_from(list("ab $`'\"\\(){}[]<>|&;~#*?=!\n\t-+:,./@%^0")), max_size=30))
@pytest.mark.timeout(240)
def test_the_whole_check_never_raises_on_any_line(text: str) -> None:
    from hermes_nb.tools.safety.commands.classifier import analyse

    analysis = analyse(text)  # a hang fails on the timeout, an exception here fails the test
    assert isinstance(analysis.findings, (list, tuple))
