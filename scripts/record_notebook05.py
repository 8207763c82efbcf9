"""Re-record the cassettes of ``notebooks/05-agent-state.ipynb`` (``notebooks/cassettes/state-*.json``).

    .venv/bin/python scripts/record_notebook05.py            # scripted model: reproducible, offline
    .venv/bin/python scripts/record_notebook05.py --out DIR  # somewhere else

The three runs of the notebook, in its order and in one fresh home (the second run searches the first):
a plan with ``todo`` and a fact kept with ``memory``; a recall with ``session_search`` (in the notebook, from
a second kernel); two sub-agents at once with ``delegate_task`` (each child gets its own cassette beside the
parent's). The model is the tests' scripted server (``tests/support/routed_openai.py``, the real ``openai``
client over HTTP), answering each conversation as ``ROUTES`` below says.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: make tests.support and hermes_nb importable
    sys.path.insert(0, str(ROOT))

from tests.support.fake_openai import Reply, call  # noqa: E402
from tests.support.routed_openai import RoutedOpenAI  # noqa: E402

OUT = ROOT / "notebooks" / "cassettes"

PLAN = "I study Adélie penguins on Ross Island. Plan how we summarise this season's counts, and remember what I work on."
RECALL = "What do I work on, and what did we plan last time?"
DELEGATE = "Compare the Adélie and emperor penguin colonies: one sub-agent per species, at the same time."
ADELIE = "Summarise the Adélie penguin colony on Ross Island: when they breed and where they nest."
EMPEROR = "Summarise the emperor penguin colony at Cape Crozier: when they breed and where they nest."


def _items(*statuses: str) -> list[dict[str, str]]:
    names = ["Collect the nest counts", "Compare with last season", "Write the summary"]
    return [{"id": str(i + 1), "content": n, "status": s} for i, (n, s) in enumerate(zip(names, statuses, strict=True))]


def _child(species: str, season: str, nests: str) -> list[Reply]:
    plan = [{"id": "1", "content": f"Recall the {species} breeding season", "status": "completed"},
            {"id": "2", "content": f"Recall the {species} nest sites", "status": "completed"}]
    return [Reply(tool_calls=(call("todo", {"todos": plan}, "call_plan"),)),
            Reply(content=f"{species.capitalize()} penguins breed {season}; they nest {nests}.")]


ROUTES: dict[str, list[Reply]] = {
    PLAN: [
        Reply(tool_calls=(call("todo", {"todos": _items("in_progress", "pending", "pending")}, "call_plan"),
                          call("memory", {"action": "add", "target": "user",
                                          "content": "Studies Adélie penguins on Ross Island"}, "call_remember"))),
        Reply(tool_calls=(call("todo", {"todos": [{"id": "1", "content": "Collect the nest counts",
                                                   "status": "completed"},
                                                  {"id": "2", "content": "Compare with last season",
                                                   "status": "in_progress"}], "merge": True}, "call_progress"),)),
        Reply(tool_calls=(call("todo", {"todos": _items("completed", "completed", "completed")}, "call_done"),)),
        Reply(content="The plan: collect the nest counts, compare them with last season, then write the summary. "
                      "I noted that you study Adélie penguins on Ross Island, so later runs know it."),
    ],
    RECALL: [
        Reply(tool_calls=(call("session_search", {"query": "plan OR counts"}, "call_search"),)),
        Reply(content="You study Adélie penguins on Ross Island (that is in my memory). Last time we planned "
                      "three steps: collect the nest counts, compare them with last season, write the summary "
                      "(found with session_search in the earlier run)."),
    ],
    DELEGATE: [
        Reply(tool_calls=(call("delegate_task", {"tasks": [{"goal": ADELIE, "toolsets": ["todo"]},
                                                           {"goal": EMPEROR, "toolsets": ["todo"]}]},
                               "call_delegate"),)),
        Reply(content="Adélie penguins breed in the southern summer on ice-free rocky ground; emperors breed "
                      "through the winter on the sea ice. Same coast, opposite seasons."),
    ],
    ADELIE: _child("Adélie", "from October to February", "on ice-free rocky ground, in pebble nests"),
    EMPEROR: _child("emperor", "through the winter, from May to December", "on the sea ice, without nests"),
}


def route(prompt: str, turn: int, body: dict[str, Any]) -> Reply:
    reply = ROUTES[prompt][turn]
    usage = {"prompt_tokens": 240 + 60 * turn, "completion_tokens": 30, "total_tokens": 270 + 60 * turn}
    return Reply(content=reply.content, tool_calls=reply.tool_calls, usage=usage)


def record(out: Path) -> list[Path]:
    from hermes_nb.agent.loop import Agent
    from hermes_nb.tools.config import using_home

    out.mkdir(parents=True, exist_ok=True)
    runs = [("state-plan.json", PLAN, ["todo", "memory"]), ("state-recall.json", RECALL, ["memory", "session_search"]),
            ("state-delegate.json", DELEGATE, ["delegation", "todo"])]
    with tempfile.TemporaryDirectory() as home, using_home(home), RoutedOpenAI(route) as srv:
        for name, prompt, toolsets in runs:
            agent = Agent(model="scripted-model", base_url=srv.base_url, enabled_toolsets=toolsets, display=False,
                          stream=False, record=str(out / name))
            result = agent.run(prompt)
            assert result.stopped_reason == "done", (name, result.text)
    return sorted(out.glob("state-*.json"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    for path in record(parser.parse_args().out):
        print(path)


if __name__ == "__main__":
    main()
