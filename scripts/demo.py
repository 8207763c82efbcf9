"""``make demo`` (``python -m scripts.demo``): run the quickstart notebook headless in a real kernel and tell its story.

Executes ``notebooks/quickstart.ipynb`` with nbclient (cwd ``notebooks/``, offline: the model is a
replay cassette), prints a readable transcript cell by cell, writes the executed notebook as HTML to
``notebooks/quickstart.html`` and says how to run the same notebook live. Then one live turn of the embedded
model (``scripts.local_turn``: SmolLM2-135M calls a notebook tool, offline), in this Python when it has the
runtime, else in ``.venv-llama``'s (``make llama-venv``). Exits non-zero when a cell or the live turn fails.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

__all__ = ["main", "run_notebook", "transcript"]

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "quickstart.ipynb"
RULE = "─" * 78


def run_notebook(path: Path, timeout: int = 120) -> tuple[Any, BaseException | None]:
    """Execute ``path`` in a fresh kernel from its own folder; returns (notebook, error or None)."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(path, as_version=4)
    # log_level=ERROR: the kernel's TCP-without-encryption warning is noise on 127.0.0.1
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", extra_arguments=["--IPKernelApp.log_level=ERROR"],
                            resources={"metadata": {"path": str(path.parent)}})
    try:
        client.execute()
    except CellExecutionError as exc:
        return nb, exc
    return nb, None


def _output_text(out: Any) -> str:
    kind = out.get("output_type")
    if kind == "stream":
        return str(out.get("text", ""))
    if kind == "error":
        return f"{out.get('ename')}: {out.get('evalue')}"
    data = out.get("data", {})
    if "text/plain" in data:
        return str(data["text/plain"])
    return f"[{', '.join(data)}]"


def transcript(nb: Any) -> str:
    """The executed notebook as text: markdown headings, the code, and text outputs."""
    lines: list[str] = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            lines += _prose(cell.source)
            continue
        if cell.cell_type != "code":
            continue
        lines.append("")
        lines += [f"In [{cell.get('execution_count') or ' '}]: " + cell.source.splitlines()[0]] + \
            [" " * 8 + s for s in cell.source.splitlines()[1:]]
        for out in cell.get("outputs", []):
            text = _output_text(out).rstrip()
            if not text:
                continue
            if out.get("output_type") == "execute_result":  # the cell's value, as Jupyter marks it
                lines.append("   Out:")
            lines.append(textwrap.indent(text, "   │ ", lambda _line: True))
    return "\n".join(lines)


def _prose(source: str) -> list[str]:
    """A markdown cell as text: headings as ruled capitals, paragraphs re-wrapped, list items kept."""
    lines: list[str] = []
    for block in source.split("\n\n"):
        block = block.strip()
        if not block:
            continue
        if block.startswith("#"):
            head, _, rest = block.partition("\n")
            lines += ["", RULE, head.lstrip("# ").upper(), RULE]
            block = rest.strip()
            if not block:
                continue
        lines.append("")
        items = [i for i in block.splitlines() if i.strip()]
        if all(i.lstrip()[:2] in ("- ", "* ") or i.lstrip()[:1].isdigit() or i.startswith("  ") for i in items):
            for item in _list_items(items):
                marker = item.split(" ", 1)[0]
                lines.append(textwrap.fill(" ".join(item.split()), 78, subsequent_indent=" " * (len(marker) + 1)))
        else:
            lines.append(textwrap.fill(" ".join(block.split()), 78))
    return lines


def _list_items(lines: list[str]) -> list[str]:
    """Join a markdown list's wrapped continuation lines onto their item."""
    items: list[str] = []
    for line in lines:
        if line.startswith(" ") and items:
            items[-1] += " " + line.strip()
        else:
            items.append(line.strip())
    return items


def _html(nb: Any, target: Path) -> None:
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter().from_notebook_node(nb)
    target.write_text(body, encoding="utf-8")


def _nice(path: Path) -> str:
    """``path`` relative to the working folder when it is inside it (shorter, and copy-pasteable)."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def live_local_turn() -> int:
    """``scripts.local_turn`` where the runtime is: here, else ``.venv-llama``; its exit code."""
    print("", RULE, "A LIVE TURN OF THE EMBEDDED MODEL (SmolLM2-135M, in-process, no key, no network)", RULE, sep="\n",
          flush=True)
    if importlib.util.find_spec("xllamacpp") is not None:
        from scripts.local_turn import main as turn

        return turn()
    python = ROOT / ".venv-llama" / "bin" / "python"
    if not python.exists():
        print("skipped: no runtime here and no .venv-llama (make llama-venv builds it in seconds; or pip "
              "install 'hermes-nb[local]')")
        return 1
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([str(python), "-m", "scripts.local_turn"], cwd=ROOT, env=env).returncode


def main(argv: list[str] | None = None) -> int:
    """Run the demo; returns the process exit code."""
    parser = argparse.ArgumentParser(prog="python -m scripts.demo", description=__doc__.splitlines()[0])
    parser.add_argument("notebook", nargs="?", default=str(NOTEBOOK), help="notebook to run (default: quickstart)")
    parser.add_argument("--html", default=None, help="where to write the HTML (default: next to the notebook)")
    parser.add_argument("--no-local", action="store_true", help="skip the live turn of the embedded model")
    args = parser.parse_args(argv)
    path = Path(args.notebook).resolve()
    print(f"hermes_nb demo: running {_nice(path)} "
          "in a real kernel (offline, replayed model)…", flush=True)
    started = time.perf_counter()
    nb, error = run_notebook(path)
    took = time.perf_counter() - started
    print(transcript(nb))
    print("", RULE, sep="\n")
    html_path = Path(args.html) if args.html else path.with_suffix(".html")
    _html(nb, html_path)
    if error is not None:
        print(f"FAILED after {took:.1f} s: a cell raised.\n{error}", file=sys.stderr)
        print(f"The executed notebook, up to the failure, is in {_nice(html_path)}", file=sys.stderr)
        return 1
    print(f"✓ every cell ran ({took:.1f} s). The executed notebook, with the agent's live output kept as "
          f"static HTML, is in {_nice(html_path)}")
    print(textwrap.dedent(f"""
        Run the same notebook live:   jupyter lab {_nice(path)}
        With a real model: set OPENAI_API_KEY (not needed for a server on 127.0.0.1), OPENAI_BASE_URL
        (e.g. http://127.0.0.1:11434/v1 for Ollama) and HERMES_NB_MODEL, then change
        Agent(model="replay:cassettes/quickstart.json") to Agent(), and drop --model replay:... from %%agent.
        Re-record the cassettes:      .venv/bin/python scripts/record_quickstart.py [--live]
        Or the embedded model:        Agent(model="local") / %%agent --model local (pip install 'hermes-nb[local]')"""))
    return 0 if args.no_local else live_local_turn()


if __name__ == "__main__":
    sys.exit(main())
