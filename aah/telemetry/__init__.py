"""aah's events as OpenTelemetry traces (GenAI semantic conventions, OTLP).

One job: turn a session's stored events into spans. The same span builder
serves a live exporter (an event listener, :class:`TraceListener`) and
``aah sessions export --otlp`` (:func:`stored_spans`, :func:`otlp_json`). The
store stays the source of truth; traces are a view of it where people look.

Public names load lazily (PEP 562): asking :func:`export_wanted` loads
nothing of OpenTelemetry, and only :mod:`aah.telemetry.live` loads the SDK
(the ``otel`` extra); :mod:`aah.telemetry.receiver` bounds each export's
exchange with the receiver (a total deadline, a capped answer).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.telemetry.encoding import otlp_json
    from aah.telemetry.export import stored_spans
    from aah.telemetry.live import (
        DroppingExporter,
        SpanSink,
        TraceListener,
        default_sink,
        flush_traces,
        run_trace,
        use_span_exporter,
    )
    from aah.telemetry.receiver import (
        EXPORT_TIMEOUT_S,
        RESPONSE_CAP,
        BoundedSpanExporter,
        ReceiverAdapter,
        export_seconds,
    )
    from aah.telemetry.spans import (
        SessionFacts,
        SpanRecord,
        SpanRef,
        run_trace_id,
        session_spans,
        trace_id_of,
    )
    from aah.telemetry.switch import (
        content_wanted,
        export_wanted,
        person_names_wanted,
        require_otel_sdk,
        trace_url,
        turn_on_export,
    )

__all__ = [
    "EXPORT_TIMEOUT_S",
    "RESPONSE_CAP",
    "BoundedSpanExporter",
    "DroppingExporter",
    "ReceiverAdapter",
    "SessionFacts",
    "SpanRecord",
    "SpanRef",
    "SpanSink",
    "TraceListener",
    "content_wanted",
    "default_sink",
    "export_seconds",
    "export_wanted",
    "flush_traces",
    "otlp_json",
    "person_names_wanted",
    "require_otel_sdk",
    "run_trace",
    "run_trace_id",
    "session_spans",
    "stored_spans",
    "trace_id_of",
    "trace_url",
    "turn_on_export",
    "use_span_exporter",
]

_WHERE = {
    "stored_spans": "aah.telemetry.export",
    "otlp_json": "aah.telemetry.encoding",
    **dict.fromkeys(
        ["SessionFacts", "SpanRecord", "SpanRef", "run_trace_id", "session_spans", "trace_id_of"],
        "aah.telemetry.spans",
    ),
    **dict.fromkeys(
        [
            "content_wanted",
            "export_seconds",
            "export_wanted",
            "person_names_wanted",
            "require_otel_sdk",
            "trace_url",
            "turn_on_export",
        ],
        "aah.telemetry.switch",
    ),
    **dict.fromkeys(
        [
            "BoundedSpanExporter",
            "EXPORT_TIMEOUT_S",
            "RESPONSE_CAP",
            "ReceiverAdapter",
            "export_seconds",
        ],
        "aah.telemetry.receiver",
    ),
    **dict.fromkeys(
        [
            "DroppingExporter",
            "SpanSink",
            "TraceListener",
            "default_sink",
            "flush_traces",
            "run_trace",
            "use_span_exporter",
        ],
        "aah.telemetry.live",
    ),
}
__getattr__ = lazy_getattr(__name__, _WHERE)
