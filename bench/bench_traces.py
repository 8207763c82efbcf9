"""Traces (issue 36): what recording a run's spans costs.

With no tracer provider a run makes no span while it goes: it keeps each event the loop emits anyway with the time
it was heard (one append), and the spans are made only when ``result.trace`` / ``%trace`` is first read
(``hermes_nb.traces.lazy``). Targets:

- tracing off: what keeping one tool call's events costs (its queued, started and ended events through the
  run's ``emit``, the emit itself a no-op and counted in) at most ``OFF_TARGET`` (2 %) of what the batch scheduler
  alone spends on a one-call batch of a trivial tool (the floor of any call; a run adds the result budget, the
  history and the display on top). 2 % is "nothing measurable": the same batch measured twice, best of five
  rounds each, differed by 0.6 % at best and by over 50 % while the machine was busy (each run prints its own). Finding that no provider
  is configured (once a run) at most ``LOOKUP_TARGET`` (20 µs);
- tracing on: one ``execute_tool`` span through the OpenTelemetry SDK (a provider with a processor whose
  exporter drops what it gets, so the export's own network time is not counted) at most ``ON_TARGET`` (50 µs).

A missed target raises ``TargetMissed`` after every figure is printed.
"""

from __future__ import annotations

from bench.common import fmt, limit, per_call, require, verdict

OFF_TARGET = 0.02
LOOKUP_TARGET = 20e-6
ON_TARGET = 50e-6


def _recorder(sink: object) -> object:
    from hermes_nb.traces.recorder import Recorder

    return Recorder(agent_name="bench", model="m", provider="openai", conversation="c", sink=sink)  # type: ignore[arg-type]


def _events() -> tuple[object, ...]:
    """One call's events as the loop emits them anyway (for its display): made once, not measured."""
    import time

    from hermes_nb.agent.events import ToolCallQueued, ToolEnded, ToolStarted

    now = time.perf_counter()
    return (ToolCallQueued(index=0, id="c", name="inc", arguments="{}"), ToolStarted(tool_call_id="c", time=now),
            ToolEnded(tool_call_id="c", time=now))


def _one_call(recorder: object, events: tuple[object, ...]) -> None:
    for event in events:
        recorder.feed(event)  # type: ignore[attr-defined]
    recorder._done.clear()  # type: ignore[attr-defined]  # a long run's records: not what is measured


def _kept_call(lazy: object, emit: object, events: tuple[object, ...]) -> None:
    for event in events:
        emit(event)  # type: ignore[operator]
    lazy._kept.clear()  # type: ignore[attr-defined]  # a long run's events: not what is measured


def _dropping_sink() -> object:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    from hermes_nb.traces.otel import Sink

    class Drop(SpanExporter):
        def export(self, spans: object) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Drop()))
    return Sink(provider.get_tracer("bench"), content=False)


def main() -> None:
    from hermes_nb.tools.batch.scheduling import run_tool_batch
    from hermes_nb.tools.registry import registry
    from hermes_nb.traces import otel
    from hermes_nb.traces.lazy import LazyRecorder

    registry.register("inc", "bench_traces", {"description": "Add one.", "parameters": {"type": "object",
                      "properties": {"n": {"type": "integer"}}}}, lambda a, **kw: "1", read_only=True)
    batch = [{"id": "c", "type": "function", "function": {"name": "inc", "arguments": "{}"}}]
    batch_s = per_call(lambda: run_tool_batch(batch))
    again_s = per_call(lambda: run_tool_batch(batch))  # the same, measured again: the noise of this figure
    noise = abs(batch_s - again_s) / min(batch_s, again_s)
    batch_s = min(batch_s, again_s)
    lazy = LazyRecorder(agent_name="bench", model="m", provider="openai", conversation="c")
    emit = lazy.hear(lambda event: None)
    events = _events()
    off_s = per_call(lambda: _kept_call(lazy, emit, events))
    lookup_s = per_call(otel.sink)
    ratio = off_s / batch_s
    ok_off = ratio <= limit(OFF_TARGET)
    ok_lookup = lookup_s <= limit(LOOKUP_TARGET)
    print(f"traces: a one-call batch {fmt(batch_s)} (measured twice: {noise:.1%} apart); keeping its call's events "
          f"(no provider) {fmt(off_s)} = {ratio:.1%} of it (target ≤ {limit(OFF_TARGET):.0%}: {verdict(ok_off)})")
    print(f"traces: no provider configured, found in {fmt(lookup_s)} per run "
          f"(target ≤ {fmt(limit(LOOKUP_TARGET))}: {verdict(ok_lookup)})")
    built = _recorder(None)
    build_s = per_call(lambda: _one_call(built, events))
    print(f"traces: making a call's span when the trace is read {fmt(build_s)} (paid only by a trace drawn)")
    try:
        on = _recorder(_dropping_sink())
    except ImportError:
        print("traces: opentelemetry-sdk is not installed: the tracing-on figure is skipped")
        ok_on = True
    else:
        on_s = per_call(lambda: _one_call(on, events))
        ok_on = on_s <= limit(ON_TARGET)
        print(f"traces: one execute_tool span through the OpenTelemetry SDK {fmt(on_s)} "
              f"(target ≤ {fmt(limit(ON_TARGET))}: {verdict(ok_on)})")
    require(ok_off, "keeping a tool call's events costs more than 2 % of a one-call batch")
    require(ok_lookup, "finding no tracer provider costs more than 20 µs")
    require(ok_on, "an exported span costs more than 50 µs")


if __name__ == "__main__":
    main()
