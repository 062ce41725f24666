"""A hostile trace receiver: every export ends within its deadline and holds little, whatever it answers.

Real OTLP/HTTP exports (the SDK's exporter, through aah's bounded session)
to a receiver on 127.0.0.1 that answers as each case says
(``otlp_receiver.py``): the corpus of ``fixtures/hostile/otlp_responses.jsonl``
and answers Hypothesis draws; then whole ``aah run`` and ``aah bench run
--workers 2`` processes against a receiver that answers a gigabyte and one
that sends a byte a second.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from otlp_receiver import Answer, HostileReceiver, answer_for, ok_answer

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

from opentelemetry.sdk.trace import ReadableSpan  # noqa: E402
from opentelemetry.sdk.trace.export import SpanExportResult  # noqa: E402
from opentelemetry.trace import SpanContext, TraceFlags  # noqa: E402

from aah.telemetry import (  # noqa: E402
    EXPORT_TIMEOUT_S,
    RESPONSE_CAP,
    BoundedSpanExporter,
    SpanRecord,
    SpanSink,
    export_seconds,
)
from aah.testing.fake_llm import FakeLLMServer  # noqa: E402

CORPUS = Path(__file__).parent / "fixtures" / "hostile" / "otlp_responses.jsonl"
CASES = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
# The exports here have a short deadline (the default 2 s is held by the runs below);
# an export may pass it by the time it takes to notice, never by a read's timeout.
DEADLINE_S = 0.5
SLACK_S = 0.75
# What one export may add to the process's peak memory, whatever the receiver sends.
GROWTH_CAP = 50 * 1024 * 1024
ONE_BYTE_A_SECOND = {"head": "HTTP/1.1 200 OK", "body": {"text": ""}}
ONE_BYTE_A_SECOND |= {"pace": {"piece": 1, "every": 1.0}}
GIGABYTE = next(case for case in CASES if case["name"] == "gigabyte_with_length")


def _spans(count: int = 3) -> list[ReadableSpan]:
    flags = TraceFlags(TraceFlags.SAMPLED)
    return [
        ReadableSpan(
            name=f"span {n}",
            context=SpanContext(0xAB, 0xCD + n, is_remote=False, trace_flags=flags),
            start_time=1,
            end_time=2,
        )
        for n in range(count)
    ]


def _status(field: str) -> int:
    found = re.search(rf"^{field}:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.M)
    assert found is not None
    return int(found.group(1)) * 1024


@contextmanager
def peak_growth() -> Iterator[Callable[[], int]]:
    """How far this process's peak memory rose above where it stood (bytes), read at the end."""
    clear = Path("/proc/self/clear_refs")
    if not clear.exists():
        pytest.skip("no /proc/self/clear_refs here to reset the peak")
    clear.write_text("5")  # the peak (VmHWM) starts again from what is held now
    start = _status("VmRSS")
    yield lambda: _status("VmHWM") - start


class Exported(NamedTuple):
    """One export's outcome: its result, the refusal, how long it took, the memory it added."""

    result: SpanExportResult
    refusal: str | None
    seconds: float
    growth: int


def export_once(answer: Answer, seconds: float = DEADLINE_S) -> Exported:
    """One export of three spans to a receiver that answers with ``answer``."""
    with HostileReceiver(answer) as receiver:
        exporter = BoundedSpanExporter(seconds, endpoint=receiver.traces_url)
        try:
            with peak_growth() as growth:
                start = time.monotonic()
                result = exporter.export(_spans())
                took = time.monotonic() - start
                grown = growth()
        finally:
            exporter.shutdown()
    kind = exporter.refusal.kind if exporter.refusal is not None else None
    return Exported(result, kind, took, grown)


@pytest.fixture(scope="module", autouse=True)
def _bombs_made() -> None:
    """The compressed bombs are made once, before any peak is measured."""
    from hostile_tool_server import gzip_bomb, zlib_bomb

    gzip_bomb()
    zlib_bomb()


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_every_corpus_answer_ends_within_the_deadline_and_holds_little(
    case: dict[str, Any],
) -> None:
    done = export_once(answer_for(case))
    assert done.seconds <= DEADLINE_S + SLACK_S, case["why"]
    assert done.growth < GROWTH_CAP, (done.growth, case["why"])
    expected = SpanExportResult.SUCCESS if case["expect"] == "taken" else SpanExportResult.FAILURE
    assert done.result is expected, case["why"]
    assert done.refusal == case.get("refusal"), case["why"]


def test_a_kept_connection_that_trickles_on_its_next_export_is_cut_at_the_deadline() -> None:
    # The first export leaves its connection in the pool; the second goes over
    # the same socket, which the second export's deadline must watch anew.
    trickle = answer_for(ONE_BYTE_A_SECOND)
    with HostileReceiver(ok_answer, trickle) as receiver:
        exporter = BoundedSpanExporter(DEADLINE_S, endpoint=receiver.traces_url)
        assert exporter.export(_spans()) is SpanExportResult.SUCCESS
        start = time.monotonic()
        assert exporter.export(_spans()) is SpanExportResult.FAILURE
        took = time.monotonic() - start
        exporter.shutdown()
        assert receiver.connections == 1
    assert took <= DEADLINE_S + SLACK_S
    assert exporter.refusal is not None and exporter.refusal.kind == "time"


def test_closing_waits_half_a_second_and_the_export_gives_up_at_two() -> None:
    with HostileReceiver(answer_for(ONE_BYTE_A_SECOND)) as receiver:
        sink = SpanSink(lambda: BoundedSpanExporter(EXPORT_TIMEOUT_S, receiver.traces_url))
        now = datetime.now(UTC)
        span = SpanRecord(name="s", trace_id="ab" * 16, span_id="cd" * 8, parent_id=None,
                          start=now, end=now)  # fmt: skip
        sink.send([span])
        start = time.monotonic()
        sink.flush()  # the export goes on in the background: closing waits no longer
        sink.flush()  # the run's span, then its runtime: half a second in all, not each
        assert time.monotonic() - start < 0.5 + 0.3
        assert sink.exporter is not None
        while sink.exporter.dropped == 0 and time.monotonic() - start < 10:
            time.sleep(0.05)
        gave_up = time.monotonic() - start
    assert sink.exporter.dropped == 1
    assert gave_up <= EXPORT_TIMEOUT_S + SLACK_S


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("5", 5.0), ("0.25", 0.25), ("600", 600.0)]
    + [(bad, EXPORT_TIMEOUT_S) for bad in ("inf", "nan", "0", "-1", "601", "1e9", "soon")],
)
def test_the_timeout_variable_is_seconds_above_zero_and_at_most_600(
    value: str, seconds: float, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # An infinite or absurd timeout would hold the process's exit on a stuck receiver.
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", raising=False)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", value)
    with caplog.at_level(logging.WARNING, logger="aah.telemetry"):
        assert export_seconds() == seconds
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("aah.telemetry")]
    assert len(lines) == (0 if seconds != EXPORT_TIMEOUT_S else 1)
    assert all("OTEL_EXPORTER_OTLP_TIMEOUT" in line for line in lines)


_HEADERS = st.sampled_from(
    [
        "Retry-After: 0",
        "Retry-After: 1",
        "Retry-After: 86400",
        "Retry-After: -5",
        "Retry-After: nan",
        "Retry-After: Wed, 21 Oct 2099 07:28:00 GMT",
        "Retry-After: soon",
        "Content-Encoding: gzip",
        "Content-Encoding: deflate",
        "Content-Encoding: br",
        "Content-Encoding: gzip, deflate",
        "Content-Type: application/json",
        "Connection: close",
        "Connection: keep-alive",
        "Transfer-Encoding: chunked",
        "Content-Length: 5",
        ": no name",
        "no colon at all",
    ]
) | st.builds(lambda size, fill: f"X-Pad: {fill * size}", st.integers(0, 100_000), st.just("a"))
_BODIES = st.one_of(
    st.builds(lambda data: {"hex": data.hex()}, st.binary(max_size=300)),
    st.builds(lambda size: {"zeros": size}, st.integers(0, 4 * 1024 * 1024)),
    st.builds(lambda size: {"gzip_zeros": size}, st.integers(0, 4 * 1024 * 1024)),
    st.just({"bomb": "gzip"}),
    st.just({"bomb": "deflate"}),
    st.just({"forever": "x"}),
)
_PACES = st.none() | st.builds(
    lambda piece, every: {"piece": piece, "every": every},
    st.sampled_from([1, 7, 500, 8192]),
    st.sampled_from([0.0, 0.01, 0.05, 0.3]),
)
_ANSWERS = st.fixed_dictionaries(
    {
        "head": st.builds(
            lambda status, headers, extra: "\r\n".join(
                [f"HTTP/1.1 {status} Whatever", *headers, *(f"X-N{n}: v" for n in range(extra))]
            ),
            st.sampled_from([200, 202, 204, 301, 307, 400, 404, 413, 429, 500, 502, 503, 599]),
            st.lists(_HEADERS, max_size=4),
            st.sampled_from([0, 3, 150]),
        ),
        "body": _BODIES,
        "framing": st.sampled_from(["length", "chunked", "close"])
        | st.builds(lambda claims: {"claims": claims}, st.integers(0, 10**7)),
        "pace": _PACES,
        "after": st.sampled_from(["close", "hold"]),
    }
)


@settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=_ANSWERS)
def test_any_answer_ends_within_the_deadline_and_holds_little(case: dict[str, Any]) -> None:
    done = export_once(answer_for(case))
    assert done.seconds <= DEADLINE_S + SLACK_S, case
    assert done.growth < GROWTH_CAP, (done.growth, case)
    if done.refusal == "size":
        assert done.result is SpanExportResult.FAILURE


# ``python -m aah ...`` that says, as it leaves (after the span processor's own exit
# handler), the most memory it held.
_MEASURED = (
    "import atexit, re, runpy, sys\n"
    "def peak():\n"
    "    status = open('/proc/self/status').read()\n"
    "    print('peak-kb:', re.search(r'VmHWM:\\s+(\\d+)', status).group(1), file=sys.stderr)\n"
    "atexit.register(peak)\n"
    "runpy.run_module('aah', run_name='__main__', alter_sys=True)\n"
)


class Ran(NamedTuple):
    """A command's wall time (s), peak memory (bytes) and standard error."""

    seconds: float
    peak: int
    stderr: str


def run_against(answer: Answer, command: list[str], env: dict[str, str]) -> Ran:
    """``aah COMMAND`` exporting its traces to a receiver that answers with ``answer``."""
    with HostileReceiver(answer) as receiver:
        full = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OTEL_"))}
        full |= {"NO_COLOR": "1", "COLUMNS": "200", **env}
        full["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint
        start = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-c", _MEASURED, *command],
            env=full,
            capture_output=True,
            text=True,
            timeout=120,
        )
        took = time.monotonic() - start
        assert receiver.requests >= 1
    assert done.returncode == 0, done.stderr
    (peak,) = re.findall(r"^peak-kb: (\d+)$", done.stderr, re.M)
    return Ran(took, int(peak) * 1024, done.stderr)


def said(ran: Ran) -> list[str]:
    """The lines about traces a run printed."""
    return [line for line in ran.stderr.splitlines() if line.startswith("traces:")]


def test_aah_run_stays_small_and_quick_whatever_the_receiver_answers(tmp_path: Path) -> None:
    script = {"rules": [{"reply": "It is sunny."}]}
    with FakeLLMServer(script) as llm:
        env = {"AAH_BASE_URL": llm.base_url, "AAH_MODEL": "m", "AAH_API_KEY": "sk-x"}
        command = ["run", "Weather?", "--awareness", "none", "--no-aah"]

        def run(answer: Answer, name: str) -> Ran:
            return run_against(answer, [*command, "--db", str(tmp_path / f"{name}.db")], env)

        calm = run(ok_answer, "calm")
        huge = run(answer_for(GIGABYTE), "huge")
        slow = run(answer_for(ONE_BYTE_A_SECOND), "slow")
    assert said(calm) == []
    # Answering a gigabyte took the run to 2.2 GB; now the answer stops at its cap.
    assert huge.peak - calm.peak < GROWTH_CAP, (huge.peak, calm.peak)
    (line,) = said(huge)
    assert f"sent more than {RESPONSE_CAP:,} bytes" in line
    # A byte a second held the run's exit for 30 s; now the export gives up at 2 s.
    assert slow.seconds - calm.seconds < EXPORT_TIMEOUT_S + 1.5, (slow.seconds, calm.seconds)
    (line,) = said(slow)
    assert f"within {EXPORT_TIMEOUT_S:g} s" in line


def test_a_bench_run_in_two_workers_is_not_held_by_a_trickling_receiver(
    shared_data: Path, shared_registry: Path, tmp_path: Path
) -> None:
    from test_workers_cli import AGENT

    with FakeLLMServer(AGENT) as llm:
        env = {
            "AAH_REGISTRY": str(shared_registry),
            "AAH_DATA_DIR": str(shared_data),
            "AAH_BASE_URL": llm.base_url,
            "AAH_MODEL": "fake-model",
            "AAH_API_KEY": "x",
            "AAH_DB": str(tmp_path / "s.db"),
        }
        command = ["bench", "run", "--run", "w", "--no-probe", "--setting", "perfect"]
        command += ["--limit", "4", "--workers", "2", "--concurrency", "2"]
        slow = run_against(answer_for(ONE_BYTE_A_SECOND), command, env)
    # 2.7 s against a receiver that answers at once, 33 s before exports had a deadline.
    assert slow.seconds < 15, slow.seconds
    assert len(said(slow)) >= 1
