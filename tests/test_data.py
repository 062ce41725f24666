"""Data discovery, the manifest, and ``aah data fetch`` (copy and loopback HTTP)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from aah.config import project_root
from aah.data.fetch import (
    MANIFEST_PATH,
    PACKAGE_FOLDERS,
    SOURCE_NOTE,
    UNFETCHED_FOLDERS,
    Manifest,
    ManifestFile,
    Origin,
    build_manifest,
    default_manifest,
    derive_bytes,
    fetch_data,
    file_sha256,
    load_manifest,
    manifest_json,
    origin_url,
    packaged_manifest,
)
from aah.data.locate import (
    failtalms_dir,
    find_data_dir,
    is_complete_copy,
    locate_data_dir,
    missing_data_message,
    openapi_dir,
)
from aah.errors import AahError

SHARED = project_root().parent / "shared" / "datasets"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/datasets is absent")

# A few small files of each kind, for the tests that serve or corrupt a subset.
SUBSET = (
    "fail-talms/tools/Art/dogs.json",
    "fail-talms/tools/HumanInteract/humaninteract.json",
    "openapi/xkcd.com__1.0.0.yaml",
)


@pytest.fixture(autouse=True)
def _isolated_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test sees the user's cache, data dir or mirror."""
    monkeypatch.delenv("AAH_DATA_DIR", raising=False)
    monkeypatch.delenv("AAH_DATA_MIRROR", raising=False)
    monkeypatch.setenv("AAH_CACHE_DIR", str(tmp_path / "empty-cache"))


@pytest.fixture(scope="session")
def fetched_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A complete data dir made by ``fetch_data --from`` the shared copy (read-only use)."""
    if not SHARED.is_dir():
        pytest.skip("../shared/datasets is absent")
    dest = tmp_path_factory.mktemp("cache") / "datasets"
    fetch_data(dest, source_dir=SHARED)
    return dest


def subset_manifest(paths: tuple[str, ...] = SUBSET) -> Manifest:
    by_path = {entry.path: entry for entry in packaged_manifest().files}
    return Manifest(files=[by_path[path] for path in paths])


def make_data_dir(root: Path, *, benchmark: bool = True) -> Path:
    (root / "fail-talms" / "tools").mkdir(parents=True)
    if benchmark:
        (root / "fail-talms" / "benchmark").mkdir()
    return root


# --- the manifest -------------------------------------------------------------


def test_packaged_manifest_loads_and_paths_are_unique() -> None:
    manifest = load_manifest()
    paths = [entry.path for entry in manifest.files]
    assert len(paths) == len(set(paths)) > 0
    assert paths == sorted(paths)
    assert all(
        p.startswith(("acebench/", "fail-talms/", "openapi/", "tau2/", "when2call/")) for p in paths
    )


@needs_shared
def test_manifest_covers_exactly_the_shared_files_with_their_hashes() -> None:
    on_disk = {
        p.relative_to(SHARED).as_posix(): p
        for p in SHARED.rglob("*")
        if p.is_file()
        and p.name != SOURCE_NOTE
        and p.relative_to(SHARED).parts[0] not in PACKAGE_FOLDERS | UNFETCHED_FOLDERS.keys()
    }
    manifest = {entry.path: entry for entry in packaged_manifest().files}
    assert set(manifest) == set(on_disk)
    for path, entry in manifest.items():
        assert entry.size == on_disk[path].stat().st_size, path
        assert entry.sha256 == file_sha256(on_disk[path]), path


@needs_shared
def test_manifest_origins_follow_the_source_notes() -> None:
    by_path = {entry.path: entry for entry in packaged_manifest().files}
    tool = by_path["fail-talms/tools/Art/dogs.json"].origin
    assert (tool.repo, tool.commit, tool.path) == (
        "EduardoTrevino/Fail-TaLMs",
        "d40a0e8f800ed4e9ce1aa3255528d2b1dc6eda13",
        "tools/Art/dogs.json",
    )
    members = by_path["openapi/parliament.uk_members__v1.yaml"].origin
    assert members.repo == "APIs-guru/openapi-directory"
    assert members.path == "APIs/parliament.uk/members/v1/openapi.yaml"
    assert members.commit == "43a91d7c4ce4930de872dfc8b2fd7c6aa3ac9594"
    assert origin_url("https://raw.githubusercontent.com", tool) == (
        "https://raw.githubusercontent.com/EduardoTrevino/Fail-TaLMs/"
        "d40a0e8f800ed4e9ce1aa3255528d2b1dc6eda13/tools/Art/dogs.json"
    )


@needs_shared
def test_manifest_command_rebuilds_the_packaged_manifest(tmp_path: Path) -> None:
    from aah.cli.data import app

    out = tmp_path / "manifest.json"
    result = CliRunner().invoke(app, ["manifest", "--from", str(SHARED), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text() == MANIFEST_PATH.read_text()


@needs_shared
def test_when2call_comes_from_the_published_file_without_its_answers() -> None:
    by_path = {entry.path: entry for entry in packaged_manifest().files}
    origin = by_path["when2call/when2call_test_questions.jsonl"].origin
    assert (origin.repo, origin.commit, origin.path, origin.derive) == (
        "NVIDIA/When2Call",
        "ecc8d42388e91ab37e7e737d48e16e8ecea3d1dc",
        "data/test/when2call_test_llm_judge.jsonl",
        "drop-fields:answers",
    )


@pytest.mark.parametrize(
    ("folder", "derive"), [("when2call", "drop-fields:answers"), ("other", None)]
)
def test_a_prose_source_note_names_the_one_published_file(
    tmp_path: Path, folder: str, derive: str | None
) -> None:
    data = tmp_path / folder
    data.mkdir()
    (data / "q.jsonl").write_text('{"question": "a"}\n')
    (data / SOURCE_NOTE).write_text(
        "# Questions (derived)\n\nOrigin: NVIDIA/When2Call on GitHub, commit "
        + "a" * 40
        + ",\nfile `data/test/q.jsonl` (Apache License 2.0).\n"
    )
    [entry] = build_manifest(tmp_path).files
    assert entry.path == f"{folder}/q.jsonl"
    assert entry.origin == Origin(
        repo="NVIDIA/When2Call", commit="a" * 40, path="data/test/q.jsonl", derive=derive
    )


def test_manifest_needs_an_origin_for_every_file(tmp_path: Path) -> None:
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "a.yaml").write_text("openapi: 3.0.0\n")
    (folder / SOURCE_NOTE).write_text("From github.com/owner/repo, no commit given.\n")
    with pytest.raises(AahError, match="a.yaml"):
        build_manifest(tmp_path)


@pytest.mark.parametrize(
    "rule", ["drop-fields:", "drop-fields:a,,b", "keep-fields:answers", "answers", ""]
)
def test_manifest_rejects_unknown_derivations(rule: str) -> None:
    with pytest.raises(ValueError, match="unknown derivation"):
        Origin(repo="o/r", commit="0" * 40, path="f.jsonl", derive=rule)


@pytest.mark.parametrize(
    ("published", "problem"),
    [
        (b"not json\n", "not JSON Lines"),
        (b'["a list"]\n', "not a JSON object"),
        (b"\xff\xfe\n", "not JSON Lines"),
    ],
)
def test_derivation_of_a_file_that_is_not_json_lines_is_one_line(
    published: bytes, problem: str
) -> None:
    with pytest.raises(AahError, match=problem) as caught:
        derive_bytes("drop-fields:answers", published, "when2call/q.jsonl")
    assert "\n" not in str(caught.value) and "--from DIR" in str(caught.value)


def test_derivation_drops_fields_and_keeps_unicode_and_order() -> None:
    published = (
        b'{"uuid": "1", "question": "caf\\u00e9 \xc3\xa0?", "answers": {"x": 1}}\n'
        b"\n"
        b'{"question": "b", "answers": [], "tools": []}\n'
    )
    derived = derive_bytes("drop-fields:answers", published, "q.jsonl")
    assert (
        derived.decode() == '{"uuid": "1", "question": "café à?"}\n{"question": "b", "tools": []}\n'
    )


def test_manifest_rejects_paths_outside_the_data_dir() -> None:
    entry = packaged_manifest().files[0].model_dump()
    with pytest.raises(ValueError, match="relative data path"):
        ManifestFile.model_validate({**entry, "path": "../outside.json"})


def test_manifest_json_round_trips() -> None:
    manifest = subset_manifest()
    assert Manifest.model_validate_json(manifest_json(manifest)) == manifest


# --- discovery ------------------------------------------------------------------


def test_explicit_dir_wins_over_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flag = make_data_dir(tmp_path / "flag")
    monkeypatch.setenv("AAH_DATA_DIR", str(make_data_dir(tmp_path / "env")))
    location = locate_data_dir(flag, search_roots=[])
    assert (location.path, location.source) == (flag.resolve(), "flag")


def test_env_dir_wins_over_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fetched_copy: Path
) -> None:
    monkeypatch.setenv("AAH_CACHE_DIR", str(fetched_copy.parent))
    env = make_data_dir(tmp_path / "env")
    monkeypatch.setenv("AAH_DATA_DIR", str(env))
    assert locate_data_dir(search_roots=[]).source == "env"


def test_complete_cache_wins_over_shared(
    monkeypatch: pytest.MonkeyPatch, fetched_copy: Path
) -> None:
    monkeypatch.setenv("AAH_CACHE_DIR", str(fetched_copy.parent))
    location = locate_data_dir(need_benchmark=True, search_roots=[project_root()])
    assert (location.path, location.source) == (fetched_copy.resolve(), "cache")


def test_cache_dir_follows_xdg_cache_home(tmp_path: Path, fetched_copy: Path) -> None:
    # A fresh process: the default cache dir is read from the environment at start.
    xdg = tmp_path / "xdg"
    (xdg / "aah").mkdir(parents=True)
    (xdg / "aah" / "datasets").symlink_to(fetched_copy, target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AAH_")}
    code = "from aah.data.locate import locate_data_dir; print(locate_data_dir(search_roots=[]))"
    shown = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, "XDG_CACHE_HOME": str(xdg)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "source='cache'" in shown


def test_partial_cache_is_passed_over_for_shared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    make_data_dir(cache / "datasets")
    monkeypatch.setenv("AAH_CACHE_DIR", str(cache))
    shared = make_data_dir(tmp_path / "shared" / "datasets")
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    assert not is_complete_copy(cache / "datasets")
    location = locate_data_dir(search_roots=[tmp_path / "a" / "elsewhere", checkout])
    assert (location.path, location.source) == (shared.resolve(), "shared")
    assert str(checkout.resolve()) in location.reason


@needs_shared
def test_default_search_finds_shared_beside_the_checkout() -> None:
    assert find_data_dir(need_benchmark=True) == SHARED.resolve()
    assert failtalms_dir(SHARED).joinpath("tools").is_dir()
    assert openapi_dir(SHARED).joinpath("xkcd.com__1.0.0.yaml").is_file()


def test_invalid_explicit_dir_is_an_error_not_a_fallback(tmp_path: Path) -> None:
    make_data_dir(tmp_path / "shared" / "datasets")
    with pytest.raises(AahError, match="--data .* is not a data directory"):
        find_data_dir(tmp_path / "nothing-here", search_roots=[tmp_path / "checkout"])


def test_invalid_env_dir_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AAH_DATA_DIR", str(make_data_dir(tmp_path / "d", benchmark=False)))
    assert find_data_dir(search_roots=[]) == (tmp_path / "d").resolve()
    with pytest.raises(AahError, match="AAH_DATA_DIR .*fail-talms/benchmark"):
        find_data_dir(need_benchmark=True, search_roots=[])


def test_nothing_found_says_how_to_get_the_data(tmp_path: Path) -> None:
    with pytest.raises(AahError) as caught:
        find_data_dir(search_roots=[tmp_path / "checkout"])
    message = str(caught.value)
    assert message == missing_data_message()
    assert "\n" not in message
    assert "aah data fetch" in message and "--data DIR" in message and " MB)" in message


# --- fetching from a local copy -------------------------------------------------


@needs_shared
def test_fetch_from_shared_copies_and_verifies_everything(fetched_copy: Path) -> None:
    assert is_complete_copy(fetched_copy)
    for entry in default_manifest().files:
        assert file_sha256(fetched_copy / entry.path) == entry.sha256
    assert not list(fetched_copy.rglob("*.part"))


@needs_shared
def test_rerun_skips_verified_files_and_replaces_damaged_ones(tmp_path: Path) -> None:
    manifest = subset_manifest()
    dest = tmp_path / "dest"
    first = fetch_data(dest, source_dir=SHARED, manifest=manifest)
    assert (first.fetched, first.skipped) == (3, 0)
    (dest / SUBSET[0]).write_text("edited by hand")
    seen: list[tuple[str, str]] = []
    second = fetch_data(
        dest, source_dir=SHARED, manifest=manifest, progress=lambda e, o: seen.append((e.path, o))
    )
    assert (second.fetched, second.skipped) == (1, 2)
    assert seen == [(SUBSET[0], "fetched"), (SUBSET[1], "skipped"), (SUBSET[2], "skipped")]
    assert file_sha256(dest / SUBSET[0]) == manifest.files[0].sha256


@needs_shared
def test_corrupt_source_file_is_named_and_not_kept(tmp_path: Path) -> None:
    source = tmp_path / "source"
    for path in SUBSET:
        (source / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SHARED / path, source / path)
    bad = source / SUBSET[1]
    bad.write_bytes(bad.read_bytes().replace(b"human", b"HUMAN"))
    dest = tmp_path / "dest"
    with pytest.raises(AahError, match=f"{SUBSET[1]}: sha256 mismatch"):
        fetch_data(dest, source_dir=source, manifest=subset_manifest())
    assert (dest / SUBSET[0]).is_file()
    assert not (dest / SUBSET[1]).exists()
    assert not list(dest.rglob("*.part"))


def test_missing_source_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(AahError, match=f"{SUBSET[0]} is missing from"):
        fetch_data(tmp_path / "dest", source_dir=tmp_path, manifest=subset_manifest())


# --- fetching over HTTP from a loopback mirror ----------------------------------


class Mirror:
    """A raw-file server on 127.0.0.1: ``/<owner>/<repo>/<commit>/<path>`` -> bytes."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.busy_once: set[str] = set()  # answer 503 to the first request for these
        self.cut_once: set[str] = set()  # send half the body, then hang up, once
        self.requests: list[str] = []
        mirror = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
                mirror.requests.append(self.path)
                if self.path in mirror.busy_once:
                    mirror.busy_once.discard(self.path)
                    self.send_error(503)
                elif self.path in mirror.files:
                    body = mirror.files[self.path]
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    if self.path in mirror.cut_once:
                        mirror.cut_once.discard(self.path)
                        body = body[: len(body) // 2]
                    self.wfile.write(body)
                else:
                    self.send_error(404)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def serve(self, manifest: Manifest, source: Path) -> None:
        for entry in manifest.files:
            url_path = origin_url("", entry.origin)
            self.files[url_path] = (source / entry.path).read_bytes()


@pytest.fixture
def mirror() -> Iterator[Mirror]:
    server = Mirror()
    # A short poll interval: shutdown() waits for the server loop's next poll.
    thread = threading.Thread(target=server.server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()


@needs_shared
def test_download_retries_busy_and_cut_responses_and_resumes(
    tmp_path: Path, mirror: Mirror
) -> None:
    manifest = subset_manifest()
    mirror.serve(manifest, SHARED)
    mirror.busy_once.add(origin_url("", manifest.files[0].origin))
    mirror.cut_once.add(origin_url("", manifest.files[1].origin))
    report = fetch_data(tmp_path, base_url=mirror.url, manifest=manifest, backoff=0.01)
    assert (report.fetched, report.skipped) == (3, 0)
    assert is_complete_copy(tmp_path, manifest)
    assert len(mirror.requests) == 5  # one retry after the 503, one after the cut
    again = fetch_data(tmp_path, base_url=mirror.url, manifest=manifest)
    assert (again.fetched, again.skipped) == (0, 3)
    assert len(mirror.requests) == 5


def test_download_derives_the_file_from_its_published_origin(
    tmp_path: Path, mirror: Mirror
) -> None:
    records = [
        {"uuid": "a", "question": "Où est la gare?", "correct_answer": "tool_call"},
        {"uuid": "b", "question": "Cancel it", "correct_answer": "cannot_answer"},
    ]
    derived = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()
    published = "".join(
        json.dumps({**r, "answers": {"direct": "yes", "tool_call": "[f()]"}}) + "\n"
        for r in records
    ).encode()
    origin = Origin(
        repo="NVIDIA/When2Call",
        commit="e" * 40,
        path="data/test/q.jsonl",
        derive="drop-fields:answers",
    )
    entry = ManifestFile(
        path="when2call/q.jsonl",
        sha256=hashlib.sha256(derived).hexdigest(),
        size=len(derived),
        origin=origin,
    )
    mirror.files[origin_url("", origin)] = published
    report = fetch_data(tmp_path, base_url=mirror.url, manifest=Manifest(files=[entry]))
    assert (report.fetched, report.bytes_fetched) == (1, len(derived))
    assert (tmp_path / "when2call" / "q.jsonl").read_bytes() == derived
    # A published file that no longer derives to the manifest's bytes is refused.
    mirror.files[origin_url("", origin)] = published.replace(b"Cancel", b"Keep")
    with pytest.raises(AahError, match="when2call/q.jsonl: sha256 mismatch"):
        fetch_data(tmp_path / "again", base_url=mirror.url, manifest=Manifest(files=[entry]))
    # A local copy holds the derived file already: it is copied as is.
    copied = fetch_data(tmp_path / "copy", source_dir=tmp_path, manifest=Manifest(files=[entry]))
    assert copied.fetched == 1
    assert (tmp_path / "copy" / "when2call" / "q.jsonl").read_bytes() == derived


@needs_shared
def test_download_404_names_the_file(tmp_path: Path, mirror: Mirror) -> None:
    manifest = subset_manifest()
    mirror.serve(Manifest(files=manifest.files[:2]), SHARED)
    with pytest.raises(AahError, match=f"{SUBSET[2]}: .* answered HTTP 404"):
        fetch_data(tmp_path, base_url=mirror.url, manifest=manifest, backoff=0.01)
    assert not (tmp_path / SUBSET[2]).exists()


@needs_shared
def test_download_with_wrong_bytes_is_not_kept(tmp_path: Path, mirror: Mirror) -> None:
    manifest = subset_manifest(SUBSET[:1])
    mirror.serve(manifest, SHARED)
    url_path = origin_url("", manifest.files[0].origin)
    mirror.files[url_path] = mirror.files[url_path][:-1] + b" "
    with pytest.raises(AahError, match=f"{SUBSET[0]}: sha256 mismatch"):
        fetch_data(tmp_path, base_url=mirror.url, manifest=manifest)
    assert not list(tmp_path.rglob("*.json*"))


def test_unreachable_mirror_is_one_clear_line_quickly(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(AahError) as caught:
        fetch_data(
            tmp_path,
            base_url=f"http://127.0.0.1:{port}",
            manifest=subset_manifest(),
            retries=2,
            backoff=0.01,
        )
    assert time.monotonic() - started < 5
    assert str(caught.value) == (
        f"could not reach 127.0.0.1:{port}: check your connection "
        "or use `aah data fetch --from DIR`"
    )


# --- the commands ---------------------------------------------------------------


@needs_shared
def test_fetch_command_downloads_everything_from_the_mirror_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mirror: Mirror
) -> None:
    from aah.cli.data import app

    mirror.serve(default_manifest(), SHARED)
    monkeypatch.setenv("AAH_DATA_MIRROR", mirror.url)
    result = CliRunner().invoke(app, ["fetch", "--dest", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["fetched"] == len(default_manifest().files)
    assert report["source"] == mirror.url
    assert is_complete_copy(tmp_path)


@needs_shared
def test_fetch_command_from_a_local_copy(tmp_path: Path) -> None:
    from aah.cli.data import app

    result = CliRunner().invoke(app, ["fetch", "--from", str(SHARED), "--dest", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert f"{len(default_manifest().files)} files fetched" in result.stdout


def test_where_reports_the_pick_and_errors_propagate(tmp_path: Path) -> None:
    from aah.cli.data import app

    data = make_data_dir(tmp_path / "d")
    result = CliRunner().invoke(app, ["where", "--data", str(data), "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert (shown["path"], shown["source"], shown["present_files"]) == (
        str(data.resolve()),
        "flag",
        0,
    )
    failed = CliRunner().invoke(app, ["where", "--data", str(tmp_path / "none")])
    assert isinstance(failed.exception, AahError)
