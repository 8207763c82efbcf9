"""``%tools fuzz``: call a tool with arguments drawn from its own JSON schema and report what breaks.

Problems found: the handler raised (``crash``), a result that is neither text nor JSON (``not-json``),
a result over the tool's budget (``over-budget``), a slow call (``slow``), a call that never returned
(``hang``), schema-valid arguments refused (``refused``); with ``invalid=True`` also arguments that
break the schema and were accepted (``accepted-invalid``) or refused without naming what to fix
(``vague-refusal``). Each kind is shrunk by hypothesis to a minimal input, then the search goes on for
the next kind. Hypothesis is imported only here (the ``hermes-nb[fuzz]`` extra).

Approval: tools that need it, and built-in or plugin tools not marked read-only, are fuzzed only with
``allow_approval=True``, which answers "once" to every approval their calls ask for. Without it every
approval asked during the run is denied, so nothing waits for a person. Every call passes the approval
gate as a dispatch does (the person's ``approvals:`` rules too: a tool they deny is never run); a call it
blocks is counted in the report's notes, not run. There is no sandbox around the
calls yet (issue 8 adds one); that is why the flag exists.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import inspect
import json
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from IPython.core.error import UsageError

from hermes_nb.display.cards import Table
from hermes_nb.display.progress import Progress

__all__ = ["FuzzFailure", "FuzzReport", "fuzz_magic", "fuzz_tool"]

#: Kinds of problem, in the order the report lists them.
KINDS = ("crash", "not-json", "over-budget", "slow", "hang", "refused", "accepted-invalid", "vague-refusal")
_MAX_ROUNDS = 6


@dataclass(frozen=True, slots=True, kw_only=True)
class FuzzFailure:
    """One problem, shrunk: ``args`` is the minimal input found, ``error`` says what went wrong."""

    kind: str
    args: dict[str, Any]
    error: str


@dataclass(frozen=True, slots=True, kw_only=True)
class FuzzReport:
    """What ``%tools fuzz`` found; ``ok`` when nothing."""

    tool: str
    calls: int
    invalid_calls: int
    failures: tuple[FuzzFailure, ...]
    seconds: float
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.failures

    def table(self) -> Table:
        rows = tuple((f.kind, json.dumps(f.args, ensure_ascii=False, default=repr)[:200], f.error[:300])
                     for f in self.failures)
        checked = f"{self.calls} calls" + (f" + {self.invalid_calls} invalid" if self.invalid_calls else "")
        title = f"fuzz {self.tool}: {checked} in {self.seconds:.1f}s — " + (
            "no problems found" if self.ok else f"{len(self.failures)} problem(s), each shrunk")
        if self.notes:
            title += " (" + "; ".join(self.notes) + ")"
        return Table(headers=("problem", "smallest input", "error"), rows=rows, title=title,
                     empty="every call returned text or JSON within budget and time")

    def __str__(self) -> str:
        return self.table().text()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return self.table()._repr_mimebundle_()


def fuzz_magic(line: str) -> FuzzReport:
    """``%tools fuzz NAME [--n 200] [--seed S] [--invalid] [--allow-approval]``."""
    parser = argparse.ArgumentParser(prog="%tools fuzz", add_help=False, exit_on_error=False)
    parser.add_argument("name")
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--invalid", action="store_true")
    parser.add_argument("--allow-approval", action="store_true")
    parser.add_argument("--slow", type=float, default=2.0)
    try:
        args, unknown = parser.parse_known_args(shlex.split(line))
    except (argparse.ArgumentError, ValueError) as exc:
        raise UsageError(f"%tools fuzz: {exc} (usage: %tools fuzz NAME [--n 200] [--seed S] [--invalid] "
                         f"[--allow-approval])") from None
    if unknown:
        raise UsageError(f"%tools fuzz: unknown option {unknown[0]!r} (see %tools?)")
    return fuzz_tool(args.name, n=args.n, seed=args.seed, invalid=args.invalid,
                     allow_approval=args.allow_approval, slow=args.slow)


def fuzz_tool(name: str, *, n: int = 200, seed: int | None = None, invalid: bool = False,
              allow_approval: bool = False, slow: float = 2.0, timeout: float = 10.0, reg: Any = None,
              display: bool | None = None) -> FuzzReport:
    """Fuzz one tool (see the module docstring); a person's mistake is a one-line UsageError."""
    try:
        from hermes_nb.tools.schema.strategies import invalid_arguments, valid_arguments
    except ImportError:
        raise UsageError("%tools fuzz needs hypothesis: pip install 'hermes-nb[fuzz]'") from None
    if reg is None:
        from hermes_nb.tools.registry import registry

        reg = registry
    entry = reg.get_entry(name)
    if entry is None:
        raise UsageError(f"%tools fuzz: no tool named {name!r} (see %tools)")
    if n < 1:
        raise UsageError("%tools fuzz: --n must be at least 1")
    if entry.interactive:
        raise UsageError(f"%tools fuzz: {name} asks the person (interactive); fuzzing would ask hundreds of times")
    asks = entry.needs_approval or not (entry.read_only or entry.source == "notebook")
    if asks and not allow_approval:
        why = "needs approval" if entry.needs_approval else f"is a {entry.source} tool not marked read-only"
        raise UsageError(f"%tools fuzz: {name} {why}; fuzzing runs it with approvals granted, so pass "
                         f"--allow-approval (terminal commands still run in the sandbox where it holds: see %tools doctor)")
    from hermes_nb.tools.approval import set_default_approval_callback
    from hermes_nb.tools.budget import result_threshold

    notes: tuple[str, ...] = ("approvals granted; only terminal commands run sandboxed",) if allow_approval else ()
    answer = "once" if allow_approval else "deny"
    probe = _Probe(entry, reg, threshold=result_threshold(name), slow=slow, timeout=timeout,
                   approver=lambda *_: answer)
    progress = Progress(f"fuzz {name}", n * (2 if invalid else 1), display=display)
    probe.on_call = lambda: progress.update(min(probe.calls + probe.invalid_calls, progress.total),
                                            f"{len(failures)} problem(s)")
    undo = set_default_approval_callback(probe.approver)  # approvals a handler asks for itself
    started = time.monotonic()
    failures: list[FuzzFailure] = []
    try:
        failures += _search(valid_arguments(entry.schema["parameters"]), probe.check, n, seed)
        if invalid:
            failures += _search(invalid_arguments(entry.schema["parameters"], probe.refuses),
                                probe.check_invalid, n, seed)
    finally:
        undo()
        probe.close()
    failures.sort(key=lambda f: KINDS.index(f.kind) if f.kind in KINDS else len(KINDS))
    if probe.blocked:
        notes += (f"{probe.blocked} call(s) not run, blocked by the approval gate: {probe.blocked_message}",)
    progress.close(f"{len(failures)} problem(s)")
    return FuzzReport(tool=name, calls=probe.calls, invalid_calls=probe.invalid_calls,
                      failures=tuple(failures), seconds=time.monotonic() - started, notes=notes)


# -- the search ----------------------------------------------------------------------------------

Outcome = tuple[str, str] | None  # (key, message): key is the kind, and for crashes the exception type


class _Found(Exception):
    """Raised inside hypothesis's test for a problem; one subclass per key, so hypothesis tells them apart."""


_FOUND: dict[str, type[_Found]] = {}


def _found(key: str) -> type[_Found]:
    if key not in _FOUND:
        _FOUND[key] = type(f"Found_{key.replace(':', '_').replace('-', '_')}", (_Found,), {})
    return _FOUND[key]


def _search(strategy: Any, check: Callable[[Any], tuple[dict[str, Any], Outcome]], n: int,
            seed: int | None) -> list[FuzzFailure]:
    """Run hypothesis until no new kind of problem turns up; each found one shrunk to its minimum."""
    import hypothesis
    from hypothesis import HealthCheck, Verbosity, given, settings

    ignored: set[str] = set()
    out: list[FuzzFailure] = []
    last: list[tuple[str, FuzzFailure]] = []  # failing calls of the current round, the shrunk one last

    def test(value: Any) -> None:
        args, outcome = check(value)
        if outcome is None or outcome[0] in ignored:
            return
        key, message = outcome
        last.append((key, FuzzFailure(kind=key.split(":")[0], args=args, error=message)))
        raise _found(key)(message)

    for _ in range(_MAX_ROUNDS):
        last.clear()
        run = settings(max_examples=n, database=None, deadline=None, derandomize=False, print_blob=False,
                       suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
                       verbosity=Verbosity.quiet)(given(strategy)(test))
        if seed is not None:
            run = hypothesis.seed(seed)(run)
        try:
            run()
        except _Found:
            pass  # the final replay of the shrunk example raised it: last[-1] is the minimum
        except Exception:  # Flaky (a slow call that was not slow again): keep the smallest one seen
            if not last:
                raise
        if not last:
            break
        key, failure = last[-1]
        ignored.add(key)
        out.append(failure)
    return out


class _Probe:
    """Calls the tool the way dispatch does (prepare, the approval gate, the handler), but sees the exception
    and the raw result."""

    def __init__(self, entry: Any, reg: Any, *, threshold: float, slow: float, timeout: float,
                 approver: Callable[[str, str, str], str]) -> None:
        self.entry, self.reg, self.approver = entry, reg, approver
        self.threshold, self.slow, self.timeout = threshold, slow, timeout
        self.calls = self.invalid_calls = self.blocked = 0
        self.blocked_message = ""
        self.hung = False
        self.on_call: Callable[[], None] = lambda: None
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="hermes-nb-fuzz")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def refuses(self, args: Any) -> bool:
        return isinstance(self.reg.prepare(self.entry.name, args), str)

    def check(self, args: dict[str, Any]) -> tuple[dict[str, Any], Outcome]:
        self.calls += 1
        self.on_call()
        if self.hung:  # a handler never returned: stop calling it (the thread cannot be killed)
            return args, None
        prepared = self.reg.prepare(self.entry.name, args)
        if isinstance(prepared, str):
            return args, ("refused", f"arguments that satisfy the schema were refused: {_error_text(prepared)}")
        from hermes_nb.tools.safety.approvals.gate import decide

        decision = decide(self.entry, prepared[1], self.approver)  # what dispatch decides before the handler
        if not decision.approved:  # the gate's doing, not the tool's: not run, not a problem of the tool
            self.blocked += 1
            self.blocked_message = decision.message
            return args, None
        started = time.monotonic()
        future = self._pool.submit(_invoke, self.entry, prepared[1])
        try:
            result = future.result(timeout=self.timeout)
        except concurrent.futures.TimeoutError:
            self.hung = True
            return args, ("hang", f"did not return within {self.timeout:g} s")
        except (Exception, SystemExit) as exc:
            return args, (f"crash:{type(exc).__name__}", f"{type(exc).__name__}: {_text(exc)}")
        elapsed = time.monotonic() - started
        if isinstance(result, str):
            text = result
        else:
            try:
                text = json.dumps(result, ensure_ascii=False, allow_nan=False)
            except (TypeError, ValueError, RecursionError) as exc:
                return args, ("not-json", f"returned a {type(result).__name__}, which is neither text nor JSON "
                                          f"({type(exc).__name__}: {_text(exc)})")
        if len(text) > self.threshold:
            return args, ("over-budget", f"result of {len(text):,} chars is over the tool's budget of "
                                         f"{self.threshold:,.0f}")
        if elapsed > self.slow:
            return args, ("slow", f"took {elapsed:.2f} s (slow means over {self.slow:g} s)")
        return args, None

    def check_invalid(self, case: tuple[Any, str, str]) -> tuple[dict[str, Any], Outcome]:
        value, why, word = case
        self.invalid_calls += 1
        self.on_call()
        args = value if isinstance(value, dict) else {"<arguments>": value}
        prepared = self.reg.prepare(self.entry.name, value)
        if not isinstance(prepared, str):  # never runs the handler: only whether dispatch would refuse
            return args, ("accepted-invalid", f"accepted invalid arguments ({why})")
        message = _error_text(prepared)
        if word.lower() not in message.lower():
            return args, ("vague-refusal", f"the refusal does not name {word!r} ({why}): {message}")
        return args, None


def _invoke(entry: Any, args: dict[str, Any]) -> Any:
    from hermes_nb.tools import async_bridge

    result = entry.handler(args)
    if inspect.isawaitable(result):
        async def wait() -> Any:
            return await result

        result = async_bridge.run_sync(wait())
    return result


def _error_text(content: str) -> str:
    try:
        data = json.loads(content)
    except ValueError:
        return content
    return str(data.get("error", content)) if isinstance(data, dict) else content


def _text(value: Any) -> str:
    try:
        return str(value)
    except Exception:  # a user-defined __str__ that raises
        return f"<unprintable {type(value).__name__}>"
