"""Benchmark tasks: dataset loaders, derived facts, humans, the batch runner.

Public names load lazily (PEP 562), so importing one light module of the
package does not load the heavy ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.benchmark.coverage import coverage
    from aah.benchmark.dataset import Task, load_tasks
    from aah.benchmark.demo import DemoTask, load_demo_tasks
    from aah.benchmark.fact_fit import TaskFacts
    from aah.benchmark.humans import OracleHuman, SimulatedHuman, make_batch_human
    from aah.benchmark.leak_check import leak_flags
    from aah.benchmark.runner import BatchRunner, RunOptions, RunSummary
    from aah.benchmark.settings import SETTINGS, Setting

__all__ = [
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
    "coverage",
    "leak_flags",
    "load_demo_tasks",
    "load_tasks",
    "make_batch_human",
]

_WHERE = {
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
    "coverage": "aah.benchmark.coverage",
    "leak_flags": "aah.benchmark.leak_check",
    "load_demo_tasks": "aah.benchmark.demo",
    "load_tasks": "aah.benchmark.dataset",
    "make_batch_human": "aah.benchmark.humans",
}


__getattr__ = lazy_getattr(__name__, _WHERE)
