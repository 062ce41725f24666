"""Extension points are chosen by name: the names, and the one way to pick one.

Each extension point keeps a table from a name to a factory beside the
``Protocol`` it implements:

- ``HUMAN_CHANNELS`` (``aah.runtime.humans``): who answers an interactive session;
- ``BATCH_HUMANS`` (``aah.benchmark.failtalms.humans``): who answers a benchmark task;
- ``HTTP_MODES`` (``aah.tools.http.modes``): how tool calls are answered;
- ``BEHAVIOUR_JUDGES`` (``aah.cli.classify``): who puts replies in When2Call classes.

The names live here, in a module that loads nothing, so the command line can
list them in its help without importing the implementations; each table is
typed by these ``Literal`` types, and a test checks that the two agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal, TypeVar, get_args

from aah.errors import AahError

HumanChannelName = Literal["console", "queue"]
BatchHumanName = Literal["oracle", "simulated", "queue"]
BaseHttpModeName = Literal["live", "record", "replay", "mock"]
HttpModeName = Literal[BaseHttpModeName, "fault"]
BehaviourJudgeName = Literal["rule", "llm"]

HUMAN_CHANNEL_NAMES: tuple[HumanChannelName, ...] = get_args(HumanChannelName)
BATCH_HUMAN_NAMES: tuple[BatchHumanName, ...] = get_args(BatchHumanName)
BASE_HTTP_MODE_NAMES: tuple[BaseHttpModeName, ...] = get_args(BaseHttpModeName)
HTTP_MODE_NAMES: tuple[HttpModeName, ...] = get_args(HttpModeName)
BEHAVIOUR_JUDGE_NAMES: tuple[BehaviourJudgeName, ...] = get_args(BehaviourJudgeName)

Factory = TypeVar("Factory")
Name = TypeVar("Name", bound=str)


def choose(table: Mapping[Name, Factory], name: str, what: str) -> Factory:
    """The factory called ``name`` in ``table``.

    Args:
        table: An extension point's names and factories.
        name: The name asked for (a flag's value, a stored setting).
        what: What the names stand for, for the error, e.g. ``HTTP mode``.

    Raises:
        AahError: No such name; the one-line message lists the valid ones.
    """
    for key, factory in table.items():
        if key == name:
            return factory
    raise AahError(f"unknown {what} {name!r}: use one of {listed(table)}")


def known_name(choices: tuple[Name, ...], name: str, what: str) -> Name:
    """``name`` typed as one of ``choices``, for a flag checked before anything loads.

    Raises:
        AahError: ``name`` is not among ``choices``; the message lists them.
    """
    for choice in choices:
        if choice == name:
            return choice
    raise AahError(f"unknown {what} {name!r}: use one of {listed(choices)}")


def listed(choices: Iterable[str]) -> str:
    """The valid names as a flag's help and an error list them: ``a, b, c``."""
    return ", ".join(choices)
