"""A live health probe: call endpoints with their defaults, report up or down."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

from rich.progress import Progress

from aah.tools.http import make_executor
from aah.tools.spec import EndpointSpec


class ProbeResult(NamedTuple):
    """One endpoint's health: ``up``, ``down``, ``unreachable`` or ``skipped``."""

    name: str
    state: str
    status: int | None
    latency_ms: float | None
    detail: str


def probe_arguments(spec: EndpointSpec) -> dict[str, Any] | None:
    """Arguments built from the spec's defaults; None when a required one has none."""
    arguments: dict[str, Any] = {}
    for param in spec.parameters:
        if param.default not in (None, ""):
            arguments[param.name] = param.default
        elif param.required:
            return None
    return arguments


def probe_endpoints(
    specs: Sequence[EndpointSpec],
    *,
    concurrency: int = 8,
    timeout: float = 5.0,
    show_progress: bool = True,
) -> list[ProbeResult]:
    """Probe every spec live, ``concurrency`` at a time, each within ``timeout``.

    No probe is retried: a health check reports what it sees. Without a network
    each probe fails at name resolution or connect, so the whole check ends
    quickly instead of hanging.
    """
    executor = make_executor("live", timeout=timeout, retries=0)

    def probe(spec: EndpointSpec) -> ProbeResult:
        arguments = probe_arguments(spec)
        if arguments is None:
            missing = [p.name for p in spec.parameters if p.required and p.default in (None, "")]
            return ProbeResult(
                spec.qualified_name,
                "skipped",
                None,
                None,
                f"no default for required {', '.join(missing)}",
            )
        result = executor.call(spec, arguments)
        if result.status is None:
            return ProbeResult(
                spec.qualified_name,
                "unreachable",
                None,
                None,
                (result.error or "no response")[:120],
            )
        state = "up" if result.status < 500 and result.status not in (404, 410) else "down"
        detail = "" if result.ok else (result.error or "")[:120]
        return ProbeResult(spec.qualified_name, state, result.status, result.latency_ms, detail)

    results: list[ProbeResult] = []
    with (
        Progress(disable=not show_progress, transient=True) as progress,
        ThreadPoolExecutor(max_workers=concurrency) as pool,
    ):
        task = progress.add_task("probing endpoints", total=len(specs))
        for outcome in pool.map(probe, specs):
            results.append(outcome)
            progress.advance(task)
    return results
