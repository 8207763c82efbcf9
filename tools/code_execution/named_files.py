"""The files a Python script names, and their content: what an approval of the script is tied to.

A script that runs ``runpy.run_path("clean.py")`` runs whatever ``clean.py`` holds when it runs; approving the
script "always" must not approve the next ``clean.py`` the model writes. So, as for a terminal command
(``tools.safety.commands.bound_files``, the same fingerprints), the answer remembers the SHA-256 of every file the script
names beside its code, and asks again when one changed. Read from the script's syntax tree:

- modules it imports (``import clean``, ``from pkg.mod import f``, ``importlib.import_module("clean")``): the
  files ``import`` would find in the workspace and the kernel's folder (a missing one too, unless the name is
  the standard library's: writing it later would shadow the installed module);
- paths given to what opens, runs or loads files (``open``, ``Path``, ``runpy``, ``exec(open(...).read())``,
  ``spec_from_file_location``), built from literals (``os.path.join("src", "a.py")``, ``Path("a") / "b.py"``);
- commands it starts (``subprocess.run(["python", "prep.py"])``, ``os.system("bash x.sh")``): the terminal's own
  reading of a command line;
- any other string literal that names an existing file;
- and the same, once more, in every Python file found this way that is in the workspace (a module the script
  imports imports others).

A script that runs, imports or starts something whose name it computes (``runpy.run_path(p)``,
``import_module(name)``, ``subprocess.run(cmd)``, ``exec(text)``) cannot be tied to files: ``dynamic`` names
those calls, and the gate lets a yes for it hold once only (fail closed).
"""

from __future__ import annotations

import ast
import os
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Bound", "Named", "bound", "named_files"]

_MAX_FILES = 200
_MAX_NAME = 4_096

#: Calls that run or load the file named by an argument (the argument's index), by their module's name.
_RUN_PATH = {"runpy.run_path": 0, "importlib.util.spec_from_file_location": 1, "importlib.machinery.SourceFileLoader": 1,
             "importlib.machinery.SourcelessFileLoader": 1, "imp.load_source": 1}
#: Calls that import the module named by their first argument.
_RUN_MODULE = frozenset({"runpy.run_module", "importlib.import_module", "__import__", "importlib.__import__",
                         "importlib.reload"})
#: Calls that run the code text they are given.
_EXEC = frozenset({"exec", "eval", "compile", "builtins.exec", "builtins.eval", "builtins.compile"})
#: Calls that start a program: first argument a command line (str) or its words (a list).
_PROCESS = frozenset({"subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
                      "subprocess.Popen", "subprocess.getoutput", "subprocess.getstatusoutput", "os.system", "os.popen",
                      "pty.spawn", "asyncio.create_subprocess_exec", "asyncio.create_subprocess_shell"})
_PROCESS_PREFIXES = ("os.exec", "os.spawn", "os.posix_spawn")
#: Calls whose first argument is a path they open or read (named even when missing).
_OPEN = frozenset({"open", "io.open", "codecs.open", "pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "os.open",
                   "builtins.open"})
_JOIN = frozenset({"os.path.join", "pathlib.Path", "pathlib.PurePath", "str", "os.fspath", "os.path.abspath",
                   "os.path.normpath", "os.path.expanduser"})
#: Modules whose names a script may bind to other names (``import subprocess as sp``, ``from os import system``).
_MODULES = frozenset({"os", "os.path", "subprocess", "runpy", "importlib", "importlib.util", "importlib.machinery",
                      "pathlib", "io", "codecs", "pty", "asyncio", "builtins", "imp"})


def _runs_things(name: str) -> bool:
    return (name in _RUN_PATH or name in _RUN_MODULE or name in _EXEC or name in _PROCESS
            or name.startswith(_PROCESS_PREFIXES))


@dataclass(frozen=True, slots=True, kw_only=True)
class Named:
    """What a script names: files (absolute paths), command lines' words, and the calls it computes names for."""

    files: tuple[Path, ...] = ()
    commands: tuple[tuple[str, ...], ...] = ()  # each a command's words, or ("sh", "-c", line) for a line
    dynamic: tuple[str, ...] = ()  # the calls whose file, module or command is computed, as written


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else node.attr
    if isinstance(node, ast.Call) and _dotted(node.func) in ("__import__", "importlib.import_module") and node.args:
        return _static(node.args[0]) or ""  # __import__("os").system is os.system
    return ""


def _static(node: ast.AST) -> str | None:
    """The text ``node`` always evaluates to, when it is built from literals only; else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = [_static(v) for v in node.values]
        return "".join(p for p in parts if p is not None) if all(p is not None for p in parts) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Div)):
        left, right = _static(node.left), _static(node.right)
        if left is None or right is None:
            return None
        return left + right if isinstance(node.op, ast.Add) else os.path.join(left, right)
    if isinstance(node, ast.Call) and _dotted(node.func) in (*_JOIN, "Path", "PurePath", "os.path.join") \
            and not node.keywords:
        parts = [_static(a) for a in node.args]
        if parts and all(p is not None for p in parts):
            return os.path.expanduser(os.path.join(*parts))  # type: ignore[arg-type]
    return None


def _words(node: ast.AST) -> tuple[str, ...] | None:
    """A command given as a list or tuple of literal words."""
    if isinstance(node, (ast.List, ast.Tuple)):
        words = [_static(e) for e in node.elts]
        return tuple(words) if words and all(w is not None for w in words) else None  # type: ignore[arg-type]
    return None


def _arg(call: ast.Call, index: int, *names: str) -> ast.AST | None:
    if len(call.args) > index and not isinstance(call.args[index], ast.Starred):
        return call.args[index]
    return next((k.value for k in call.keywords if k.arg in names), None)


def _opens_literal(node: ast.AST) -> bool:
    """``open("x.py").read()``, ``Path("x.py").read_text()``: text read from a file named by a literal."""
    return any(isinstance(n, ast.Call) and _dotted(n.func).rpartition(".")[2] in ("open", "Path", "PurePath", "PosixPath")
               and n.args and _static(n.args[0]) is not None for n in ast.walk(node))


class _Reader(ast.NodeVisitor):
    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}  # a name bound by an import -> the dotted name it stands for
        self.calling: set[int] = set()  # ids of the nodes that are the function of a call
        self.paths: list[str] = []  # named as paths (kept even when missing)
        self.modules: list[str] = []
        self.literals: list[str] = []  # every literal text (kept when it names an existing file)
        self.commands: list[tuple[str, ...]] = []
        self.dynamic: list[str] = []
        self.relative: list[tuple[int, str]] = []  # ``from .x import y``: (level, module)

    def _name(self, node: ast.AST) -> str:
        """The dotted name of a function as the script wrote it, with import aliases undone."""
        dotted = _dotted(node)
        head, _, rest = dotted.partition(".")
        if head in self.aliases:
            return self.aliases[head] + (f".{rest}" if rest else "")
        return dotted

    def visit_Import(self, node: ast.Import) -> None:
        self.modules += [a.name for a in node.names]
        for a in node.names:
            self.aliases[a.asname or a.name.partition(".")[0]] = a.name if a.asname else a.name.partition(".")[0]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if not node.level and base in _MODULES:
            self.aliases.update({a.asname or a.name: f"{base}.{a.name}" for a in node.names})
        if node.level:
            self.relative += [(node.level, f"{base}.{a.name}".strip(".")) for a in node.names] + [(node.level, base)]
            return
        self.modules += [base, *(f"{base}.{a.name}" for a in node.names if a.name != "*")]

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            self.literals.append(node.value)

    def visit_Name(self, node: ast.Name) -> None:
        self._as_value(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._as_value(node)
        self.generic_visit(node)

    def _as_value(self, node: ast.AST) -> None:
        """A runner handed on as a value (``f = subprocess.run``, ``map(runpy.run_path, names)``): what it will
        be called with is not written here."""
        if id(node) not in self.calling and _runs_things(self._name(node)):
            self.dynamic.append(ast.unparse(node)[:120])

    def visit_Call(self, node: ast.Call) -> None:
        self.calling.add(id(node.func))
        name = self._name(node.func)
        shown = ast.unparse(node)[:120]
        if name in _RUN_PATH:
            target = _arg(node, _RUN_PATH[name], "path_name", "location", "path")
            text = _static(target) if target is not None else None
            if text is None:
                self.dynamic.append(shown)
            else:
                self.paths.append(text)
        elif name in _RUN_MODULE:
            target = _arg(node, 0, "name", "mod_name")
            text = _static(target) if target is not None else None
            if text is None:
                self.dynamic.append(shown)
            else:
                self.modules.append(text)
        elif name in _EXEC:
            target = _arg(node, 0, "source")
            if target is not None and _static(target) is None and not _opens_literal(target):
                self.dynamic.append(shown)
        elif name in _PROCESS or name.startswith(_PROCESS_PREFIXES):
            self._process(node, name, shown)
        elif name == "getattr" and node.args and self._name(node.args[0]) in _MODULES:
            self.dynamic.append(shown)  # getattr(os, "system"): a runner looked up by a name
        elif name in _OPEN and node.args:
            text = _static(node.args[0])
            if text is not None:
                self.paths.append(text)
        self.generic_visit(node)

    def _process(self, node: ast.Call, name: str, shown: str) -> None:
        if not node.args:
            self.dynamic.append(shown)
            return
        if name.startswith(_PROCESS_PREFIXES):  # os.execv(path, argv): the program and its argv
            argv = _words(node.args[1]) if len(node.args) > 1 else None
            program = _static(node.args[0])
            if argv is None or program is None:
                self.dynamic.append(shown)
            else:
                self.commands.append((program, *argv[1:]))
            return
        line, words = _static(node.args[0]), _words(node.args[0])
        if words is not None:
            self.commands.append(words)
        elif line is not None:
            self.commands.append(("sh", "-c", line))
        else:
            self.dynamic.append(shown)


def _module_files(module: str, folders: list[Path]) -> list[Path]:
    """Where ``import module`` looks in ``folders``: each package level's ``__init__.py`` and the module."""
    parts = [p for p in module.split(".") if p]
    if not parts or parts[0] == "hermes_tools":
        return []
    out: list[Path] = []
    for folder in folders:
        for depth in range(1, len(parts) + 1):
            base = folder.joinpath(*parts[:depth])
            candidates = [base.with_suffix(".py"), base / "__init__.py"]
            if depth == 1 and parts[0] in sys.stdlib_module_names:  # only what is there: the stdlib is found first
                candidates = [c for c in candidates if c.exists()]
            elif depth > 1:
                candidates = [c for c in candidates if c.exists()]
            out += candidates
    return out


def _places(name: str, folders: list[Path]) -> list[Path]:
    if not name or len(name) > _MAX_NAME or "\n" in name or "\x00" in name:
        return []
    expanded = os.path.expanduser(name)
    return [Path(expanded)] if os.path.isabs(expanded) else [f / expanded for f in folders]


def _read(code: str) -> _Reader | None:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None  # it will not run either: the approval is for text that fails at once
    reader = _Reader()
    reader.visit(tree)
    return reader


def named_files(code: str, root: Path, *, cwd: Path | None = None) -> Named:
    """What ``code`` names: files relative to the workspace ``root`` and the kernel's folder ``cwd``."""
    folders = list(dict.fromkeys([Path(os.path.realpath(cwd or Path.cwd())), Path(os.path.realpath(root))]))
    files: dict[Path, None] = {}
    commands: list[tuple[str, ...]] = []
    dynamic: list[str] = []
    queue: list[tuple[str, Path | None]] = [(code, None)]
    read: set[Path] = set()
    while queue and len(files) < _MAX_FILES:
        source, origin = queue.pop(0)
        reader = _read(source)
        if reader is None:
            continue
        commands += reader.commands
        dynamic += reader.dynamic
        found = [p for name in reader.paths for p in _places(name, folders)]
        found += [p for m in reader.modules for p in _module_files(m, folders)]
        if origin is not None:  # a module's relative imports: from its own package
            for level, module in reader.relative:
                base = origin.parent
                for _ in range(level - 1):
                    base = base.parent
                found += [p for p in _module_files(module, [base]) if p.exists()] if module else [base / "__init__.py"]
        found += [p for name in reader.literals for p in _places(name, folders) if p.is_file()]
        for path in found:
            path = Path(os.path.normpath(path))
            if path in files:
                continue
            files[path] = None
            inside = any(path.is_relative_to(f) for f in folders)
            if inside and path.suffix == ".py" and path not in read and path.is_file():
                read.add(path)
                try:
                    queue.append((path.read_text(encoding="utf-8", errors="replace")[:1_000_000], path))
                except OSError:
                    continue
    return Named(files=tuple(sorted(files)[:_MAX_FILES]), commands=tuple(dict.fromkeys(commands)),
                 dynamic=tuple(dict.fromkeys(dynamic)))


@dataclass(frozen=True, slots=True, kw_only=True)
class Bound:
    """What an approval of a script is tied to, in the form the gate keeps (``Ask.bound``)."""

    text: str  # "" when the script names no file
    files: tuple[str, ...]  # ``PATH (sha256 …)``, as for a terminal command
    dynamic: tuple[str, ...]

    def sentence(self) -> str:
        """What the prompt says about it."""
        if self.dynamic:
            shown = ", ".join(f"`{d}`" for d in self.dynamic[:2]) + (", ..." if len(self.dynamic) > 2 else "")
            return (f" It runs, imports or starts what it names only when it runs ({shown}): a yes holds for this "
                    "one run.")
        if not self.files:
            return ""
        names = ", ".join(f"`{f.rpartition(' (')[0]}`" for f in self.files[:3]) + (", ..." if len(self.files) > 3 else "")
        return f" A yes for later holds only while {names} {'stays' if len(self.files) == 1 else 'stay'} as now."


def bound(code: str, root: Path) -> Bound:
    """The fingerprints of every file ``code`` names (``named_files``) and of every file its commands run
    (``tools.safety.commands.bound_files``: the terminal's own reading), and the calls that name things at run time."""
    from hermes_nb.tools.safety.commands.bound_files import file_fingerprints, fingerprints
    from hermes_nb.tools.safety.commands.shell_words import Word, scan

    named = named_files(code, root)
    commands: list[tuple[Word, ...]] = []
    for words in named.commands:
        if words[:2] == ("sh", "-c") and len(words) == 3:
            commands += scan(words[2]).commands
        else:
            commands.append(tuple(Word(raw=w, value=w, pattern=w, exact=True, globbed=False) for w in words))
    files = tuple(sorted(set(file_fingerprints(named.files)) | set(fingerprints(commands, root) if commands else ())))
    return Bound(text=f"  [names: {'; '.join(files)}]" if files else "", files=files, dynamic=named.dynamic)
