"""Live export: a session's spans go out over OTLP/HTTP as it parks and as it ends.

Imported only when traces are wanted (:func:`aah.telemetry.export_wanted`):
this is the one module that loads the OpenTelemetry SDK. A receiver that is
down, slow or hostile never slows or fails a run: spans wait in a bounded
queue, each export gives up after 2 s in all and reads at most 64 KB of the
receiver's answer (:mod:`aah.telemetry.receiver`), one line says so, and
spans are dropped until the receiver answers again.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from aah.events import Event, utc_now
from aah.telemetry.encoding import SCOPE, service_name, unix_nano
from aah.telemetry.receiver import EXPORT_TIMEOUT_S, BoundedSpanExporter, export_seconds
from aah.telemetry.spans import (
    ENDINGS,
    PAUSES,
    SessionFacts,
    SpanRecord,
    SpanRef,
    requests_of,
    run_span,
    run_span_id,
    run_trace_id,
    session_spans,
    trace_id_of,
)
from aah.telemetry.switch import content_wanted, person_names_wanted

if TYPE_CHECKING:
    from aah.store import RunRecord, SessionStore

_log = logging.getLogger(__name__)
# Spans held for export at most; more are dropped (a receiver down for a long run).
QUEUE_SPANS = 2048
BATCH_SPANS = 512
# After a failed export, spans are dropped without trying for this long.
RETRY_AFTER_S = 30.0
# How long closing a runtime waits for its spans to go; what is left goes in the
# background, or when the process exits (the processor's shutdown, bounded by the
# export timeout, after which a receiver found down costs nothing).
FLUSH_TIMEOUT_S = 0.5
# Sessions whose events a listener holds while they wait for a person (a batch's oracle
# answers at once); one parked longer is read back from the store when it goes on.
HELD_SESSIONS = 1024
_CLOSING = (*PAUSES, *ENDINGS, "human_answer", "approval_decided")
# The SDK's own loggers print a line (or a traceback) per failed batch; aah says it once.
_QUIET = (
    "opentelemetry.exporter.otlp.proto.http",
    "opentelemetry.sdk.trace.export",
    "opentelemetry.sdk._shared_internal",
)
_SPAN_KIND = {"internal": SpanKind.INTERNAL, "client": SpanKind.CLIENT}


class DroppingExporter(SpanExporter):
    """Passes spans to ``inner``; once it fails, says so in one line and drops spans for a while."""

    def __init__(self, inner: SpanExporter, clock: Callable[[], float] = time.monotonic) -> None:
        self.inner = inner
        self.clock = clock
        self.down_until = 0.0
        self.dropped = 0
        self._said = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Send ``spans``, or drop them while the receiver is known to be down."""
        now = self.clock()
        if now < self.down_until:
            self.dropped += len(spans)
            return SpanExportResult.FAILURE
        try:
            result = self.inner.export(spans)
            refusal = getattr(self.inner, "refusal", None)
            why = f" ({refusal})" if refusal is not None else ""
        except Exception as exc:  # a receiver's failure must never reach the run
            result, why = SpanExportResult.FAILURE, f" ({type(exc).__name__})"
        if result is SpanExportResult.SUCCESS:
            self.down_until = 0.0
            return result
        self.dropped += len(spans)
        self.down_until = now + RETRY_AFTER_S
        if not self._said:
            self._said = True
            _log.warning(
                "traces: the OTLP receiver did not take %d spans%s: they are dropped, and "
                "spans are dropped while it stays down (check OTEL_EXPORTER_OTLP_ENDPOINT)",
                len(spans),
                why,
            )
        return result

    def shutdown(self) -> None:
        """Shut the inner exporter down."""
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Nothing is held here: the processor holds the queue."""
        return True


def otlp_exporter() -> SpanExporter:
    """The OTLP/HTTP exporter the standard variables describe, its exchanges bounded."""
    protocol = os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf").strip()
    if protocol and protocol != "http/protobuf":
        _log.warning("traces: aah exports over OTLP/HTTP (http/protobuf), not %s", protocol)
    return BoundedSpanExporter(export_seconds())


class SpanSink:
    """Finished spans into a batch processor, which this process makes on first use.

    The processor's thread does not survive a fork: a worker process forked
    from a run makes its own on its first span (the process id tells).
    """

    def __init__(
        self,
        exporter: Callable[[], SpanExporter] = otlp_exporter,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._make_exporter = exporter
        self._clock = clock
        self._lock = threading.Lock()
        self._flushing: threading.Thread | None = None
        self._flush_ends = 0.0
        self._pid: int | None = None
        self._processor: BatchSpanProcessor | None = None
        self._resource: Resource | None = None
        self.exporter: DroppingExporter | None = None

    def _ready(self) -> tuple[BatchSpanProcessor, Resource]:
        with self._lock:
            if self._processor is None or self._pid != os.getpid():
                for name in _QUIET:
                    logging.getLogger(name).setLevel(logging.CRITICAL)
                self.exporter = DroppingExporter(self._make_exporter())
                self._processor = BatchSpanProcessor(
                    self.exporter,
                    max_queue_size=QUEUE_SPANS,
                    max_export_batch_size=BATCH_SPANS,
                    export_timeout_millis=int(EXPORT_TIMEOUT_S * 1000),
                )
                from aah import __version__

                self._resource = Resource.create(
                    {"service.name": service_name(), "service.version": __version__}
                )
                self._pid = os.getpid()
                atexit.register(self._processor.shutdown)
            assert self._resource is not None
            return self._processor, self._resource

    def send(self, spans: Sequence[SpanRecord]) -> None:
        """Queue ``spans`` for export (dropped when the queue is full)."""
        if not spans:
            return
        processor, resource = self._ready()
        for span in spans:
            processor.on_end(readable(span, resource))

    def flush(self, timeout_s: float = FLUSH_TIMEOUT_S) -> None:
        """Export what is queued, waiting at most ``timeout_s``.

        While an earlier flush is still exporting (a slow receiver), this one
        waits only for what is left of that one's time: closing a run and
        then its runtime waits ``timeout_s`` in all, not once each.
        """
        if self._processor is None or self._pid != os.getpid():
            return
        with self._lock:
            flushing = self._flushing
            if flushing is None or not flushing.is_alive():
                # The SDK exports a flush in the caller's thread, for as long as the
                # receiver takes (its timeout ignored): wait for it only so long.
                flushing = threading.Thread(
                    target=self._processor.force_flush,
                    args=(int(timeout_s * 1000),),
                    daemon=True,
                )
                self._flushing = flushing
                self._flush_ends = self._clock() + timeout_s
                flushing.start()
            left = max(0.0, self._flush_ends - self._clock())
        flushing.join(left)


_SCOPE = InstrumentationScope(SCOPE)


def readable(span: SpanRecord, resource: Resource) -> ReadableSpan:
    """The SDK's finished span for ``span``, with its own ids and times."""
    flags = TraceFlags(TraceFlags.SAMPLED)
    trace = int(span.trace_id, 16)
    context = SpanContext(trace, int(span.span_id, 16), is_remote=False, trace_flags=flags)
    parent = (
        SpanContext(trace, int(span.parent_id, 16), is_remote=False, trace_flags=flags)
        if span.parent_id is not None
        else None
    )
    links = [
        Link(SpanContext(int(link.trace_id, 16), int(link.span_id, 16), False, flags))
        for link in span.links
    ]
    status = Status(StatusCode.ERROR, span.error) if span.error is not None else Status()
    return ReadableSpan(
        name=span.name,
        context=context,
        parent=parent,
        resource=resource,
        attributes={k: tuple(v) if isinstance(v, list) else v for k, v in span.attributes.items()},
        links=links,
        kind=_SPAN_KIND[span.kind],
        status=status,
        start_time=unix_nano(span.start),
        end_time=unix_nano(span.end),
        instrumentation_scope=_SCOPE,
    )


_sink = SpanSink()
# The span of each batch run this process is running, by run name: its sessions hang under it.
_run_spans: dict[str, SpanRef] = {}


def default_sink() -> SpanSink:
    """The process's sink, which the listener and run spans send to."""
    return _sink


def use_span_exporter(exporter: SpanExporter | None) -> SpanSink:
    """Send this process's spans to ``exporter`` (None: back to OTLP/HTTP); tests use it."""
    global _sink
    _sink = SpanSink(otlp_exporter if exporter is None else lambda: exporter)
    return _sink


class TraceListener:
    """An event listener that exports a session's spans as each part of it closes.

    It keeps the events of the sessions it watches since their last pause;
    one it meets midway (resumed in this process, days after it parked) is
    read back from the store, so the spans are the same as one process would
    have made.
    """

    def __init__(
        self, store: SessionStore, server_url: str | None = None, held: int = HELD_SESSIONS
    ) -> None:
        self.store = store
        self.server_url = server_url
        self.held = held
        # Oldest first: a session parked past ``held`` others is read back when it goes on.
        self._events: OrderedDict[str, list[Event]] = OrderedDict()
        self._facts: OrderedDict[str, SessionFacts] = OrderedDict()
        self._runs: dict[str, RunRecord | None] = {}
        self._lock = threading.Lock()
        self._failed = False

    def __call__(self, event: Event) -> None:
        """Take one stored event; export the spans it closes."""
        try:
            with self._lock:
                self._take(event)
        except Exception as exc:  # a trace must never end a session
            if not self._failed:
                self._failed = True
                _log.warning(
                    "traces: cannot build the session's spans (%s): none are exported", exc
                )

    def _take(self, event: Event) -> None:
        sid = event.session_id
        seen = self._events.get(sid)
        if seen is not None and seen[-1].seq == event.seq - 1:
            seen.append(event)
        elif event.seq == 1:
            seen = self._events[sid] = [event]
        else:
            seen = None
            self._events.pop(sid, None)
        if event.kind not in _CLOSING:
            return
        if seen is None:
            seen = [e for e in self.store.events(sid) if e.seq <= event.seq]
            self._events[sid] = seen
        facts = self._facts_of(sid)
        if facts is None:
            return
        requests = requests_of(seen, self.store.humans.get_human_request, since=event.seq - 1)
        spans = session_spans(facts, seen, requests, closed_by=event.seq)
        _sink.send(spans)
        if event.kind in ENDINGS:
            self._events.pop(sid, None)
            self._facts.pop(sid, None)
        elif event.kind in PAUSES:
            # A parked session may wait for days: only the newest ones are held meanwhile.
            self._events.move_to_end(sid)
            for held in (self._events, self._facts):
                while len(held) > self.held:
                    held.popitem(last=False)

    def _facts_of(self, session_id: str) -> SessionFacts | None:
        facts = self._facts.get(session_id)
        if facts is not None:
            return facts
        record = self.store.get_session(session_id)
        if record is None:
            return None
        run = None
        if record.run is not None:
            if record.run not in self._runs:
                self._runs[record.run] = self.store.get_run(record.run)
            run = self._runs[record.run]
        parent = _run_spans.get(record.run) if record.run is not None else None
        facts = SessionFacts(
            record=record,
            trace_id=trace_id_of(record, run),
            parent=parent,
            server_url=self.server_url,
            content=content_wanted(),
            person_names=person_names_wanted(),
        )
        self._facts[session_id] = facts
        return facts


@contextmanager
def run_trace(run: RunRecord, tasks: int) -> Iterator[SpanRef]:
    """A span over a batch run's tasks in this process; the sessions run inside hang under it."""
    start = utc_now()
    ref = SpanRef(run_trace_id(run), run_span_id(run, f"{os.getpid()}:{start.isoformat()}"))
    _run_spans[run.name] = ref
    try:
        yield ref
    finally:
        _run_spans.pop(run.name, None)
        _sink.send([run_span(run, ref.trace_id, start, utc_now(), ref.span_id, tasks)])
        _sink.flush()


def flush_traces() -> None:
    """Export what the process's sink holds, waiting a bounded time."""
    _sink.flush()
