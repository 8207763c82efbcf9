"""Where the records become OpenTelemetry spans, when a tracer provider is configured.

Three ways on, looked at when a run starts (never at ``%load_ext``; nothing here imports OpenTelemetry until a
run finds one of them):

1. the person's own provider: ``opentelemetry`` is already imported and its global provider is a real one
   (not the API's proxy default);
2. ``tracing: {otlp_endpoint: http://host:4318}`` in config.yaml;
3. the standard ``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` variables.

2 and 3 build a provider of hermes_nb's own (the SDK and the OTLP/HTTP exporter, imported then) that is not
made global, so the person's other code is left alone. Content (prompts, arguments, results) goes on the
spans only when the person opts in: ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` (``true``, or
``SPAN_ONLY`` / ``SPAN_AND_EVENT``, its values under the latest conventions), or ``tracing: {capture_content:
true}``.

``OTEL_SEMCONV_STABILITY_OPT_IN`` is not read: it lets an instrumentation that emitted GenAI conventions v1.36.0
or older keep emitting them by default. hermes_nb never emitted an older version, so it always emits the latest
experimental ones, as ``gen_ai_latest_experimental`` asks, whether the variable is set or not.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_nb.traces.records import SpanRecord

__all__ = ["CONTENT_VARIABLE", "Sink", "capture_content", "sink", "tracing_config"]

log = logging.getLogger(__name__)

CONTENT_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
_FROM_ENV = "env:"  # an endpoint key: the standard variables name the collector
_SCOPE = "hermes_nb"
_KINDS = {"chat": "CLIENT", "mcp": "CLIENT"}  # the rest INTERNAL (the conventions' kinds)
_own: dict[str, Any] = {}  # endpoint -> the provider hermes_nb built for it (one per endpoint, kept)
_own_lock = threading.Lock()
_hinted: set[str] = set()
_config_read: tuple[Any, Mapping[str, Any]] | None = None


class Sink:
    """Turns records into spans of ``tracer``; parents are the records' own (explicit, so a span made in a worker
    thread or on the background loop nests where it belongs, whatever that thread's current context is)."""

    def __init__(self, tracer: Any, content: bool, caller: Any = None) -> None:
        from opentelemetry import trace

        self._trace = trace
        self._tracer = tracer
        self.content = content
        self._caller = caller  # the context the run was started in: its root span's parent
        # perf_counter seconds -> epoch nanoseconds, fixed once so every span of the run shares the axis
        self._offset = time.time_ns() - int(time.perf_counter() * 1e9)

    def _ns(self, t: float) -> int:
        return self._offset + int(t * 1e9)

    def start(self, span: Any) -> Any:  # the recorder's open span (kind, name, parent, start, attributes)
        parent = span.parent.handle if span.parent is not None else None
        context = self._trace.set_span_in_context(parent) if parent is not None else self._caller
        kind = getattr(self._trace.SpanKind, _KINDS.get(span.kind, "INTERNAL"))
        return self._tracer.start_span(span.name, context=context, kind=kind, attributes=_plain(span.attributes),
                                       start_time=self._ns(span.start))

    def end(self, handle: Any, record: SpanRecord, content: Mapping[str, Any]) -> None:
        handle.set_attributes(_plain(record.attributes))
        if self.content:
            handle.set_attributes({k: v for k, v in content.items() if isinstance(v, str)})
        for event in record.events:
            handle.add_event(event.name, attributes=_plain(event.attributes), timestamp=self._ns(event.time))
        if record.error:
            from opentelemetry.trace import Status, StatusCode
            handle.set_status(Status(StatusCode.ERROR, record.error))
        handle.end(end_time=self._ns(record.end))


def _plain(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """Attribute values OpenTelemetry takes (str, bool, int, float, or a sequence of one of them)."""
    out: dict[str, Any] = {}
    for key, value in attributes.items():
        if isinstance(value, (str, bool, int, float)):
            out[key] = value
        elif isinstance(value, (tuple, list)) and all(isinstance(v, str) for v in value):
            out[key] = list(value)
        elif value is not None:
            out[key] = str(value)
    return out


def tracing_config() -> Mapping[str, Any]:
    """config.yaml's ``tracing:`` block (``{}`` when it says nothing); read again only when the file changes."""
    global _config_read
    from hermes_nb.tools import config

    path = config.config_file()
    try:
        st = os.stat(path)
    except OSError:
        return {}
    stamp = (path, config.generation, st.st_mtime_ns, st.st_size)
    cached = _config_read
    if cached is not None and cached[0] == stamp:
        return cached[1]
    block = config.load_config().get("tracing") or {}
    if not isinstance(block, dict):
        log.warning("config.yaml: tracing: should be a mapping (otlp_endpoint, capture_content); ignored")
        block = {}
    _config_read = (stamp, block)
    return block


def capture_content(cfg: Mapping[str, Any] | None = None) -> bool:
    """Whether prompts, arguments and results go on the spans (the person's opt-in; off by default)."""
    value = os.environ.get(CONTENT_VARIABLE, "").strip().lower()
    if value in ("true", "1", "yes", "span_only", "span_and_event"):
        return True
    cfg = tracing_config() if cfg is None else cfg
    return cfg.get("capture_content") is True


def _endpoint(cfg: Mapping[str, Any]) -> str:
    given = cfg.get("otlp_endpoint")
    if isinstance(given, str) and given.strip():
        return given.strip()
    values = [os.environ.get(name, "").strip() for name in _ENDPOINT_VARIABLES]
    if any(values):  # the exporter reads the standard variables itself; their values key its provider, so a
        return _FROM_ENV + " ".join(values)  # variable changed in the kernel is followed by the next run
    return ""


def sink(caller: Any = None) -> Sink | None:
    """The run's sink, or None (the common case, and cheap: no import, one dict look-up and a stat). ``caller``:
    the OpenTelemetry context the run was started in (``hermes_nb.traces.caller``), its root span's parent."""
    person = _persons_provider()
    cfg = tracing_config()
    endpoint = "" if person is not None else _endpoint(cfg)
    if person is None and not endpoint:
        return None
    provider = person if person is not None else _own_provider(endpoint)
    if provider is None:
        return None
    return Sink(provider.get_tracer(_SCOPE), capture_content(cfg), caller)


def _persons_provider() -> Any:
    if "opentelemetry.trace" not in sys.modules:  # nobody configured a provider without importing the API
        return None
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        return None
    return provider


def _own_provider(endpoint: str) -> Any:
    with _own_lock:
        if endpoint in _own:
            return _own[endpoint]
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError:
            if endpoint not in _hinted:
                _hinted.add(endpoint)
                print("hermes_nb: tracing is configured but its packages are missing: "
                      "pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-http", file=sys.stderr)
            return None
        exporter = OTLPSpanExporter() if endpoint.startswith(_FROM_ENV) else \
            OTLPSpanExporter(endpoint=_traces_url(endpoint))
        provider = TracerProvider(resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME",
                                                                                           "hermes_nb")}))
        provider.add_span_processor(BatchSpanProcessor(exporter))
        _own[endpoint] = provider
        return provider


def _traces_url(endpoint: str) -> str:
    """config.yaml names the collector (``http://host:4318``) as the standard variable does; the exporter's own
    argument is the full traces URL."""
    endpoint = endpoint.rstrip("/")
    return endpoint if endpoint.endswith("/v1/traces") else endpoint + "/v1/traces"


def flush(timeout_ms: int = 5000) -> None:
    """Send what hermes_nb's own providers hold (tests, and a notebook about to close)."""
    with _own_lock:
        providers = list(_own.values())
    for provider in providers:
        provider.force_flush(timeout_ms)
