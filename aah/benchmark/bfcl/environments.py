"""BFCL's own stateful APIs (a file system, a trading bot, a car...) as one entry's environment.

``BfclEnvironment`` is one entry's instances of BFCL's API classes (loaded
from the pinned wheel by ``wheel.api_classes``), fresh each time: calls run
on them as BFCL runs them (``execute``, ``aexecute``), behind the entry's
fence (``aah.benchmark.fence``: a time bound per call, whatever they raise or
return as the result text; ``call_guards`` for the calls no thread could
stop), and their public attributes are the state the checker compares
(``differences``) and the log shows (``state``).
"""

from __future__ import annotations

import copy
import datetime
import decimal
import inspect
import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from aah.benchmark.bfcl.call_guards import guarded_answer
from aah.benchmark.bfcl.wheel import api_classes
from aah.benchmark.fence import Fence, argument_refusal
from aah.errors import AahError

# Classes with no state: BFCL neither loads a scenario into them nor shows their state.
STATELESS_CLASSES = frozenset({"MathAPI"})
# Names BFCL refuses to call, whatever class would answer them.
FORBIDDEN_NAMES = frozenset({"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"})
ERROR_PREFIX = "Error during execution: "
_MISSING = object()


def bfcl_fence(seconds: float | None = None) -> Fence:
    """One entry's fence, its failures written as BFCL writes them (``Error during execution: ``).

    Args:
        seconds: The time one call may run; ``AAH_BENCH_CALL_TIMEOUT`` when None.
    """
    return Fence(seconds, error_prefix=ERROR_PREFIX)


class BfclEnvironment:
    """One entry's API instances, built fresh from its ``initial_config``, behind a fence.

    Each class in ``involved_classes`` gets a new instance with its scenario
    (a deep copy of the config, BFCL's long-context padding when
    ``long_context``; none for the stateless ``MathAPI``). Nothing is shared
    with another environment: BFCL's long-context padding puts its module's
    own records into the state, so those instances get a copy of their state
    (:meth:`pairs_for_task` also builds the pair that BFCL's own checker lets
    share them).
    """

    def __init__(
        self,
        involved_classes: Sequence[str],
        initial_config: Mapping[str, Any],
        *,
        long_context: bool = False,
        classes: Mapping[str, type] | None = None,
        fence: Fence | None = None,
    ) -> None:
        """Build the instances.

        Args:
            involved_classes: The API classes, in the entry's order.
            initial_config: Each class's starting state, by class name.
            long_context: Whether to load BFCL's long-context padding.
            classes: The API classes (``api_classes()`` when None).
            fence: The entry's fence (``bfcl_fence()`` when None); this
                environment's calls run in an enclosure of their own.

        Raises:
            AahError: a class is not one of BFCL's, or the wheel cannot be loaded.
        """
        found = classes if classes is not None else api_classes()
        instances = _new_instances(involved_classes, initial_config, long_context, found)
        if long_context:
            for instance in instances.values():
                instance.__dict__ = copy.deepcopy(instance.__dict__)
        self._adopt(instances, fence)

    def _adopt(self, instances: dict[str, Any], fence: Fence | None) -> None:
        self._enclosure = (fence if fence is not None else bfcl_fence()).enclosure()
        self._instances = instances
        self._methods: dict[str, Callable[..., Any]] = {}
        self._owners: dict[str, str] = {}
        for class_name, instance in instances.items():
            # A later class wins a name two classes share, as in BFCL.
            for name, method in inspect.getmembers(instance, inspect.ismethod):
                if not name.startswith("_"):
                    self._methods[name] = method
                    self._owners[name] = class_name

    @classmethod
    def for_task(
        cls, task: Any, *, classes: Mapping[str, type] | None = None, fence: Fence | None = None
    ) -> BfclEnvironment:
        """The environment of a ``MultiTurnTask`` (its classes, config and long-context flag)."""
        return cls(
            task.involved_classes,
            task.initial_config,
            long_context=task.long_context,
            classes=classes,
            fence=fence,
        )

    @classmethod
    def pairs_for_task(
        cls, task: Any, *, classes: Mapping[str, type] | None = None, fence: Fence | None = None
    ) -> tuple[EnvironmentPair, EnvironmentPair | None]:
        """A model's and a ground truth's environments of ``task``: aah's pair, then BFCL's.

        aah's pair shares nothing. bfcl-eval loads its two instances from one
        module, so in a long-context entry they hold the same padding records
        (a charge to a padding card by the model's calls is in the ground
        truth's state too): BFCL's pair shares those with each other, and
        with no other entry. It is None when it would share nothing (aah's
        pair is then BFCL's too).
        """
        found = classes if classes is not None else api_classes()
        if not task.long_context:
            return EnvironmentPair(
                *(cls.for_task(task, classes=found, fence=fence) for _ in "mt")
            ), None
        loaded = [
            _new_instances(task.involved_classes, task.initial_config, True, found) for _ in "mt"
        ]
        states = [[vars(instance) for instance in side.values()] for side in loaded]
        # One copy of each side, and what the two sides reach in common.
        seen: list[dict[int, Any]] = [{}, {}]
        own = [copy.deepcopy(side, memo) for side, memo in zip(states, seen, strict=True)]
        shared = None
        if seen[0].keys() & seen[1].keys():
            both = copy.deepcopy(states)  # one copy: what the sides share stays shared
            shared = EnvironmentPair(
                *(
                    _environment(side, copied, fence)
                    for side, copied in zip(loaded, both, strict=True)
                )
            )
        strict = EnvironmentPair(
            *(_environment(side, copied, fence) for side, copied in zip(loaded, own, strict=True))
        )
        return strict, shared

    @property
    def classes(self) -> tuple[str, ...]:
        """The involved classes, in order."""
        return tuple(self._instances)

    @property
    def stopped(self) -> str | None:
        """Why this environment runs no more calls (one ran out of time), or None."""
        return self._enclosure.stopped

    def method_names(self) -> set[str]:
        """The functions a call may name."""
        return set(self._methods)

    def parameter_names(self) -> dict[str, tuple[str, ...]]:
        """Each function's parameters in order (to name positional arguments)."""
        return {
            name: tuple(inspect.signature(method).parameters)
            for name, method in self._methods.items()
        }

    def execute(self, name: str, arguments: Mapping[str, Any]) -> str:
        """Run one call as BFCL runs it, and return its result as BFCL writes it.

        A string result comes back as it is, a dict as JSON (else its
        ``str``), anything else as ``str``. A forbidden or unknown name, bad
        arguments or any exception come back as ``Error during execution:
        <message>``, with the message BFCL's ``eval`` would give; so does a
        result that cannot be printed (an ``int`` over 4,300 digits), as in
        BFCL. The call runs behind the entry's fence: at most the time bound
        (then ``... took longer than ...``, and every later call of this
        environment answers that it is stopped), arguments past the fence's
        bounds refused, and ``call_guards``' calls answered without running.
        This thread waits for it: from a coroutine, use :meth:`aexecute`.
        """
        prepared = self._prepare(name, arguments)
        if isinstance(prepared, str):
            return prepared
        return self._enclosure.run(prepared, label=name, key=lambda: call_key(name, arguments))

    async def aexecute(self, name: str, arguments: Mapping[str, Any]) -> str:
        """:meth:`execute` awaited: the call runs in another thread, the event loop goes on."""
        prepared = self._prepare(name, arguments)
        if isinstance(prepared, str):
            return prepared
        return await self._enclosure.arun(
            prepared, label=name, key=lambda: call_key(name, arguments)
        )

    def _prepare(self, name: str, arguments: Mapping[str, Any]) -> str | Callable[[], str]:
        """The call's answer when it must not run, else the call (its result as BFCL writes it)."""
        # BFCL checks the part after a dot, as in ``os.kill``.
        checked = name.split(".")[1] if "." in name else name
        if checked in FORBIDDEN_NAMES:
            return f"{ERROR_PREFIX}Function call {checked} is not allowed."
        method = self._methods.get(name)
        if method is None:
            return f"{ERROR_PREFIX}name {name.split('.')[0]!r} is not defined"
        refused = argument_refusal(dict(arguments))
        if refused is not None:
            return f"{ERROR_PREFIX}{refused}: aah does not run this call"
        answer = guarded_answer(self._owners[name], name, arguments, ERROR_PREFIX)
        if answer is not None:
            return answer

        def call() -> str:
            # Each call gets its own values, as BFCL's eval of the call text does: a
            # method that keeps a list it was given never shares it with the caller.
            return bfcl_text(method(**copy.deepcopy(dict(arguments))))

        return call

    def state(self) -> dict[str, dict[str, Any]]:
        """Each stateful instance's public attributes, as JSON-safe values (for the log)."""
        return {
            class_name: {key: json_safe(value) for key, value in public_state(instance).items()}
            for class_name, instance in self._instances.items()
            if class_name not in STATELESS_CLASSES
        }

    def differences(self, expected: BfclEnvironment) -> dict[str, dict[str, tuple[Any, Any]]]:
        """Where this state is not ``expected``'s, by class and attribute: ``(this, expected)``.

        BFCL's state check: every public attribute of each of ``expected``'s
        instances must equal (``==``, on the real values) the same attribute
        here. An attribute missing here is a difference (its value ``None``).
        """
        found: dict[str, dict[str, tuple[Any, Any]]] = {}
        for class_name, want in expected._instances.items():
            have = self._instances.get(class_name, _MISSING)
            for key, value in public_state(want).items():
                mine = getattr(have, key, _MISSING)
                if mine is _MISSING or mine != value:
                    found.setdefault(class_name, {})[key] = (
                        None if mine is _MISSING else mine,
                        value,
                    )
        return found


class EnvironmentPair(NamedTuple):
    """The environments a check runs the model's calls and the ground truth's on."""

    model: BfclEnvironment
    truth: BfclEnvironment


def _new_instances(
    involved_classes: Sequence[str],
    initial_config: Mapping[str, Any],
    long_context: bool,
    classes: Mapping[str, type],
) -> dict[str, Any]:
    """The instances as BFCL loads them (long-context padding as its module's own records)."""
    instances: dict[str, Any] = {}
    for class_name in involved_classes:
        if class_name not in classes:
            raise AahError(
                f"no BFCL API class {class_name!r}: use one of {', '.join(sorted(classes))}"
            )
        instance = classes[class_name]()
        if class_name not in STATELESS_CLASSES:
            config = copy.deepcopy(initial_config.get(class_name, {}))
            instance._load_scenario(config, long_context=long_context)
        instances[class_name] = instance
    return instances


def _environment(
    loaded: Mapping[str, Any], states: Sequence[dict[str, Any]], fence: Fence | None
) -> BfclEnvironment:
    """An environment of new instances of ``loaded``'s classes, holding ``states``."""
    instances: dict[str, Any] = {}
    for (class_name, instance), state in zip(loaded.items(), states, strict=True):
        fresh = object.__new__(type(instance))
        fresh.__dict__ = state
        instances[class_name] = fresh
    environment = BfclEnvironment.__new__(BfclEnvironment)
    environment._adopt(instances, fence)
    return environment


def bfcl_text(result: Any) -> str:
    """A result as BFCL's executor writes it: a string as it is, a dict as JSON, else ``str``.

    What ``str`` raises (an ``int`` over 4,300 digits) is raised, as in BFCL,
    whose caller makes it the ``Error during execution`` text.
    """
    if type(result) is str:
        return result
    if type(result) is dict:
        try:
            return json.dumps(result)
        except Exception:  # noqa: BLE001 - BFCL falls back to str() on any failure
            return str(result)
    return str(result)


def call_key(name: str, arguments: Mapping[str, Any]) -> str:
    """One call's identity (its name and arguments) as text."""
    try:
        return json.dumps([name, arguments], sort_keys=True, default=repr, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):  # keys of mixed types, say
        return repr((name, dict(arguments)))


def public_state(instance: Any) -> dict[str, Any]:
    """An instance's public (not underscore) attributes, the state BFCL compares."""
    return {key: value for key, value in vars(instance).items() if not key.startswith("_")}


def json_safe(value: Any, _path: frozenset[int] = frozenset()) -> Any:
    """``value`` as plain JSON values: objects as their public attributes, cycles cut short.

    A directory's ``parent`` (an object already on the way down) becomes a
    short ``<Directory: name>``; sets are sorted; dates are ISO text; a float
    that JSON cannot hold becomes its text.
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if id(value) in _path:
        return _short(value)
    inner = _path | {id(value)}
    if isinstance(value, Mapping):
        return {
            key if isinstance(key, str) else str(key): json_safe(item, inner)
            for key, item in value.items()
        }
    if isinstance(value, set | frozenset):
        return sorted((json_safe(item, inner) for item in value), key=repr)
    if isinstance(value, list | tuple):
        return [json_safe(item, inner) for item in value]
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return {key: json_safe(item, inner) for key, item in public_state(value).items()}
    return str(value)


def _short(value: Any) -> str:
    name = getattr(value, "name", None)
    kind = type(value).__name__
    return f"<{kind}: {name}>" if isinstance(name, str) else f"<{kind}>"
