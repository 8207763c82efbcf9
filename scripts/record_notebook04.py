"""Re-record the cassettes of ``notebooks/04-test-and-evaluate.ipynb`` (``notebooks/cassettes/eval-04/``).

    .venv/bin/python scripts/record_notebook04.py            # scripted model: reproducible, offline
    .venv/bin/python scripts/record_notebook04.py --out DIR  # somewhere else

The notebook's cells tagged ``tools`` and ``cases`` run in an IPython shell first, so the recording
offers exactly the notebook's tools and uses its cases. The model is the scripted server of the tests
(``tests/support/routed_openai.py``, real ``openai`` client over HTTP), answering each prompt as written
in ``ANSWERS`` below — one case picks no tool where one was expected, one sends a wrong argument, so
the evaluation has something to show. ``evaluate(..., record=DIR)`` writes one cassette per case.
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import sys
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: make tests.support and hermes_nb importable
    sys.path.insert(0, str(ROOT))

from tests.support.fake_openai import Reply, call  # noqa: E402
from tests.support.routed_openai import RoutedOpenAI  # noqa: E402

NOTEBOOK = ROOT / "notebooks" / "04-test-and-evaluate.ipynb"
OUT = ROOT / "notebooks" / "cassettes" / "eval-04"
#: the execute_code section's run (one cassette), recorded beside the evaluation's
SCRIPT_CASSETTE = ROOT / "notebooks" / "cassettes" / "execute-code-04.json"
SCRIPT = """from hermes_tools import convert_temperature, word_count

for celsius in [-40, 0, 37, 100]:
    print(f"{celsius} °C = {convert_temperature(value=celsius, to='F')} °F")
counts = [word_count(text=t)["words"] for t in ["tools in cells", "a script that calls tools in a loop"]]
print("words:", counts, "total", sum(counts))
"""

#: prompt -> (the first turn's tool calls, the final answer)
ANSWERS: dict[str, tuple[list[tuple[str, dict[str, Any]]], str]] = {
    "What is 100 degrees Celsius in Fahrenheit?": (
        [("convert_temperature", {"value": 100, "to": "F"})], "100 °C is 212 °F."),
    "Convert 50 F to Celsius.": (
        [("convert_temperature", {"value": 50, "to": "F"})], "50 °F is 122."),  # the wrong unit
    "How many words are in 'the quick brown fox'?": (
        [("word_count", {"text": "the quick brown fox"})], "There are 4 words."),
    "Is 30 degrees Celsius warm?": ([], "Yes, 30 °C is warm."),  # answered without the tool
    "Say hello to the class.": ([], "Hello, class!"),
    "How long is the longest word in 'tools in notebooks'?": (
        [("word_count", {"text": "tools in notebooks"})], "The longest word is 'notebooks', 9 letters."),
}


def route(prompt: str, turn: int, body: dict[str, Any]) -> Reply:
    calls, final = ANSWERS[prompt]
    usage = {"prompt_tokens": 180 + 40 * turn, "completion_tokens": 20, "total_tokens": 200 + 40 * turn}
    if turn == 0 and calls:
        return Reply(tool_calls=tuple(call(n, a, f"call_{i}") for i, (n, a) in enumerate(calls)), usage=usage)
    return Reply(content=final, usage=usage)


def tagged(tag: str) -> list[str]:
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) for c in cells if tag in c.get("metadata", {}).get("tags", [])]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    from IPython.core.interactiveshell import InteractiveShell

    import hermes_nb

    shell = InteractiveShell.instance()
    with tempfile.TemporaryDirectory() as home:
        shell.user_ns["os"] = __import__("os")
        shell.user_ns["os"].environ["HERMES_NB_HOME"] = home
        with redirect_stdout(io.StringIO()):
            shell.run_line_magic("load_ext", "hermes_nb")
            for source in tagged("tools") + tagged("cases"):
                if not shell.run_cell(source).success:
                    raise SystemExit(f"a notebook cell failed:\n{source}")
        cases = shell.user_ns["cases"]
        if args.out.exists():
            shutil.rmtree(args.out)
        with RoutedOpenAI(route) as srv, redirect_stderr(io.StringIO()):
            result = hermes_nb.evaluate(cases, agent={
                "model": "gpt-4o-mini (recorded against a scripted server)", "base_url": srv.base_url,
                "enabled_toolsets": ["units", "text"], "system_prompt": "Use the tools when they help.",
                "stream": False}, record=args.out)
        record_execute_code(shell)
        shell.run_line_magic("unload_ext", "hermes_nb")
    print(result)
    print(f"wrote {len(list(args.out.glob('case-*.json')))} cassettes to {args.out}")
    return 0


def record_execute_code(shell: Any) -> None:
    """The execute_code section: one script that calls the notebook's two tools in a loop."""
    from tests.support.fake_openai import FakeOpenAI

    script = [Reply(content="One script does all of it.", tool_calls=(call("execute_code", {"code": SCRIPT},
                                                                           "call_script"),)),
              Reply(content="-40 °C is -40 °F, 0 °C is 32 °F, 37 °C is 98.6 °F and 100 °C is 212 °F; "
                            "the two texts have 3 and 8 words (11 in all).")]
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    fixed = ["".join(c["source"]) for c in cells if "".join(c["source"]).startswith("%%tool --toolset text")][-1]
    if not shell.run_cell(fixed).success:  # the fuzz section's `initials`: offered by the time section 5 runs
        raise SystemExit(f"a notebook cell failed:\n{fixed}")
    SCRIPT_CASSETTE.unlink(missing_ok=True)
    with FakeOpenAI(script) as srv:
        shell.user_ns["_record_agent"] = hermes_nb_agent = __import__("hermes_nb").Agent(
            model="gpt-4o-mini (recorded against a scripted server)", base_url=srv.base_url, api_key="none",
            stream=False, display=False, record=str(SCRIPT_CASSETTE), approval_callback=lambda *a: "once",
            enabled_toolsets=["units", "text", "code_execution"])
        result = hermes_nb_agent.run("Convert -40, 0, 37 and 100 °C to Fahrenheit, and count the words of "
                                     "'tools in cells' and 'a script that calls tools in a loop'.")
    # the scripted server's usage is its stand-in (10 + 5 tokens a turn): say so, or it reads as a real count
    data = json.loads(SCRIPT_CASSETTE.read_text(encoding="utf-8"))
    data["usage"] = "placeholder"
    SCRIPT_CASSETTE.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(result.tool_calls[0].content)
    print(f"wrote {SCRIPT_CASSETTE}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
