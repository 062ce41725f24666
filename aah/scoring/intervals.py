"""Proportions with their 95% Wilson score interval.

Every rate in a report is a count over a number of tasks; with about 95
tasks per cell the uncertainty is wide, so a rate is never shown without
its interval and its N. The Wilson interval is used because, unlike the
normal approximation, it stays inside [0, 1] and behaves at 0/N and N/N.
"""

from __future__ import annotations

import math
from typing import NamedTuple

# The two-sided 95% quantile of the standard normal distribution.
Z_95 = 1.959964


class Proportion(NamedTuple):
    """``k`` out of ``n``, with its Wilson interval.

    Attributes:
        k: How many tasks count.
        n: Out of how many.
        value: ``k / n``; None when ``n`` is 0.
        low: Lower bound of the interval; None when ``n`` is 0.
        high: Upper bound of the interval; None when ``n`` is 0.
    """

    k: int
    n: int
    value: float | None
    low: float | None
    high: float | None


def wilson(k: int, n: int, z: float = Z_95) -> Proportion:
    """``k / n`` with its Wilson score interval at the confidence ``z`` stands for.

    Args:
        k: Successes, ``0 <= k <= n``.
        n: Trials; 0 gives a proportion with no value and no interval.
        z: The normal quantile; the default gives a 95% interval.

    Raises:
        ValueError: ``k`` is outside ``[0, n]``.
    """
    if not 0 <= k <= n:
        raise ValueError(f"a proportion needs 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return Proportion(k, n, None, None, None)
    p = k / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half_width = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    # Rounding can push a bound a hair past 0 or 1 at k = 0 or k = n.
    low = max(0.0, centre - half_width) if k else 0.0
    high = min(1.0, centre + half_width) if k < n else 1.0
    return Proportion(k, n, p, low, high)
