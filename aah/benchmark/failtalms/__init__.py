"""Fail-TaLMs (NAACL 2025): settings, tasks, batch humans, runner, published figures.

Five settings, the tasks derived from the data with their hidden facts, the
batch humans that know them, the runner, the paper's published answers and tables.

A benchmark folder's shape (copy it for a new benchmark): the loader and tasks
(``dataset``), the run recipe (``runner``: one ``SessionRequest`` per task through
``aah.benchmark.batch``), scoring read from the store, and the paper's figures
(``paper``, ``published``, ``imports``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.benchmark.failtalms.benchmark import choose_tasks, parse_settings
    from aah.benchmark.failtalms.coverage import (
        CoverageReport,
        measure_coverage,
    )
    from aah.benchmark.failtalms.dataset import (
        Task,
        load_tasks,
    )
    from aah.benchmark.failtalms.derive import LOW_SIMILARITY
    from aah.benchmark.failtalms.fact_fit import TaskFacts
    from aah.benchmark.failtalms.humans import (
        BATCH_HUMANS,
        BatchHumanOptions,
        OracleHuman,
        SimulatedHuman,
        benchmark_prompt_versions,
        make_batch_human,
        task_human_factory,
    )
    from aah.benchmark.failtalms.imports import (
        ImportProgress,
        ImportSummary,
        import_failtalms_outputs,
        import_notes,
    )
    from aah.benchmark.failtalms.leak_check import leak_flags
    from aah.benchmark.failtalms.paper import (
        Comparison,
        PaperTables,
        compare_with_paper,
        comparison_to_json,
        load_paper_tables,
        parse_model_map,
        unmatched_runs,
    )
    from aah.benchmark.failtalms.runner import (
        BatchRunner,
        batch_human_factory,
        task_facts,
    )
    from aah.benchmark.failtalms.settings import (
        SETTING_FOLDERS,
    )

__all__ = [
    "choose_tasks",
    "parse_settings",
    "BATCH_HUMANS",
    "BatchHumanOptions",
    "BatchRunner",
    "Comparison",
    "CoverageReport",
    "ImportProgress",
    "ImportSummary",
    "LOW_SIMILARITY",
    "OracleHuman",
    "PaperTables",
    "SETTING_FOLDERS",
    "SimulatedHuman",
    "Task",
    "TaskFacts",
    "batch_human_factory",
    "benchmark_prompt_versions",
    "compare_with_paper",
    "comparison_to_json",
    "import_failtalms_outputs",
    "import_notes",
    "leak_flags",
    "load_paper_tables",
    "load_tasks",
    "make_batch_human",
    "measure_coverage",
    "parse_model_map",
    "task_facts",
    "task_human_factory",
    "unmatched_runs",
]

_WHERE = {
    "choose_tasks": "aah.benchmark.failtalms.benchmark",
    "parse_settings": "aah.benchmark.failtalms.benchmark",
    "CoverageReport": "aah.benchmark.failtalms.coverage",
    "measure_coverage": "aah.benchmark.failtalms.coverage",
    "Task": "aah.benchmark.failtalms.dataset",
    "load_tasks": "aah.benchmark.failtalms.dataset",
    "LOW_SIMILARITY": "aah.benchmark.failtalms.derive",
    "TaskFacts": "aah.benchmark.failtalms.fact_fit",
    "BATCH_HUMANS": "aah.benchmark.failtalms.humans",
    "BatchHumanOptions": "aah.benchmark.failtalms.humans",
    "OracleHuman": "aah.benchmark.failtalms.humans",
    "SimulatedHuman": "aah.benchmark.failtalms.humans",
    "benchmark_prompt_versions": "aah.benchmark.failtalms.humans",
    "make_batch_human": "aah.benchmark.failtalms.humans",
    "task_human_factory": "aah.benchmark.failtalms.humans",
    "ImportProgress": "aah.benchmark.failtalms.imports",
    "ImportSummary": "aah.benchmark.failtalms.imports",
    "import_failtalms_outputs": "aah.benchmark.failtalms.imports",
    "import_notes": "aah.benchmark.failtalms.imports",
    "leak_flags": "aah.benchmark.failtalms.leak_check",
    "Comparison": "aah.benchmark.failtalms.paper",
    "PaperTables": "aah.benchmark.failtalms.paper",
    "compare_with_paper": "aah.benchmark.failtalms.paper",
    "comparison_to_json": "aah.benchmark.failtalms.paper",
    "load_paper_tables": "aah.benchmark.failtalms.paper",
    "parse_model_map": "aah.benchmark.failtalms.paper",
    "unmatched_runs": "aah.benchmark.failtalms.paper",
    "BatchRunner": "aah.benchmark.failtalms.runner",
    "batch_human_factory": "aah.benchmark.failtalms.runner",
    "task_facts": "aah.benchmark.failtalms.runner",
    "SETTING_FOLDERS": "aah.benchmark.failtalms.settings",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
