"""Benchmarks: the batch machinery every benchmark shares, and one folder per benchmark.

``protocol`` says what a benchmark is (``Benchmark``) and ``registry`` which
there are: the rest of aah finds benchmarks only through it. ``batch`` holds
what all runs share (options, shards, epochs, the session loop), ``workers``
and ``ray_workers`` spread a run over processes and a cluster, ``fence`` the
bounds around another project's environment code. ``failtalms/``,
``when2call/``, ``bfcl/`` and ``tau2/`` each hold one benchmark in the same
shape (its ``benchmark.py`` meets the protocol) and export their names
themselves: this package lists only what it defines. Public names load lazily (PEP 562), so
importing one light module does not load the heavy ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.benchmark.batch import (
        EPOCH_MARK,
        ProgressHook,
        RepeatableTask,
        RunOptions,
        RunSummary,
        TaskT,
        ToolSource,
        UnavailableMode,
        check_manifest,
        epoch_task_id,
        epoch_tasks,
        parse_shard,
        pick_tasks,
        run_batch,
        run_manifest,
        shard_tasks,
    )
    from aah.benchmark.demo import (
        SCRIPTED_LABEL,
        DemoTask,
        demo_script,
        demo_task,
        load_demo_tasks,
    )
    from aah.benchmark.fence import CallOutOfTime, Enclosure, Fence
    from aah.benchmark.protocol import (
        COMMON_FLAGS,
        Benchmark,
        BenchOption,
        PreparedRun,
        ReportPart,
        RunFlags,
    )
    from aah.benchmark.ray_workers import check_ray
    from aah.benchmark.registry import (
        all_benchmarks,
        benchmark_names,
        get_benchmark,
        report_parts,
    )
    from aah.benchmark.workers import (
        check_local_workers,
        concurrency_shares,
        parse_workers,
        run_in_workers,
    )

__all__ = [
    "COMMON_FLAGS",
    "Benchmark",
    "BenchOption",
    "PreparedRun",
    "ReportPart",
    "RunFlags",
    "all_benchmarks",
    "benchmark_names",
    "get_benchmark",
    "report_parts",
    "CallOutOfTime",
    "Enclosure",
    "Fence",
    "DemoTask",
    "EPOCH_MARK",
    "ProgressHook",
    "RepeatableTask",
    "RunOptions",
    "RunSummary",
    "SCRIPTED_LABEL",
    "TaskT",
    "ToolSource",
    "UnavailableMode",
    "check_local_workers",
    "check_manifest",
    "check_ray",
    "concurrency_shares",
    "demo_script",
    "demo_task",
    "epoch_task_id",
    "epoch_tasks",
    "load_demo_tasks",
    "parse_shard",
    "pick_tasks",
    "parse_workers",
    "run_batch",
    "run_in_workers",
    "run_manifest",
    "shard_tasks",
]

_WHERE = {
    "COMMON_FLAGS": "aah.benchmark.protocol",
    "Benchmark": "aah.benchmark.protocol",
    "BenchOption": "aah.benchmark.protocol",
    "PreparedRun": "aah.benchmark.protocol",
    "ReportPart": "aah.benchmark.protocol",
    "RunFlags": "aah.benchmark.protocol",
    "all_benchmarks": "aah.benchmark.registry",
    "benchmark_names": "aah.benchmark.registry",
    "get_benchmark": "aah.benchmark.registry",
    "report_parts": "aah.benchmark.registry",
    "EPOCH_MARK": "aah.benchmark.batch",
    "ProgressHook": "aah.benchmark.batch",
    "RepeatableTask": "aah.benchmark.batch",
    "RunOptions": "aah.benchmark.batch",
    "RunSummary": "aah.benchmark.batch",
    "TaskT": "aah.benchmark.batch",
    "ToolSource": "aah.benchmark.batch",
    "UnavailableMode": "aah.benchmark.batch",
    "check_local_workers": "aah.benchmark.workers",
    "check_manifest": "aah.benchmark.batch",
    "check_ray": "aah.benchmark.ray_workers",
    "concurrency_shares": "aah.benchmark.workers",
    "epoch_task_id": "aah.benchmark.batch",
    "epoch_tasks": "aah.benchmark.batch",
    "parse_shard": "aah.benchmark.batch",
    "pick_tasks": "aah.benchmark.batch",
    "parse_workers": "aah.benchmark.workers",
    "run_batch": "aah.benchmark.batch",
    "run_in_workers": "aah.benchmark.workers",
    "run_manifest": "aah.benchmark.batch",
    "shard_tasks": "aah.benchmark.batch",
    "SCRIPTED_LABEL": "aah.benchmark.demo",
    "DemoTask": "aah.benchmark.demo",
    "demo_script": "aah.benchmark.demo",
    "demo_task": "aah.benchmark.demo",
    "load_demo_tasks": "aah.benchmark.demo",
    "CallOutOfTime": "aah.benchmark.fence",
    "Enclosure": "aah.benchmark.fence",
    "Fence": "aah.benchmark.fence",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
