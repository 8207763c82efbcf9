"""The kernel never imports what the model wrote unless a person said yes (issue 32, item 3).

Every case plants a file the way a landed tool call would (the file, then ``checkpoints.record``), then runs
the import in a fresh interpreter whose working folder is first on ``sys.path`` (as in a kernel): once with the
guard (``tools.safety.writes.imports.install``) and once without. Without it the payload runs — so each test can fail
— and with it the import is a ``ModuleNotFoundError`` naming the file, the call and ``%trust``.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from hermes_nb.tools.safety.writes import checkpoints, ledger
from hermes_nb.tools.safety.writes.changes import Change

#: A module that runs, leaves a mark, then looks like a missing optional dependency.
PAYLOAD = "open({mark!r}, 'w').close()\nraise ModuleNotFoundError('optional')\n"

RUNNER = r"""
import importlib, json, os, sys
sys.dont_write_bytecode = True
from hermes_nb.tools.safety.writes import imports  # loaded before the working folder is on the path, as in a kernel
if os.environ["GUARD"] == "on":
    imports.install()
sys.path.insert(0, "")  # a kernel's working folder, first
out = {}
for case_id, code in json.loads(os.environ["CASES"]):
    try:
        exec(code, {"__name__": "cell"})
        out[case_id] = "ok"
    except BaseException as exc:
        out[case_id] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""


def run_cases(ws: Path, cases: list[tuple[str, str]], guard: str) -> dict[str, str]:
    env = {**os.environ, "GUARD": guard, "CASES": json.dumps(cases)}
    env.pop("PYTHONPATH", None)
    done = subprocess.run([sys.executable, "-P", "-c", RUNNER], cwd=ws, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "stderr": done.stderr}


def marks(ws: Path) -> set[str]:
    return {p.name[4:] for p in (ws / "marks").iterdir()}


def model_writes(ws: Path, rel: str, data: bytes | None = None, *, link: str | None = None,
                 folder: bool = False, call_id: str = "call_guard") -> Path:
    """Land ``rel`` as a tool call would: write it, then record it."""
    path = ws / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if folder:
        path.mkdir(exist_ok=True)
        change = Change(path=str(path), kind="created", is_dir=True)
    elif link is not None:
        path.symlink_to(link)
        change = Change(path=str(path), kind="created", link_after=link)
    else:
        assert data is not None
        path.write_bytes(data)
        change = Change(path=str(path), kind="created", after=data, mode_after=0o644)
    checkpoints.record(call_id=call_id, tool="terminal", workspace=ws, changes=[change])
    return path


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path / "ws"))
    (root / "marks").mkdir(parents=True)
    return root


def payload(ws: Path, case_id: str) -> bytes:
    return PAYLOAD.format(mark=str(ws / "marks" / f"RAN-{case_id}")).encode()


# --- class 1: a module named like an optional import of IPython, httpx (and its httpcore) and pandas ---------

CATCHES = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


def _catches_import_error(node: ast.Try) -> bool:
    for handler in node.handlers:
        kinds = [] if handler.type is None else (
            handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type])
        if handler.type is None or any(isinstance(k, ast.Name) and k.id in CATCHES for k in kinds):
            return True
    return False


def _imports_by_call(node: ast.AST) -> bool:
    func = getattr(node, "func", None)
    return (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)) in (
        "import_module", "__import__")


def optional_imports(package: str) -> set[str]:
    """Top-level names ``package`` imports where an ImportError is caught: ``import X`` / ``from X import``
    / ``import_module("X")`` inside ``try``, and the string given to any of its functions that wraps
    ``import_module(param)`` in such a ``try`` (pandas's ``import_optional_dependency("pytz")``)."""
    root = Path(importlib.util.find_spec(package).origin).parent
    found: set[str] = set()
    wrappers: set[str] = set()
    literal_calls: list[ast.Call] = []
    for file in root.rglob("*.py"):
        if "tests" in file.relative_to(root).parts:  # the library's own test suite never runs in a kernel
            continue
        try:
            text = file.read_text(encoding="utf-8")
            tree = ast.parse(text)
        except (SyntaxError, UnicodeDecodeError):
            continue
        may_wrap = "import_module(" in text or "__import__(" in text
        for node in ast.walk(tree):
            if may_wrap and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                params = {a.arg for a in node.args.args}
                for t in ast.walk(node):
                    if isinstance(t, ast.Try) and _catches_import_error(t) and any(
                            _imports_by_call(c) and c.args and isinstance(c.args[0], ast.Name)
                            and c.args[0].id in params for s in t.body for c in ast.walk(s)):
                        wrappers.add(node.name)
            if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                    and isinstance(node.args[0].value, str):
                literal_calls.append(node)
            if not (isinstance(node, ast.Try) and _catches_import_error(node)):
                continue
            for sub in (s for stmt in node.body for s in ast.walk(stmt)):
                if isinstance(sub, ast.Import):
                    found |= {a.name.partition(".")[0] for a in sub.names}
                elif isinstance(sub, ast.ImportFrom) and sub.level == 0 and sub.module:
                    found.add(sub.module.partition(".")[0])
                elif isinstance(sub, ast.Call) and _imports_by_call(sub) and sub.args \
                        and isinstance(sub.args[0], ast.Constant) and isinstance(sub.args[0].value, str):
                    found.add(sub.args[0].value.partition(".")[0])
    for call in literal_calls:
        func = call.func
        if (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)) in wrappers:
            found.add(call.args[0].value.partition(".")[0])
    return {n for n in found if n.isidentifier() and not n.startswith("__") and n != package.partition(".")[0]}


LIBRARIES = ("IPython", "httpx", "httpcore", "pandas")


@functools.cache
def _plantable() -> dict[str, str]:
    """Every library's optional import that the runner has not loaded yet (a loaded one is never searched
    again) and that is no builtin -> the library it came from."""
    probe = "import sys, json, hermes_nb.tools.safety.writes.imports; print(json.dumps(sorted(sys.modules)))"
    fresh = json.loads(subprocess.run([sys.executable, "-P", "-c", probe], capture_output=True, text=True,
                                      check=True).stdout)
    out: dict[str, str] = {}
    for lib in LIBRARIES:
        for name in sorted(optional_imports(lib)):
            if name not in fresh and name not in sys.builtin_module_names:
                out.setdefault(name, lib)
    return out


def test_the_scan_finds_the_measured_optional_imports() -> None:
    names = _plantable()
    assert {"h2", "socksio", "trio", "bottleneck", "numexpr", "pyarrow", "pytz"} <= set(names), sorted(names)
    assert len(names) >= 40, len(names)


def test_a_module_named_like_any_optional_import_never_runs(ws: Path) -> None:
    names = _plantable()
    for name in names:
        model_writes(ws, f"{name}.py", payload(ws, name))
    # each import as the library makes it: a miss is fine, so it is wrapped as theirs are
    cases = [(n, f"try:\n    import {n}\nexcept ImportError:\n    pass\n") for n in names]
    run_cases(ws, cases, "off")
    assert marks(ws) == set(names)  # the attack works without the guard: every payload ran
    shutil.rmtree(ws / "marks")
    (ws / "marks").mkdir()
    got = run_cases(ws, cases, "on")
    assert marks(ws) == set(), sorted(marks(ws))
    assert {got[n] for n in names} == {"ok"}  # and the library's `except ImportError` carried on
    # silently for the library, not for the person: one line each on stderr
    assert sorted(line.split()[2] for line in got["stderr"].splitlines()) == sorted(str(ws / f"{n}.py")
                                                                                   for n in names)


@pytest.mark.slow
def test_the_persons_import_pandas_runs_none_of_the_planted_modules(ws: Path) -> None:
    """End to end: pandas's own optional imports (pytz, bottleneck, numexpr, pyarrow...) at `import pandas`."""
    names = sorted(n for n, lib in _plantable().items() if lib == "pandas")
    for name in names:
        model_writes(ws, f"{name}.py", payload(ws, name))
    code = "import pandas\npandas.DataFrame({'a': [1.5, 2.5]}).sum()\npandas.Timestamp('2024-01-01', tz='UTC')\n"
    run_cases(ws, [("pandas", code)], "off")
    ran = marks(ws)
    assert ran, "pandas imported none of its optional dependencies: this test shows nothing"
    shutil.rmtree(ws / "marks")
    (ws / "marks").mkdir()
    assert run_cases(ws, [("pandas", code)], "on")["pandas"] == "ok"
    assert marks(ws) == set()


# --- class 2: every loader and every way in ---------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    reason: str
    setup: str  # the name of the setup below
    code: str
    expect_off: str = "ran"  # "ran": the payload ran; "ok": the import succeeded (no code of the model's)
    #: the refusal as the caller sees it: ours, or Python's own when `from . import name` turns a
    #: ModuleNotFoundError for that very name into "cannot import name" (the guard's line goes to stderr)
    seen: str = "refusing to import"


def _compile_extension(ws: Path, name: str) -> bytes:
    """A real extension module whose init leaves a mark (no Python headers needed: it returns NULL)."""
    c = ws.parent / f"{name}.c"
    mark = ws / "marks" / f"RAN-{name}"
    c.write_text(f'#include <stdio.h>\nvoid *PyInit_{name}(void) {{ FILE *f = fopen("{mark}", "w"); '
                 "if (f) fclose(f); return 0; }\n")
    out = ws.parent / f"{name}.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(out), str(c)], check=True, capture_output=True)
    return out.read_bytes()


def _setup(case: Case, ws: Path, outside: Path) -> None:
    cid = case.id
    body = payload(ws, cid)
    match case.setup:
        case "module":
            model_writes(ws, f"{cid}.py", body)
        case "package":
            model_writes(ws, f"{cid}/__init__.py", body)
        case "persons_package":  # the person's package; the model adds a submodule to it
            (ws / f"{cid}").mkdir()
            (ws / f"{cid}/__init__.py").write_text("")
            model_writes(ws, f"{cid}/evil.py", body)
        case "persons_package_relative":  # the person's package imports a sibling the model wrote
            (ws / f"{cid}").mkdir()
            (ws / f"{cid}/__init__.py").write_text("from . import helper\n")
            model_writes(ws, f"{cid}/helper.py", body)
        case "bytecode":  # the person's source, the model's bytecode stamped with its mtime and size
            src = ws / f"{cid}.py"
            src.write_text("VALUE = 'the person'\n")
            st = src.stat()
            code = compile(body, str(src), "exec")
            from importlib._bootstrap_external import _code_to_timestamp_pyc  # type: ignore[attr-defined]
            pyc = Path(importlib.util.cache_from_source(str(src))).relative_to(ws)
            model_writes(ws, str(pyc), bytes(_code_to_timestamp_pyc(code, int(st.st_mtime), st.st_size)))
        case "sourceless":
            from importlib._bootstrap_external import _code_to_timestamp_pyc  # type: ignore[attr-defined]
            model_writes(ws, f"{cid}.pyc", bytes(_code_to_timestamp_pyc(compile(body, cid, "exec"), 0, 0)))
        case "extension":
            suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
            model_writes(ws, f"{cid}{suffix}", _compile_extension(ws, cid))
        case "namespace":  # a folder alone: the import succeeds only because the model made it
            model_writes(ws, cid, folder=True)
        case "namespace_part":
            model_writes(ws, f"{cid}_ns", folder=True)
            model_writes(ws, f"{cid}_ns/part.py", body)
        case "zip":
            archive = ws.parent / f"{cid}.zip"
            with zipfile.ZipFile(archive, "w") as zf:
                zf.writestr(f"{cid}.py", body)
            model_writes(ws, f"{cid}.zip", archive.read_bytes())
        case "runtime_path":  # a folder put on sys.path at run time, no .pth involved
            model_writes(ws, f"vendor_{cid}/{cid}.py", body)
        case "alias":  # the person's link to the folder: the import sees the file by another path
            model_writes(ws, f"aliased_{cid}/{cid}.py", body)
            (ws / f"alias_{cid}").symlink_to(ws / f"aliased_{cid}")
        case "symlink":  # a link the model made, to a file outside the workspace it could not have written
            outside.mkdir(exist_ok=True)
            (outside / f"{cid}_target.py").write_bytes(body)
            model_writes(ws, f"{cid}.py", link=str(outside / f"{cid}_target.py"))
        case "reload":  # imported while it was the person's; the model changed it since
            (ws / f"{cid}.py").write_text("VALUE = 'the person'\n")
            path = ws / f"{cid}.py"
            change = Change(path=str(path), kind="modified", before=path.read_bytes(), after=body)
            checkpoints.record(call_id="call_guard", tool="patch", workspace=ws, changes=[change])
        case _:
            raise AssertionError(case.setup)


LOADERS = [
    Case("g_src", "a source module on the working folder", "module", "import g_src"),
    Case("g_pkg", "a package folder runs its __init__.py", "package", "import g_pkg"),
    Case("g_from", "`from pkg import name` loads the package the same way", "package", "from g_from import x"),
    Case("g_sub", "a submodule the model added to the person's package", "persons_package", "import g_sub.evil"),
    Case("g_rel", "the person's package importing a sibling the model wrote", "persons_package_relative",
         "import g_rel", seen="cannot import name 'helper'"),
    Case("g_pyc", "__pycache__ bytecode for the person's unchanged source, stamped to look fresh", "bytecode",
         "import g_pyc\nassert g_pyc.VALUE == 'the person'"),
    Case("g_sourceless", "a bare .pyc on the path (sourceless loader)", "sourceless", "import g_sourceless"),
    Case("g_ext", "an extension module: its init function runs at import", "extension", "import g_ext"),
    Case("g_ns", "a namespace package: only the model's folder makes the import succeed", "namespace",
         "import g_ns", expect_off="ok"),
    Case("g_nspart", "a module inside a namespace package the model made", "namespace_part",
         "import g_nspart_ns.part"),
    Case("g_zip", "a zip archive the model wrote, put on sys.path", "zip",
         "import sys\nsys.path.insert(0, 'g_zip.zip')\nimport g_zip"),
    Case("g_path", "a folder added to sys.path at run time (no .pth)", "runtime_path",
         "import sys\nsys.path.append('vendor_g_path')\nimport g_path"),
    Case("g_link", "a symbolic link the model made to a file elsewhere", "symlink", "import g_link"),
    Case("g_alias", "the model's file reached through a linked folder on sys.path (another spelling)", "alias",
         "import sys\nsys.path.insert(0, 'alias_g_alias')\nimport g_alias"),
    Case("g_reload", "importlib.reload of a module the model changed after its first import", "reload",
         "import importlib, g_reload\nopen('g_reload.py', 'wb').write(PAYLOAD)\nimportlib.reload(g_reload)"),
    Case("g_import_module", "importlib.import_module", "module",
         "import importlib\nimportlib.import_module('g_import_module')"),
    Case("g_dunder", "__import__", "module", "__import__('g_dunder')"),
    Case("g_runpy", "runpy.run_module finds the module through the import system", "module",
         "import runpy\nrunpy.run_module('g_runpy')"),
    Case("g_spec", "a manual load: find_spec, module_from_spec, exec_module", "module",
         "import importlib.util as u\ns = u.find_spec('g_spec')\nm = u.module_from_spec(s)\ns.loader.exec_module(m)"),
    Case("g_ipython", "IPython's extension loading (%load_ext NAME)", "module",
         "from IPython.core.interactiveshell import InteractiveShell\n"
         "InteractiveShell.instance().extension_manager.load_extension('g_ipython')"),
]


def test_every_loader_and_every_way_in_is_guarded(ws: Path, tmp_path: Path) -> None:
    for case in LOADERS:
        _setup(case, ws, tmp_path / "outside")
    cases = [(c.id, c.code.replace("PAYLOAD", repr(payload(ws, c.id)))) for c in LOADERS]
    off = run_cases(ws, cases, "off")
    for case in LOADERS:
        ran = case.id in marks(ws)
        assert ran == (case.expect_off == "ran"), (case.id, case.reason, off[case.id])
        if case.expect_off == "ok":
            assert off[case.id] == "ok", (case.id, off[case.id])
    shutil.rmtree(ws / "marks")
    (ws / "marks").mkdir()
    on = run_cases(ws, cases, "on")
    assert marks(ws) == set(), sorted(marks(ws))
    for case in LOADERS:
        assert case.seen in on[case.id], (case.id, case.reason, on[case.id])
        if case.seen == "refusing to import":
            assert "%trust " in on[case.id] and "call_guard" in on[case.id], (case.id, on[case.id])


def test_storemagic_written_by_the_model_is_not_ipythons_extension(ws: Path) -> None:
    """IPython loads ``storemagic`` from the working folder first and falls back to its own only on a
    ModuleNotFoundError: the guard's refusal is that fallback, so %store still works."""
    model_writes(ws, "storemagic.py", payload(ws, "storemagic"))
    code = ("from IPython.core.interactiveshell import InteractiveShell\nip = InteractiveShell.instance()\n"
            "ip.run_line_magic('load_ext', 'storemagic')\nassert 'store' in ip.magics_manager.magics['line']")
    assert run_cases(ws, [("storemagic", code)], "off")["storemagic"] == "ok"
    assert marks(ws) == {"storemagic"}
    (ws / "marks" / "RAN-storemagic").unlink()
    assert run_cases(ws, [("storemagic", code)], "on")["storemagic"] == "ok"
    assert marks(ws) == set()


# --- what a person's yes or hand edit changes; failing closed ---------------------------------------------


def test_a_trusted_or_hand_edited_file_imports(ws: Path) -> None:
    model_writes(ws, "trusted_mod.py", payload(ws, "trusted_mod"))
    model_writes(ws, "edited_mod.py", payload(ws, "edited_mod"))
    model_writes(ws, "still_mod.py", payload(ws, "still_mod"))
    assert [e.path for e in ledger.trust(str(ws / "trusted_mod.py"))] == [str(ws / "trusted_mod.py")]
    (ws / "edited_mod.py").write_text(payload(ws, "edited_mod").decode() + "# the person's edit\n")
    cases = [(n, f"try:\n    import {n}\nexcept ImportError:\n    pass") for n in ("trusted_mod", "edited_mod",
                                                                                  "still_mod")]
    run_cases(ws, cases, "on")
    assert marks(ws) == {"trusted_mod", "edited_mod"}


def test_the_refusal_is_one_line_naming_the_file_the_call_and_trust(ws: Path) -> None:
    path = model_writes(ws, "socksio.py", payload(ws, "x"), call_id="call_abc123")
    got = run_cases(ws, [("x", "import socksio")], "on")["x"]
    assert got == (f"ModuleNotFoundError: refusing to import 'socksio': {path} was written by the model "
                   f"(tool call call_abc123, terminal) and no one has trusted it; if you do, run %trust {path}")


def test_an_unreadable_ledger_refuses_imports_from_the_workspace(ws: Path) -> None:
    """Fail closed: the guard cannot tell what the model wrote, so nothing in the workspace imports."""
    model_writes(ws, "some_mod.py", payload(ws, "some_mod"))
    (Path(os.environ["HERMES_NB_HOME"]) / "ledger.json").write_text("{not json")
    env_ws = {"HERMES_NB_WORKSPACE": str(ws)}
    os.environ.update(env_ws)
    try:
        got = run_cases(ws, [("some_mod", "import some_mod"), ("json", "import json")], "on")
    finally:
        os.environ.pop("HERMES_NB_WORKSPACE")
    assert marks(ws) == set()
    assert got["some_mod"].startswith("ModuleNotFoundError: refusing to import 'some_mod' from the workspace")
    assert got["json"] == "ok"


def test_a_module_imported_before_the_load_is_named_at_the_load(ws: Path) -> None:
    """IPython imports ``storemagic`` at the kernel's start, before any extension: the guard cannot stop
    that one, so the load says it happened."""
    model_writes(ws, "storemagic.py", payload(ws, "storemagic"), call_id="call_early")
    code = ("import sys\nsys.path.insert(0, '')\nfrom IPython.core.interactiveshell import InteractiveShell\n"
            "ip = InteractiveShell.instance()\nip.run_line_magic('load_ext', 'storemagic')\n"
            "from hermes_nb.tools.safety.writes import imports\nimports.install(ip)\n")
    done = subprocess.run([sys.executable, "-P", "-c", code], cwd=ws, capture_output=True, text=True, timeout=120)
    assert marks(ws) == {"storemagic"}  # it ran (before the guard existed)
    assert (f"hermes_nb: 'storemagic' was imported from {ws / 'storemagic.py'} before hermes_nb loaded, and the "
            "model wrote it (tool call call_early)") in done.stderr, done.stderr


def test_the_ledgers_home_is_the_config_modules_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ledger works out the home itself (the load must not import the config module): the same rule."""
    from hermes_nb.tools.config import hermes_home

    for env, home in ((str(tmp_path / "h"), None), ("~/elsewhere", str(tmp_path)), (None, str(tmp_path / "u"))):
        if env is None:
            monkeypatch.delenv("HERMES_NB_HOME", raising=False)
        else:
            monkeypatch.setenv("HERMES_NB_HOME", env)
        monkeypatch.setenv("HOME", home or str(tmp_path))
        assert ledger._home() == os.path.realpath(hermes_home())
