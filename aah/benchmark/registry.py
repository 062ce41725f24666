"""The benchmarks aah knows, one line each: how every other part of aah finds them.

Each line names a benchmark and where its ``Benchmark`` object lives
(``module:attribute``); a module is imported the first time its benchmark
is asked for, so a run of one benchmark loads no other's code (listing every
benchmark's flags loads only their light ``benchmark.py`` modules). Adding a
benchmark is its folder (see ``protocol.py``) and one line here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from aah.errors import AahError
from aah.lazy import load_module

if TYPE_CHECKING:
    from aah.benchmark.protocol import Benchmark, ReportPart

REGISTRY: dict[str, str] = {
    "fail-talms": "aah.benchmark.failtalms.benchmark:BENCHMARK",
    "when2call": "aah.benchmark.when2call.benchmark:BENCHMARK",
    "bfcl": "aah.benchmark.bfcl.benchmark:BENCHMARK",
    "tau2": "aah.benchmark.tau2.benchmark:BENCHMARK",
    "acebench": "aah.benchmark.acebench.benchmark:BENCHMARK",
}
_LOADED: dict[str, Benchmark] = {}


def benchmark_names() -> tuple[str, ...]:
    """Every benchmark's name, in registry order (the report's order too)."""
    return tuple(REGISTRY)


def get_benchmark(name: str) -> Benchmark:
    """The benchmark called ``name``.

    Raises:
        AahError: no benchmark has that name.
    """
    if name not in REGISTRY:
        raise AahError(f"unknown --benchmark {name!r}: use {' or '.join(REGISTRY)}")
    if name not in _LOADED:
        module, _, attribute = REGISTRY[name].partition(":")
        found = cast("Benchmark", getattr(load_module(module), attribute))
        if found.name != name:
            raise AahError(f"the registry's {name!r} names the benchmark {found.name!r}")
        _LOADED[name] = found
    return _LOADED[name]


def all_benchmarks() -> list[Benchmark]:
    """Every benchmark, in registry order."""
    return [get_benchmark(name) for name in REGISTRY]


def report_parts() -> list[tuple[Benchmark, ReportPart]]:
    """Each benchmark that has a part of the report, with that part, in registry order."""
    return [(b, b.report) for b in all_benchmarks() if b.report is not None]
