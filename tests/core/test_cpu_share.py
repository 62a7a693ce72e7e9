"""`CpuShare`, the bound on background embeddings (issue 36 §6), on a simulated clock."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routecore.core.cpu_share import CpuShare
from routecore.errors import InvalidArgumentError


class Clock:
    """A clock that only moves when work is done or a caller sleeps."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def run(budget: CpuShare, clock: Clock, pieces: list[float]) -> float:
    """Do ``pieces`` of work back to back; the seconds the caller was held back."""
    held = 0.0
    for w in pieces:
        held += budget.wait()
        clock.now += w
        budget.spent(w)
    return held


def test_a_burst_runs_at_once_then_work_keeps_to_the_share():
    clock = Clock()
    budget = CpuShare(0.25, burst=0.1, clock=clock, sleep=clock.sleep)
    assert run(budget, clock, [0.01] * 10) == 0.0  # a lesson now and then never waits
    run(budget, clock, [0.01] * 400)
    # sustained: 4 s of work took about 16 s, a quarter of one core
    assert 4.0 / clock.now == pytest.approx(0.25, rel=0.05)
    assert budget.waited == pytest.approx(clock.now - 4.1, rel=0.05)


def test_idle_time_refills_the_burst_and_share_one_lifts_the_bound():
    clock = Clock()
    budget = CpuShare(0.5, burst=0.05, clock=clock, sleep=clock.sleep)
    run(budget, clock, [0.01] * 20)
    clock.now += 10.0
    assert run(budget, clock, [0.01] * 5) == 0.0
    free = CpuShare(1, clock=clock, sleep=clock.sleep)
    assert run(free, clock, [1.0] * 5) == 0.0


@given(
    share=st.floats(0.01, 1.0),
    burst=st.floats(0.0, 2.0),
    pieces=st.lists(st.floats(0.0, 0.2), min_size=1, max_size=60),
)
def test_work_never_runs_ahead_of_its_share(share, burst, pieces):
    clock = Clock()
    budget = CpuShare(share, burst, clock=clock, sleep=clock.sleep)
    done = 0.0
    for w in pieces:
        budget.wait()
        # before each piece, the work done so far fits in the burst plus the share of the time gone
        assert done <= burst + share * clock.now + 1e-9
        clock.now += w
        budget.spent(w)
        done += w


@pytest.mark.parametrize("share", [0, -0.1, 1.5, float("nan"), "0.2", True])
def test_a_bad_share_is_refused(share):
    with pytest.raises(InvalidArgumentError):
        CpuShare(share)


@pytest.mark.parametrize("burst", [-1, float("inf"), float("nan"), "1"])
def test_a_bad_burst_is_refused(burst):
    with pytest.raises(InvalidArgumentError):
        CpuShare(0.5, burst)
