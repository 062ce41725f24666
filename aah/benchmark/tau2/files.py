"""τ²'s files in a data directory, read through the bounded reader into checked values.

Each file of ``<data>/tau2/`` is read with :func:`aah.peer_read.read_file`
under a size cap (a file "holds" too much), and parsed with a depth cap
(JSON through :func:`aah.peer_read.parse_json`, TOML with ``tomllib``).
Whatever is wrong with a file (missing, not a regular file, too large, not
UTF-8, not JSON or TOML, nested too deep, the wrong shape) is one
:class:`~aah.errors.AahError` line naming the file and saying to fetch it
again.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from aah.bounds import MAX_NESTING, nesting
from aah.data import TAU2_FOLDER
from aah.errors import AahError
from aah.peer_read import PeerBound, PeerOutOfBounds, parse_json, read_file

REFETCH = "get it again with `aah data fetch tau2`"
# The largest files: airline's database (7 MB) and telecom's base tasks (0.7 MB).
MAX_DATA_BYTES = 64 * 1024 * 1024
MAX_TEXT_BYTES = 1024 * 1024


def tau2_source(data: Path) -> Path:
    """The τ² folder of a data directory (``<data>/tau2``), or ``data`` itself if it is one.

    Raises:
        AahError: neither holds τ²'s ``domains/`` folder.
    """
    for folder in (data / TAU2_FOLDER, data):
        if (folder / "domains").is_dir():
            return folder
    raise AahError(
        f"no τ² data at {data}: run `aah data fetch tau2`, or pass --data with a data "
        "directory holding tau2/domains/"
    )


def read_bytes(path: Path, max_bytes: int = MAX_DATA_BYTES) -> bytes:
    """``path``'s bytes within ``max_bytes``.

    Raises:
        AahError: missing, not a regular file, unreadable or too large.
    """
    try:
        return read_file(path, PeerBound(str(path), max_bytes, verb="holds"))
    except PeerOutOfBounds as exc:
        raise AahError(f"{exc}; {REFETCH}") from None
    except FileNotFoundError:
        raise AahError(f"{path} is missing: {REFETCH}") from None
    except OSError as exc:
        raise AahError(f"cannot read {path} ({exc.strerror or exc}): {REFETCH}") from None


def read_text(path: Path, max_bytes: int = MAX_TEXT_BYTES) -> str:
    """``path`` as UTF-8 text within ``max_bytes``.

    Raises:
        AahError: as :func:`read_bytes`, or the bytes are not UTF-8.
    """
    data = read_bytes(path, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AahError(f"{path} is not UTF-8 text (byte {exc.start}): {REFETCH}") from None


def read_json(path: Path, max_bytes: int = MAX_DATA_BYTES) -> Any:
    """The JSON value in ``path``.

    Raises:
        AahError: as :func:`read_bytes`, or not JSON, or nested too deep.
    """
    data = read_bytes(path, max_bytes)
    bound = PeerBound(str(path), max_bytes, verb="holds")
    try:
        return parse_json(data, bound)
    except PeerOutOfBounds as exc:
        raise AahError(f"{exc}; {REFETCH}") from None
    except UnicodeDecodeError as exc:
        raise AahError(f"{path} is not UTF-8 text (byte {exc.start}): {REFETCH}") from None
    except json.JSONDecodeError as exc:
        raise AahError(
            f"{path} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}): "
            f"{REFETCH}"
        ) from None
    except ValueError as exc:
        raise AahError(f"{path} is not valid JSON ({exc}): {REFETCH}") from None


def read_toml(path: Path, max_bytes: int = MAX_DATA_BYTES) -> dict[str, Any]:
    """The TOML table in ``path``.

    Raises:
        AahError: as :func:`read_text`, or not TOML, or nested too deep.
    """
    text = read_text(path, max_bytes)
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise AahError(f"{path} is not valid TOML ({exc}): {REFETCH}") from None
    except RecursionError:
        raise AahError(f"{path} holds TOML nested deeper than Python reads: {REFETCH}") from None
    if nesting(table) > MAX_NESTING:
        raise AahError(f"{path} holds TOML nested deeper than {MAX_NESTING} levels: {REFETCH}")
    return table


def wrong_shape(path: Path, what: str) -> AahError:
    """The error for a file whose value is not the shape τ² reads (``what`` says which)."""
    return AahError(f"{path} is not {what}: {REFETCH}")


def validation_problem(exc: Exception) -> str:
    """The first problem of a pydantic ``ValidationError`` as one short line."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
        except (IndexError, TypeError):
            first = None
        if first is not None:
            where = ".".join(str(part) for part in first.get("loc", ())) or "the value"
            return f"{where}: {first.get('msg', 'is not valid')}"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
