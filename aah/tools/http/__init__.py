"""Running tool calls over HTTP, in one of several modes (live, record, replay, mock, fault)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.tools.http.executor import HttpExecutor
    from aah.tools.http.faults import FAULT_KINDS, FaultExecutor, FaultKind, FaultPlan
    from aah.tools.http.live_faults import LiveFaultExecutor, live_fault_executor
    from aah.tools.http.modes import (
        BASE_HTTP_MODES,
        HTTP_MODES,
        BaseHttpMode,
        Executor,
        ExecutorFactory,
        ExecutorOptions,
        HttpMode,
        make_executor,
    )
    from aah.tools.http.results import ToolResult, describe_body, failure_result

__all__ = [
    "BASE_HTTP_MODES",
    "HTTP_MODES",
    "BaseHttpMode",
    "Executor",
    "ExecutorFactory",
    "ExecutorOptions",
    "FAULT_KINDS",
    "FaultExecutor",
    "FaultKind",
    "FaultPlan",
    "HttpExecutor",
    "HttpMode",
    "LiveFaultExecutor",
    "ToolResult",
    "describe_body",
    "failure_result",
    "live_fault_executor",
    "make_executor",
]

_WHERE = {
    "BASE_HTTP_MODES": "aah.tools.http.modes",
    "HTTP_MODES": "aah.tools.http.modes",
    "BaseHttpMode": "aah.tools.http.modes",
    "Executor": "aah.tools.http.modes",
    "ExecutorFactory": "aah.tools.http.modes",
    "ExecutorOptions": "aah.tools.http.modes",
    "FAULT_KINDS": "aah.tools.http.faults",
    "FaultExecutor": "aah.tools.http.faults",
    "FaultKind": "aah.tools.http.faults",
    "FaultPlan": "aah.tools.http.faults",
    "HttpExecutor": "aah.tools.http.executor",
    "HttpMode": "aah.tools.http.modes",
    "LiveFaultExecutor": "aah.tools.http.live_faults",
    "ToolResult": "aah.tools.http.results",
    "describe_body": "aah.tools.http.results",
    "failure_result": "aah.tools.http.results",
    "live_fault_executor": "aah.tools.http.live_faults",
    "make_executor": "aah.tools.http.modes",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
