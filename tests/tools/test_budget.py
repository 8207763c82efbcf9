"""The result budget: thresholds, spill files, honest failure, and the per-turn budget."""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

import pytest

from hermes_nb.tools import budget
from hermes_nb.tools.budget import (
    DEFAULT_PREVIEW_SIZE_CHARS,
    DEFAULT_RESULT_SIZE_CHARS,
    DEFAULT_TURN_BUDGET_CHARS,
    enforce_turn_budget,
    maybe_persist_tool_result,
    parse_spill_block,
    result_threshold,
    spill_dir,
)
from hermes_nb.tools.config import save_config
from hermes_nb.tools.registry import registry

SCHEMA = {"description": "t", "parameters": {"type": "object", "properties": {}}}


@pytest.fixture
def read_file_tool() -> None:
    """The built-in read_file, registered (the conftest removes it after each test that registered it)."""
    import importlib

    import hermes_nb.tools.file_tools as file_tools

    if registry.get_entry("read_file") is None:
        importlib.reload(file_tools)


def lines(n: int, width: int = 99) -> str:
    return "".join(f"{i:06d} " + "x" * (width - 7) + "\n" for i in range(n))


def test_defaults_match_hermes() -> None:
    assert (DEFAULT_RESULT_SIZE_CHARS, DEFAULT_TURN_BUDGET_CHARS, DEFAULT_PREVIEW_SIZE_CHARS) == (100_000, 200_000, 1_500)


def test_threshold_sources_in_order() -> None:
    assert result_threshold("anything") == DEFAULT_RESULT_SIZE_CHARS
    save_config({"budget": {"result_size_chars": 5000, "tools": {"anything": 700}}})
    assert result_threshold("other") == 5000, "config default"
    assert result_threshold("anything") == 700, "config per-tool"
    registry.register("anything", "budget_test", SCHEMA, lambda a, **k: "", max_result_size_chars=300)
    assert result_threshold("anything") == 300, "the registration beats the config"
    assert result_threshold("anything", threshold=10) == 10, "an explicit threshold beats everything"


def test_read_file_is_infinite_even_when_not_registered_and_with_config() -> None:
    save_config({"budget": {"result_size_chars": 10, "tools": {"read_file": 10}}})
    registry.deregister("read_file")
    assert result_threshold("read_file") == math.inf
    huge = "y" * 300_000
    assert maybe_persist_tool_result(huge, "read_file", "r1") is huge


def test_registered_read_file_is_infinite(read_file_tool: None) -> None:
    assert registry.get_entry("read_file").max_result_size_chars == math.inf
    assert result_threshold("read_file") == math.inf


def test_at_or_under_the_threshold_unchanged() -> None:
    text = "a" * 100
    assert maybe_persist_tool_result(text, "t", "id", threshold=100) is text
    assert not spill_dir().exists()


def test_over_the_threshold_spills_the_whole_content(hermes_home: Path) -> None:
    content = "first line\r\nünïcode ✓\n" + lines(2000) + "no newline at the end"
    block = maybe_persist_tool_result(content, "big_tool", "call_abc", threshold=1000)
    info = parse_spill_block(block)
    assert info is not None
    path = Path(info["path"])
    assert path.is_absolute() and path.parent == (hermes_home / "cache" / "spillover").resolve()
    assert path.suffix == ".txt"
    assert path.read_bytes().decode("utf-8") == content, "the file holds the content exactly"
    assert info["size"] == len(content) and info["tool"] == "big_tool"
    assert info["lines"] == content.count("\n") + 1
    assert f"{len(content)} chars" in block and str(path) in block
    assert "read_file(" in block and "offset=1, limit=500" in block and "offset=501" in block
    assert len(block) < DEFAULT_PREVIEW_SIZE_CHARS + 1000


def test_preview_is_cut_at_a_line_end() -> None:
    content = lines(100, width=99)  # 100-char lines
    block = maybe_persist_tool_result(content, "t", "p", threshold=10)
    preview = block.split(" chars):\n", 1)[1]
    assert content.startswith(preview) and preview.endswith("\n")
    assert len(preview) == 1500 - 1500 % 100
    assert f"first {len(preview):,} of {len(content):,} chars" in block


def test_preview_of_one_long_line_is_a_hard_cut() -> None:
    block = maybe_persist_tool_result("z" * 10_000, "t", "p", threshold=10)
    assert block.endswith("\n" + "z" * DEFAULT_PREVIEW_SIZE_CHARS)


@pytest.mark.parametrize("hostile", ["../../etc/passwd", "/etc/passwd", "..", ".", "", "a/b\\c", "x\x00y",
                                     "~root", "%2e%2e%2f", "é" * 300, "-rf"])
def test_hostile_ids_stay_inside_the_spill_folder(hostile: str) -> None:
    info = parse_spill_block(maybe_persist_tool_result("q" * 50, "t", hostile, threshold=1))
    assert info is not None
    path = Path(info["path"])
    assert path.parent == spill_dir().resolve()
    assert path.read_text() == "q" * 50
    name = path.name
    assert all(c.isascii() and (c.isalnum() or c in "_-.") for c in name) and not name.startswith((".", "-"))


def test_ids_that_sanitise_alike_get_different_files() -> None:
    a = parse_spill_block(maybe_persist_tool_result("A" * 20, "t", "x/y", threshold=1))
    b = parse_spill_block(maybe_persist_tool_result("B" * 20, "t", "x.y", threshold=1))
    assert a and b and a["path"] != b["path"]
    assert Path(a["path"]).read_text() == "A" * 20


def test_unwritable_folder_returns_truncated_text_and_says_so(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("HERMES_NB_HOME", str(blocker / "home"))  # mkdir under a regular file fails, even as root
    content = lines(50)
    out = maybe_persist_tool_result(content, "t", "id", threshold=1000)
    assert "could not be saved" in out
    assert parse_spill_block(out) is None
    kept = out.split("\n\n[Output truncated", 1)[0]
    assert content.startswith(kept) and 0 < len(kept) <= 1000
    assert f"{len(content):,} chars" in out


def test_old_spill_files_are_pruned_young_ones_kept() -> None:
    folder = spill_dir()
    folder.mkdir(parents=True)
    old = time.time() - 8 * 24 * 3600
    for i in range(250):
        p = folder / f"old{i:03d}.txt"
        p.write_text("o")
        os.utime(p, (old + i, old + i))
    for i in range(5):
        (folder / f"young{i}.txt").write_text("y")
    maybe_persist_tool_result("n" * 30, "t", "new", threshold=1)
    names = {p.name for p in folder.glob("*.txt")}
    assert len(names) == budget.KEEP_FILES
    assert {f"young{i}.txt" for i in range(5)} <= names and "old249.txt" in names and "old000.txt" not in names


def test_parse_spill_block_rejects_other_text() -> None:
    assert parse_spill_block("hello") is None
    assert parse_spill_block("") is None
    assert parse_spill_block(None) is None  # type: ignore[arg-type]


# -- the turn budget ------------------------------------------------------------------------------

def msg(call_id: str, size: int, name: str = "t") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": lines(size // 100)}


def total(messages: list[dict[str, Any]]) -> int:
    return sum(len(m["content"]) for m in messages)


def test_turn_under_budget_is_unchanged_copies() -> None:
    messages = [msg("a", 1000), msg("b", 2000)]
    out = enforce_turn_budget(messages)
    assert out == messages and all(o is not m for o, m in zip(out, messages, strict=True))


def test_turn_budget_spills_the_largest_first_and_never_drops() -> None:
    messages = [msg("small", 30_000), msg("largest", 150_000), msg("mid", 60_000), msg("tiny", 1_000)]
    before = [dict(m) for m in messages]
    out = enforce_turn_budget(messages)
    assert messages == before, "the input is not mutated"
    assert [m["tool_call_id"] for m in out] == ["small", "largest", "mid", "tiny"]
    assert total(out) <= DEFAULT_TURN_BUDGET_CHARS
    spilled = [m["tool_call_id"] for m in out if parse_spill_block(m["content"])]
    assert spilled == ["largest"]
    info = parse_spill_block(out[1]["content"])
    assert info is not None and Path(info["path"]).read_text() == messages[1]["content"]


def test_turn_budget_spills_several_in_size_order() -> None:
    messages = [msg("a", 5_000), msg("b", 9_000), msg("c", 7_000), msg("d", 2_000)]
    out = enforce_turn_budget(messages, budget=8_000)
    spilled = {m["tool_call_id"] for m in out if parse_spill_block(m["content"])}
    assert spilled == {"b", "c", "a"}
    assert total(out) <= 8_000 and out[3] == messages[3]


def test_turn_budget_from_config() -> None:
    save_config({"budget": {"turn_chars": 3_000}})
    out = enforce_turn_budget([msg("a", 4_000)])
    assert parse_spill_block(out[0]["content"]) is not None


def test_already_spilled_blocks_are_not_spilled_again() -> None:
    block = maybe_persist_tool_result(lines(100), "t", "first", threshold=10)
    files_before = sorted(spill_dir().iterdir())
    out = enforce_turn_budget([{"role": "tool", "tool_call_id": "first", "content": block}], budget=10)
    assert out[0]["content"] == block
    assert sorted(spill_dir().iterdir()) == files_before


def test_turn_budget_when_spilling_fails_still_keeps_every_message(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    blocker = tmp_path / "f"
    blocker.write_text("")
    monkeypatch.setenv("HERMES_NB_HOME", str(blocker))
    out = enforce_turn_budget([msg("a", 9_000), msg("b", 500)], budget=5_000)
    assert len(out) == 2 and "could not be saved" in out[0]["content"] and out[1]["content"] == lines(5)


def test_spilled_result_reads_back_with_read_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                 read_file_tool: None) -> None:
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(tmp_path))
    content = lines(1200)
    info = parse_spill_block(maybe_persist_tool_result(content, "t", "rb", threshold=100))
    assert info is not None
    page = registry.dispatch("read_file", {"path": info["path"], "offset": 501, "limit": 500})
    assert "000500 " in page and "000999 " in page and "001000 " not in page
    assert maybe_persist_tool_result(page, "read_file", "rb2") == page
    # the block's instructions fit read_file's shape: JSON, 'N|line' from the offset, the next offset named
    shown = json.loads(page)
    assert shown["content"].startswith("501|000500 ") and shown["content"].split("\n")[-1].startswith("1000|")
    assert shown["total_lines"] == 1200 and "offset=1001" in shown["hint"]
    assert "'N|line'" in (block := maybe_persist_tool_result(content, "t", "rb3", threshold=100))
    tail = json.loads(registry.dispatch("read_file", {"path": parse_spill_block(block)["path"], "offset": -2}))
    assert tail["content"].split("\n")[0].startswith("1199|") and tail["truncated"] is False


def test_config_changes_are_seen_on_the_next_call() -> None:
    save_config({"budget": {"result_size_chars": 50}})
    assert result_threshold("cfg_tool") == 50
    save_config({"budget": {"result_size_chars": 5000, "padding": "so the size differs too"}})
    assert result_threshold("cfg_tool") == 5000
    from hermes_nb.tools.config import config_path

    config_path().unlink()
    assert result_threshold("cfg_tool") == DEFAULT_RESULT_SIZE_CHARS
