"""The embedded model's throughput through ``Agent(model="local")`` against the runtime's own
``handle_chat_completions`` (xllamacpp: llama.cpp's server in-process) on the same prompt, in the same
process, on the same loaded model (target: at least 0.9x); its load time and the process's peak memory.

Both sides ask for the same number of tokens at temperature 0 (a counting prompt the model does not end
early), in alternating rounds, best of each; both send the same prompt, so llama.cpp's prompt cache serves
both alike; tokens are the runtime's own counts. Needs the runtime: run in ``.venv-llama``
(``make llama-venv``, seconds); from another Python it runs itself there.
"""

from __future__ import annotations

import importlib.util
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from bench.common import QUICK, require, verdict

TARGET = 0.9  # Agent tokens/s over the runtime's own, at least
PROMPT = "Count from 1 to 500, separated by commas."
#: Given on both sides, so the runtime's chat template and the agent's prompt are the same text (the GGUF's
#: template adds a default system prompt of its own when none is given).
SYSTEM = "You are a helpful assistant."
TOKENS = 48


def _direct(server: object, max_tokens: int) -> tuple[float, int]:
    start = time.perf_counter()
    out = server.handle_chat_completions({  # type: ignore[attr-defined]
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}],
        "max_tokens": max_tokens, "temperature": 0.0, "seed": 1})
    return out["usage"]["completion_tokens"] / (time.perf_counter() - start), out["usage"]["prompt_tokens"]


def _through_agent(server: object, max_tokens: int) -> tuple[float, int]:
    from hermes_nb.agent.loop import Agent

    agent = Agent(model="local", enabled_toolsets=[], system_prompt=SYSTEM, max_tokens=max_tokens, temperature=0.0,
                  seed=1, display=False)
    start = time.perf_counter()
    result = agent.run(PROMPT)
    return result.usage["completion_tokens"] / (time.perf_counter() - start), result.usage["prompt_tokens"]


def main() -> None:
    if importlib.util.find_spec("xllamacpp") is None:
        python = Path(__file__).resolve().parents[1] / ".venv-llama" / "bin" / "python"
        if not python.exists():
            print("skipped: no xllamacpp here and no .venv-llama (make llama-venv)")
            return
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        code = subprocess.run([str(python), "-m", "bench", *(["--quick"] if QUICK else []), "local"],
                              cwd=python.parents[2], env=env).returncode
        if code:
            raise SystemExit(code)
        return
    from hermes_nb.models.local import LocalModel, _runtime

    model = LocalModel()
    model.check_config()
    assert model.path is not None
    start = time.perf_counter()
    server, _ = _runtime(model.path, model.n_threads, model.n_ctx)
    load = time.perf_counter() - start
    rounds = 3 if QUICK else 5
    direct: list[tuple[float, int]] = []
    agent: list[tuple[float, int]] = []
    _direct(server, 8)  # warm both paths once
    _through_agent(server, 8)
    for _ in range(rounds):
        direct.append(_direct(server, TOKENS))
        agent.append(_through_agent(server, TOKENS))
    ratio = max(agent)[0] / max(direct)[0]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"model load (SmolLM2-135M Q4_1, 1 thread): {load:.2f} s; peak memory {peak:.0f} MB")
    print(f"runtime's own handle_chat_completions: {max(direct)[0]:.1f} tokens/s; through Agent(model='local'): "
          f"{max(agent)[0]:.1f} tokens/s ({TOKENS} tokens, best of {rounds}; prompt {direct[0][1]} and "
          f"{agent[0][1]} tokens)")
    require(direct[0][1] == agent[0][1], "the two sides read prompts of different lengths")
    ok = ratio >= TARGET
    print(f"ratio {ratio:.2f}x (target ≥ {TARGET}x): {verdict(ok)}")
    require(ok, f"Agent(model='local') ran at {ratio:.2f}x the runtime's own tokens/s (target {TARGET}x)")


if __name__ == "__main__":
    main()
    sys.exit(0)
