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


def test_read_returns_hermes_json_with_numbered_lines(ws: Path) -> None:
    """Hermes's shape: ``N|line`` content, total_lines, file_size, truncated, is_binary, is_image, and a hint
    naming the next offset (it was a text header, tab-numbered lines and a footer)."""
    (ws / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    out = json.loads(call("read_file", path="f.txt", limit=3))
    assert out == {"content": "1|line 1\n2|line 2\n3|line 3", "total_lines": 10, "file_size": 71,
                   "truncated": True, "is_binary": False, "is_image": False,
                   "hint": "Use offset=4 to continue reading (showing 1-3 of 10 lines)"}


def test_read_offset_to_end(ws: Path) -> None:
    (ws / "f.txt").write_text("a\nb\nc\n")
    out = json.loads(call("read_file", path="f.txt", offset=2))
    assert out["content"] == "2|b\n3|c" and out["truncated"] is False and "hint" not in out
    assert "past the end" in error(call("read_file", path="f.txt", offset=9))
    assert "offset 0 names no line" in error(call("read_file", path="f.txt", offset=0))


@pytest.mark.parametrize(("offset", "limit", "content"), [
    (-2, 500, "9|line 9\n10|line 10"),  # the last two lines
    (-3, 1, "8|line 8"),  # the tail's first line only
    (-50, 2, "1|line 1\n2|line 2"),  # a tail longer than the file starts at line 1
])
def test_a_negative_offset_reads_the_tail(ws: Path, offset: int, limit: int, content: str) -> None:
    """Hermes v0.23.5: ``offset=-N`` starts N lines before the end (it was refused: 'must be >= 1')."""
    (ws / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    out = json.loads(call("read_file", path="f.txt", offset=offset, limit=limit))
    assert out["content"] == content and out["total_lines"] == 10


def test_a_folder_given_to_read_file_is_listed(ws: Path) -> None:
    """Hermes v0.23.5 lists a directory (it was 'is a directory'); folders end in '/'."""
    (ws / "d" / "sub").mkdir(parents=True)
    (ws / "d" / "b.txt").write_text("x")
    (ws / "d" / "a.py").write_text("x")
    out = json.loads(call("read_file", path="d"))
    assert out["entries"] == ["a.py", "b.txt", "sub/"] and out["total_entries"] == 3 and out["is_directory"]


def test_read_cuts_a_huge_page_on_a_line_boundary_with_next_offset(ws: Path) -> None:
    (ws / "wide.txt").write_text(("x" * 1500 + "\n") * 200)
    out = json.loads(call("read_file", path="wide.txt", limit=200))
    shown = out["content"].split("\n")
    assert out["truncated"] and out["truncated_by"] == "bytes" and out["next_offset"] == len(shown) + 1
    assert len(out["content"]) <= 100_000 and all(line.endswith("x") for line in shown)


def test_read_errors_a_model_can_act_on(ws: Path) -> None:
    assert "file not found: nope.txt" in error(call("read_file", path="nope.txt"))
    (ws / "b.bin").write_bytes(b"\x00\x01\x02")
    assert "binary" in error(call("read_file", path="b.bin"))
    (ws / "empty.txt").write_text("")
    assert json.loads(call("read_file", path="empty.txt"))["total_lines"] == 0
    (ws / "pic.png").write_bytes(b"\x89PNG\r\n")
    image = json.loads(call("read_file", path="pic.png"))
    assert image["is_image"] and image["is_binary"] and image["content"] == ""


def test_read_file_registration_flags() -> None:
    entry = registry.get_entry("read_file")
    assert entry.read_only and entry.path_params == ("path",) and entry.max_result_size_chars == float("inf")
    assert registry.get_entry("write_file").path_params == ("path",)
    assert not registry.get_entry("write_file").read_only
    assert registry.get_entry("search_files").read_only


def test_write_creates_parents(ws: Path) -> None:
    result = json.loads(call("write_file", path="a/b/c.txt", content="hi\nthere"))
    real = str(ws / "a/b/c.txt")
    assert result == {"path": "a/b/c.txt", "bytes_written": 8, "lines": 2, "dirs_created": True,
                      "resolved_path": real, "files_modified": [real]}  # Hermes's keys beside ours
    assert json.loads(call("write_file", path="a/b/d.txt", content="x"))["dirs_created"] is False
    assert (ws / "a/b/c.txt").read_text() == "hi\nthere"


def test_patch_unique_missing_and_replace_all(ws: Path) -> None:
    f = ws / "p.py"
    f.write_bytes(b"x = 1\r\ny = 1\r\nz = 2\r\n")
    assert json.loads(call("patch", mode="replace", path="p.py", old_string="z = 2", new_string="z = 3"))["replacements"] == 1
    assert f.read_bytes() == b"x = 1\r\ny = 1\r\nz = 3\r\n"  # line endings kept
    msg = error(call("patch", mode="replace", path="p.py", old_string="= 1", new_string="= 9"))
    assert "matches 2 places" in msg and "replace_all" in msg
    assert f.read_bytes() == b"x = 1\r\ny = 1\r\nz = 3\r\n"  # unchanged after a refusal
    assert "was not found" in error(call("patch", mode="replace", path="p.py", old_string="w = 0", new_string="w = 1"))
    result = json.loads(call("patch", mode="replace", path="p.py", old_string="= 1", new_string="= 9", replace_all=True))
    assert result["replacements"] == 2
    assert f.read_bytes() == b"x = 9\r\ny = 9\r\nz = 3\r\n"
    assert "empty" in error(call("patch", mode="replace", path="p.py", old_string="", new_string="q"))


def search(**args: object) -> dict:
    return json.loads(call("search_files", **args))


def test_search_with_glob_and_skips(ws: Path) -> None:
    (ws / "src").mkdir()
    (ws / "src/a.py").write_text("import os\ndef hello():\n    pass\n")
    (ws / "src/b.txt").write_text("def hello in text\n")
    (ws / "node_modules").mkdir()
    (ws / "node_modules/c.py").write_text("def hello():\n")
    (ws / "bin.py").write_bytes(b"def hello\x00")
    assert search(pattern=r"def \w+\(", file_glob="*.py") == {
        "total_count": 1, "matches": [{"path": "src/a.py", "line": 2, "content": "def hello():"}], "complete": True}
    both = search(pattern="hello", path="src")
    assert [(m["path"], m["line"]) for m in both["matches"]] == [("src/a.py", 2), ("src/b.txt", 1)]
    assert search(pattern="nothing-here") == {"total_count": 0, "complete": True}
    assert "not a valid Python regular expression" in error(call("search_files", pattern="("))


def test_search_pages_with_offset_and_limit_and_says_when_complete(ws: Path) -> None:
    """Hermes's pagination (it was a fixed cap of 200 lines): total_count, truncated, a hint with the next
    offset, and v0.23.5's ``complete`` once the pages seen are the whole answer."""
    (ws / "many.txt").write_text("hit\n" * 120)
    first = search(pattern="hit")
    assert first["total_count"] == 120 and len(first["matches"]) == 50 and first["truncated"]
    assert first["complete"] is False and "offset=50" in first["hint"]
    last = search(pattern="hit", offset=100, limit=50)
    assert [m["line"] for m in last["matches"]] == list(range(101, 121)) and last["complete"] is True


def test_search_output_modes_context_and_file_target(ws: Path) -> None:
    (ws / "a.py").write_text("one\nneedle\nthree\nneedle\n")
    (ws / "b.py").write_text("needle\n")
    (ws / "c.txt").write_text("nothing\n")
    assert search(pattern="needle", output_mode="count")["counts"] == {"a.py": 2, "b.py": 1}
    assert search(pattern="needle", output_mode="count")["total_count"] == 3
    assert search(pattern="needle", output_mode="files_only")["files"] == ["a.py", "b.py"]
    around = search(pattern="needle", path="a.py", context=1)["matches"]
    assert [m["line"] for m in around] == [1, 2, 3, 4]
    os.utime(ws / "a.py", (1, 1))  # oldest: files come newest first
    found = search(pattern="*.py", target="files")
    assert found["files"] == ["b.py", "a.py"] and found["total_count"] == 2
    assert search(pattern="c.t", target="files")["files"] == ["c.txt"]  # a bare name matches anywhere in the name
    assert "'target' must be one of" in error(call("search_files", pattern="x", target="dirs"))


@pytest.mark.parametrize(("content", "refused", "reason"), [
    ("1|import os\n2|x = 1\n3|print(x)\n", True, "read_file's display pasted back"),
    ("  10|a\n  11|b\n", True, "an indented gutter from a later page"),
    ("1|a\n2|b\nplain line\n", True, "a stray line among many numbered ones (2 of 3 is past 60%)"),
    ("1|value\n", False, "a lone literal '1|value' line"),
    ("1|a\n5|b\n", False, "numbers that do not run consecutively"),
    ("| a | b |\n| 1 | 2 |\n", False, "a markdown table"),
    ("x = 1\ny = 2\n", False, "ordinary code"),
    ("1|a\nfoo\nbar\nbaz\n2|b\n", False, "numbered lines a minority"),
])
def test_write_file_refuses_pasted_line_numbered_text(ws: Path, content: str, refused: bool, reason: str) -> None:
    """Hermes refuses read_file's ``N|line`` display as file content (hermes_nb wrote it, corrupting the file)."""
    result = call("write_file", path="out.py", content=content)
    if refused:
        assert "line-numbered" in error(result), reason
        assert not (ws / "out.py").exists(), reason
    else:
        assert (ws / "out.py").read_text() == content, reason


def test_write_outside_via_dotdot_refused(ws: Path) -> None:
    msg = error(call("write_file", path="../escape.txt", content="x"))
    assert f"refusing to write outside the workspace root {ws}: ../escape.txt" in msg
    assert not (ws.parent / "escape.txt").exists()
    assert "refusing to write outside" in error(call("patch", mode="replace", path="/etc/hostname", old_string="a", new_string="b"))


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
    assert "refusing" in error(call("patch", mode="replace", path="file_link", old_string="old", new_string="new"))
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
    assert search(pattern="s3cr3t")["total_count"] == 0
    (ws / "mine.txt").write_text("s3cr3t of mine\n")
    assert search(pattern="s3cr3t")["matches"] == [{"path": "mine.txt", "line": 1, "content": "s3cr3t of mine"}]


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
    assert ".git file or folder" in error(call("patch", mode="replace", path="user/proj/link/HEAD", old_string="main", new_string="x"))
    assert not (user_home / "hermes" / "config.yaml").exists()
    # ordinary dot-files of a project stay writable
    assert "bytes_written" in call("write_file", path="user/proj/.gitignore", content="*.pyc\n")
    assert "bytes_written" in call("write_file", path=".env.example", content="A=1\n")


# One row per class of path the landing policy (tools.safety.writes.landing) refuses, for write_file and patch as for a command.
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
    """Refused by the landing policy (tools.safety.writes.landing) and kept aside in the hermes_nb home: a new file
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
    message = error(call("patch", mode="replace", path=path, old_string=before[0], new_string="b"))
    assert "refusing to write" in message and said in message, (path, why, message)
    assert (ws / path).read_text() == before, why


@pytest.mark.parametrize("failure", [PermissionError(13, "Permission denied"), RuntimeError("a bug in the list")],
                         ids=["oserror", "bug"])
def test_a_write_deny_check_that_fails_refuses_the_write(ws: Path, monkeypatch: pytest.MonkeyPatch,
                                                          failure: Exception) -> None:
    """The policy cannot say what the path is: nothing is written (the judge ``landing_ask`` steps aside on an
    OSError because the landing's own check refuses again)."""
    from hermes_nb.tools.safety.writes import lander

    (ws / "notes.txt").write_text("a\n")

    def broken(*_: object, **__: object) -> str | None:
        raise failure

    from hermes_nb.tools.safety.approvals.gate import use_approver

    monkeypatch.setattr(lander, "judge", broken)
    with use_approver(lambda subject, key, description: "once"):  # a failing judge asks: yes, so the handler runs
        for tool, args in (("write_file", {"path": "new.txt", "content": "x"}),
                           ("patch", {"mode": "replace", "path": "notes.txt", "old_string": "a", "new_string": "b"})):
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
    """What the sandbox hides (tools.safety.sandbox.hidden) is what read_file refuses: the home outside the workspace
    holds the person's credentials, and none of it is read (tests/tools/test_hidden.py has the table)."""
    person = tmp_path / "person"
    monkeypatch.setenv("HOME", str(person))
    secret = person / name
    secret.parent.mkdir(parents=True)
    secret.write_text("s3cr3t\n")
    assert "refusing to read" in error(call("read_file", path=str(secret)))
    (person / "notes.txt").write_text("mine\n")
    assert "which the model does not see" in error(call("read_file", path=str(person / "notes.txt")))


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
    assert "not a regular file" in error(call("patch", mode="replace", path="pipe", old_string="a", new_string="b"))
    assert error(call("write_file", path="pipe", content="x"))  # ENXIO: no reader, so it is not opened
    assert search(pattern="needle")["matches"] == [{"path": "notes.txt", "line": 1, "content": "needle"}]
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
    assert "hidden from the model" in error(call("read_file", path=str(ws / ".SSH" / "id_ed25519")))


@pytest.mark.parametrize(("entry", "reason"), [
    ("home/", "the hermes_nb home inside the workspace (serving token, approvals)"),
    (".ssh/", "a dot-entry of the person's home, which the workspace is"),
    (".aws/", "another credential folder of the home"),
    (".git-credentials", "a dot-file of the home"),
    ("link-out/", "a symlink to a folder outside the workspace under strict reads"),
])
def test_a_folder_listing_never_names_what_reads_refuse(ws: Path, hermes_home: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch, entry: str,
                                                        reason: str) -> None:
    """read_file on a folder (Hermes v0.23.5) lists each entry only if reading it would be allowed: a hostile
    model must not learn the names of hidden things by listing their folder."""
    monkeypatch.setenv("HOME", str(ws))
    home = ws / "home"
    shutil.copytree(hermes_home, home)
    (home / "config.yaml").write_text(yaml.safe_dump({"workspace_strict_reads": True}))
    monkeypatch.setenv("HERMES_NB_HOME", str(home))
    (ws / ".ssh").mkdir()
    (ws / ".ssh" / "id_ed25519").write_text("key\n")
    (ws / ".aws").mkdir()
    (ws / ".git-credentials").write_text("https://u:p@host\n")
    (tmp_path / "elsewhere").mkdir()
    (ws / "link-out").symlink_to(tmp_path / "elsewhere")
    (ws / "notes.txt").write_text("mine\n")
    name = entry.rstrip("/")
    assert name in os.listdir(ws), reason  # the entry is there: only the check keeps it out
    listed = json.loads(call("read_file", path="."))["entries"]
    assert "notes.txt" in listed and entry not in listed and name not in listed, (reason, listed)
