"""Nothing the model writes is imported by the kernel: modules planted in the working folder (first on
``sys.path``, as in a kernel) under the names of hermes_nb's lazy dependencies never run at hermes_nb's
imports once the extension is loaded, and do run when the guard is off (so the test can fail)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PLANTED = ("bashlex", "markdown_it", "ipywidgets", "yaml")

SCRIPT = f"""
import json, os, sys
sys.path.insert(0, "")  # what a kernel has: its working folder first
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "hermes_nb")
if os.environ["GUARD"] == "off":
    import hermes_nb.tools.safety.writes.imports as guard
    guard.install()()  # the undo: the finder leaves sys.meta_path
def step(fn):  # with the guard off a planted module breaks the step; the next one still runs
    try:
        fn()
    except Exception as exc:
        print("step failed:", exc, file=sys.stderr)
from hermes_nb.tools.approval import command_ask
from hermes_nb.display import markdown, prompts
from hermes_nb.tools.config import load_config
open(os.path.join(os.environ["HERMES_NB_HOME"], "config.yaml"), "w").write("a: 1\\n")
step(lambda: command_ask("ls -la | wc -l"))        # bashlex
step(markdown._parser)                             # markdown_it
step(prompts._widgets)                             # ipywidgets, as the first approval prompt imports it
step(load_config)                                  # yaml
print(json.dumps({{n: getattr(sys.modules.get(n), "__file__", None) for n in {PLANTED!r}}}))
"""


def _run(tmp_path: Path, guard: str) -> tuple[dict[str, str], list[str]]:
    ws = tmp_path / guard
    ws.mkdir()
    for name in PLANTED:
        (ws / f"{name}.py").write_text(f"open({str(ws / ('RAN-' + name))!r}, 'w').close()\n")
    home = tmp_path / f"home-{guard}"
    home.mkdir()
    env = {"HERMES_NB_HOME": str(home), "HERMES_NB_WORKSPACE": str(ws), "GUARD": guard, "PATH": "/usr/bin:/bin",
           "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ws, env=env, capture_output=True, text=True,
                          timeout=120)
    ran = sorted(p.name for p in ws.iterdir() if p.name.startswith("RAN-"))
    assert done.returncode == 0, done.stderr[-2000:]
    files = json.loads(done.stdout.strip().splitlines()[-1])
    return files, ran


@pytest.mark.slow
def test_planted_dependencies_never_run_at_hermes_nbs_imports(tmp_path: Path) -> None:
    files, ran = _run(tmp_path, "on")
    assert ran == [], files
    assert set(files) == set(PLANTED) and all(f and str(tmp_path) not in f for f in files.values()), files
    # the same folder with the guard taken away: the planted files are what hermes_nb imports
    files, ran = _run(tmp_path, "off")
    assert ran == [f"RAN-{n}" for n in sorted(PLANTED)], (ran, files)


def test_a_dependency_found_only_in_the_workspace_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_nb.tools.safety.writes import imports

    (tmp_path / "only_here_mod.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(tmp_path))
    monkeypatch.syspath_prepend("")
    undo = imports.install()
    try:
        with imports.trusted_imports(), pytest.raises(ModuleNotFoundError, match="outside the workspace"):
            import only_here_mod
        import only_here_mod  # noqa: F401  (the person's own import is theirs)
    finally:
        undo()
        sys.modules.pop("only_here_mod", None)
    assert imports._TrustedFinder not in sys.meta_path
