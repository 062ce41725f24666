"""A burst of steps after an idle spell is spread over loop turns; a busy loop's steps are not.

The clocks are fakes: each step "costs" by moving them, so which loop turn
a step runs in is exact, whatever the machine's load.
"""

import asyncio
from dataclasses import dataclass, field

import pytest

from aah.loop_turns import FLAT_TURNS, LULL, TurnSharing, take_turn

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


def sharing_on(clocks: Clocks, *, busy: bool = True) -> TurnSharing:
    loop = asyncio.get_running_loop()
    return TurnSharing(
        loop, BUDGET, clock=lambda: clocks.wall, cpu_clock=lambda: clocks.cpu, busy=busy
    )


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


async def test_a_burst_after_an_idle_spell_is_spread_in_the_order_it_came() -> None:
    clocks = Clocks()
    sharing = sharing_on(clocks)
    clocks.idle(2 * LULL)
    names = [f"s{i}" for i in range(20)]
    await run_steps(sharing, clocks, names)
    assert [name for name, _ in clocks.ran] == names  # first come, first let on
    counts = per_turn(clocks)
    # No turn holds more than its budget and the one step that found it spent.
    assert sum(counts) == 20 and max(counts) * STEP <= BUDGET + STEP
    assert counts[1:] == [2] * 8 + [1]  # as many as fit, at the cost seen
    assert sharing.waiting == 0


async def test_a_busy_loop_lets_every_step_straight_on() -> None:
    clocks = Clocks()
    sharing = sharing_on(clocks)
    clocks.work(LULL * 10)  # busy, not idle: no burst begins
    await run_steps(sharing, clocks, [f"s{i}" for i in range(20)])
    assert per_turn(clocks) == [20]


async def test_a_spell_without_steps_but_busy_begins_no_burst() -> None:
    # A garbage collection or a long computation is no idle spell: the steps
    # held up behind it are the loop's own work, not a burst to spread.
    clocks = Clocks()
    sharing = sharing_on(clocks)
    clocks.work(0.050)
    clocks.idle(LULL / 2)
    clocks.ran.clear()
    await run_steps(sharing, clocks, [f"s{i}" for i in range(10)])
    assert per_turn(clocks) == [10]
    clocks.idle(2 * LULL)
    clocks.ran.clear()
    await run_steps(sharing, clocks, [f"s{i}" for i in range(10)])
    assert max(per_turn(clocks)) * STEP <= BUDGET + STEP


async def test_a_burst_whose_line_never_shortens_ends_and_lets_all_on() -> None:
    # Each step let on brings two more (a loop that stays busy): after
    # FLAT_TURNS turns without a shorter line, all waiting go on at once,
    # and the steps after them go straight on (no idle spell: no burst).
    clocks = Clocks()
    sharing = sharing_on(clocks)
    clocks.idle(2 * LULL)
    stop = asyncio.Event()
    counter = asyncio.create_task(count_turns(clocks, stop))
    tasks: list[asyncio.Task[None]] = []

    async def chain(name: str, depth: int) -> None:
        await step(sharing, clocks, name)
        if depth:
            tasks.extend(asyncio.create_task(chain(f"{name}.{i}", depth - 1)) for i in range(2))

    tasks += [asyncio.create_task(chain(f"r{i}", 8)) for i in range(10)]
    while not all(task.done() for task in tasks):
        await asyncio.gather(*tasks)
    stop.set()
    await counter
    counts = per_turn(clocks)
    assert sum(counts) == 10 * (2**9 - 1) and sharing.waiting == 0
    ended = next(i for i, count in enumerate(counts) if count * STEP > BUDGET + STEP)
    assert FLAT_TURNS <= ended <= FLAT_TURNS + 2  # spread while the burst lasted
    assert counts[ended] > 2 * FLAT_TURNS  # then the whole line went on at once
    assert len(counts) < ended + 12  # and the steps after it straight on


async def test_a_waiting_step_that_is_cancelled_leaves_the_line() -> None:
    clocks = Clocks()
    sharing = sharing_on(clocks)
    clocks.idle(2 * LULL)
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


async def test_a_new_loops_first_steps_are_a_burst() -> None:
    # Sessions started together: the loop has not run anything yet.
    clocks = Clocks()
    sharing = sharing_on(clocks, busy=False)
    await run_steps(sharing, clocks, [f"s{i}" for i in range(8)])
    assert max(per_turn(clocks)) * STEP <= BUDGET + STEP and len(per_turn(clocks)) == 4


def test_each_event_loop_shares_its_own_turns() -> None:
    async def steps() -> None:
        for _ in range(5):
            await take_turn()

    asyncio.run(steps())
    asyncio.run(steps())  # a new loop: no turn of the old one is waited for
