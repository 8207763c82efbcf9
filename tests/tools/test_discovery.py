"""Discovery: the AST verdict, importing what registers, broken files, and the verdict cache."""

from __future__ import annotations

import itertools
import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from hermes_nb.tools.registry import registry
from hermes_nb.tools.sources import discovery
from hermes_nb.tools.sources.discovery import discover_builtin_tools, discover_tool_files, scan_file
from hermes_nb.tools.sources.load_report import failures

_prefixes = itertools.count()


@pytest.fixture
def prefix() -> str:
    """A module prefix no other test uses (imported modules stay in sys.modules)."""
    name = f"hermes_nb_test_discovery_{next(_prefixes)}"
    yield name
    for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[mod]


def _write(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


REG = 'registry.register(name="{n}", toolset="t", schema={{"parameters": {{}}}}, handler=lambda a, **k: "ok")'

_REG_N = REG.format(n="n")

# (source, verdict, why)
VERDICTS = [
    ("from tools.registry import registry\n" + _REG_N, True, "plain top-level call"),
    ("import tools.registry\ntools.registry.registry.register('n', 't', {'parameters': {}}, print)", True,
     "fully qualified registry"),
    ("entry = " + _REG_N, True, "assigned result"),
    ("import os\nif os.name:\n    " + _REG_N, True, "inside if"),
    ("import os\nif not os.name:\n    pass\nelse:\n    " + _REG_N, True, "inside else"),
    ("for n in ['a', 'b']:\n    " + _REG_N, True, "inside for"),
    ("while True:\n    " + _REG_N + "\n    break", True, "inside while"),
    ("import contextlib\nwith contextlib.suppress(Exception):\n    " + _REG_N, True, "inside with"),
    ("try:\n    pass\nexcept ImportError:\n    " + _REG_N, True, "inside except"),
    ("try:\n    pass\nfinally:\n    " + _REG_N, True, "inside finally"),
    ("try:\n    import x\nexcept ImportError:\n    pass\nelse:\n    " + _REG_N, True, "inside try-else"),
    ("def setup():\n    " + _REG_N, False, "inside a function: runs only when called"),
    ("class T:\n    def m(self):\n        " + _REG_N, False, "inside a class"),
    ("class T:\n    " + _REG_N, False, "class body: not module level"),
    ("if True:\n    def f():\n        " + _REG_N, False, "function inside if"),
    ("doc = '" + _REG_N.replace("'", '"') + "'", False, "inside a string"),
    ("# " + _REG_N, False, "inside a comment"),
    ("other.register(name='n', toolset='t', schema={}, handler=print)", False, "another object's register"),
    ("registry.registers(name='n')", False, "another method"),
    ("register(name='n')", False, "bare function"),
    ("f = lambda: " + _REG_N, False, "inside a lambda: runs only when called"),
    ("import atexit\natexit.register(print)", False, "atexit.register"),
]


@pytest.mark.parametrize(("source", "verdict", "why"), VERDICTS, ids=[v[2] for v in VERDICTS])
def test_scan_file_verdicts(tmp_path: Path, source: str, verdict: bool, why: str) -> None:
    path = tmp_path / "tool.py"
    path.write_text(source, encoding="utf-8")
    assert scan_file(path) is verdict, why


def test_scan_file_syntax_error_raises(tmp_path: Path) -> None:
    path = _write(tmp_path, "bad.py", "registry.register(\n")
    with pytest.raises(SyntaxError):
        scan_file(path)


def test_imports_only_registering_files(tmp_path: Path, prefix: str) -> None:
    _write(tmp_path, "alpha.py", "from tools.registry import registry\n" + REG.format(n="disc_alpha"))
    _write(tmp_path, "helper.py", "VALUE = 1\ndef register():\n    pass\n")
    _write(tmp_path, "beta/tool.py", "from tools.registry import registry\n" + REG.format(n="disc_beta"))
    loaded = discover_tool_files(tmp_path, module_prefix=prefix, source_label="builtin")
    assert loaded == [f"{prefix}.alpha", f"{prefix}.beta.tool"]
    assert f"{prefix}.helper" not in sys.modules
    assert registry.get_entry("disc_alpha") is not None
    assert registry.get_entry("disc_beta") is not None
    assert registry.get_entry("disc_alpha").source == "builtin"
    # a second call is a no-op for modules already imported (no re-registration)
    entry = registry.get_entry("disc_alpha")
    assert discover_tool_files(tmp_path, module_prefix=prefix, source_label="builtin") == loaded
    assert registry.get_entry("disc_alpha") is entry


def test_broken_file_is_recorded_and_others_load(tmp_path: Path, prefix: str) -> None:
    _write(tmp_path, "a_broken.py", "from tools.registry import registry\nimport no_such_module_xyz\n"
           + REG.format(n="disc_broken"))
    _write(tmp_path, "b_good.py", "from tools.registry import registry\n" + REG.format(n="disc_good"))
    _write(tmp_path, "c_syntax.py", "from tools.registry import registry\nregistry.register(\n")
    loaded = discover_tool_files(tmp_path, module_prefix=prefix, source_label="user-tools")
    assert loaded == [f"{prefix}.b_good"]
    assert registry.get_entry("disc_good") is not None
    found = {f.name: f for f in failures() if f.source == "user-tools"}
    assert found[f"{prefix}.a_broken"].message.startswith("ModuleNotFoundError: ")
    assert "no_such_module_xyz" in found[f"{prefix}.a_broken"].detail
    assert found[f"{prefix}.c_syntax"].message.startswith("SyntaxError")
    assert f"{prefix}.a_broken" not in sys.modules

    # fixed: the next discovery imports it and clears the failure
    _write(tmp_path, "a_broken.py", "from tools.registry import registry\n" + REG.format(n="disc_broken"))
    loaded = discover_tool_files(tmp_path, module_prefix=prefix, source_label="user-tools")
    assert f"{prefix}.a_broken" in loaded
    assert f"{prefix}.a_broken" not in {f.name for f in failures()}


def test_warm_cache_skips_parsing(tmp_path: Path, prefix: str, monkeypatch: pytest.MonkeyPatch,
                                  hermes_home: Path) -> None:
    for i in range(5):
        _write(tmp_path, f"t{i}.py", "from tools.registry import registry\n" + REG.format(n=f"disc_warm{i}"))
    _write(tmp_path, "plain.py", "X = 'register'\n")
    parses: list[Path] = []
    real_scan = discovery.scan_file
    monkeypatch.setattr(discovery, "scan_file", lambda p: parses.append(Path(p)) or real_scan(p))

    cold = discover_tool_files(tmp_path, module_prefix=prefix, source_label="builtin")
    assert len(parses) == 6
    cache = json.loads((hermes_home / "cache" / "discovery.json").read_text())
    assert cache["files"][str(tmp_path.resolve() / "t0.py")][2] is True
    assert cache["files"][str(tmp_path.resolve() / "plain.py")][2] is False

    parses.clear()
    assert discover_tool_files(tmp_path, module_prefix=prefix, source_label="builtin") == cold
    assert parses == []

    # a changed file is parsed again (size changes, so mtime granularity does not matter)
    _write(tmp_path, "plain.py", "X = 'register, changed'\n")
    discover_tool_files(tmp_path, module_prefix=prefix, source_label="builtin")
    assert [p.name for p in parses] == ["plain.py"]


@pytest.mark.parametrize("junk", ["{not json", "[]", '{"version": 1, "files": []}', ""])
def test_corrupt_cache_is_ignored(tmp_path: Path, prefix: str, hermes_home: Path, junk: str) -> None:
    cache = hermes_home / "cache" / "discovery.json"
    cache.parent.mkdir(parents=True)
    cache.write_text(junk)
    _write(tmp_path, "t.py", "from tools.registry import registry\n" + REG.format(n="disc_corrupt"))
    assert discover_tool_files(tmp_path, module_prefix=prefix, source_label="builtin") == [f"{prefix}.t"]
    assert json.loads(cache.read_text())["version"] == 1  # rewritten whole


def test_unwritable_cache_is_ignored(tmp_path: Path, prefix: str, hermes_home: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (hermes_home / "cache").write_text("a file where the cache folder should be")
    _write(tmp_path, "t.py", "from tools.registry import registry\n" + REG.format(n="disc_unwritable"))
    assert discover_tool_files(tmp_path, module_prefix=prefix, source_label="builtin") == [f"{prefix}.t"]
    # and a home that does not exist at all
    monkeypatch.setenv("HERMES_NB_HOME", str(tmp_path / "missing" / "home"))
    assert discover_tool_files(tmp_path, module_prefix=prefix, source_label="builtin") == [f"{prefix}.t"]


def test_builtin_tools_are_found() -> None:
    loaded = discover_builtin_tools()
    for module in ("hermes_nb.tools.file_tools", "hermes_nb.tools.terminal_tool", "hermes_nb.tools.code_tool", "hermes_nb.tools.clarify_tool"):
        assert module in loaded
    assert "hermes_nb.tools.registry" not in loaded
    assert {"read_file", "write_file", "patch", "search_files", "terminal", "python", "clarify"} <= set(
        registry.get_all_tool_names())


def test_builtin_tools_dir_outside_package(tmp_path: Path) -> None:
    stem = f"disc_user_{os.getpid()}"
    _write(tmp_path, f"{stem}.py", "from tools.registry import registry\n" + REG.format(n="disc_user"))
    try:
        assert discover_builtin_tools(tmp_path) == [f"hermes_nb_user_tools.{stem}"]
        assert registry.get_entry("disc_user").source == "builtin"
    finally:
        sys.modules.pop(f"hermes_nb_user_tools.{stem}", None)


def test_the_core_modules_skipped_unparsed_exist_and_never_register():
    """The cold-start skip list names real top-level modules of the core, none of which registers (a moved
    module left behind is dead weight; a registering one skipped would lose its tools)."""
    core = discovery._TOOLS_DIR
    for name in sorted(discovery._CORE):
        path = core / f"{name}.py"
        assert path.is_file(), f"{name} is skipped but is not a module of {core}"
        assert not scan_file(path), f"{name} registers tools at module level but discovery skips it"
