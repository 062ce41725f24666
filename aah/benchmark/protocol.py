"""What a benchmark is to the rest of aah: the ``Benchmark`` protocol.

A benchmark is one folder beside this module (``failtalms/``, ``when2call/``,
``bfcl/``, ``tau2/``) whose ``benchmark.py`` holds one object that meets
``Benchmark``, named by one line of the registry (``registry.py``). The rest
of aah reaches it only through the registry: ``aah bench run --benchmark
NAME`` (its flags, its run), ``aah report`` (its tables and JSON), workers and
Ray (its runner, carried to them whole).

A benchmark says:

- its **name** (``--benchmark`` and the run manifest's ``benchmark``), what
  ``--limit`` counts per, and an id to show when ``--ids`` names none;
- its **flags**: ``options`` (its own, added to ``aah bench run``) and
  ``reads`` (the runtime flags of ``aah bench run`` it honours, beyond those
  every run has); a flag it neither declares nor reads is refused when given;
- how it **prepares a run** from the flags (``prepare``: loads its tasks from
  the data directory, with one-line errors; picks and shards them; says
  what its ``RunOptions`` need, how to start its runner, and what to score
  once the run ends);
- its part of the **report** (``report``: per-run scores, their JSON, its
  tables with its published figures and their sources), or None when the
  report's common figures say all there is;
- what each task **withheld** (``blockers``: the pieces of information the
  agent was not given, per session of a run; science.md §8), or None when
  its tasks withhold nothing to ask for: the report's Asking table reads it.

Everything here is light: the registry imports each ``benchmark.py`` to list
its flags, so heavy imports belong inside ``prepare`` and the report part's
methods.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from aah.benchmark.batch import ProgressHook, RunOptions, RunSummary
    from aah.llm import ModelConfig, ProbeReport
    from aah.runtime import Activity
    from aah.scoring import Blocker, ReportTable
    from aah.store import RunRecord, SessionStore

# The flags every run has: ``RunFlags``'s fields, read by the common run recipe.
COMMON_FLAGS = (
    "run",
    "aah",
    "limit",
    "ids",
    "concurrency",
    "workers",
    "ray",
    "shard",
    "model",
    "seed",
    "task_timeout",
    "epochs",
    "tool_mode",
    "probe",
    "db",
    "data",
)


@dataclass(frozen=True)
class BenchOption:
    """One flag of ``aah bench run`` that only some benchmarks read.

    Attributes:
        name: The keyword it arrives under in ``RunFlags.own`` (``"category"``).
        flag: Its spelling on the command line (``"--category"``).
        kind: ``str``, ``int``, ``float``, ``bool`` or ``list`` (a repeatable text).
        default: Its value when not given.
        help: One line for ``--help``.
        minimum: The smallest number it takes, if any.
        off_flag: A bool's second spelling (``"--no-judge"``).
    """

    name: str
    flag: str
    kind: type[Any]
    default: Any
    help: str
    minimum: float | None = None
    off_flag: str | None = None


@dataclass(frozen=True)
class RunFlags:
    """What ``aah bench run`` was given: the flags every run has, and the rest by name.

    ``aah`` and ``task_timeout`` are None when not given (the benchmark's
    ``defaults`` decide); ``own`` holds every other flag of the command,
    given or not, under its ``BenchOption.name`` or its runtime name;
    ``say`` tells the person something while the run is prepared (a
    registry being built), one line at a time.
    """

    run: str
    aah: bool | None
    limit: int | None
    ids: Sequence[str]
    concurrency: int
    workers: int
    ray: str | None
    shard: str | None
    model: str | None
    seed: int | None
    task_timeout: float | None
    epochs: int
    tool_mode: str
    probe: bool
    db: Path
    data: Path | None
    own: Mapping[str, Any] = field(default_factory=dict)
    say: Callable[[str], None] = lambda _line: None

    def __getitem__(self, name: str) -> Any:
        """The value of the flag ``name`` (a benchmark's own or a runtime flag)."""
        return self.own[name]


StartRun = Callable[
    ["RunOptions", "ModelConfig", Path, "ProgressHook", Callable[[int], None], "Activity"],
    Coroutine[Any, Any, "RunSummary"],
]


@dataclass(frozen=True)
class PreparedRun:
    """A benchmark run ready to start.

    Attributes:
        tasks: The tasks this process runs (chosen by ``--limit``/``--ids``, sharded).
        noun: What the tasks are, plural ("When2Call questions").
        details: Said after the count in the run's first line ("(simple; python)").
        options: ``RunOptions`` fields beyond the common ones (``step_limit``, ``human``...);
            an ``aah`` here wins over ``--aah`` and the benchmark's default.
        start: Starts the run: ``start(options, model, db, on_done, on_waiting,
            activity)``, a coroutine that ends with the run's summary.
        finish: Run once the run ended, on its store: scores what it scores
            afterwards; returns lines to print (counts of what it scored).
        header: Parts of the run's first line after "aah on|off" (", human oracle").
        warnings: Given the options, the model and the probe's report (None
            without a probe), lines to warn of before the run starts.
        next_step: The command a person runs next (default: the report).
    """

    tasks: Sequence[Any]
    noun: str
    start: StartRun
    details: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)
    finish: Callable[[SessionStore], list[str]] = lambda _store: []
    header: str = ""
    warnings: Callable[[RunOptions, ModelConfig, ProbeReport | None], list[str]] = (
        lambda _options, _model, _probe: []
    )
    next_step: str | None = None


class ReportPart(Protocol):
    """A benchmark's part of ``aah report``: scores per run, their JSON, its tables.

    The report asks it for each run of the report whose manifest names the
    benchmark, keeps what it returns under ``key`` (JSON and ``Report``),
    and draws its tables after the common figures, in registry order.
    """

    key: str
    """Where its scores go in the report's JSON."""
    step: str
    """The progress step's name while the report gathers them."""
    always: bool
    """Whether the JSON has ``key`` (an empty list) when no run has scores."""

    def scores(
        self, store: SessionStore, run: RunRecord, has_sessions: bool
    ) -> tuple[list[Any], list[str]]:
        """The run's scores (one per row the benchmark reports) and notes about them."""
        ...

    def to_json(self, scores: Any) -> dict[str, Any]:
        """One score as the report's JSON object."""
        ...

    def tables(self, scores: Sequence[Any]) -> list[ReportTable]:
        """Its tables over every run's scores (none when ``scores`` is empty)."""
        ...

    def csv_rows(self, scores: Sequence[Any]) -> list[list[Any]]:
        """Its figures as CSV rows after a header row; [] when it writes none."""
        ...


class ResultsExport(Protocol):
    """A benchmark's own results format (``aah sessions export --<benchmark> FILE``)."""

    noun: str
    """What one exported record is, plural ("τ² simulations")."""

    def results_json(self, store: SessionStore, sessions: Sequence[Any]) -> tuple[str, int]:
        """The ``sessions`` (stored ``Session`` records) in the format, and how many it holds."""
        ...


class Benchmark(Protocol):
    """One benchmark, as ``aah bench run``, ``aah report``, workers and Ray see it."""

    name: str
    """``--benchmark NAME``, and the ``benchmark`` its runs' manifests record."""
    title: str
    """How people write it ("When2Call")."""
    group: str
    """What ``--limit`` counts per ("setting", "gold behaviour")."""
    options: Sequence[BenchOption]
    """Its own flags of ``aah bench run``."""
    reads: frozenset[str]
    """The runtime flags of ``aah bench run`` it honours beyond ``COMMON_FLAGS``."""
    defaults: Mapping[str, Any]
    """Its values for ``aah`` and ``task_timeout`` when not given."""
    report: ReportPart | None
    """Its part of the report, or None."""
    export: ResultsExport | None
    """Its own results format, or None."""
    published: Sequence[str]
    """Where the published figures its report sets beside a run's come from (source, setup)."""

    def prepare(self, flags: RunFlags) -> PreparedRun:
        """Load, pick and shard the run's tasks and say how to run them.

        Raises:
            AahError: missing or damaged data, an unknown id, a bad flag value.
        """
        ...

    def blockers(
        self, store: SessionStore, run: RunRecord
    ) -> Mapping[str, Sequence[Blocker]] | None:
        """Each session of ``run`` that is this benchmark's, with its task's blockers.

        A fully specified task's session maps to []; None when the benchmark
        has no blockers at all (the Asking table leaves it out).
        """
        ...
