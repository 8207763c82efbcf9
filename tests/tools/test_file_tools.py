"""File tools through the registry, as the model calls them: reading, writing, patching, searching."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
import yaml

import hermes_nb.tools.file_tools  # noqa: F401  (registers the tools)
from hermes_nb.tools.registry import registry
from hermes_nb.tools.workspace import WorkspaceError, resolve_path, workspace_root


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(root))
    return root.resolve()


def call(name: str, **args: object) -> str:
    return registry.dispatch(name, args)


def error(result: str) -> str:
    data = json.loads(result)
    assert isinstance(data, dict) and "error" in data, result
    return data["error"]


def test_read_numbered_with_header_and_footer(ws: Path) -> None:
    (ws / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    out = call("read_file", path="f.txt", limit=3)
    lines = out.splitlines()
    assert lines[0] == "File: f.txt (10 lines total; showing lines 1-3)"
    assert lines[1:4] == ["     1\tline 1", "     2\tline 2", "     3\tline 3"]
    assert lines[4] == "[7 more lines. To read more, call read_file with offset=4]"


def test_read_offset_to_end(ws: Path) -> None:
    (ws / "f.txt").write_text("a\nb\nc\n")
    out = call("read_file", path="f.txt", offset=2)
    assert out.splitlines() == ["File: f.txt (3 lines total; showing lines 2-3)", "     2\tb", "     3\tc",
                                "[end of file: 3 lines]"]
    assert "past the end" in error(call("read_file", path="f.txt", offset=9))
    assert "'offset' must be >= 1" in error(call("read_file", path="f.txt", offset=0))


def test_read_errors_a_model_can_act_on(ws: Path) -> None:
    assert "file not found: nope.txt" in error(call("read_file", path="nope.txt"))
    (ws / "d").mkdir()
    assert "is a directory" in error(call("read_file", path="d"))
    (ws / "b.bin").write_bytes(b"\x00\x01\x02")
    assert "binary" in error(call("read_file", path="b.bin"))
    (ws / "empty.txt").write_text("")
    assert "0 lines" in call("read_file", path="empty.txt")


def test_read_file_registration_flags() -> None:
    entry = registry.get_entry("read_file")
    assert entry.read_only and entry.path_params == ("path",) and entry.max_result_size_chars == float("inf")
    assert registry.get_entry("write_file").path_params == ("path",)
    assert not registry.get_entry("write_file").read_only
    assert registry.get_entry("search_files").read_only


def test_write_creates_parents(ws: Path) -> None:
    result = json.loads(call("write_file", path="a/b/c.txt", content="hi\nthere"))
    assert result == {"path": "a/b/c.txt", "bytes_written": 8, "lines": 2}
    assert (ws / "a/b/c.txt").read_text() == "hi\nthere"


def test_patch_unique_missing_and_replace_all(ws: Path) -> None:
    f = ws / "p.py"
    f.write_bytes(b"x = 1\r\ny = 1\r\nz = 2\r\n")
    assert json.loads(call("patch", path="p.py", old_string="z = 2", new_string="z = 3"))["replacements"] == 1
    assert f.read_bytes() == b"x = 1\r\ny = 1\r\nz = 3\r\n"  # line endings kept
    msg = error(call("patch", path="p.py", old_string="= 1", new_string="= 9"))
    assert "matches 2 places" in msg and "replace_all" in msg
    assert f.read_bytes() == b"x = 1\r\ny = 1\r\nz = 3\r\n"  # unchanged after a refusal
    assert "was not found" in error(call("patch", path="p.py", old_string="w = 0", new_string="w = 1"))
    result = json.loads(call("patch", path="p.py", old_string="= 1", new_string="= 9", replace_all=True))
    assert result["replacements"] == 2
    assert f.read_bytes() == b"x = 9\r\ny = 9\r\nz = 3\r\n"
    assert "empty" in error(call("patch", path="p.py", old_string="", new_string="q"))


def test_search_with_glob_and_skips(ws: Path) -> None:
    (ws / "src").mkdir()
    (ws / "src/a.py").write_text("import os\ndef hello():\n    pass\n")
    (ws / "src/b.txt").write_text("def hello in text\n")
    (ws / "node_modules").mkdir()
    (ws / "node_modules/c.py").write_text("def hello():\n")
    (ws / "bin.py").write_bytes(b"def hello\x00")
    assert call("search_files", pattern=r"def \w+\(", file_glob="*.py") == "src/a.py:2: def hello():"
    both = call("search_files", pattern="hello", path="src")
    assert both.splitlines() == ["src/a.py:2: def hello():", "src/b.txt:1: def hello in text"]
    assert call("search_files", pattern="nothing-here").startswith("No matches")
    assert "not a valid Python regular expression" in error(call("search_files", pattern="("))


def test_search_caps_results(ws: Path) -> None:
    (ws / "many.txt").write_text("hit\n" * 500)
    lines = call("search_files", pattern="hit").splitlines()
    assert len(lines) == 201
    assert lines[-1].startswith("[results capped at 200 matches")


def test_write_outside_via_dotdot_refused(ws: Path) -> None:
    msg = error(call("write_file", path="../escape.txt", content="x"))
    assert f"refusing to write outside the workspace root {ws}: ../escape.txt" in msg
    assert not (ws.parent / "escape.txt").exists()
    assert "refusing to write outside" in error(call("patch", path="/etc/hostname", old_string="a", new_string="b"))


def test_write_through_symlink_refused(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "link").symlink_to(outside)
    assert "refusing to write outside the workspace root" in error(
        call("write_file", path="link/x.txt", content="x"))
    assert not (outside / "x.txt").exists()
    # a symlinked file too
    (outside / "target.txt").write_text("old")
    (ws / "file_link").symlink_to(outside / "target.txt")
    assert "refusing" in error(call("patch", path="file_link", old_string="old", new_string="new"))
    assert (outside / "target.txt").read_text() == "old"


def test_reads_outside_allowed_unless_strict(ws: Path, tmp_path: Path, hermes_home: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    assert "secret" in call("read_file", path=str(outside))
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"workspace_strict_reads": True}))
    assert "refusing to read outside the workspace root" in error(call("read_file", path=str(outside)))
    assert "refusing to read" in error(call("search_files", pattern="s", path=str(tmp_path)))
    from hermes_nb.tools.budget import maybe_persist_tool_result, parse_spill_block

    block = maybe_persist_tool_result("big result\n" * 10, "t", "this_session", threshold=10)
    spilled = parse_spill_block(block)
    assert spilled is not None  # this session's spilled results stay readable
    assert "big result" in call("read_file", path=spilled["path"])
    earlier = hermes_home / "cache" / "spillover" / "earlier.txt"  # another session's are never read
    earlier.write_text("earlier session's result\n")
    assert "inside the hermes_nb home" in error(call("read_file", path=str(earlier)))


@pytest.mark.parametrize("name", ["mcp_serve.json", "config.yaml", "always_approved.json",
                                  "cache/spillover/other-session.txt"])
def test_the_home_is_never_read_by_the_file_tools(ws: Path, hermes_home: Path, monkeypatch: pytest.MonkeyPatch,
                                                  name: str) -> None:
    """The serving token, the rules and the approvals: read_file and search_files refuse them, also when the
    home lies inside the workspace (search_files skips it) and without strict reads."""
    secret = hermes_home / name
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text('{"token": "s3cr3t-token"}\n')
    assert "inside the hermes_nb home" in error(call("read_file", path=str(secret)))
    inner = ws / "home"
    shutil.copytree(hermes_home, inner)
    monkeypatch.setenv("HERMES_NB_HOME", str(inner))
    assert "inside the hermes_nb home" in error(call("read_file", path=f"home/{name}"))
    assert call("search_files", pattern="s3cr3t").startswith("No matches")
    (ws / "mine.txt").write_text("s3cr3t of mine\n")
    assert call("search_files", pattern="s3cr3t") == "mine.txt:1: s3cr3t of mine"


def test_workspace_root_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hermes_home: Path) -> None:
    import hermes_nb.tools.workspace as workspace

    monkeypatch.delenv("HERMES_NB_WORKSPACE", raising=False)
    assert workspace_root() == Path(os.path.realpath(workspace._START_CWD))
    configured = tmp_path / "configured"
    configured.mkdir()
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"workspace": str(configured)}))
    assert workspace_root() == configured.resolve()
    env_root = tmp_path / "env"
    env_root.mkdir()
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(env_root))  # the env var wins over the config
    assert workspace_root() == env_root.resolve()
    assert resolve_path("new/file.txt", for_write=True) == env_root.resolve() / "new/file.txt"
    with pytest.raises(WorkspaceError, match="refusing to write outside"):
        resolve_path(configured / "x", for_write=True)


def test_env_override_is_where_tools_write(ws: Path) -> None:
    call("write_file", path="here.txt", content="x")
    assert (ws / "here.txt").read_text() == "x"


def test_writes_that_would_run_programs_are_refused_inside_the_root(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hermes_home: Path) -> None:
    # A notebook started in the home folder makes the home the workspace: without these refusals the model
    # could add its own commands to approval.always, a core.fsmonitor to .git/config (run by `git status`,
    # which needs no approval) or a line to ~/.bashrc.
    user_home = tmp_path / "user"
    (user_home / "proj" / ".git").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(tmp_path))
    monkeypatch.setenv("HERMES_NB_HOME", str(user_home / "hermes"))
    (user_home / "hermes").mkdir()
    for path, why in [(str(user_home / "hermes" / "config.yaml"), "hermes_nb home"),
                      ("user/proj/.git/config", ".git file or folder"),
                      ("user/proj/sub/.git", ".git file or folder"),
                      ("user/.bashrc", ".bashrc is a shell start-up file"),
                      ("user/.local/bin/ls", "~/.local is a dot-entry of your home")]:
        assert why in error(call("write_file", path=path, content="x")), path
    (user_home / "proj" / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (user_home / "proj" / "link").symlink_to(user_home / "proj" / ".git")
    assert ".git file or folder" in error(call("patch", path="user/proj/link/HEAD", old_string="main", new_string="x"))
    assert not (user_home / "hermes" / "config.yaml").exists()
    # ordinary dot-files of a project stay writable
    assert "bytes_written" in call("write_file", path="user/proj/.gitignore", content="*.pyc\n")
    assert "bytes_written" in call("write_file", path=".env.example", content="A=1\n")


# One row per class of path the landing policy (tools.safety.landing) refuses, for write_file and patch as for a command.
REFUSED = [
    (".git/hooks/pre-commit", ".git file or folder", "runs at the person's next commit"),
    (".git/config", ".git file or folder", "diff.external / textconv run on git diff"),
    ("sub/.gitattributes", "filters and drivers", "filter/diff drivers named per folder"),
    (".gitmodules", "filters and drivers", "submodule update commands"),
    (".hermes/plugins/x/__init__.py", "project plugins", "runs in the next kernel with project plugins on"),
    ("lib/evil.pth", ".pth files", "a .pth on a site path runs at every Python start"),
    ("sitecustomize.py", "every Python start", "imported by site at start-up"),
    ("pkg/usercustomize.py", "every Python start", "imported by site at start-up"),
    (".venv/bin/pip", "environment .venv", "the person's next pip runs it"),
    (".venv/lib/python3.11/site-packages/x.py", "environment .venv", "imported by the venv's Python"),
    (".venv/pyvenv.cfg", "environment .venv", "names the interpreter the venv runs"),
    (".bashrc", "shell start-up", "a shell rc file (the workspace may be ~)"),
    (".envrc", "shell start-up", "direnv runs it on cd"),
    (".husky/pre-commit", "core.hooksPath", "a hooks folder the repository's config points git at"),
    (".pre-commit-config.yaml", "pre-commit", "a repo: local hook runs at the next commit"),
    (".vscode/tasks.json", "editor", "a folderOpen task runs when the folder is opened"),
]


@pytest.mark.parametrize(("path", "said", "why"), REFUSED, ids=[r[0] for r in REFUSED])
def test_the_write_deny_list_is_refused(ws: Path, path: str, said: str, why: str) -> None:
    """Refused by the landing policy (tools.safety.landing) and kept aside in the hermes_nb home: a new file
    never appears, and a patch of one the person made leaves it as it was."""
    (ws / ".venv").mkdir()
    (ws / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    message = error(call("write_file", path=path, content="x"))
    assert "refusing to write" in message and said in message and "kept at" in message, (path, why, message)
    if path != ".venv/pyvenv.cfg":
        assert not (ws / path).exists(), why
        (ws / path).parent.mkdir(parents=True, exist_ok=True)
        (ws / path).write_text("a\n")  # the person's own file
    before = (ws / path).read_text()
    message = error(call("patch", path=path, old_string=before[0], new_string="b"))
    assert "refusing to write" in message and said in message, (path, why, message)
    assert (ws / path).read_text() == before, why


@pytest.mark.parametrize("failure", [PermissionError(13, "Permission denied"), RuntimeError("a bug in the list")],
                         ids=["oserror", "bug"])
def test_a_write_deny_check_that_fails_refuses_the_write(ws: Path, monkeypatch: pytest.MonkeyPatch,
                                                          failure: Exception) -> None:
    """The policy cannot say what the path is: nothing is written (the judge ``landing_ask`` steps aside on an
    OSError because the landing's own check refuses again)."""
    from hermes_nb.tools.safety import lander

    (ws / "notes.txt").write_text("a\n")

    def broken(*_: object, **__: object) -> str | None:
        raise failure

    from hermes_nb.tools.safety.gate import use_approver

    monkeypatch.setattr(lander, "judge", broken)
    with use_approver(lambda subject, key, description: "once"):  # a failing judge asks: yes, so the handler runs
        for tool, args in (("write_file", {"path": "new.txt", "content": "x"}),
                           ("patch", {"path": "notes.txt", "old_string": "a", "new_string": "b"})):
            assert str(failure) in error(call(tool, **args)), tool
    assert not (ws / "new.txt").exists() and (ws / "notes.txt").read_text() == "a\n"


@pytest.mark.parametrize("path", ["notes/bashrc.txt", "src/app.py", "venv_notes/bin/readme", "docs/config"])
def test_ordinary_files_near_the_list_are_written(ws: Path, path: str) -> None:
    assert "bytes_written" in call("write_file", path=path, content="x")


@pytest.mark.parametrize("path", ["bashlex.py", "ipywidgets.py", "markdown_it.py", "yaml.py", "pandas/__init__.py",
                                  "json.py", "sqlite3.py", "numpy.cpython-311-x86_64-linux-gnu.so", "my_analysis.py",
                                  "src/json.py", "notes/yaml.py", "h2.py", "storemagic.py"])
def test_a_module_the_kernel_could_import_asks(ws: Path, monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    """The kernel imports from its working folder: any module there (installed elsewhere or not: a library's
    optional import finds it too) asks, showing the diff; no means nothing is written."""
    monkeypatch.chdir(ws)
    asked: list[str] = []

    def deny(subject: str, key: str, description: str) -> str:
        asked.append(description)
        return "deny"

    result = registry.dispatch("write_file", {"path": path, "content": "x = 1\n"}, approval_callback=deny)
    assert len(asked) == 1 and "the kernel would import it as" in asked[0] and "+x = 1" in asked[0], result
    assert not (ws / path).exists()
    approved = registry.dispatch("write_file", {"path": path, "content": "x = 1\n"},
                                 approval_callback=lambda *a: "once")
    assert "bytes_written" in approved and (ws / path).exists()


@pytest.mark.parametrize("path", ["my-analysis.py", "data-2024/json.py", "notes.txt", "results/table.csv",
                                  ".env.example"])
def test_what_nothing_imports_needs_no_yes(ws: Path, monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    monkeypatch.chdir(ws)
    result = registry.dispatch("write_file", {"path": path, "content": "x = 1\n"}, approval_callback=lambda *a: "deny")
    assert "bytes_written" in result, result


@pytest.mark.parametrize("name", [".ssh/id_ed25519", ".local/share/jupyter/runtime/kernel-1.json", ".aws/credentials",
                                  ".git-credentials", ".hermes/.env"])
def test_credentials_and_the_kernels_keys_are_never_read(ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         name: str) -> None:
    """The list the sandbox hides (tools.safety.hidden) is what read_file refuses, outside the workspace too."""
    person = tmp_path / "person"
    monkeypatch.setenv("HOME", str(person))
    secret = person / name
    secret.parent.mkdir(parents=True)
    secret.write_text("s3cr3t\n")
    assert "never reads" in error(call("read_file", path=str(secret)))
    (person / "notes.txt").write_text("mine\n")
    assert "mine" in call("read_file", path=str(person / "notes.txt"))


@pytest.mark.timeout(60)  # before, each call below held the kernel in open() for good
def test_a_named_pipe_is_refused_without_blocking(ws: Path, tmp_path: Path) -> None:
    """A pipe with no writer blocks open() until one comes: read_file, write_file and patch refuse it,
    search_files passes over it, inside the workspace and outside it."""
    os.mkfifo(ws / "pipe")
    (ws / "notes.txt").write_text("needle\n")
    outside = tmp_path / "outside-pipe"
    os.mkfifo(outside)
    for path in ("pipe", str(outside)):
        assert "not a regular file" in error(call("read_file", path=path)), path
    assert "not a regular file" in error(call("patch", path="pipe", old_string="a", new_string="b"))
    assert error(call("write_file", path="pipe", content="x"))  # ENXIO: no reader, so it is not opened
    assert call("search_files", pattern="needle") == "notes.txt:1: needle"
    assert stat.S_ISFIFO(os.lstat(ws / "pipe").st_mode)


@pytest.mark.parametrize("path", [".GIT/hooks/pre-commit", ".Git/config", "sub/.GitAttributes", ".VSCode/tasks.json",
                                  "SiteCustomize.py", "x.PTH", ".BASHRC", ".Hermes/plugins/p.py", ".venv/BIN/pip"])
def test_the_write_deny_list_holds_whatever_the_case(ws: Path, path: str) -> None:
    """On a case-insensitive file system (macOS, Windows) each of these is the protected path itself."""
    (ws / ".venv").mkdir()
    (ws / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert "refusing to write" in error(call("write_file", path=path, content="x")), path
    assert not (ws / path).exists()


def test_the_hidden_list_holds_whatever_the_case(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(ws))
    (ws / ".SSH").mkdir()
    (ws / ".SSH" / "id_ed25519").write_text("key\n")  # on macOS this is ~/.ssh/id_ed25519
    assert "never reads" in error(call("read_file", path=str(ws / ".SSH" / "id_ed25519")))
