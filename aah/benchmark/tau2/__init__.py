"""τ²-bench (Sierra Research) through aah: τ²'s own code run out of its pinned wheel.

- ``loader``: τ²'s modules read out of the sha256-checked wheel and run as
  private modules (``tau2_code``, ``find_tau2_wheel``); ``stand_ins``: the
  few imports aah satisfies without the real package, each documented.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.benchmark.tau2.loader import Tau2Code, find_tau2_wheel, tau2_code

__all__ = ["Tau2Code", "find_tau2_wheel", "tau2_code"]

_WHERE = {
    "Tau2Code": "aah.benchmark.tau2.loader",
    "find_tau2_wheel": "aah.benchmark.tau2.loader",
    "tau2_code": "aah.benchmark.tau2.loader",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
