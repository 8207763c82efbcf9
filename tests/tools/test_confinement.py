"""Confinement without races: strict reads hold for every file tool, spill files stay per session, a folder
swapped for a symlink between the check and the open redirects nothing, and oversized arguments are refused."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

import hermes_nb.tools.file_tools as file_tools
import hermes_nb.tools.file_writes as file_writes
from hermes_nb.tools.registry import registry


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(root))
    return root.resolve()


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("the secret\n")
    return folder


@pytest.fixture
def strict(hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"workspace_strict_reads": True}))


def call(name: str, **args: object) -> str:
    return registry.dispatch(name, args)


def error(result: str) -> str:
    data = json.loads(result)
    assert isinstance(data, dict) and "error" in data, result
    return data["error"]


# -- strict reads, every file tool ------------------------------------------------------------------

@pytest.mark.usefixtures("strict")
def test_search_files_does_not_follow_a_symlinked_file_out(ws: Path, outside: Path) -> None:
    (ws / "mine.txt").write_text("my secret is safe\n")
    (ws / "leak.txt").symlink_to(outside / "secret.txt")
    out = call("search_files", pattern="secret")
    assert '{"path": "mine.txt", "line": 1, "content": "my secret is safe"}' in out
    assert "the secret" not in out and "leak.txt" not in out


@pytest.mark.usefixtures("strict")
def test_search_files_does_not_follow_a_symlinked_folder_out(ws: Path, outside: Path) -> None:
    (ws / "door").symlink_to(outside)
    assert "the secret" not in call("search_files", pattern="secret")
    assert "refusing to read outside" in error(call("search_files", pattern="secret", path="door"))


def test_search_files_still_follows_links_when_reads_are_not_strict(ws: Path, outside: Path) -> None:
    (ws / "leak.txt").symlink_to(outside / "secret.txt")
    assert '{"path": "leak.txt", "line": 1, "content": "the secret"}' in call("search_files", pattern="secret")


@pytest.mark.usefixtures("strict")
@pytest.mark.parametrize("tool", ["read_file", "patch", "search_files"])
def test_every_file_tool_refuses_a_symlink_out(ws: Path, outside: Path, tool: str) -> None:
    (ws / "leak.txt").symlink_to(outside / "secret.txt")
    args: dict[str, Any] = {"read_file": {"path": "leak.txt"},
                            "patch": {"mode": "replace", "path": "leak.txt", "old_string": "the", "new_string": "a"},
                            "search_files": {"pattern": "secret", "path": "leak.txt"}}[tool]
    assert "refusing" in error(call(tool, **args))
    assert (outside / "secret.txt").read_text() == "the secret\n"


# -- spill files ----------------------------------------------------------------------------------

@pytest.mark.usefixtures("strict")
def test_strict_reads_cannot_read_an_earlier_sessions_spill_files(ws: Path, hermes_home: Path) -> None:
    from hermes_nb.tools.budget import maybe_persist_tool_result, parse_spill_block

    folder = hermes_home / "cache" / "spillover"
    folder.mkdir(parents=True)
    (folder / "call_old-0123456789.txt").write_text("yesterday's private output\n")
    assert "inside the hermes_nb home" in error(call("read_file", path=str(folder / "call_old-0123456789.txt")))
    assert "inside the hermes_nb home" in error(call("search_files", pattern="private", path=str(folder)))
    info = parse_spill_block(maybe_persist_tool_result("today\n" * 100, "t", "call_new", threshold=10))
    assert info is not None and "today" in call("read_file", path=info["path"])


# -- the race between check and open, made deterministic ------------------------------------------

def _swap_after_check(monkeypatch: pytest.MonkeyPatch, folder: Path, target: Path) -> None:
    """After the tool's path check passes, replace ``folder`` by a symlink to ``target`` (as an attacker
    racing the tool would), then let the tool open what it checked."""
    check = file_tools.resolve_path

    def check_then_swap(p: Any, *, for_write: bool) -> Path:
        real = check(p, for_write=for_write)
        shutil.rmtree(folder)
        folder.symlink_to(target)
        return real

    monkeypatch.setattr(file_tools, "resolve_path", check_then_swap)  # the readers
    monkeypatch.setattr(file_writes, "resolve_path", check_then_swap)  # write_file and patch


def test_write_file_is_not_redirected_by_a_folder_swapped_for_a_symlink(
        ws: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (ws / "sub").mkdir()
    _swap_after_check(monkeypatch, ws / "sub", outside)
    message = error(call("write_file", path="sub/planted.txt", content="pwned"))
    assert "refusing to write" in message and "symbolic link" in message
    assert not (outside / "planted.txt").exists()


def test_a_swap_deeper_in_a_new_path_is_refused_too(ws: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (ws / "a" / "b").mkdir(parents=True)
    _swap_after_check(monkeypatch, ws / "a" / "b", outside)
    assert "symbolic link" in error(call("write_file", path="a/b/c/d.txt", content="x"))
    assert not (outside / "c").exists()


def test_patch_is_not_redirected(ws: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (ws / "sub").mkdir()
    (ws / "sub" / "secret.txt").write_text("the secret\n")
    _swap_after_check(monkeypatch, ws / "sub", outside)
    assert "symbolic link" in error(call("patch", mode="replace", path="sub/secret.txt", old_string="the", new_string="a"))
    assert (outside / "secret.txt").read_text() == "the secret\n"


@pytest.mark.usefixtures("strict")
def test_a_strict_read_is_not_redirected(ws: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (ws / "sub").mkdir()
    (ws / "sub" / "secret.txt").write_text("harmless\n")
    _swap_after_check(monkeypatch, ws / "sub", outside)
    out = call("read_file", path="sub/secret.txt")
    assert "the secret" not in out and "symbolic link" in error(out)


def test_writes_still_create_folders(ws: Path) -> None:
    assert json.loads(call("write_file", path="new/deep/f.txt", content="hi\n"))["bytes_written"] == 3
    assert (ws / "new" / "deep" / "f.txt").read_text() == "hi\n"


# -- argument size --------------------------------------------------------------------------------

def _spy_json_loads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    sizes: list[int] = []
    real: Callable[..., Any] = json.loads

    def loads(s: Any, *a: Any, **k: Any) -> Any:
        sizes.append(len(s))
        return real(s, *a, **k)

    monkeypatch.setattr(json, "loads", loads)
    return sizes


def test_oversized_arguments_are_refused_before_parsing(ws: Path, hermes_home: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"budget": {"argument_chars": 1000}}))
    big = json.dumps({"path": "big.txt", "content": "x" * 5000})
    sizes = _spy_json_loads(monkeypatch)
    message = error(registry.dispatch("write_file", big))
    assert "over the limit of 1,000" in message and "budget.argument_chars" in message
    assert all(n < 1000 for n in sizes), "the oversized arguments were parsed"
    assert not (ws / "big.txt").exists()
    small = json.dumps({"path": "small.txt", "content": "x" * 10})
    assert "bytes_written" in registry.dispatch("write_file", small)


def test_oversized_arguments_in_a_batch_are_refused_unparsed(ws: Path, hermes_home: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_nb.tools.batch.scheduling import run_tool_batch

    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"budget": {"argument_chars": 1000}}))
    big = json.dumps({"path": "big.txt", "content": "x" * 100_000})  # planning parses what is small
    small = json.dumps({"path": "small.txt", "content": "x"})
    sizes = _spy_json_loads(monkeypatch)
    results = run_tool_batch([{"id": i, "type": "function", "function": {"name": "write_file", "arguments": a}}
                              for i, a in (("b", big), ("s", small))])
    assert "over the limit" in error(results[0].content) and "bytes_written" in results[1].content
    assert all(n < 1000 for n in sizes)


def test_the_default_argument_limit() -> None:
    from hermes_nb.tools.budget import DEFAULT_ARGUMENT_CHARS, argument_limit

    assert argument_limit() == DEFAULT_ARGUMENT_CHARS >= 1_000_000
    huge = "{" + " " * (DEFAULT_ARGUMENT_CHARS + 1) + "}"
    assert "over the limit" in error(registry.dispatch("write_file", huge))


def test_no_file_descriptor_is_leaked(ws: Path) -> None:
    before = len(os.listdir("/proc/self/fd"))
    for i in range(50):
        call("write_file", path=f"d/f{i}.txt", content="x")
        call("read_file", path=f"d/f{i}.txt")
    assert len(os.listdir("/proc/self/fd")) <= before + 2


# -- the kernel's own writes are link-safe (tools.safety.safe_write) --------------------------------

def test_a_link_planted_under_the_next_spill_name_is_replaced_not_followed(ws: Path, hermes_home: Path) -> None:
    """The sandbox-escape of the attack set: a symlink named after the next tool-call id's spill file, pointing
    at config.yaml. The spill must land in the spill folder and config.yaml keep its bytes."""
    from hermes_nb.tools.budget import _file_name, maybe_persist_tool_result, parse_spill_block, spill_dir

    config = hermes_home / "config.yaml"
    config.write_text("# the person's rules\n")
    spill_dir().mkdir(parents=True)
    planted = spill_dir() / _file_name("call_next")
    planted.symlink_to(config)
    info = parse_spill_block(maybe_persist_tool_result("x" * 500, "t", "call_next", threshold=10))
    assert info is not None
    assert config.read_text() == "# the person's rules\n"
    assert not planted.is_symlink() and planted.read_text() == "x" * 500
    # unprotected, the same write follows the link (this is what the test guards against)
    planted.unlink()
    planted.symlink_to(config)
    planted.write_text("y")
    assert config.read_text() == "y"


def test_the_config_writer_replaces_a_planted_link(hermes_home: Path, tmp_path: Path) -> None:
    from hermes_nb.tools.config import load_config, save_config

    victim = tmp_path / "bashrc"
    victim.write_text("# rc\n")
    (hermes_home / "config.yaml").symlink_to(victim)
    save_config({"sandbox": {"network": False}})
    assert victim.read_text() == "# rc\n"
    assert not (hermes_home / "config.yaml").is_symlink() and load_config() == {"sandbox": {"network": False}}


def test_write_atomic_refuses_a_linked_folder_and_odd_names(tmp_path: Path) -> None:
    from hermes_nb.tools.safety.safe_write import write_atomic

    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(OSError):
        write_atomic(tmp_path / "link", "f", b"x")
    for name in ("", "a/b", "..", "."):
        with pytest.raises(ValueError):
            write_atomic(real, name, b"x")
    assert list(real.iterdir()) == []
    write_atomic(real, "f", [b"a", b"b"])
    assert (real / "f").read_bytes() == b"ab" and (real / "f").stat().st_mode & 0o777 == 0o600


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(tmp_path: Path) -> None:
    from hermes_nb.tools.safety.safe_write import open_folder, replace_at, write_at

    (tmp_path / "f").write_bytes(b"old")

    def chunks() -> Any:
        yield b"half"
        raise OSError(28, "No space left on device")

    fd = open_folder(tmp_path)
    try:
        with pytest.raises(OSError, match="No space"):
            write_at(fd, "f", chunks())
        (tmp_path / "full").mkdir()
        (tmp_path / "full" / "kept").write_bytes(b"k")
        with pytest.raises(OSError):  # a folder with something in it is never removed to make room
            replace_at(fd, "full", lambda tmp: os.symlink("x", tmp, dir_fd=fd), over_folder=True)
        (tmp_path / "empty").mkdir()
        replace_at(fd, "empty", lambda tmp: os.symlink("x", tmp, dir_fd=fd), over_folder=True)
        write_at(fd, "n" * 250, b"long")  # the temporary name of a long one still fits NAME_MAX
    finally:
        os.close(fd)
    assert (tmp_path / "f").read_bytes() == b"old" and (tmp_path / "full" / "kept").read_bytes() == b"k"
    assert os.readlink(tmp_path / "empty") == "x" and (tmp_path / ("n" * 250)).read_bytes() == b"long"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["f", "full", "empty", "n" * 250])
