"""A burst of steps is spread over loop turns while the loop has room; a busy loop's steps are not.

The clocks are fakes: each step "costs" by moving them, so which loop turn
a step runs in is exact, whatever the machine's load.
"""

import asyncio
from dataclasses import dataclass, field

import pytest

from aah.loop_turns import BUSY_LIMIT, LOAD_SECONDS, TurnSharing, take_turn

STEP = 0.0009  # what each step costs (seconds of the loop thread's CPU)
BUDGET = 0.002


@dataclass
class Clocks:
    """The wall clock and the loop thread's CPU clock, moved by the test."""

    wall: float = 100.0
    cpu: float = 0.0
    turn: int = 0  # the loop turn under way, counted by ``count_turns``
    ran: list[tuple[str, int]] = field(default_factory=list)

    def idle(self, seconds: float) -> None:
        self.wall += seconds

    def work(self, seconds: float) -> None:
        self.wall += seconds
        self.cpu += seconds


async def count_turns(clocks: Clocks, stop: asyncio.Event) -> None:
    while not stop.is_set():
        clocks.turn += 1
        await asyncio.sleep(0)


def sharing_on(clocks: Clocks) -> TurnSharing:
    loop = asyncio.get_running_loop()
    return TurnSharing(loop, BUDGET, clock=lambda: clocks.wall, cpu_clock=lambda: clocks.cpu)


async def step(sharing: TurnSharing, clocks: Clocks, name: str) -> None:
    await sharing.take_turn()
    clocks.ran.append((name, clocks.turn))
    clocks.work(STEP)


async def run_steps(sharing: TurnSharing, clocks: Clocks, names: list[str]) -> None:
    stop = asyncio.Event()
    counter = asyncio.create_task(count_turns(clocks, stop))
    await asyncio.gather(*(step(sharing, clocks, name) for name in names))
    stop.set()
    await counter


def per_turn(clocks: Clocks) -> list[int]:
    turns: dict[int, int] = {}
    for _, turn in clocks.ran:
        turns[turn] = turns.get(turn, 0) + 1
    return [turns[t] for t in sorted(turns)]


async def test_a_burst_on_a_loop_with_room_is_spread_in_the_order_it_came() -> None:
    clocks = Clocks()
    sharing = sharing_on(clocks)
    clocks.idle(4 * LOAD_SECONDS)  # sessions waiting on their model: the loop idles
    names = [f"s{i}" for i in range(20)]
    await run_steps(sharing, clocks, names)
    assert [name for name, _ in clocks.ran] == names  # first come, first let on
    counts = per_turn(clocks)
    # No turn holds more than its budget and the one step that found it spent.
    assert sum(counts) == 20 and max(counts) * STEP <= BUDGET + STEP
    assert counts[1:] == [2] * 8 + [1]  # as many as fit, at the cost seen
    assert sharing.waiting == 0 and sharing.busy < BUSY_LIMIT


async def test_a_busy_loop_lets_every_step_straight_on() -> None:
    # A loop with no idle time (every model answers at once) gains nothing
    # from spreading: each turn waits behind as much work either way.
    clocks = Clocks()
    sharing = sharing_on(clocks)
    await sharing.take_turn()
    clocks.work(4 * LOAD_SECONDS)
    await run_steps(sharing, clocks, [f"s{i}" for i in range(20)])
    assert sharing.busy > BUSY_LIMIT
    assert per_turn(clocks)[-1] == 20


async def test_a_loop_that_gets_busy_lets_the_whole_line_on() -> None:
    # Steps that each bring two more: the loop has no idle time left, so the
    # line goes on at once instead of a few a turn.
    clocks = Clocks()
    sharing = sharing_on(clocks)
    clocks.idle(4 * LOAD_SECONDS)
    stop = asyncio.Event()
    counter = asyncio.create_task(count_turns(clocks, stop))
    tasks: list[asyncio.Task[None]] = []

    async def chain(name: str, depth: int) -> None:
        await step(sharing, clocks, name)
        clocks.work(0.01)  # and more work that is no step
        if depth:
            tasks.extend(asyncio.create_task(chain(f"{name}.{i}", depth - 1)) for i in range(2))

    tasks += [asyncio.create_task(chain(f"r{i}", 6)) for i in range(10)]
    while not all(task.done() for task in tasks):
        await asyncio.gather(*tasks)
    stop.set()
    await counter
    counts = per_turn(clocks)
    assert sum(counts) == 10 * (2**7 - 1) and sharing.waiting == 0
    assert counts[0] * STEP <= BUDGET + STEP  # spread while there was room
    assert max(counts) > 100  # then all at once
    assert sharing.busy > BUSY_LIMIT


async def test_a_waiting_step_that_is_cancelled_leaves_the_line() -> None:
    clocks = Clocks()
    sharing = sharing_on(clocks)
    clocks.idle(4 * LOAD_SECONDS)
    stop = asyncio.Event()
    counter = asyncio.create_task(count_turns(clocks, stop))
    tasks = [asyncio.create_task(step(sharing, clocks, f"s{i}")) for i in range(6)]
    await asyncio.sleep(0)  # the first three run (2 ms of budget); the others wait
    assert sharing.waiting == 3
    tasks[4].cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    stop.set()
    await counter
    assert [name for name, _ in clocks.ran] == ["s0", "s1", "s2", "s3", "s5"]
    assert sharing.waiting == 0
    with pytest.raises(asyncio.CancelledError):
        tasks[4].result()


async def test_the_busy_share_follows_the_loop_threads_cpu() -> None:
    clocks = Clocks()
    sharing = sharing_on(clocks)
    for _ in range(100):  # half busy, in small steps, for 20 time constants
        clocks.work(LOAD_SECONDS / 10)
        clocks.idle(LOAD_SECONDS / 10)
        await sharing.take_turn()
    assert 0.4 < sharing.busy < 0.6


def test_each_event_loop_shares_its_own_turns() -> None:
    async def steps() -> None:
        for _ in range(5):
            await take_turn()

    asyncio.run(steps())
    asyncio.run(steps())  # a new loop: no turn of the old one is waited for
