"""Re-record the quickstart notebook's cassettes (``notebooks/cassettes/quickstart*.json``).

    .venv/bin/python scripts/record_quickstart.py            # scripted model: reproducible, offline
    .venv/bin/python scripts/record_quickstart.py --live     # the model in HERMES_NB_MODEL / OPENAI_*
    .venv/bin/python scripts/record_quickstart.py --out DIR  # somewhere else than notebooks/cassettes

The notebook's own ``%%tool`` cells are run in an IPython shell first, so the recording offers the model
exactly the notebook's tools and replay's drift check passes. By default the model is the scripted
OpenAI-compatible server of the tests (``tests/support/fake_openai.py``), driven by the real ``openai``
client through ``Agent(record=...)``: the same path a live recording takes, with turns written below.
With ``--live`` a real model answers instead (its turns will differ; re-read the notebook's prose).
The tools really run: in a temporary workspace, with a temporary HERMES_NB_HOME for spill files.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: make tests.support and hermes_nb importable
    sys.path.insert(0, str(ROOT))

from tests.support.fake_openai import FakeOpenAI, Reply, call  # noqa: E402

NOTEBOOK = ROOT / "notebooks" / "quickstart.ipynb"
CASSETTES = ROOT / "notebooks" / "cassettes"
RECORDED_MODEL = "gpt-4o-mini (recorded against a scripted server)"


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


@dataclass(frozen=True, slots=True, kw_only=True)
class Scene:
    """One recorded run: the cassette it writes, the prompt and toolsets the notebook uses, the turns."""

    cassette: str
    prompt: str
    toolsets: tuple[str, ...]
    replies: tuple[Reply, ...]
    make_dirs: tuple[str, ...] = ()


MAIN = Scene(
    cassette="quickstart.json",
    prompt=("Compare today's weather in Paris and Oslo, look through the server log for errors, "
            "and clear the scratch cache."),
    toolsets=("demo", "terminal"),
    make_dirs=("scratch_cache",),
    replies=(
        Reply(content="I'll look up both cities at once.",
              tool_calls=(call("weather", {"city": "Paris"}, "call_weather_paris"),
                          call("weather", {"city": "Oslo"}, "call_weather_oslo")),
              usage=_usage(412, 58)),
        Reply(content="Now the server log.", tool_calls=(call("server_log", {"lines": 2000}, "call_log"),),
              usage=_usage(540, 21)),
        Reply(content=("The log was too large to send whole, so it was saved to a file; the preview is enough "
                       "for a summary. Next, the scratch cache."),
              tool_calls=(call("terminal", {"command": "rm -rf scratch_cache"}, "call_rm"),),
              usage=_usage(1210, 40)),
        Reply(content=("Here is the summary:\n\n"
                       "- **Weather:** Paris is sunny at 21 °C; Oslo has light rain at 12 °C "
                       "(both looked up at the same time).\n"
                       "- **Server log:** 2,000 lines, too many to send me whole, so they were saved to a "
                       "spill file. The preview I was sent (the first 32 lines) has one error: a `500` on "
                       "`/api/items/23`. The whole log is in the file if you want me to search it.\n"
                       "- **Scratch cache:** removed with `rm -rf scratch_cache`, after you approved it once."),
              usage=_usage(1302, 112)),
    ),
)

MAGIC = Scene(
    cassette="quickstart_magic.json",
    prompt="Is it warmer in Paris or in Oslo today? One sentence.",
    toolsets=("demo",),
    replies=(
        Reply(tool_calls=(call("weather", {"city": "Paris"}, "call_paris"),
                          call("weather", {"city": "Oslo"}, "call_oslo")), usage=_usage(205, 40)),
        Reply(content="**Paris** is warmer: 21 °C and sunny, against 12 °C and light rain in Oslo.",
              usage=_usage(290, 24)),
    ),
)

SCENES = (MAIN, MAGIC)


def tool_cells(notebook: Path = NOTEBOOK) -> list[str]:
    """The sources of the notebook's ``%%tool`` cells, in order."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    sources = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    return [s for s in sources if s.lstrip().startswith("%%tool")]


@contextmanager
def notebook_tools(notebook: Path = NOTEBOOK) -> Iterator[Any]:
    """An IPython shell with hermes_nb loaded and the notebook's ``%%tool`` cells run; unloads after."""
    from IPython.core.interactiveshell import InteractiveShell

    from hermes_nb.tools.model_tools import ensure_discovered

    ensure_discovered()  # the built-in tools (terminal) the notebook's kernel has too
    shell = InteractiveShell.instance()
    with redirect_stdout(io.StringIO()):  # the tool cards the cells display are for a notebook, not here
        shell.run_line_magic("load_ext", "hermes_nb")
    try:
        for source in tool_cells(notebook):
            with redirect_stdout(io.StringIO()):
                outcome = shell.run_cell(source)
            if not outcome.success:
                raise RuntimeError(f"a %%tool cell of {notebook.name} failed: {outcome.error_in_exec!r}")
        yield shell
    finally:
        shell.run_line_magic("unload_ext", "hermes_nb")


@contextmanager
def _scratch_env(workdir: Path) -> Iterator[None]:
    """Run the tools in ``workdir`` (the terminal tool's workspace) with spill files kept there too."""
    saved = {k: os.environ.get(k) for k in ("HERMES_NB_HOME", "HERMES_NB_WORKSPACE")}
    cwd = os.getcwd()
    os.environ["HERMES_NB_HOME"] = str(workdir / "home")
    os.environ["HERMES_NB_WORKSPACE"] = str(workdir)
    os.chdir(workdir)
    try:
        yield
    finally:
        os.chdir(cwd)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def record_scene(scene: Scene, out_dir: Path, workdir: Path, *, live: bool = False) -> Path:
    """Run ``scene`` through ``Agent(record=...)`` (tools registered already); returns the cassette path."""
    from hermes_nb.agent.loop import Agent

    target = out_dir.resolve() / scene.cassette
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    with _scratch_env(workdir):
        for name in scene.make_dirs:
            Path(name).mkdir()

        def approve_once(command: str, key: str, description: str) -> str:
            return "once"

        def run(**model: Any) -> None:
            agent = Agent(**model, enabled_toolsets=list(scene.toolsets), record=str(target), display=False,
                          approval_callback=approve_once)
            result = agent.run(scene.prompt)
            if result.stopped_reason != "done":
                raise RuntimeError(f"recording {scene.cassette} stopped: {result.stopped_reason} {result.error}")

        if live:
            run()
        else:
            with FakeOpenAI(list(scene.replies)) as server:
                run(model="gpt-4o-mini", base_url=server.base_url, api_key="scripted")
    if not live:
        data = json.loads(target.read_text(encoding="utf-8"))
        data["model"] = RECORDED_MODEL
        target.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return target


def record(out_dir: Path = CASSETTES, *, live: bool = False, notebook: Path = NOTEBOOK,
           workdir: Path | None = None) -> list[Path]:
    """Record every scene of the quickstart into ``out_dir``.

    ``workdir`` (removed afterwards) is where the tools run; the default is a fixed temporary path so
    that spill paths, and so the cassettes, come out byte-identical on every re-recording.
    """
    workdir = workdir or Path(tempfile.gettempdir()) / "hermes_nb-record-quickstart"
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        with notebook_tools(notebook):
            return [record_scene(scene, out_dir, workdir, live=live) for scene in SCENES]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--live", action="store_true", help="record a real model (HERMES_NB_MODEL, OPENAI_*)")
    parser.add_argument("--out", type=Path, default=CASSETTES, help="folder for the cassettes")
    args = parser.parse_args(argv)
    for path in record(args.out, live=args.live):
        turns = len(json.loads(path.read_text(encoding="utf-8"))["turns"])
        print(f"recorded {turns} model turn(s) → {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
