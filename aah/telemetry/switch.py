"""Whether traces are exported, and what they may hold: read from the environment alone.

This module imports nothing from OpenTelemetry: ``aah`` asks it before
anything of the SDK is loaded, so a run without an exporter loads none of it.
The standard variables (``OTEL_EXPORTER_OTLP_ENDPOINT`` and its
``_TRACES_`` form, headers, timeout, ``OTEL_SERVICE_NAME``) are read by the
SDK's exporter itself; aah reads only whether there is one, and its own
switches.
"""

from __future__ import annotations

import os
from importlib.util import find_spec

from aah.errors import AahError

# Set by ``--otel``; in the environment so that worker processes inherit it.
OTEL_SWITCH = "AAH_OTEL"
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
# The GenAI conventions' switch for message content (prompts, replies, arguments).
CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
# The operator's consent to export who answered (an annotator's name).
CAPTURE_PEOPLE = "AAH_OTEL_PERSON_NAMES"
# A link to a trace in a viewer, e.g. http://127.0.0.1:6006/projects/default/traces/{trace_id}
TRACE_URL = "AAH_TRACE_URL"
_TRUE = {"1", "true", "yes", "on"}


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in _TRUE


def export_wanted() -> bool:
    """Whether this process exports traces: ``--otel`` was given or an OTLP endpoint is set."""
    return _flag(OTEL_SWITCH) or any(
        os.environ.get(name, "").strip() for name in ENDPOINT_VARIABLES
    )


def turn_on_export() -> None:
    """Export traces from this process and the ones it starts (``--otel``)."""
    os.environ[OTEL_SWITCH] = "1"


def content_wanted() -> bool:
    """Whether message content (query, replies, arguments, answers) goes into spans."""
    return _flag(CAPTURE_CONTENT)


def person_names_wanted() -> bool:
    """Whether the name of the person who answered goes into spans (else ``person``)."""
    return _flag(CAPTURE_PEOPLE)


def trace_url(trace_id: str) -> str | None:
    """The link to ``trace_id`` that ``AAH_TRACE_URL`` makes, or None without a template."""
    template = os.environ.get(TRACE_URL, "").strip()
    if not template:
        return None
    return template.replace("{trace_id}", trace_id)


def require_otel_sdk() -> None:
    """Check that the OpenTelemetry SDK and its OTLP exporter are installed.

    Raises:
        AahError: they are not (the ``otel`` extra is missing).
    """
    try:
        found = all(
            find_spec(name) is not None
            for name in ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http")
        )
    except ImportError:
        found = False
    if not found:
        why = "--otel was given" if _flag(OTEL_SWITCH) else "OTEL_EXPORTER_OTLP_ENDPOINT is set"
        raise AahError(
            f"{why}, but the OpenTelemetry SDK is not installed: pip install 'aah[otel]' "
            "(or unset the variable to run without traces)"
        )
