"""``aah data fetch bfcl``: BFCL's files read out of the pinned wheel, and nothing else."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from aah.benchmark.bfcl import CATEGORIES, bfcl_source, load_bfcl
from aah.data import fetch_bfcl
from aah.errors import AahError

ITEM = {
    "id": "irrelevance_0",
    "question": [[{"role": "user", "content": "Tell me a joke."}]],
    "function": [{"name": "get_weather", "parameters": {"type": "dict", "properties": {}}}],
}


def make_wheel(path: Path, extra: dict[str, bytes] | None = None) -> str:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("bfcl_eval/__init__.py", "")
        archive.writestr("bfcl_eval/data/BFCL_v4_irrelevance.json", json.dumps(ITEM) + "\n")
        archive.writestr("bfcl_eval/data/possible_answer/BFCL_v4_simple_python.json", "")
        archive.writestr("bfcl_eval/data/multi_turn_func_doc/gorilla_file_system.json", "{}")
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_data_files_come_out_and_load(tmp_path: Path) -> None:
    wheel = tmp_path / "bfcl_eval-2026.3.23-py3-none-any.whl"
    digest = make_wheel(wheel)
    done = fetch_bfcl(tmp_path / "data", wheel=tmp_path, sha256=digest)
    assert done.files == 3 and done.folder == tmp_path / "data" / "bfcl"
    assert sorted(p.name for p in done.folder.rglob("*.json")) == [
        "BFCL_v4_irrelevance.json",
        "BFCL_v4_simple_python.json",
        "gorilla_file_system.json",
    ]
    assert not (done.folder / "__init__.py").exists()
    # The verified wheel is kept beside the data: the multi-turn APIs run from it.
    assert done.wheel == done.folder / "bfcl_eval-2026.3.23-py3-none-any.whl"
    assert done.wheel.read_bytes() == wheel.read_bytes()
    again = fetch_bfcl(tmp_path / "data", wheel=done.wheel, sha256=digest)
    assert again.wheel == done.wheel and done.wheel.read_bytes() == wheel.read_bytes()
    assert not list(done.folder.glob(".*partial"))
    tasks = load_bfcl(bfcl_source(tmp_path / "data"), ["irrelevance"])
    assert [t.id for t in tasks] == ["irrelevance_0"] and "irrelevance" in CATEGORIES


HOSTILE = [
    "bfcl_eval/data/../../escaped.json",
    "bfcl_eval/data/possible_answer/../../../escaped.json",
    "bfcl_eval/data//etc/escaped.json",
    "bfcl_eval/data/sub/dir/escaped.json",
    "bfcl_eval/data/escaped.sh",
    "bfcl_eval/data/.hidden.json",
    "bfcl_eval/data/BFCL v4 space.json",
]


@pytest.mark.parametrize("name", HOSTILE)
def test_names_of_another_shape_are_never_written(tmp_path: Path, name: str) -> None:
    wheel = tmp_path / "w.whl"
    digest = make_wheel(wheel, {name: b"{}"})
    done = fetch_bfcl(tmp_path / "deep" / "data", wheel=wheel, sha256=digest)
    assert done.files == 3
    written = {p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file()}
    assert written == {
        Path("w.whl"),
        Path("deep/data/bfcl/BFCL_v4_irrelevance.json"),
        Path("deep/data/bfcl/possible_answer/BFCL_v4_simple_python.json"),
        Path("deep/data/bfcl/multi_turn_func_doc/gorilla_file_system.json"),
        Path("deep/data/bfcl/bfcl_eval-2026.3.23-py3-none-any.whl"),
    }


def test_a_file_past_the_size_cap_stops_the_fetch(tmp_path: Path) -> None:
    wheel = tmp_path / "w.whl"
    digest = make_wheel(wheel, {"bfcl_eval/data/BFCL_v4_big.json": b"0" * (65 * 1024 * 1024)})
    assert wheel.stat().st_size < 1024 * 1024  # it unpacks to 65 MB
    with pytest.raises(AahError, match="too large"):
        fetch_bfcl(tmp_path / "data", wheel=wheel, sha256=digest)


def test_bad_wheels_are_one_line_errors(tmp_path: Path) -> None:
    wheel = tmp_path / "w.whl"
    make_wheel(wheel)
    cases = [
        (dict(wheel=wheel), "not the pinned"),  # the pinned hash: this wheel is not it
        (dict(wheel=tmp_path / "missing.whl"), "no wheel at"),
        (dict(wheel=tmp_path / "empty"), "no wheel at"),
    ]
    (tmp_path / "empty").mkdir()
    not_zip = tmp_path / "not.whl"
    not_zip.write_bytes(b"not a zip")
    cases.append((dict(wheel=not_zip, sha256=hashlib.sha256(b"not a zip").hexdigest()), "wheel"))
    no_data = tmp_path / "nodata.whl"
    with zipfile.ZipFile(no_data, "w") as archive:
        archive.writestr("bfcl_eval/__init__.py", "")
    digest = hashlib.sha256(no_data.read_bytes()).hexdigest()
    cases.append((dict(wheel=no_data, sha256=digest), "no BFCL data"))
    for options, problem in cases:
        with pytest.raises(AahError, match=problem) as error:
            fetch_bfcl(tmp_path / "data", **options)  # type: ignore[arg-type]
        assert "\n" not in str(error.value)


def test_the_command_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AAH_")}
    env["AAH_CACHE_DIR"] = str(tmp_path / "cache")
    wheel = tmp_path / "w.whl"
    make_wheel(wheel)
    wrong = subprocess.run(
        [sys.executable, "-m", "aah", "data", "fetch", "bfcl", "--from", str(wheel)],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    unknown = subprocess.run(
        [sys.executable, "-m", "aah", "data", "fetch", "gorilla"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert wrong.returncode == 2 and "not the pinned" in wrong.stderr
    assert unknown.returncode == 2
    assert unknown.stderr.strip() == (
        "error: unknown data 'gorilla': use bfcl, tau2, acebench, or nothing for the default data"
    )
