"""The out_dir of an evaluation: Hermes batch_runner's ``trajectories.jsonl`` and a checkpoint.

Each finished case appends one line to ``trajectories.jsonl`` in the shape Hermes's ``batch_runner.py``
writes (``prompt_index``, ``conversations`` as ``from``/``value`` turns — system, human, gpt, tool —
``metadata``, ``completed``, ``partial``, ``api_calls``, ``toolsets_used``, ``tool_stats``,
``tool_error_counts``), so Hermes's tooling and dataset loaders read it. ``outcomes.jsonl`` keeps what
scoring needs, and ``checkpoint.json`` lists the finished cases by index and fingerprint: a second call
with the same out_dir skips them (a case whose prompt or expectations changed runs again).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hermes_nb.evaluation.cases import Outcome

__all__ = ["OutDir", "conversations", "tool_stats", "trajectory_entry"]

_SYSTEM = (
    "You are a function calling AI model. You are provided with function signatures within <tools> </tools> "
    "XML tags. You may call one or more functions to assist with the user query. After calling the functions, "
    "you will be given their results within <tool_response> </tool_response> XML tags. Available tools:\n"
    "<tools>\n{tools}\n</tools>\n"
    "Each function call is a JSON object with 'name' and 'arguments' inside <tool_call> </tool_call> tags."
)


def conversations(messages: Iterable[Mapping[str, Any]], prompt: str,
                  tools: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    """OpenAI-style messages as Hermes trajectory turns (``from``: system, human, gpt, tool)."""
    listed = [{"name": t["function"]["name"], "description": t["function"].get("description", ""),
               "parameters": t["function"].get("parameters", {}), "required": None}
              for t in tools if isinstance(t, Mapping) and "function" in t]
    turns = [{"from": "system", "value": _SYSTEM.format(tools=json.dumps(listed, ensure_ascii=False))},
             {"from": "human", "value": prompt}]
    msgs = [m for m in messages if m.get("role") != "system"]
    start = 1 if msgs and msgs[0].get("role") == "user" and msgs[0].get("content") == prompt else 0
    pending: list[str] = []
    names: dict[str, str] = {}
    for m in msgs[start:]:
        role = m.get("role")
        if role == "tool":
            content: Any = m.get("content") or ""
            if isinstance(content, str) and content.strip()[:1] in ("{", "["):
                try:
                    content = json.loads(content)
                except ValueError:
                    pass
            call_id = str(m.get("tool_call_id", ""))
            pending.append("<tool_response>\n" + json.dumps(
                {"tool_call_id": call_id, "name": names.get(call_id, m.get("name", "unknown")), "content": content},
                ensure_ascii=False) + "\n</tool_response>")
            continue
        if pending:
            turns.append({"from": "tool", "value": "\n".join(pending)})
            pending = []
        if role == "assistant":
            value = "<think>\n</think>\n" + (m.get("content") or "").strip()
            for call in m.get("tool_calls") or []:
                fn = call.get("function", {})
                names[str(call.get("id", ""))] = fn.get("name", "")
                value = value.rstrip() + "\n<tool_call>\n" + json.dumps(
                    {"name": fn.get("name", ""), "arguments": _arguments(fn.get("arguments"))},
                    ensure_ascii=False) + "\n</tool_call>"
            turns.append({"from": "gpt", "value": value.strip()})
        elif role == "user":
            turns.append({"from": "human", "value": str(m.get("content") or "")})
    if pending:
        turns.append({"from": "tool", "value": "\n".join(pending)})
    return turns


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw else {}
        except ValueError:
            return {}  # Hermes does the same with arguments that are not JSON
    return raw if raw is not None else {}


def tool_stats(messages: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """``{tool: {count, success, failure}}``: a result is a failure when it is JSON with a non-null error."""
    stats: dict[str, dict[str, int]] = {}
    names: dict[str, str] = {}
    for m in messages:
        if m.get("role") == "assistant":
            for call in m.get("tool_calls") or []:
                name = call.get("function", {}).get("name", "")
                names[str(call.get("id", ""))] = name
                stats.setdefault(name, {"count": 0, "success": 0, "failure": 0})["count"] += 1
        elif m.get("role") == "tool":
            name = names.get(str(m.get("tool_call_id", "")))
            if name is None:
                continue
            stats[name]["failure" if _failed(m.get("content")) else "success"] += 1
    return stats


def _failed(content: Any) -> bool:
    if not content:
        return True
    try:
        data = json.loads(content) if isinstance(content, str) else content
    except ValueError:
        return str(content).strip().lower().startswith("error:")
    return isinstance(data, dict) and (data.get("error") is not None or data.get("success") is False)


def trajectory_entry(outcome: Outcome, prompt: str, *, model: str, toolsets: list[str]) -> dict[str, Any]:
    """One line of ``trajectories.jsonl`` for a finished case."""
    stats = tool_stats(outcome.messages)
    return {
        "prompt_index": outcome.index,
        "conversations": conversations(outcome.messages, prompt, outcome.tools_offered),
        "metadata": {"batch_num": 0, "timestamp": datetime.now(UTC).isoformat(), "model": model},
        "completed": outcome.stopped_reason == "done" and outcome.error is None,
        "partial": outcome.stopped_reason == "max_iterations",
        "api_calls": outcome.api_calls,
        "toolsets_used": toolsets,
        "tool_stats": stats,
        "tool_error_counts": {name: s["failure"] for name, s in stats.items()},
    }


class OutDir:
    """``trajectories.jsonl``, ``outcomes.jsonl`` and ``checkpoint.json`` in one folder."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.trajectories = self.path / "trajectories.jsonl"
        self.outcomes = self.path / "outcomes.jsonl"
        self.checkpoint = self.path / "checkpoint.json"

    def finished(self) -> dict[int, Outcome]:
        """Outcomes of the cases the checkpoint lists as finished (fingerprints are checked by the caller).

        Lines a crash or interrupt left behind (cut short, or of a case the checkpoint does not list, or a
        second copy) are dropped here, so a resumed run never duplicates a trajectory.
        """
        try:
            done = json.loads(self.checkpoint.read_text(encoding="utf-8")).get("completed", {})
        except (FileNotFoundError, ValueError):  # none yet, or torn: every case runs again, which is safe
            done = {}
        out: dict[int, Outcome] = {}
        for line in _lines(self.outcomes):
            try:
                outcome = Outcome.from_json(json.loads(line))
            except (ValueError, KeyError, TypeError):
                continue
            if done.get(str(outcome.index)) == outcome.fingerprint and outcome.index not in out:
                out[outcome.index] = outcome
        self._keep(self.outcomes, out, lambda d: (d.get("index"), d.get("fingerprint")), fingerprints=True)
        self._keep(self.trajectories, out, lambda d: (d.get("prompt_index"), None), fingerprints=False)
        return out

    def _keep(self, path: Path, keep: dict[int, Outcome], key: Any, *, fingerprints: bool) -> None:
        lines, seen, dropped = [], set(), False
        for line in _lines(path):
            try:
                index, fingerprint = key(json.loads(line))
            except (ValueError, AttributeError):
                dropped = True
                continue
            outcome = keep.get(index) if isinstance(index, int) else None
            if outcome is None or index in seen or (fingerprints and fingerprint != outcome.fingerprint):
                dropped = True
                continue
            seen.add(index)
            lines.append(line)
        if dropped:
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
            os.replace(tmp, path)

    def record(self, outcome: Outcome, trajectory: dict[str, Any], completed: dict[int, str]) -> None:
        """Append the case's lines, then rewrite the checkpoint (atomically) to include it."""
        for path, data in ((self.trajectories, trajectory), (self.outcomes, outcome.to_json())):
            with path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(data, ensure_ascii=False, default=repr) + "\n")
                f.flush()
                os.fsync(f.fileno())
        completed[outcome.index] = outcome.fingerprint
        tmp = self.checkpoint.with_name("checkpoint.json.tmp")
        tmp.write_text(json.dumps({"completed": {str(k): v for k, v in sorted(completed.items())},
                                   "last_updated": datetime.now(UTC).isoformat()}), encoding="utf-8")
        os.replace(tmp, self.checkpoint)


def _lines(path: Path) -> list[str]:
    try:
        return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except FileNotFoundError:
        return []
