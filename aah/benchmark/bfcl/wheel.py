"""BFCL's API classes, served from the pinned ``bfcl-eval`` wheel.

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
"""

from __future__ import annotations

import builtins
import hashlib
import types
import zipfile
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from aah.benchmark.fence import private_mpmath
from aah.config import get_settings
from aah.data import (
    BFCL_PACKAGE,
    BFCL_VERSION,
    BFCL_WHEEL,
    BFCL_WHEEL_SHA256,
    find_pinned_wheel,
)
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
_MAX_SOURCE_BYTES = 4 * 1024 * 1024
_MODULE_PREFIX = "aah_bfcl_wheel"


def find_bfcl_wheel(data_dir: Path | None = None) -> Path:
    """The pinned ``bfcl-eval`` wheel: ``AAH_BFCL_WHEEL``, else in the data directory.

    Args:
        data_dir: A data directory (or its ``bfcl`` folder) to look in first,
            before ``AAH_DATA_DIR`` and where ``aah data fetch`` puts the data.

    Raises:
        AahError: ``AAH_BFCL_WHEEL`` names no wheel, or no wheel is found.
    """
    settings = get_settings()
    return find_pinned_wheel(
        settings.bfcl_wheel,
        setting="AAH_BFCL_WHEEL",
        name=BFCL_WHEEL,
        folder="bfcl",
        roots=[data_dir, settings.data_dir],
        missing=f"no {BFCL_WHEEL} (BFCL's API classes): run `aah data fetch bfcl`, or "
        f"`pip download --no-deps {BFCL_PACKAGE}=={BFCL_VERSION}` and set AAH_BFCL_WHEEL to it",
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
