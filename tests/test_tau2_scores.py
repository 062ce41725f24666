"""τ²'s pass^k per domain (science.md §9): every k with the seeded bootstrap interval over tasks
that repeated runs of every benchmark share, pass^1 also a proportion with its Wilson interval."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from aah.benchmark.tau2.scores import pass_hat_estimates
from aah.scoring import pass_hat_k, wilson
from aah.scoring.repeats import bootstrap_mean


def test_every_pass_k_has_the_shared_bootstrap_interval() -> None:
    """Four tasks of four epochs (4, 3, 1 and 0 successes): pass^2 is (1 + 3/6 + 0 + 0) / 4;
    its interval is the bootstrap over tasks, not Wilson's 2 of 4 tasks it was read as."""
    outcomes = [[True] * 4, [True, True, True, False], [True, False, False, False], [False] * 4]
    estimates = pass_hat_estimates(outcomes, 4)
    assert [e.value for e in estimates] == [0.5, 0.375, 0.3125, 0.25]
    for k, estimate in enumerate(estimates, 1):
        assert estimate == bootstrap_mean([pass_hat_k(4, c, k) for c in (4, 3, 1, 0)])
        assert estimate.tasks == 4
    second = estimates[1]
    assert second.low is not None and second.high is not None
    assert second.low <= 0.375 <= second.high
    assert (second.low, second.high) != (wilson(2, 4).low, wilson(2, 4).high)
    assert pass_hat_estimates(outcomes, 4) == estimates  # seeded: the same figures every time


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    st.integers(min_value=1, max_value=4).flatmap(
        lambda epochs: st.lists(
            st.lists(st.booleans(), min_size=epochs, max_size=epochs), min_size=1, max_size=8
        )
    )
)
def test_pass_k_and_its_bounds_never_rise_with_k(outcomes: list[list[bool]]) -> None:
    epochs = len(outcomes[0])
    estimates = pass_hat_estimates(outcomes, epochs)
    assert len(estimates) == epochs
    bounds: list[tuple[float, float, float]] = []
    for e in estimates:
        assert e.low is not None and e.value is not None and e.high is not None
        assert 0.0 <= e.low <= e.value <= e.high <= 1.0
        bounds.append((e.low, e.value, e.high))
    for before, after in zip(bounds, bounds[1:], strict=False):
        assert all(b >= a for b, a in zip(before, after, strict=True))
