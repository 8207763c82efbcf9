"""Find tool files by reading them, not by a list: a file whose top level calls ``registry.register(...)``.

A new built-in tool is one new file in ``tools/`` (or ``tools/<name>/tool.py``). Each candidate is parsed
with ``ast`` and imported only when its module level — including module-level ``if``/``for``/``while``/
``with``/``try`` blocks, never function or class bodies — calls ``registry.register(...)`` or
``tools.registry.registry.register(...)``. Verdicts are cached by ``(path, mtime_ns, size)`` in
``<hermes home>/cache/discovery.json`` so a warm start reads no source at all; the cache is a
convenience, so any trouble with it is ignored.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import logging
import os
import sys
import threading
import traceback
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hermes_nb.tools.sources.hermes_imports import CompatSourceLoader

__all__ = ["discover_builtin_tools", "discover_tool_files", "scan_file"]

log = logging.getLogger(__name__)

_CACHE_VERSION = 1
# The core's top-level modules that never register; skipping them saves a parse on a cold start. (The
# modules of its subpackages are never candidates: only ``<folder>/tool.py`` is.)
_CORE = frozenset({
    "__init__", "registry", "errors", "config", "model_tools", "toolsets", "async_bridge", "approval", "workspace",
    "budget", "budget_config", "interaction", "mcp_tool", "lazy_deps",
})
_lock = threading.RLock()
_TOOLS_DIR = Path(__file__).resolve().parents[1]  # tools/, where the built-in *_tool.py files are
_CORE_PACKAGE = "hermes_nb.tools"


# -- the AST verdict --------------------------------------------------------------------------------


def _is_register_call(node: ast.AST) -> bool:
    """``registry.register(...)`` or ``tools.registry.registry.register(...)``."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if not (isinstance(func, ast.Attribute) and func.attr == "register"):
        return False
    target = func.value
    if isinstance(target, ast.Name):
        return target.id == "registry"
    parts: list[str] = []
    while isinstance(target, ast.Attribute):
        parts.append(target.attr)
        target = target.value
    if isinstance(target, ast.Name):
        parts.append(target.id)
    return parts[::-1] == ["tools", "registry", "registry"]


def _expression_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``node`` except the bodies of lambdas (they run later, if ever)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        for child in ast.iter_child_nodes(current):
            if not isinstance(child, ast.Lambda):
                stack.append(child)


_DEFERRED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _statements_register(body: list[ast.stmt]) -> bool:
    for stmt in body:
        if isinstance(stmt, _DEFERRED):
            continue  # a function or class body does not run at import
        blocks: list[list[Any]] = []
        heads: list[ast.AST] = []
        if isinstance(stmt, ast.If | ast.While):
            heads, blocks = [stmt.test], [stmt.body, stmt.orelse]
        elif isinstance(stmt, ast.For | ast.AsyncFor):
            heads, blocks = [stmt.iter], [stmt.body, stmt.orelse]
        elif isinstance(stmt, ast.With | ast.AsyncWith):
            heads, blocks = [item.context_expr for item in stmt.items], [stmt.body]
        elif isinstance(stmt, ast.Try | ast.TryStar):
            blocks = [stmt.body, stmt.orelse, stmt.finalbody] + [h.body for h in stmt.handlers]
        elif isinstance(stmt, ast.Match):
            heads, blocks = [stmt.subject], [case.body for case in stmt.cases]
        else:
            heads = [stmt]
        if any(_is_register_call(n) for head in heads for n in _expression_nodes(head)):
            return True
        if any(_statements_register(block) for block in blocks):
            return True
    return False


def _source_registers(source: str, filename: str = "<tool file>") -> bool:
    if "register" not in source:  # cheap pre-filter: most core modules never mention it
        return False
    return _statements_register(ast.parse(source, filename).body)


def scan_file(path: str | os.PathLike[str]) -> bool:
    """True when the file's module level calls ``registry.register(...)``. Raises SyntaxError, OSError."""
    with open(path, "rb") as fh:
        raw = fh.read()
    return _source_registers(raw.decode("utf-8", errors="replace"), os.fspath(path))


# -- the verdict cache ------------------------------------------------------------------------------


def _cache_path() -> Path:
    from hermes_nb.tools.config import hermes_home

    return hermes_home() / "cache" / "discovery.json"


def _load_cache() -> dict[str, list[Any]]:
    try:
        data = json.loads(_cache_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != _CACHE_VERSION or not isinstance(data.get("files"), dict):
        return {}
    return data["files"]


def _save_cache(files: dict[str, list[Any]]) -> None:
    path = _cache_path()
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps({"version": _CACHE_VERSION, "files": files}), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:  # a read-only home must never fail discovery
        log.debug("discovery cache not written: %s", exc)
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass


# -- importing --------------------------------------------------------------------------------------


def _candidates(directory: str) -> list[tuple[str, str, os.stat_result]]:
    """``(file, dotted suffix, stat)`` for ``*.py`` and ``*/tool.py``, sorted for a stable import order."""
    out = []
    try:
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        log.debug("cannot list %s: %s", directory, exc)
        return []
    for entry in entries:
        name = entry.name
        if name.startswith((".", "_")):
            continue
        try:
            if name.endswith(".py") and entry.is_file():
                out.append((entry.path, name[:-3], entry.stat()))
            elif entry.is_dir() and name.isidentifier():
                tool = os.path.join(entry.path, "tool.py")
                if os.path.isfile(tool):
                    out.append((tool, f"{name}.tool", os.stat(tool)))
        except OSError:
            continue  # vanished while we looked
    return out


def _is_package_dir(module_prefix: str, directory: str) -> bool:
    """Whether ``module_prefix`` is an importable package rooted at ``directory`` (import by name)."""
    package = sys.modules.get(module_prefix)
    paths = getattr(package, "__path__", None) if package is not None else None
    if paths is None:
        return False
    return any(os.path.realpath(p) == directory for p in paths)


def _import_by_path(module_name: str, path: str) -> None:
    parent_name = module_name.rpartition(".")[0]
    for i, part in enumerate(parts := parent_name.split(".")):
        name = ".".join(parts[: i + 1])
        if part and name not in sys.modules:  # a namespace so the dotted name is importable later
            parent = types.ModuleType(name)
            parent.__path__ = []
            sys.modules[name] = parent
    # user tool folders run with Hermes's import paths (``from tools.registry import registry``)
    spec = importlib.util.spec_from_file_location(module_name, path, loader=CompatSourceLoader(module_name, path))
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise


def _import(module_name: str, path: str, by_name: bool, source_label: str) -> bool:
    if module_name in sys.modules:
        return True
    from hermes_nb.tools.sources.load_report import clear_failures, record_failure

    try:
        if by_name:
            importlib.import_module(module_name)
        else:
            _import_by_path(module_name, path)
    except Exception as exc:  # boundary: one broken tool file must not stop the others
        tail = "".join(traceback.format_exception(exc)[-8:])
        log.warning("tool file %s failed to import: %s: %s", path, type(exc).__name__, exc)
        record_failure(source_label, module_name, f"{type(exc).__name__}: {exc}", detail=tail)
        return False
    clear_failures(source_label, module_name)
    return True


def _is_candidate_of(folder: str, path: str) -> bool:
    parent, name = os.path.split(path)
    return parent == folder or (name == "tool.py" and os.path.dirname(parent) == folder)


def discover_tool_files(directory: str | os.PathLike[str], *, module_prefix: str, source_label: str) -> list[str]:
    """Import every tool file in ``directory`` that registers at module level; return the module names loaded.

    ``module_prefix`` names the modules (``tools`` → ``tools.<stem>`` imported as package modules; any
    other prefix → files loaded by path as ``<prefix>.<stem>``). ``source_label`` is the source under
    which import failures are recorded in ``tools.sources.load_report``. Already-imported modules are not re-run.
    """
    folder = os.path.realpath(directory)
    by_name = _is_package_dir(module_prefix, folder)
    skip = _CORE if module_prefix == _CORE_PACKAGE else frozenset()
    with _lock:
        cache = _load_cache()
        changed = False
        seen: set[str] = set()
        loaded: list[str] = []
        for path, suffix, st in _candidates(folder):
            if suffix in skip:
                continue
            seen.add(path)
            module_name = f"{module_prefix}.{suffix}"
            hit = cache.get(path)
            if isinstance(hit, list) and len(hit) == 3 and hit[0] == st.st_mtime_ns and hit[1] == st.st_size:
                verdict = bool(hit[2])
            else:
                try:
                    verdict = scan_file(path)
                except (SyntaxError, ValueError, OSError) as exc:
                    from hermes_nb.tools.sources.load_report import record_failure

                    record_failure(source_label, module_name, f"{type(exc).__name__}: {exc}",
                                   detail=f"{path} could not be parsed")
                    log.warning("tool file %s could not be parsed: %s", path, exc)
                    continue  # not cached: the next start reports it again
                cache[path] = [st.st_mtime_ns, st.st_size, verdict]
                changed = True
            if verdict and _import(module_name, path, by_name, source_label):
                loaded.append(module_name)
        # forget files deleted from this folder (the cache is shared with other folders)
        inside = folder + os.sep
        for key in [k for k in cache if k.startswith(inside) and k not in seen and _is_candidate_of(folder, k)]:
            del cache[key]
            changed = True
        if changed:
            _save_cache(cache)
    return loaded


def discover_builtin_tools(tools_dir: str | os.PathLike[str] | None = None) -> list[str]:
    """Import the built-in tool files of the ``tools`` package (or of ``tools_dir``); return module names."""
    folder = Path(tools_dir).resolve() if tools_dir is not None else _TOOLS_DIR
    if folder == _TOOLS_DIR:
        import hermes_nb.tools  # noqa: F401  (so the package's __path__ is known)

        return discover_tool_files(folder, module_prefix=_CORE_PACKAGE, source_label="builtin")
    return discover_tool_files(folder, module_prefix="hermes_nb_user_tools", source_label="builtin")
