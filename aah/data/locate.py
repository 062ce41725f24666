"""Finding the data directory: the flag, the environment, the cache, a shared copy.

A data directory holds ``fail-talms/`` (``tools/``, ``benchmark/``) and
``openapi/``, laid out as in the manifest. Discovery takes the first of:

1. ``--data DIR`` (the ``explicit`` argument);
2. ``AAH_DATA_DIR``;
3. ``<cache dir>/datasets`` when it holds a complete ``aah data fetch`` copy;
4. ``../shared/datasets`` beside the source checkout or the working directory.

A directory the user named (1, 2) that does not hold the data is an error, not
a reason to look elsewhere: silently reading other data would be worse.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal

from aah.config import get_settings, project_root
from aah.errors import AahError

# The fetcher (its manifest models, ``requests``) is imported where a
# manifest is read: a named data directory, the usual case of a run, needs none.
if TYPE_CHECKING:
    from aah.data.fetch import Manifest

DataSource = Literal["flag", "env", "cache", "shared"]

FAILTALMS = "fail-talms"
OPENAPI = "openapi"


@dataclass(frozen=True)
class DataLocation:
    """The directory discovery picked, and why."""

    path: Path
    source: DataSource
    reason: str


def failtalms_dir(data_dir: Path) -> Path:
    """The Fail-TaLMs folder (``tools/``, ``benchmark/``) of a data directory."""
    return data_dir / FAILTALMS


def openapi_dir(data_dir: Path) -> Path:
    """The folder of OpenAPI specs of a data directory."""
    return data_dir / OPENAPI


def missing_parts(data_dir: Path, *, need_benchmark: bool = False) -> list[str]:
    """The required sub-folders ``data_dir`` lacks (empty when it is usable)."""
    needed = [f"{FAILTALMS}/tools"]
    if need_benchmark:
        needed.append(f"{FAILTALMS}/benchmark")
    return [part for part in needed if not (data_dir / part).is_dir()]


def default_fetch_dir() -> Path:
    """Where ``aah data fetch`` puts the data unless told otherwise."""
    return get_settings().cache_dir / "datasets"


def count_present(data_dir: Path, manifest: Manifest | None = None) -> int:
    """How many manifest files ``data_dir`` holds with the manifest's size.

    The manifest defaults to the files ``aah data fetch`` gets (not τ²'s:
    ``aah data fetch tau2`` gets those).

    Only sizes are checked (a stat per file): ``aah data fetch`` renames a file
    into place after verifying its hash, so a fetched copy never holds a file
    of the right size but wrong content unless someone edited it.
    """
    from aah.data.fetch import default_manifest

    files = (manifest if manifest is not None else default_manifest()).files
    present = 0
    for entry in files:
        path = data_dir.joinpath(*PurePosixPath(entry.path).parts)
        if path.is_file() and path.stat().st_size == entry.size:
            present += 1
    return present


def is_complete_copy(data_dir: Path, manifest: Manifest | None = None) -> bool:
    """Whether ``data_dir`` holds every manifest file (see ``count_present``)."""
    from aah.data.fetch import default_manifest

    files = (manifest if manifest is not None else default_manifest()).files
    return count_present(data_dir, manifest) == len(files)


def missing_data_message() -> str:
    """The one-line error shown when no data directory can be found."""
    from aah.data.fetch import default_manifest

    megabytes = max(1, round(default_manifest().total_bytes / 1_000_000))
    return (
        f"no benchmark data found: run `aah data fetch` (downloads ~{megabytes} MB) "
        "or pass --data DIR"
    )


def locate_data_dir(
    explicit: Path | None = None,
    *,
    need_benchmark: bool = False,
    search_roots: Sequence[Path] | None = None,
) -> DataLocation:
    """Pick the data directory by the discovery order of this module.

    Args:
        explicit: The ``--data DIR`` flag, if given.
        need_benchmark: Also require ``fail-talms/benchmark`` (the queries),
            not only ``fail-talms/tools``.
        search_roots: Folders whose ``../shared/datasets`` may hold the data;
            defaults to the source checkout and the working directory.

    Returns:
        The directory (absolute) and the reason it was picked.

    Raises:
        AahError: a named directory lacks the data, or none was found.
    """
    if explicit is not None:
        return _named(explicit, "flag", "--data", need_benchmark)
    env_dir = get_settings().data_dir
    if env_dir is not None:
        return _named(env_dir, "env", "AAH_DATA_DIR", need_benchmark)
    cache = default_fetch_dir()
    if cache.is_dir() and is_complete_copy(cache):
        return DataLocation(cache.resolve(), "cache", "complete copy from `aah data fetch`")
    roots = search_roots if search_roots is not None else (project_root(), Path.cwd())
    for root in roots:
        shared = (root.parent / "shared" / "datasets").resolve()
        if shared.is_dir() and not missing_parts(shared, need_benchmark=need_benchmark):
            return DataLocation(shared, "shared", f"../shared/datasets beside {root.resolve()}")
    raise AahError(missing_data_message())


def find_data_dir(
    explicit: Path | None = None,
    *,
    need_benchmark: bool = False,
    search_roots: Sequence[Path] | None = None,
) -> Path:
    """The data directory to read (see ``locate_data_dir`` for the order).

    Raises:
        AahError: a named directory lacks the data, or none was found.
    """
    return locate_data_dir(explicit, need_benchmark=need_benchmark, search_roots=search_roots).path


def _named(path: Path, source: DataSource, name: str, need_benchmark: bool) -> DataLocation:
    resolved = path.expanduser().resolve()
    missing = missing_parts(resolved, need_benchmark=need_benchmark)
    if missing:
        raise AahError(
            f"{name} {path} is not a data directory (no {', '.join(missing)}): point it at "
            "one holding fail-talms/, such as the one `aah data fetch` fills"
        )
    return DataLocation(resolved, source, f"named by {name}")
