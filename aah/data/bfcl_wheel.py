"""BFCL's data, read out of the pinned ``bfcl-eval`` wheel (``aah data fetch bfcl``).

BFCL publishes its data inside its Python package. ``fetch_bfcl`` gets that
wheel with pip (``pip download --no-deps``, the pinned version), checks its
sha256 against the pinned one, and copies the data files (``bfcl_eval/data/``:
the single-turn and multi-turn items, ``possible_answer/`` and
``multi_turn_func_doc/``) into ``<dest>/bfcl/``, with the verified wheel
itself (``<dest>/bfcl/bfcl_eval-<version>-py3-none-any.whl``): the multi-turn
categories run BFCL's API classes from its source files
(``aah.benchmark.bfcl.environments``). Nothing of the package is installed,
and nothing is fetched at run time. Each file is read
with a size cap, and only names of the expected shape are written, so a
tampered archive can neither fill the disk nor write outside the folder.
"""

from __future__ import annotations

import re
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from aah.data.wheels import download_wheel, keep_wheel, wheel_file, wheel_sha256
from aah.errors import AahError

BFCL_PACKAGE = "bfcl-eval"
BFCL_VERSION = "2026.3.23"
BFCL_WHEEL = f"bfcl_eval-{BFCL_VERSION}-py3-none-any.whl"
BFCL_WHEEL_SHA256 = "3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a"
_DATA_PREFIX = "bfcl_eval/data/"
# The files a run reads, and nothing else: no folder climbing, no other names.
_DATA_NAME = re.compile(
    r"^(?:possible_answer/|multi_turn_func_doc/)?[A-Za-z0-9_]+\.(?:json|jsonl)$"
)
_MAX_FILE_BYTES = 64 * 1024 * 1024
_MAX_TOTAL_BYTES = 512 * 1024 * 1024


@dataclass(frozen=True)
class BfclFetch:
    """What ``fetch_bfcl`` did: where the files went, how many, from which wheel, kept where."""

    folder: Path
    files: int
    bytes: int
    wheel_sha256: str
    wheel: Path


def fetch_bfcl(
    dest: Path, *, wheel: Path | None = None, sha256: str = BFCL_WHEEL_SHA256
) -> BfclFetch:
    """Fill ``dest/bfcl`` with BFCL's data files from the pinned wheel, and keep the wheel there.

    Args:
        dest: The data directory (the files go to its ``bfcl`` folder).
        wheel: A wheel file already here (or a folder holding it); None
            downloads it with pip.
        sha256: The hash the wheel must have (the pinned one).

    Raises:
        AahError: pip cannot get the wheel, its hash is not the pinned one, or
            it is not a readable wheel with BFCL's data in it.
    """
    with tempfile.TemporaryDirectory() as scratch:
        path = _wheel_file(wheel) if wheel is not None else _download(Path(scratch))
        digest = wheel_sha256(path)
        if digest != sha256:
            raise AahError(
                f"{path.name} has sha256 {digest}, not the pinned {sha256}: "
                f"get {BFCL_PACKAGE}=={BFCL_VERSION} from PyPI again"
            )
        folder = dest / "bfcl"
        files, size = _extract(path, folder)
        kept = keep_wheel(path, folder / BFCL_WHEEL)
    return BfclFetch(folder, files, size, digest, kept)


def _wheel_file(given: Path) -> Path:
    return wheel_file(given, BFCL_WHEEL)


def _download(folder: Path) -> Path:
    fix = f"download {BFCL_WHEEL} yourself and pass it with --from"
    return download_wheel(BFCL_PACKAGE, BFCL_VERSION, BFCL_WHEEL, folder, fix=fix)


def _extract(wheel: Path, folder: Path) -> tuple[int, int]:
    try:
        archive = zipfile.ZipFile(wheel)
    except (OSError, zipfile.BadZipFile) as exc:
        raise AahError(f"{wheel} is not a readable wheel ({exc}): download it again") from exc
    files = total = 0
    with archive:
        for info in archive.infolist():
            name = info.filename.removeprefix(_DATA_PREFIX)
            if name == info.filename or info.is_dir() or not _DATA_NAME.match(name):
                continue
            if info.file_size > _MAX_FILE_BYTES or total + info.file_size > _MAX_TOTAL_BYTES:
                raise AahError(f"{wheel}: {info.filename} is too large: download the wheel again")
            with archive.open(info) as source:
                data = source.read(_MAX_FILE_BYTES + 1)
            if len(data) > _MAX_FILE_BYTES:
                raise AahError(f"{wheel}: {info.filename} is too large: download the wheel again")
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            files += 1
            total += len(data)
    if not files:
        raise AahError(f"{wheel} holds no BFCL data files: download the wheel again")
    return files, total
