"""Spans as OTLP JSON (the protocol's JSON encoding), written without the SDK.

``aah sessions export --otlp FILE`` writes recorded sessions this way, for runs
made without an exporter: a collector's file receiver, or a backend's import,
reads it as it would read spans sent over OTLP/HTTP with JSON bodies.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from aah.telemetry.spans import AttributeValue, SpanRecord

SCOPE = "aah"
_KIND = {"internal": 1, "client": 3}  # SPAN_KIND_INTERNAL, SPAN_KIND_CLIENT
_STATUS_ERROR = 2
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def service_name() -> str:
    """The service the spans come from: ``OTEL_SERVICE_NAME``, else ``aah``."""
    return os.environ.get("OTEL_SERVICE_NAME", "").strip() or "aah"


def otlp_json(spans: Sequence[SpanRecord], version: str = "") -> dict[str, Any]:
    """An ``ExportTraceServiceRequest`` holding ``spans``, as OTLP JSON."""
    resource = {"attributes": _attributes({"service.name": service_name()})}
    scope = {"name": SCOPE, "version": version}
    return {
        "resourceSpans": [
            {
                "resource": resource,
                "scopeSpans": [{"scope": scope, "spans": [_span(s) for s in spans]}],
            }
        ]
    }


def _span(span: SpanRecord) -> dict[str, Any]:
    out: dict[str, Any] = {
        "traceId": span.trace_id,
        "spanId": span.span_id,
        "name": span.name,
        "kind": _KIND[span.kind],
        "startTimeUnixNano": str(unix_nano(span.start)),
        "endTimeUnixNano": str(unix_nano(span.end)),
        "attributes": _attributes(span.attributes),
        "status": {"code": _STATUS_ERROR, "message": span.error} if span.error is not None else {},
    }
    if span.parent_id is not None:
        out["parentSpanId"] = span.parent_id
    if span.links:
        out["links"] = [{"traceId": link.trace_id, "spanId": link.span_id} for link in span.links]
    return out


def unix_nano(moment: datetime) -> int:
    """Nanoseconds since the epoch (microsecond precision, as datetimes hold)."""
    return (moment - _EPOCH) // timedelta(microseconds=1) * 1_000


def _attributes(attributes: dict[str, AttributeValue]) -> list[dict[str, Any]]:
    return [{"key": key, "value": _value(value)} for key, value in attributes.items()]


def _value(value: AttributeValue) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}  # int64 is a string in OTLP JSON
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [{"stringValue": item} for item in value]}}
    return {"stringValue": value}
