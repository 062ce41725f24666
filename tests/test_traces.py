"""OpenTelemetry traces of sessions: the tree, the waits for people, parking, secrets, export.

The spans go through the real SDK pipeline (a batch processor) into
OpenTelemetry's in-memory exporter; a real receiver is in test_traces_phoenix.py.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from trace_support import QUERY, parked_then_resumed
from typer.testing import CliRunner

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

from opentelemetry.sdk.trace import ReadableSpan  # noqa: E402
from opentelemetry.sdk.trace.export import SpanExportResult  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

from aah.cli import app  # noqa: E402
from aah.clock import FakeClock  # noqa: E402
from aah.events import HumanAnswerEvent, ToolCallEvent  # noqa: E402
from aah.store import SessionStore  # noqa: E402
from aah.telemetry import (  # noqa: E402
    DroppingExporter,
    SessionFacts,
    SpanRecord,
    flush_traces,
    session_spans,
    trace_id_of,
    use_span_exporter,
)

pytestmark = pytest.mark.usefixtures("allow_private_tool_hosts")
HELD_KEY = "heldvalue-Zq81-Lm44-Xo09"


@pytest.fixture
def exported(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """Traces on, into an in-memory exporter."""
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AAH_OTEL", "1")
    memory = InMemorySpanExporter()
    use_span_exporter(memory)
    yield memory
    use_span_exporter(None)


def _by_name(spans: list[ReadableSpan]) -> dict[str, list[ReadableSpan]]:
    found: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        found.setdefault(span.name, []).append(span)
    return found


def _attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


async def test_a_parked_session_is_one_trace_of_linked_parts_with_its_waits(
    tmp_path: Path, exported: InMemorySpanExporter
) -> None:
    traced = await parked_then_resumed(tmp_path, run="r1")
    assert traced.outcome.status == "finished"
    spans = list(exported.get_finished_spans())
    named = _by_name(spans)
    # Three parts of the agent's work: before the question, before the approval, after it.
    parts = sorted(named["invoke_agent aah"], key=lambda s: s.start_time or 0)
    assert [_attrs(p)["aah.part.ended"] for p in parts] == ["waiting", "waiting", "final_answer"]
    assert len({s.context.trace_id for s in spans}) == 1  # one trace, though two runtimes ran it
    assert [[link.context.span_id for link in p.links] for p in parts] == [
        [],
        [parts[0].context.span_id],
        [parts[1].context.span_id],
    ]
    ids = {s.context.span_id: s for s in spans}
    assert all(s.parent is None or s.parent.span_id in ids for s in spans)  # no dangling parent
    # The wait for a person hangs under the part that asked, from question to answer.
    (wait,) = named["ask_human"]
    assert wait.parent is not None and wait.parent.span_id == parts[0].context.span_id
    assert _attrs(wait)["aah.human.answered_by"] == "person"  # no name without consent
    assert _attrs(wait)["aah.human.fallback_used"] is False
    assert _attrs(wait)["aah.human.channel"] == "queue"
    assert "aah.human.deadline" in _attrs(wait)
    question_ts = next(e.ts for e in traced.events if e.kind == "human_question")
    answer = next(e for e in traced.events if isinstance(e, HumanAnswerEvent))
    assert (wait.start_time, wait.end_time) == (_nanos(question_ts), _nanos(answer.ts))
    # The approval nobody decided: the deadline's fallback rejected it.
    (approval,) = named["approval local__book"]
    assert _attrs(approval)["aah.approval.decision"] == "reject"
    assert _attrs(approval)["aah.approval.outcome"] == "timed_out"
    assert _attrs(approval)["aah.human.fallback_used"] is True
    assert approval.parent is not None and approval.parent.span_id == parts[1].context.span_id
    # The failing tool: its status, and an error.
    (broken,) = named["execute_tool local__broken"]
    assert _attrs(broken)["http.response.status_code"] == 500
    assert _attrs(broken)["gen_ai.tool.name"] == "local__broken"
    assert _attrs(broken)["error.type"] == "500"
    assert broken.status.status_code.name == "ERROR"
    assert broken.parent is not None and broken.parent.span_id == parts[1].context.span_id
    # Model calls: GenAI attributes, the server's address, tokens.
    chat = named["chat fake-model"][0]
    assert _attrs(chat)["gen_ai.operation.name"] == "chat"
    assert _attrs(chat)["gen_ai.request.model"] == "fake-model"
    assert _attrs(chat)["server.address"] == "127.0.0.1"
    assert "gen_ai.usage.input_tokens" in _attrs(chat)
    assert {"awareness information", "awareness tool"} <= set(named)
    # A batch run's ids on every span; no content without the switch.
    assert all(_attrs(s)["aah.run_id"] == "r1" for s in spans)
    assert all(_attrs(s)["aah.session_id"] == traced.outcome.session_id for s in spans)
    assert all(_attrs(s)["aah.task_id"] == "t1" for s in spans)
    assert not any(QUERY in str(v) for s in spans for v in _attrs(s).values())
    # The trace id is the one the store's records give, in any process.
    with SessionStore(traced.db) as store:
        session = store.get_session(traced.outcome.session_id)
        assert session is not None
        trace = trace_id_of(session, store.get_run("r1"))
    assert f"{spans[0].context.trace_id:032x}" == trace


def _nanos(moment: datetime) -> int:
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1) * 1000


async def test_content_is_exported_only_when_asked_and_never_a_held_key(
    tmp_path: Path, exported: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AAH_HELD_API_KEY", HELD_KEY)
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    monkeypatch.setenv("AAH_OTEL_PERSON_NAMES", "true")
    traced = await parked_then_resumed(
        tmp_path, answer=f"Oslo, and my key is {HELD_KEY}", query=f"{QUERY} Key: {HELD_KEY}"
    )
    spans = list(exported.get_finished_spans())
    texts = json.dumps([_attrs(s) for s in spans], default=str)
    assert HELD_KEY not in texts
    assert "Book two rooms in my city." in texts  # the query, scrubbed
    (wait,) = _by_name(spans)["ask_human"]
    assert _attrs(wait)["aah.human.answered_by"] == "ann"  # the operator allowed names
    assert _attrs(wait)["aah.human.answer"].startswith("Oslo, and my key is [redacted]")
    assert traced.outcome.status == "finished"


def test_the_span_builder_scrubs_what_it_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    # Events held in memory (not read back from the store, which scrubs too).
    monkeypatch.setenv("AAH_HELD_API_KEY", HELD_KEY)
    from aah.store import SessionRecord

    now = datetime.now(UTC)
    record = SessionRecord(
        id="s1", run=None, task_id=None, setting=None, query=f"q {HELD_KEY}", status="running",
        aah=True, model="m", thread_id="s1", started=now, ended=None, final_answer=None,
        info_awareness=None, tool_awareness=None, n_events=0, n_model_calls=0, n_tool_calls=0,
        n_tool_errors=0, n_human_questions=0, prompt_tokens=0, completion_tokens=0,
    )  # fmt: skip
    call = ToolCallEvent(
        session_id="s1", seq=1, call_id="c1", tool="t__e", arguments={"q": HELD_KEY},
        ok=False, status_code=None, feedback=f"bad {HELD_KEY}", result=HELD_KEY, ts=now,
    )  # fmt: skip
    from aah.events import ErrorEvent

    error = ErrorEvent(session_id="s1", seq=2, message=f"failed: {HELD_KEY}", ts=now)
    facts = SessionFacts(record=record, trace_id="ab" * 16, content=True)
    spans = session_spans(facts, [call, error])
    assert spans and HELD_KEY not in repr(spans)


async def test_sessions_export_writes_the_live_spans_as_otlp_json(
    tmp_path: Path, exported: InMemorySpanExporter
) -> None:
    traced = await parked_then_resumed(tmp_path)
    live = {f"{s.context.span_id:016x}": s.name for s in exported.get_finished_spans()}
    out = tmp_path / "spans.json"
    result = CliRunner().invoke(
        app, ["sessions", "export", "--otlp", str(out), "--db", str(traced.db)]
    )
    assert result.exit_code == 0, result.output
    body = json.loads(out.read_text(encoding="utf-8"))
    (resource,) = body["resourceSpans"]
    written = resource["scopeSpans"][0]["spans"]
    assert {s["spanId"]: s["name"] for s in written} == live
    kinds = {s["name"]: s for s in written}
    assert kinds["execute_tool local__broken"]["status"]["code"] == 2
    values = {a["key"]: a["value"] for a in kinds["execute_tool local__broken"]["attributes"]}
    assert values["http.response.status_code"] == {"intValue": "500"}
    assert any(s.get("links") for s in written)


async def test_sessions_show_prints_the_trace_id_and_its_link(
    tmp_path: Path, exported: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    traced = await parked_then_resumed(tmp_path)
    trace = f"{next(iter(exported.get_finished_spans())).context.trace_id:032x}"
    monkeypatch.setenv("AAH_TRACE_URL", "http://127.0.0.1:6006/traces/{trace_id}")
    result = CliRunner().invoke(
        app, ["sessions", "show", traced.outcome.session_id, "--db", str(traced.db)]
    )
    assert result.exit_code == 0, result.output
    assert f"trace: {trace}\n" in result.output
    assert f"trace link: http://127.0.0.1:6006/traces/{trace}" in result.output.replace("\n", "")


class _Refusing:
    """An exporter whose receiver is down."""

    def __init__(self) -> None:
        self.calls = 0

    def export(self, spans: Any) -> SpanExportResult:
        self.calls += 1
        raise ConnectionError("connection refused")

    def shutdown(self) -> None:
        pass


def test_a_receiver_down_is_said_once_then_spans_are_dropped_without_trying(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    refusing = _Refusing()
    exporter = DroppingExporter(refusing, clock=clock.monotonic)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="aah.telemetry"):
        results = [exporter.export([]) for _ in range(3)]
        clock.advance(31)
        results.append(exporter.export([]))
    assert results == [SpanExportResult.FAILURE] * 4
    assert refusing.calls == 2  # the first try, and one more once the pause is over
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("aah.telemetry")]
    assert len(lines) == 1 and "OTEL_EXPORTER_OTLP_ENDPOINT" in lines[0]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_an_unreachable_endpoint_never_fails_a_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    use_span_exporter(None)  # the real OTLP/HTTP exporter
    with caplog.at_level(logging.WARNING):
        traced = await parked_then_resumed(tmp_path)
    assert traced.outcome.status == "finished"
    said = [r.getMessage() for r in caplog.records if "traces:" in r.getMessage()]
    assert len(said) == 1, said
    noise = [r for r in caplog.records if r.name.startswith("opentelemetry")]
    assert noise == []


# What aah would load to export: its exporter module, the SDK's batch processor, OTLP.
# (langsmith, under LangGraph, imports the SDK's TracerProvider by itself when the
# SDK is installed: that is not aah's doing, and exports nothing.)
AAH_EXPORT_MODULES = (
    "aah.telemetry.live",
    "opentelemetry.sdk.trace.export",
    "opentelemetry.exporter",
)


def exporting_modules(loaded: list[str]) -> list[str]:
    """The modules of ``loaded`` that only exporting traces loads."""
    return [m for m in loaded if m.startswith(AAH_EXPORT_MODULES)]


def test_without_an_exporter_aah_loads_nothing_that_exports() -> None:
    # The whole way of a run: the package, the command table, the runtime and the batch runner.
    code = (
        "import sys, aah, aah.cli, aah.runtime.environment, aah.benchmark.batch, aah.telemetry\n"
        "from aah.telemetry import export_wanted\n"
        "assert not export_wanted()\n"
        "print(*sorted(sys.modules), sep='\\n')"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "AAH_OTEL"))}
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert exporting_modules(result.stdout.split()) == []


def test_an_endpoint_without_the_extra_is_one_line_saying_what_to_install() -> None:
    # The extra absent: no module of OpenTelemetry can be imported.
    code = (
        "import sys\n"
        "class NoOtel:\n"
        "    def find_spec(self, name, *args):\n"
        "        if name.split('.')[0] == 'opentelemetry':\n"
        "            raise ImportError(name)\n"
        "sys.meta_path.insert(0, NoOtel())\n"
        "from aah.errors import AahError\n"
        "from aah.telemetry import require_otel_sdk\n"
        "try:\n"
        "    require_otel_sdk()\n"
        "except AahError as exc:\n"
        "    print(exc)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "AAH_OTEL"))}
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://127.0.0.1:4318"
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    (line,) = result.stdout.splitlines()
    assert "OTEL_EXPORTER_OTLP_ENDPOINT is set" in line and "pip install 'aah[otel]'" in line


class _OtlpReceiver(BaseHTTPRequestHandler):
    """OTLP/HTTP on 127.0.0.1: every span name it is sent, in ``names``."""

    names: list[str] = []
    spans: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802 - the handler's name
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                _OtlpReceiver.names += [span.name for span in scope.spans]
                _OtlpReceiver.spans += [
                    {
                        "name": span.name,
                        "trace": span.trace_id.hex(),
                        "id": span.span_id.hex(),
                        "parent": span.parent_span_id.hex(),
                        "session": next(
                            (a.value.string_value for a in span.attributes
                             if a.key == "aah.session_id"),
                            None,
                        ),
                    }
                    for span in scope.spans
                ]  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def _span(name: str) -> SpanRecord:
    now = datetime.now(UTC)
    return SpanRecord(name=name, trace_id="ab" * 16, span_id="cd" * 8, parent_id=None,
                      start=now, end=now)  # fmt: skip


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_worker_exports_through_its_own_processor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _OtlpReceiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _OtlpReceiver.names = []
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{server.server_port}")
    try:
        sink = use_span_exporter(None)
        sink.send([_span("parent")])  # the parent's processor (and its thread) exist now
        sink.flush()
        pid = os.fork()
        if pid == 0:  # the worker: the parent's processor thread did not come along
            code = 1
            try:
                sink.send([_span("worker")])
                sink.flush()
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        server.shutdown()
        server.server_close()
        use_span_exporter(None)
    assert sorted(_OtlpReceiver.names) == ["parent", "worker"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_run_in_two_worker_processes_is_one_trace_under_its_run_span(
    monkeypatch: pytest.MonkeyPatch, shared_data: Path, tmp_path: Path
) -> None:
    # The parent opens the run's span before forking; each worker's sessions
    # hang under it, and each worker flushes what it holds before it leaves.
    from runtime_support import fake_config
    from test_workers import ANSWERS

    from aah.benchmark import RunOptions
    from aah.benchmark.when2call import When2CallRunner, load_when2call
    from aah.testing import FakeLLMServer

    server = ThreadingHTTPServer(("127.0.0.1", 0), _OtlpReceiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _OtlpReceiver.names, _OtlpReceiver.spans = [], []
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{server.server_port}")
    questions = load_when2call(shared_data)[:6]
    try:
        use_span_exporter(None)
        with FakeLLMServer(ANSWERS) as llm:
            options = RunOptions(run="w", concurrency=4, workers=2)
            summary = asyncio.run(
                When2CallRunner(options, fake_config(llm)).run(questions, tmp_path / "s.db")
            )
        flush_traces()
    finally:
        server.shutdown()
        server.server_close()
        use_span_exporter(None)
    assert summary.finished + summary.skipped == len(questions), summary
    runs = [span for span in _OtlpReceiver.spans if span["name"] == "run w"]
    assert len(runs) == 1, _OtlpReceiver.names
    agents = [span for span in _OtlpReceiver.spans if span["name"].startswith("invoke_agent")]
    with SessionStore(tmp_path / "s.db") as store:
        sessions = {s.id for s in store.list_sessions(run="w")}
    assert {span["session"] for span in agents} == sessions and len(sessions) == len(questions)
    assert {span["parent"] for span in agents} == {runs[0]["id"]}
    assert {span["trace"] for span in _OtlpReceiver.spans} == {runs[0]["trace"]}
