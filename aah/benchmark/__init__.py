"""Benchmark tasks: dataset loaders, derived facts, humans, the batch runner.

Public names load lazily (PEP 562), so importing one light module of the
package does not load the heavy ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.benchmark.batch import run_batch, shard_tasks
    from aah.benchmark.coverage import CoverageReport, measure_coverage
    from aah.benchmark.dataset import Task, load_tasks
    from aah.benchmark.demo import (
        SCRIPTED_LABEL,
        DemoTask,
        demo_script,
        demo_task,
        load_demo_tasks,
    )
    from aah.benchmark.derive import LOW_SIMILARITY
    from aah.benchmark.fact_fit import TaskFacts
    from aah.benchmark.humans import (
        BATCH_HUMANS,
        BatchHumanOptions,
        OracleHuman,
        SimulatedHuman,
        make_batch_human,
        task_human_factory,
    )
    from aah.benchmark.leak_check import leak_flags
    from aah.benchmark.runner import (
        BatchRunner,
        ProgressHook,
        RepeatableTask,
        RunOptions,
        RunSummary,
        TaskT,
        UnavailableMode,
        batch_human_factory,
        parse_shard,
        select_shard,
    )
    from aah.benchmark.settings import SETTINGS, Setting

__all__ = [
    "RepeatableTask",
    "TaskT",
    "demo_script",
    "demo_task",
    "SCRIPTED_LABEL",
    "select_shard",
    "UnavailableMode",
    "ProgressHook",
    "LOW_SIMILARITY",
    "CoverageReport",
    "BATCH_HUMANS",
    "BatchHumanOptions",
    "BatchRunner",
    "DemoTask",
    "OracleHuman",
    "RunOptions",
    "RunSummary",
    "SETTINGS",
    "Setting",
    "SimulatedHuman",
    "Task",
    "TaskFacts",
    "batch_human_factory",
    "measure_coverage",
    "leak_flags",
    "load_demo_tasks",
    "load_tasks",
    "make_batch_human",
    "parse_shard",
    "run_batch",
    "shard_tasks",
    "task_human_factory",
]

_WHERE = {
    "RepeatableTask": "aah.benchmark.runner",
    "TaskT": "aah.benchmark.runner",
    "demo_script": "aah.benchmark.demo",
    "demo_task": "aah.benchmark.demo",
    "SCRIPTED_LABEL": "aah.benchmark.demo",
    "select_shard": "aah.benchmark.runner",
    "UnavailableMode": "aah.benchmark.runner",
    "ProgressHook": "aah.benchmark.runner",
    "LOW_SIMILARITY": "aah.benchmark.derive",
    "CoverageReport": "aah.benchmark.coverage",
    "BATCH_HUMANS": "aah.benchmark.humans",
    "BatchHumanOptions": "aah.benchmark.humans",
    "BatchRunner": "aah.benchmark.runner",
    "DemoTask": "aah.benchmark.demo",
    "OracleHuman": "aah.benchmark.humans",
    "RunOptions": "aah.benchmark.runner",
    "RunSummary": "aah.benchmark.runner",
    "SETTINGS": "aah.benchmark.settings",
    "Setting": "aah.benchmark.settings",
    "SimulatedHuman": "aah.benchmark.humans",
    "Task": "aah.benchmark.dataset",
    "TaskFacts": "aah.benchmark.fact_fit",
    "batch_human_factory": "aah.benchmark.runner",
    "measure_coverage": "aah.benchmark.coverage",
    "leak_flags": "aah.benchmark.leak_check",
    "load_demo_tasks": "aah.benchmark.demo",
    "load_tasks": "aah.benchmark.dataset",
    "make_batch_human": "aah.benchmark.humans",
    "task_human_factory": "aah.benchmark.humans",
    "parse_shard": "aah.benchmark.runner",
    "run_batch": "aah.benchmark.batch",
    "shard_tasks": "aah.benchmark.batch",
}


__getattr__ = lazy_getattr(__name__, _WHERE)
