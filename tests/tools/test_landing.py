"""The landing policy (``tools.safety.writes.landing``): every path of a write-set lands, asks or is refused, by what
the path *is*. Table-driven by class, with the reason each row matters; the optional imports are found by
reading IPython, httpx and pandas themselves (their ``try: import x / except ImportError`` sites and pandas's
``import_optional_dependency("x")`` calls), never from a list written here."""

from __future__ import annotations

import ast
import functools
import importlib.machinery
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import hermes_nb.tools.file_tools  # noqa: F401  (registers the tools)
from hermes_nb.tools.registry import registry
from hermes_nb.tools.safety.writes.landing import Landscape, judge

_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError"}


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(k, ast.Name) and k.id in _IMPORT_ERRORS for k in kinds)


@functools.cache
def optional_imports(package: str) -> tuple[tuple[str, str], ...]:
    """(module, where it is tried) for each top-level module ``package`` imports only if it is there."""
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.origin is not None, package
    found: dict[str, str] = {}
    for file in sorted(Path(spec.origin).parent.rglob("*.py")):
        if "tests" in file.parts:
            continue
        try:
            tree = ast.parse(file.read_bytes())
        except (SyntaxError, ValueError):
            continue
        where = str(file.relative_to(Path(spec.origin).parent.parent))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Try) and any(_catches_import_error(h) for h in node.handlers):
                for inner in node.body:
                    for sub in ast.walk(inner):
                        if isinstance(sub, ast.Import):
                            names += [a.name for a in sub.names]
                        elif isinstance(sub, ast.ImportFrom) and sub.level == 0 and sub.module:
                            names.append(sub.module)
            elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == \
                    "import_optional_dependency" and node.args and isinstance(node.args[0], ast.Constant):
                names.append(str(node.args[0].value))
            for name in names:
                top = name.partition(".")[0]
                if top.isidentifier() and top != package:
                    found.setdefault(top, f"{where}:{getattr(node, 'lineno', 0)}")
    return tuple(sorted(found.items()))


OPTIONAL = [(lib, name, where) for lib in ("IPython", "httpx", "pandas") for name, where in optional_imports(lib)]


def test_the_libraries_were_read() -> None:
    """The scan finds what the issue measured (so it reads the right sites), and more."""
    names = {name for _, name, _ in OPTIONAL}
    assert {"h2", "socksio", "bottleneck", "numexpr", "pyarrow"} <= names, sorted(names)
    assert len(names) > 30


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(root))
    monkeypatch.chdir(root)  # the notebook folder, which the kernel imports from
    return root


def _scene(ws: Path, **kw: object) -> Landscape:
    return Landscape.here(ws, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(("lib", "name", "where"), OPTIONAL, ids=[f"{lib}-{name}" for lib, name, _ in OPTIONAL])
def test_a_module_named_like_an_optional_import_asks(ws: Path, lib: str, name: str, where: str) -> None:
    """Without the policy the planted file is what the import system finds in the notebook folder; with it,
    writing it asks (as a module file and as a package)."""
    scene = _scene(ws)
    for path in (ws / f"{name}.py", ws / name / "__init__.py"):
        verdict = judge(path, scene)
        assert verdict.action == "asks" and repr(name) in verdict.reason, (lib, where, verdict)
    (ws / f"{name}.py").write_text("x = 1\n")  # the write as it was before: nothing asked
    spec = importlib.machinery.PathFinder.find_spec(name, [str(ws)])
    assert spec is not None and spec.origin == str(ws / f"{name}.py"), (lib, where)


@pytest.mark.parametrize("lib", ["IPython", "httpx", "pandas"])
def test_the_planted_optional_import_runs_unless_the_person_says_yes(ws: Path, tmp_path: Path, lib: str) -> None:
    """End to end, one name per library: write_file with a yes lands it and the next import runs it; with a
    no nothing is written and nothing runs."""
    name = next(n for l_, n, _ in OPTIONAL if l_ == lib and importlib.util.find_spec(n) is None)
    marker = tmp_path / f"ran-{name}"
    payload = f"open({str(marker)!r}, 'w')\nraise ImportError('quietly')\n"

    def imported() -> bool:
        subprocess.run([sys.executable, "-c", f"import {name}"], cwd=ws, capture_output=True, check=False)
        return marker.exists()

    denied = registry.dispatch("write_file", {"path": f"{name}.py", "content": payload},
                               approval_callback=lambda *a: "deny")
    assert "error" in denied and not (ws / f"{name}.py").exists() and not imported()
    landed = registry.dispatch("write_file", {"path": f"{name}.py", "content": payload},
                               approval_callback=lambda *a: "once")
    assert "bytes_written" in landed and imported()


# (path relative to the workspace, verdict, why the row matters)
TABLE = [
    # bytecode and import hooks
    ("__pycache__/utils.cpython-311.pyc", "refused", "bytecode runs instead of utils.py at the next import"),
    ("pkg/__pycache__/anything.txt", "refused", "anything inside a bytecode cache"),
    ("utils.pyc", "refused", "a sourceless module"),
    ("lib/x.PYC", "refused", "case-folded"),
    ("site/evil.pth", "refused", ".pth lines run at every Python start"),
    ("sitecustomize.py", "refused", "site imports it at start"),
    ("deep/usercustomize.py", "refused", "site imports it at start"),
    # git, at any depth, file or folder, and git's worktree files
    (".git/commondir", "refused", "moves the config git reads (measured: core.fsmonitor)"),
    (".git/hooks/pre-commit", "refused", "runs at the next commit"),
    (".git", "refused", "a .git file (gitdir: elsewhere)"),
    ("a/b/c/d/e/.git/config", "refused", "a repository at depth 5"),
    ("data/raw/2024/.git/hooks/pre-commit", "refused", "a fresh git init below depth 2"),
    ("sub/.GIT/config", "refused", "case-folded (macOS, Windows)"),
    (".gitattributes", "refused", "picks filters and diff drivers"),
    ("sub/.gitmodules", "refused", "where submodules come from"),
    # environments
    ("env/bin/python", "refused", "inside a virtual environment (pyvenv.cfg)"),
    ("env/lib/python3.11/site-packages/x.py", "refused", "its packages"),
    ("conda/bin/python", "refused", "inside a conda environment (conda-meta/)"),
    # installer and runner configuration
    ("pip.conf", "refused", "pip's index"), ("pip.ini", "refused", "pip's index on Windows"),
    ("uv.toml", "refused", "uv reads it in the folder and its parents"), ("sub/uv.toml", "refused", "at any depth"),
    (".npmrc", "refused", "npx's registry and scripts"), (".pypirc", "refused", "upload credentials and targets"),
    (".condarc", "refused", "conda's channels"), (".yarnrc.yml", "refused", "yarn's registry and plugins"),
    ("node_modules/.bin/mcp-server", "refused", "npx runs it instead of the package named"),
    (".cargo/config.toml", "refused", "build wrappers"),
    # IPython, Jupyter, the shell, hermes_nb
    (".ipython/profile_default/startup/0.py", "refused", "runs at the next kernel start"),
    (".jupyter/jupyter_server_config.py", "refused", "Jupyter's configuration"),
    ("ipython_config.py", "refused", "IPython loads config from its working folder"),
    ("jupyter_server_config.json", "refused", "the server loads config from its working folder"),
    (".bashrc", "refused", "a shell start-up file"), ("sub/.envrc", "refused", "direnv runs it on cd"),
    (".hermes/plugins/p/__init__.py", "refused", "project plugins load in the next kernel"),
    (".vscode/tasks.json", "refused", "the editor runs its tasks"),
    (".husky/pre-commit", "refused", "a hooks folder"),
    (".pre-commit-config.yaml", "refused", "local hooks at the next commit"),
    # asks: what the kernel could import, and what other programs trust
    ("analysis.py", "asks", "a module of the notebook folder"),
    ("pkg/sub/mod.py", "asks", "a module of a namespace package"),
    ("fast.cpython-311-x86_64-linux-gnu.so", "asks", "an extension module"),
    ("pkg/__init__.py", "asks", "a package"),
    (".env", "asks", "dotenv puts it in your programs' environment"),
    ("pyproject.toml", "asks", "uv's package sources, pip's build backend"),
    # lands
    ("data/table.csv", "lands", "data"), ("notes.md", "lands", "text"), ("my-script.py", "lands", "not importable"),
    ("data-2024/x.py", "lands", "below a folder that is no identifier: not importable"),
    (".env.example", "lands", "a template, never loaded"), ("report.ipynb", "lands", "a notebook"),
    ("build", "lands", "a folder"), (".gitignore", "lands", "git reads it but runs nothing"),
]


@pytest.mark.parametrize(("rel", "action", "why"), TABLE, ids=[r[0] for r in TABLE])
def test_the_table(ws: Path, rel: str, action: str, why: str) -> None:
    (ws / "env").mkdir()
    (ws / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (ws / "conda" / "conda-meta").mkdir(parents=True)
    verdict = judge(ws / rel, _scene(ws), is_dir=rel == "build")
    assert verdict.action == action, (rel, why, verdict)
    assert verdict.reason


def test_an_environment_made_in_the_same_write_set_counts(ws: Path) -> None:
    """`python -m venv v` writes pyvenv.cfg and bin/ in one write-set: the policy sees the workspace as it
    would be, so v/bin/python is inside an environment even though v did not exist before."""
    made = {str(ws / "v" / "pyvenv.cfg")}
    scene = _scene(ws, exists=lambda p: str(p) in made)
    assert judge(ws / "v" / "bin" / "python", scene).action == "refused"


def test_a_zip_the_kernels_path_names_asks(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", [*sys.path, str(ws / "vendor.zip")])
    assert judge(ws / "vendor.zip", _scene(ws)).action == "asks"
    assert judge(ws / "other.zip", _scene(ws)).action == "lands"


def test_a_folder_laid_out_as_a_bare_repository_is_refused(ws: Path) -> None:
    for part in ("HEAD", "objects", "refs"):
        (ws / "r" / part).mkdir(parents=True) if part != "HEAD" else None
    (ws / "r" / "HEAD").write_text("ref: refs/heads/main\n")
    assert judge(ws / "r" / "config", _scene(ws)).action == "refused"


@pytest.mark.parametrize(("target", "action"), [("/etc/passwd", "refused"), ("../../outside", "refused"),
                                                ("notes.md", "lands"), ("sub/../notes.md", "lands")])
def test_a_link_out_of_the_workspace_is_refused(ws: Path, target: str, action: str) -> None:
    assert judge(ws / "d" / "lnk", _scene(ws), link=target).action == (
        action if target != "../../outside" else "refused")


def test_the_hermes_home_and_the_persons_home_dot_entries(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(ws))
    monkeypatch.setenv("HERMES_NB_HOME", str(ws / "hn"))
    scene = _scene(ws)
    assert judge(ws / "hn" / "config.yaml", scene).action == "refused"
    assert judge(ws / ".config" / "git" / "config", scene).action == "refused"
    assert judge(ws / ".local" / "bin" / "ls", scene).action == "refused"
    assert judge(ws / "project" / ".tool" / "x.txt", scene).action == "lands"
