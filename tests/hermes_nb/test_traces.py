"""Traces (issue 36): a run's spans by the OpenTelemetry GenAI conventions, checked through the SDK's in-memory
exporter, and the waterfall drawn from the same records (HTML and text)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from hermes_nb.agent.loop import Agent
from hermes_nb.tools.registry import registry
from hermes_nb.traces import otel
from tests.support.fake_openai import FakeOpenAI, Reply, call
from tests.support.routed_openai import RoutedOpenAI

OBJ = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


@pytest.fixture
def tools():
    """`meet`: two calls that must be in flight together (a barrier, no sleeps); `guarded`: asks first."""
    both = threading.Barrier(2, timeout=20)

    def meet(args: dict[str, Any], **kw: Any) -> str:
        both.wait()
        return f"met {args['n']}"

    registry.register("meet", "traced", {"description": "Meet the other call.", "parameters": OBJ}, meet,
                      read_only=True)
    registry.register("guarded", "traced", {"description": "Needs a yes.", "parameters": OBJ},
                      lambda a, **kw: "guarded ran", needs_approval=True)
    yield


@pytest.fixture
def exported(monkeypatch: pytest.MonkeyPatch):
    """The person's own provider (the SDK, an in-memory exporter), as ``trace.set_tracer_provider`` would make
    it; set here without making it global, so other tests in this process see no provider."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(otel, "_persons_provider", lambda: provider)
    monkeypatch.delenv(otel.CONTENT_VARIABLE, raising=False)
    yield exporter
    provider.shutdown()


def _route(prompt: str, turn: int, body: dict[str, Any]) -> Reply:
    if prompt == "go":
        script = [Reply(tool_calls=(call("meet", {"n": 1}, "m1"), call("meet", {"n": 2}, "m2"))),
                  Reply(tool_calls=(call("guarded", {"n": 3}, "g1"),)),
                  Reply(tool_calls=(call("delegate_task", {"tasks": [{"goal": "count"}]}, "d1"),)),
                  Reply(content="all done")]
        return script[turn]
    return Reply(content=f"{prompt}: 12")  # the sub-agent


def _run(**kw: Any) -> Any:
    answers: list[str] = []

    def approve(command: str, key: str, description: str) -> str:
        answers.append(command)
        return "once"

    with RoutedOpenAI(_route) as srv:
        agent = Agent(model="m", base_url=srv.base_url, enabled_toolsets=["traced", "delegation"], display=False,
                      stream=False, approval_callback=approve, **kw)
        result = agent.run("go")
    assert answers, "the guarded call asked"
    return result


def _by_name(spans: Any) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for s in spans:
        out.setdefault(s.name, []).append(s)
    return out


def test_a_run_exports_the_standard_span_tree(tools, exported) -> None:
    result = _run()
    spans = exported.get_finished_spans()
    named = _by_name(spans)
    (root,) = named["invoke_agent hermes_nb"]
    assert root.parent is None
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["gen_ai.agent.name"] == "hermes_nb"
    assert root.attributes["gen_ai.provider.name"] == "openai" and root.attributes["gen_ai.request.model"] == "m"
    conversation = root.attributes["gen_ai.conversation.id"]
    root_id = root.context.span_id
    chats = [s for s in named["chat m"] if s.parent.span_id == root_id]
    assert len(chats) == 4  # one per model turn of the parent
    assert all(c.kind.name == "CLIENT" and c.attributes["gen_ai.operation.name"] == "chat" for c in chats)
    assert all(c.attributes["gen_ai.usage.input_tokens"] == 10 and c.attributes["gen_ai.usage.output_tokens"] == 5
               for c in chats)
    assert all(c.attributes["gen_ai.conversation.id"] == conversation for c in chats)
    m1, m2 = named["execute_tool meet"]
    for span in (m1, m2):
        assert span.parent.span_id == root_id and span.kind.name == "INTERNAL"
        assert span.attributes["gen_ai.operation.name"] == "execute_tool"
        assert span.attributes["gen_ai.tool.name"] == "meet"
        assert span.attributes["gen_ai.tool.type"] == "function"
        assert span.attributes["gen_ai.tool.description"] == "Meet the other call."
        assert "error.type" not in span.attributes
    assert {m1.attributes["gen_ai.tool.call.id"], m2.attributes["gen_ai.tool.call.id"]} == {"m1", "m2"}
    assert m1.start_time < m2.end_time and m2.start_time < m1.end_time  # the parallel calls overlap
    (guarded,) = named["execute_tool guarded"]
    asked, answered = guarded.events
    assert (asked.name, answered.name) == ("approval.asked", "approval.answered")
    assert answered.attributes["hermes_nb.approval.choice"] == "once"
    assert answered.attributes["hermes_nb.approval.by"] == "approval_callback"
    assert answered.attributes["hermes_nb.approval.waited_s"] >= 0 and asked.timestamp <= answered.timestamp
    (delegate,) = named["execute_tool delegate_task"]
    (child,) = named["invoke_agent sub-agent 1: count"]
    assert child.parent.span_id == delegate.context.span_id  # the sub-agent nests under its delegate_task
    assert child.attributes["gen_ai.agent.name"] == "sub-agent 1: count"
    child_chats = [s for s in named["chat m"] if s.parent.span_id == child.context.span_id]
    assert len(child_chats) == 1
    assert len({s.context.trace_id for s in spans}) == 1  # one trace
    # the notebook's records are the same spans
    assert sorted(s.name for s in result.trace.spans) == sorted(s.name for s in spans)


def test_content_goes_on_spans_only_when_the_person_opts_in(tools, exported, monkeypatch) -> None:
    _run()
    plain = exported.get_finished_spans()
    assert not any(k in s.attributes for s in plain for k in ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result",
                                                               "gen_ai.output.messages"))
    exported.clear()
    monkeypatch.setenv(otel.CONTENT_VARIABLE, "SPAN_ONLY")
    _run()
    named = _by_name(exported.get_finished_spans())
    m1 = next(s for s in named["execute_tool meet"] if s.attributes["gen_ai.tool.call.id"] == "m1")
    assert json.loads(m1.attributes["gen_ai.tool.call.arguments"]) == {"n": 1}
    assert m1.attributes["gen_ai.tool.call.result"] == "met 1"
    last = json.loads(named["chat m"][-1].attributes["gen_ai.output.messages"])
    assert last[0]["role"] == "assistant"


@pytest.mark.parametrize("opt_in", ["variable", "config"])
def test_prompts_go_on_chat_spans_only_when_the_person_opts_in(tools, exported, monkeypatch, hermes_home,
                                                               opt_in: str) -> None:
    """Each ``chat`` span carries what that turn was sent (``gen_ai.input.messages``) and the system prompt
    (``gen_ai.system_instructions``) once content is captured, by the variable or by config.yaml; never before."""
    prompts = ("gen_ai.input.messages", "gen_ai.system_instructions")
    _run(system_prompt="Answer briefly.")
    plain = [s for s in exported.get_finished_spans() if s.name == "chat m"]
    assert plain and not any(k in s.attributes for s in plain for k in prompts)
    exported.clear()
    if opt_in == "variable":
        monkeypatch.setenv(otel.CONTENT_VARIABLE, "true")
    else:
        (hermes_home / "config.yaml").write_text("tracing:\n  capture_content: true\n")
    _run(system_prompt="Answer briefly.")
    named = _by_name(exported.get_finished_spans())
    (root,) = named["invoke_agent hermes_nb"]
    first, second, *_ = sorted((s for s in named["chat m"] if s.parent.span_id == root.context.span_id),
                               key=lambda s: s.start_time)
    system = [{"type": "text", "content": "Answer briefly."}]
    assert json.loads(first.attributes["gen_ai.system_instructions"]) == system
    assert json.loads(first.attributes["gen_ai.input.messages"]) == [
        {"role": "system", "parts": system}, {"role": "user", "parts": [{"type": "text", "content": "go"}]}]
    sent = json.loads(second.attributes["gen_ai.input.messages"])  # the turn after the parallel batch
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool"]
    calls = sent[2]["parts"]
    assert [(p["type"], p["id"], p["name"]) for p in calls] == [("tool_call", "m1", "meet"), ("tool_call", "m2", "meet")]
    assert json.loads(calls[0]["arguments"]) == {"n": 1}
    assert {"role": "tool", "parts": [{"type": "tool_call_response", "id": "m2", "response": "met 2"}]} in sent
    assert json.loads(second.attributes["gen_ai.output.messages"])[0]["parts"][0]["name"] == "guarded"


def test_chat_content_keeps_every_kind_of_message_part() -> None:
    """Content parts (an image beside text), a developer message, an empty assistant turn and a tool result as
    parts come out in the conventions' shape; what it has no part type for is kept as sent (a generic part)."""
    from hermes_nb.models import ModelTurn
    from hermes_nb.traces.messages import chat_content

    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    sent = [{"role": "developer", "content": [{"type": "text", "text": "Be exact."}]},
            {"role": "user", "content": [{"type": "text", "text": "What is this?"}, image]},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": "v1", "type": "function", "function": {"name": "look", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "v1", "content": [{"type": "text", "text": "a cat"}, image]}]
    content = chat_content(sent, ModelTurn(content="A cat.", finish_reason="stop"))
    assert json.loads(content["gen_ai.system_instructions"]) == [{"type": "text", "content": "Be exact."}]
    assert json.loads(content["gen_ai.input.messages"]) == [
        {"role": "developer", "parts": [{"type": "text", "content": "Be exact."}]},
        {"role": "user", "parts": [{"type": "text", "content": "What is this?"}, image]},
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "v1", "name": "look", "arguments": "{}"}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "v1", "response": "a cat"}]}]
    assert json.loads(content["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "A cat."}], "finish_reason": "stop"}]
    assert "gen_ai.system_instructions" not in chat_content(sent[1:], ModelTurn(content="x"))  # no system prompt


@pytest.mark.parametrize(("value", "expected", "reason"), [
    ("true", True, "the boolean form"),
    ("SPAN_ONLY", True, "gen_ai_latest_experimental's span value"),
    ("span_and_event", True, "any case"),
    ("EVENT_ONLY", False, "events only: nothing on spans"),
    ("NO_CONTENT", False, "the explicit no"),
    ("false", False, "the boolean no"),
    ("", False, "unset is off"),
    ("yes please", False, "an unknown word is off (fail closed)"),
])
def test_the_content_variable(value: str, expected: bool, reason: str, monkeypatch) -> None:
    monkeypatch.setenv(otel.CONTENT_VARIABLE, value)
    assert otel.capture_content({}) is expected, reason


def test_config_content_key_opts_in(monkeypatch) -> None:
    monkeypatch.delenv(otel.CONTENT_VARIABLE, raising=False)
    assert otel.capture_content({"capture_content": True}) is True
    assert otel.capture_content({"capture_content": "yes"}) is False  # only a real true


def test_a_failed_call_carries_error_type(exported) -> None:
    def boom(args: dict[str, Any], **kw: Any) -> str:
        raise RuntimeError("no")

    registry.register("boom", "traced_err", {"description": "Fails.", "parameters": OBJ}, boom)
    script = [Reply(tool_calls=(call("boom", {"n": 1}, "b1"),)), Reply(content="ok")]
    with FakeOpenAI(script) as srv:
        Agent(model="m", base_url=srv.base_url, enabled_toolsets=["traced_err"], display=False).run("go")
    (span,) = _by_name(exported.get_finished_spans())["execute_tool boom"]
    assert span.attributes["error.type"] == "tool_error" and span.status.status_code.name == "ERROR"


def test_waterfall_draws_overlap_and_the_approval_wait(tools) -> None:
    result = _run()
    text = str(result.trace)
    lines = text.splitlines()
    assert lines[0].startswith("trace: 5 model turns, 4 tool calls, 1 sub-agent")
    meets = [line for line in lines if line.lstrip().startswith("execute_tool meet")]
    assert len(meets) == 2 and all("parallel" in line for line in meets)
    bars = [line[line.index("│") + 1:line.rindex("│")] for line in meets]
    cells = [{i for i, ch in enumerate(bar) if ch != " "} for bar in bars]
    assert cells[0] & cells[1], "the parallel calls' bars share columns"
    guarded = next(line for line in lines if line.lstrip().startswith("execute_tool guarded"))
    assert "approval once after" in guarded
    child = next(line for line in lines if "invoke_agent sub-agent 1" in line)
    assert child.startswith("    "), "the sub-agent is indented under its delegate_task"
    assert lines[-1].startswith("legend:")
    html = result.trace._repr_mimebundle_()["text/html"]
    assert html.count('data-kind="chat"') == 5 and html.count('data-kind="tool"') == 4
    assert "var(--jp-brand-color1" in html and "repeating-linear-gradient" in html  # theme colours, a shaded wait
    assert "background:#3f51b5;background:var(--jp-brand-color1" in html  # a plain colour an untrusted page keeps


def test_percent_trace_draws_the_last_run(tools) -> None:
    from hermes_nb.traces import last_trace

    result = _run()
    assert last_trace() is result.trace


def test_no_provider_no_opentelemetry_import() -> None:
    """With nothing configured a run imports no OpenTelemetry module and makes no sink."""
    code = ("import os, sys\n"
            "for k in [k for k in os.environ if k.startswith('OTEL_')]: del os.environ[k]\n"
            "from hermes_nb.agent.loop import Agent\n"
            "from tests.support.fake_openai import FakeOpenAI, Reply\n"
            "with FakeOpenAI([Reply(content='hi')]) as srv:\n"
            "    r = Agent(model='m', base_url=srv.base_url, display=False).run('go')\n"
            "assert len(r.trace) == 2, r.trace\n"
            "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True,
                         env={**_clean_env(), "HERMES_NB_HOME": _tmp_home()})
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_the_persons_global_provider_is_found() -> None:
    """``trace.set_tracer_provider`` (the usual way) is enough; a proxy default is not a provider."""
    code = ("from hermes_nb.traces import otel\n"
            "assert otel.sink() is None\n"
            "from opentelemetry import trace\n"
            "assert otel.sink() is None  # imported, but the API's proxy default\n"
            "from opentelemetry.sdk.trace import TracerProvider\n"
            "from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n"
            "from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter\n"
            "exp = InMemorySpanExporter(); p = TracerProvider(); p.add_span_processor(SimpleSpanProcessor(exp))\n"
            "trace.set_tracer_provider(p)\n"
            "from hermes_nb.agent.loop import Agent\n"
            "from tests.support.fake_openai import FakeOpenAI, Reply\n"
            "with FakeOpenAI([Reply(content='hi')]) as srv:\n"
            "    Agent(model='m', base_url=srv.base_url, display=False).run('go')\n"
            "print(sorted(s.name for s in exp.get_finished_spans()))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True,
                         env={**_clean_env(), "HERMES_NB_HOME": _tmp_home()})
    assert out.stdout.strip() == "['chat m', 'invoke_agent hermes_nb']", out.stdout + out.stderr


def _clean_env() -> dict[str, str]:
    import os
    return {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}


def _tmp_home() -> str:
    import tempfile
    return tempfile.mkdtemp(prefix="hermes-nb-traces-")


def test_percent_trace_magic(ip: Any, tools, capsys) -> None:
    from IPython.core.error import UsageError

    from hermes_nb.traces import runs

    runs._last.clear()
    with pytest.raises(UsageError, match="no agent run yet"):
        ip.run_line_magic("trace", "")
    result = _run()
    assert ip.run_line_magic("trace", "") is result.trace
    assert ip.run_line_magic("trace", "--text") is None
    assert capsys.readouterr().out.startswith("trace: 5 model turns")
    with pytest.raises(UsageError, match="%trace"):
        ip.run_line_magic("trace", "--nope")


def test_evaluate_tags_each_cases_run(exported, tmp_path) -> None:
    """Concurrent cases replay one script (the same call ids): each case's spans still carry its own id, and
    every span of a case's run, tool calls included, is under that case's invoke_agent."""
    import hermes_nb

    def add(a: int, b: int) -> int:
        """Adds two numbers."""
        return a + b

    from hermes_nb.tools.schema.derive import tool

    tool(add, toolset="traced_eval")

    def route(prompt: str, turn: int, body: dict[str, Any]) -> Reply:
        return Reply(tool_calls=(call("add", {"a": 1, "b": 2}, "c0"),)) if turn == 0 else Reply(content="3")

    cases = [{"prompt": f"add {i}", "expected_tools": ["add"], "name": f"case-{i}"} for i in range(4)]
    with RoutedOpenAI(route) as srv:
        hermes_nb.evaluate(cases, agent={"model": "m", "base_url": srv.base_url, "enabled_toolsets": ["traced_eval"],
                                         "stream": False}, concurrency=4, display=False, out_dir=tmp_path / "nightly")
    spans = exported.get_finished_spans()
    roots = [s for s in spans if s.name.startswith("invoke_agent")]
    assert sorted(r.attributes["hermes_nb.eval.case_id"] for r in roots) == [f"case-{i}" for i in range(4)]
    assert {r.attributes["hermes_nb.eval.name"] for r in roots} == {"nightly"}
    by_trace = {r.context.trace_id: r.attributes["hermes_nb.eval.case_id"] for r in roots}
    assert len(by_trace) == 4  # one trace per case
    tools_ = [s for s in spans if s.name == "execute_tool add"]
    assert len(tools_) == 4 and {by_trace[s.context.trace_id] for s in tools_} == set(by_trace.values())


class _Receiver:
    """What a real OTLP/HTTP receiver got: each request's path and body, decoded with OpenTelemetry's own
    message types."""

    def __init__(self) -> None:
        self.got: list[tuple[str, Any]] = []
        self.url = ""
        self._arrived = threading.Condition()

    def take(self, path: str, request: Any) -> None:
        with self._arrived:
            self.got.append((path, request))
            self._arrived.notify_all()

    def spans(self) -> list[Any]:
        with self._arrived:
            return [s for _, r in self.got for rs in r.resource_spans for scope in rs.scope_spans for s in scope.spans]

    def wait_for(self, count: int, timeout: float = 30) -> bool:
        """Whether ``count`` spans arrived within ``timeout`` seconds (no sleeps: woken by each request)."""
        with self._arrived:
            return self._arrived.wait_for(lambda: len(self.spans()) >= count, timeout)


@contextlib.contextmanager
def _otlp_receiver() -> Iterator[_Receiver]:
    """A local HTTP server on 127.0.0.1 taking OTLP/HTTP protobuf exports; its ``url`` names it as a collector."""
    import http.server

    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    receiver = _Receiver()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.end_headers()
            receiver.take(self.path, request)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_port}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def own_exporter(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No provider of the person's and no standard variable set: hermes_nb builds its own provider (kept apart
    from other tests', and shut down after)."""
    for name in (*otel._ENDPOINT_VARIABLES, otel.CONTENT_VARIABLE):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(otel, "_persons_provider", lambda: None)
    built: dict[str, Any] = {}
    monkeypatch.setattr(otel, "_own", built)
    yield
    for provider in built.values():
        provider.shutdown()


def _run_once() -> None:
    with FakeOpenAI([Reply(content="hi")]) as srv:
        Agent(model="m", base_url=srv.base_url, display=False).run("go")


def _one_run_arrived(receiver: _Receiver) -> None:
    """The run's two spans, as a collector sees them: the service, the tree, the standard attributes."""
    assert receiver.wait_for(2), receiver.got
    for _, request in receiver.got:
        (resource,) = request.resource_spans
        assert any(a.key == "service.name" and a.value.string_value == "hermes_nb"
                   for a in resource.resource.attributes)
    names = {s.name: s for s in receiver.spans()}
    assert set(names) == {"invoke_agent hermes_nb", "chat m"}
    assert names["chat m"].parent_span_id == names["invoke_agent hermes_nb"].span_id
    attrs = {a.key: a.value for a in names["chat m"].attributes}
    assert attrs["gen_ai.request.model"].string_value == "m" and attrs["gen_ai.usage.input_tokens"].int_value == 10


@pytest.mark.slow
def test_evaluate_on_dask_tags_each_cases_run_with_the_evaluations_name(tmp_path) -> None:
    """With ``executor=`` the cases run in Dask worker processes (a real ``LocalCluster``, as
    test_evaluation_dask's), which export through the standard variable: each case's run carries its id, its index
    and the evaluation's name, as a local evaluation's do."""
    from distributed import Client, LocalCluster

    import hermes_nb

    def route(prompt: str, turn: int, body: dict[str, Any]) -> Reply:
        return Reply(content="hello")

    cases = [{"prompt": f"hi {i}", "expected_tools": [], "name": f"case-{i}"} for i in range(2)]
    with _otlp_receiver() as receiver, RoutedOpenAI(route) as srv:
        cluster = LocalCluster(n_workers=1, threads_per_worker=2, processes=True, dashboard_address=None,
                               silence_logs=50, env={"HERMES_NB_HOME": str(tmp_path / "home"),
                                                     "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{receiver.url}/v1/traces"})
        with cluster, Client(cluster) as client:
            result = hermes_nb.evaluate(cases, agent={"model": "m", "base_url": srv.base_url, "enabled_toolsets": [],
                                                      "stream": False}, executor=client, display=False,
                                        out_dir=tmp_path / "nightly")
            client.run(otel.flush)  # the workers' spans, sent now
        assert receiver.wait_for(4), receiver.got  # each case: its run and one model turn
    assert result.summary["errors"] == 0, [r.error for r in result.rows]
    roots = [{a.key: a.value for a in s.attributes} for s in receiver.spans() if s.name == "invoke_agent hermes_nb"]
    assert sorted((r["hermes_nb.eval.case_id"].string_value, r["hermes_nb.eval.case_index"].int_value)
                  for r in roots) == [("case-0", 0), ("case-1", 1)]
    assert [r["hermes_nb.eval.name"].string_value for r in roots] == ["nightly", "nightly"]


def test_config_endpoint_exports_over_otlp_http(tmp_path, monkeypatch, own_exporter) -> None:
    """``tracing: {otlp_endpoint: ...}`` in config.yaml: the spans reach a real OTLP/HTTP receiver."""
    with _otlp_receiver() as receiver:
        (tmp_path / "config.yaml").write_text(f"tracing:\n  otlp_endpoint: {receiver.url}\n")
        monkeypatch.setenv("HERMES_NB_HOME", str(tmp_path))
        _run_once()
        otel.flush()
        _one_run_arrived(receiver)
    assert {path for path, _ in receiver.got} == {"/v1/traces"}


@pytest.mark.parametrize(("variable", "path", "reason"), [
    ("OTEL_EXPORTER_OTLP_ENDPOINT", "", "the collector: the exporter adds /v1/traces"),
    ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "/collector/spans", "the traces URL, taken as it is"),
])
def test_the_standard_variables_export_over_otlp_http(variable: str, path: str, reason: str, monkeypatch,
                                                      own_exporter) -> None:
    """The third way on: no config.yaml, no provider of the person's, only the standard variable."""
    with _otlp_receiver() as receiver:
        monkeypatch.setenv(variable, receiver.url + path)
        _run_once()
        otel.flush()
        _one_run_arrived(receiver)
    assert {p for p, _ in receiver.got} == {path or "/v1/traces"}, reason


def test_a_variable_changed_in_the_kernel_is_followed_by_the_next_run(monkeypatch, own_exporter) -> None:
    """Each run reads the variables again: after ``os.environ[...] = ...`` the next run goes to the new collector
    (the provider built for the old one was kept and used before)."""
    with _otlp_receiver() as before, _otlp_receiver() as after:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", before.url)
        _run_once()
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", after.url)
        _run_once()
        otel.flush()
        _one_run_arrived(before)
        _one_run_arrived(after)


def test_a_missing_exporter_is_one_line_once(monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)  # not installed
    endpoint = "http://127.0.0.1:9/nothing-listens"
    assert otel._own_provider(endpoint) is None
    assert otel._own_provider(endpoint) is None
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["hermes_nb: tracing is configured but its packages are missing: "
                   "pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-http"]


TIME_SERVER = str(__import__("pathlib").Path(sys.executable).parent / "mcp-server-time")


def test_an_mcp_request_is_a_child_of_its_calls_span(exported) -> None:
    import os

    from hermes_nb.tools.mcp_tool import discover_mcp_tools, shutdown_mcp_servers

    if not os.path.exists(TIME_SERVER):
        pytest.skip(f"{TIME_SERVER} is not installed")
    try:
        discover_mcp_tools({"mcp_servers": {"time": {"command": TIME_SERVER}}})
        script = [Reply(tool_calls=(call("mcp__time__get_current_time", {"timezone": "UTC"}, "t1"),)),
                  Reply(content="now")]
        with FakeOpenAI(script) as srv:
            Agent(model="m", base_url=srv.base_url, enabled_toolsets=["mcp-time"], display=False).run("time?")
    finally:
        shutdown_mcp_servers()
    named = _by_name(exported.get_finished_spans())
    (tool_span,) = named["execute_tool mcp__time__get_current_time"]
    (request,) = named["tools/call get_current_time"]
    assert request.parent.span_id == tool_span.context.span_id and request.kind.name == "CLIENT"
    assert tool_span.attributes["gen_ai.tool.type"] == "extension"  # an MCP server's tool runs elsewhere
    assert request.attributes["mcp.method.name"] == "tools/call"
    assert request.attributes["hermes_nb.mcp.server"] == "time"
    assert tool_span.start_time <= request.start_time <= request.end_time <= tool_span.end_time


def _sandboxed_echo(tmp_path, monkeypatch) -> Any:
    """A run whose one call is a sandboxed ``echo hi`` in ``tmp_path`` (skipped where there is no sandbox)."""
    from hermes_nb.tools.model_tools import ensure_discovered
    from hermes_nb.tools.safety.sandbox import box as sandbox

    if not sandbox.status().available:
        pytest.skip("no sandbox on this machine")
    ensure_discovered()
    monkeypatch.chdir(tmp_path)
    script = [Reply(tool_calls=(call("terminal", {"command": "echo hi"}, "s1"),)), Reply(content="ok")]
    with FakeOpenAI(script) as srv:
        return Agent(model="m", base_url=srv.base_url, enabled_toolsets=["terminal"], display=False,
                     approval_callback=lambda *a: "once").run("say hi")


def test_a_sandboxed_command_is_a_child_of_its_calls_span(exported, tmp_path, monkeypatch) -> None:
    _sandboxed_echo(tmp_path, monkeypatch)
    named = _by_name(exported.get_finished_spans())
    (tool_span,) = named["execute_tool terminal"]
    (command,) = named["sandbox bash"]
    assert command.parent.span_id == tool_span.context.span_id
    assert "error.type" not in command.attributes


def test_a_run_nests_under_the_persons_open_span(exported) -> None:
    """``with tracer.start_as_current_span(...)`` around ``agent.run``: the run's root is that span's child, though
    the run's core works on another thread."""
    provider = otel._persons_provider()
    tracer = provider.get_tracer("experiment")
    with FakeOpenAI([Reply(content="hi")]) as srv, tracer.start_as_current_span("my experiment") as outer:
        Agent(model="m", base_url=srv.base_url, display=False).run("go")
    named = _by_name(exported.get_finished_spans())
    (root,) = named["invoke_agent hermes_nb"]
    assert root.parent is not None and root.parent.span_id == outer.get_span_context().span_id
    assert root.context.trace_id == outer.get_span_context().trace_id


def test_a_run_that_raises_ends_its_spans_failed(exported) -> None:
    """An exception on its way out of a run (not a model error the run answers) still ends every span, the run's
    marked with the exception's class."""

    class Broken:
        name = "broken"

        async def complete(self, *args: Any, **kwargs: Any) -> Any:
            raise LookupError("the seam broke")

    with pytest.raises(LookupError):
        Agent(model=Broken(), display=False).run("go")  # type: ignore[arg-type]
    named = _by_name(exported.get_finished_spans())
    (root,) = named["invoke_agent hermes_nb"]
    (turn,) = named["chat broken"]
    assert root.attributes["error.type"] == "LookupError" and root.status.status_code.name == "ERROR"
    assert turn.attributes["error.type"] == "model_error" and turn.parent.span_id == root.context.span_id


def test_an_interrupted_run_ends_every_span(exported) -> None:
    """■ while a call runs: the call's span and the run's end as interrupted, none left open."""
    import _thread

    from tests.support.interrupts import interrupts_land

    started, release = threading.Event(), threading.Event()

    def hang(args: dict[str, Any], **kw: Any) -> str:
        started.set()
        release.wait(60)
        return "late"

    registry.register("hang", "traced_stop", {"description": "Waits.", "parameters": OBJ}, hang, read_only=True)
    script = [Reply(tool_calls=(call("hang", {"n": 1}, "h1"),)), Reply(content="never")]
    try:
        with FakeOpenAI(script) as srv:
            timer = threading.Thread(target=lambda: (started.wait(240), _thread.interrupt_main()))
            with interrupts_land():
                timer.start()
                result = Agent(model="m", base_url=srv.base_url, enabled_toolsets=["traced_stop"],
                               display=False).run("go")
                timer.join()
    finally:
        release.set()
    assert result.stopped_reason == "interrupted"
    named = _by_name(exported.get_finished_spans())
    (call_span,) = named["execute_tool hang"]
    (root,) = named["invoke_agent hermes_nb"]
    assert call_span.attributes["error.type"] == "interrupted" and root.attributes["error.type"] == "interrupted"
    assert len(result.trace) == len(exported.get_finished_spans()) == 3  # run, one turn, one call: all ended


def _shape(trace: Any) -> list[tuple[Any, ...]]:
    """A trace's tree without its times and ids: each span's name, its parent's name, its standard attributes and
    its events' names (what the waterfall and an exporter read)."""
    by_id = {s.id: s for s in trace.spans}
    skip = {"gen_ai.conversation.id", "gen_ai.tool.description", "hermes_nb.approval.waited_s"}
    return sorted((s.name, by_id[s.parent].name if s.parent in by_id else None, s.kind, s.error,
                   tuple(sorted((k, str(v)) for k, v in s.attributes.items() if k not in skip)),
                   tuple((e.name, tuple(sorted((k, v) for k, v in e.attributes.items() if k not in skip)))
                         for e in s.events))
                  for s in trace.spans)


def test_no_provider_keeps_events_and_makes_the_same_spans_when_read(tools, monkeypatch) -> None:
    """Without an exporter a run makes no span while it goes (bench/bench_traces.py: its cost per call); the
    spans made on first read are the ones an exported run records, tree, attributes and approval events alike."""
    from hermes_nb.traces import recorder

    made: list[Any] = []
    opened = recorder._Open.__init__

    def counting(self: Any, *args: Any, **kw: Any) -> None:
        made.append(args[1])
        opened(self, *args, **kw)

    monkeypatch.setattr(recorder._Open, "__init__", counting)
    lazy = _run()
    assert made == [] and lazy.trace._spans is None, "no span is made before the trace is read"
    lazy_shape = _shape(lazy.trace)
    assert len(made) == len(lazy.trace.spans) == 11
    monkeypatch.undo()
    from opentelemetry.sdk.trace import TracerProvider

    monkeypatch.setattr(otel, "_persons_provider", lambda: TracerProvider())
    assert _shape(_run().trace) == lazy_shape


def test_without_a_provider_a_sandboxed_command_is_still_a_child_of_its_call(tmp_path, monkeypatch) -> None:
    result = _sandboxed_echo(tmp_path, monkeypatch)
    (tool_span,) = result.trace.named("execute_tool terminal")
    (command,) = result.trace.named("sandbox bash")
    assert command.parent == tool_span.id and tool_span.start <= command.start <= command.end <= tool_span.end
