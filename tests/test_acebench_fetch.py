"""``aah data fetch acebench``: ACEBench's files pinned by sha256 to upstream's commit, copied or downloaded."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from aah.benchmark.acebench.tasks import load_acebench, load_prompts
from aah.cli import app
from aah.data import default_manifest
from aah.data.fetch import (
    MANIFEST_FOLDERS,
    Origin,
    build_manifest,
    derive_bytes,
    fetch_data,
    origin_url,
    packaged_manifest,
)
from aah.errors import AahError

REPO = "chenchen0103/ACEBench"
COMMIT = "56dd66cf6439b0d9655ee1b353e4cd745c6f664e"


@pytest.fixture(scope="module")
def shared(shared_data: Path) -> Path:
    if not (shared_data / "acebench").is_dir():
        pytest.skip(f"no acebench/ in {shared_data}")
    return shared_data


def test_the_manifest_pins_every_acebench_file_to_upstreams_commit(
    shared: Path, tmp_path: Path
) -> None:
    listed = packaged_manifest().folder("acebench").files
    assert len(listed) == 17 and "acebench" in MANIFEST_FOLDERS
    by_path = {entry.path: entry.origin for entry in listed}
    assert by_path["acebench/data_zh/possible_answer/data_special_irrelevant.json"] == Origin(
        repo=REPO,
        commit=COMMIT,
        path="data_all/data_zh/possible_answer/data_special_irrelevant.json",
    )
    assert by_path["acebench/prompts/user_zh.txt"] == Origin(
        repo=REPO,
        commit=COMMIT,
        path="model_inference/prompt_zh.py",
        derive="python-string:USER_PROMPT_ZH",
    )
    # `aah data manifest` rebuilds exactly these entries from the shared copy.
    (tmp_path / "acebench").symlink_to(shared / "acebench")
    assert build_manifest(tmp_path).files == listed
    # The default fetch leaves them to their own command.
    assert not [e for e in default_manifest().files if e.path.startswith("acebench/")]


def test_fetch_from_a_local_copy_then_the_benchmark_reads_it(shared: Path, tmp_path: Path) -> None:
    dest = tmp_path / "data"
    runner = CliRunner()
    args = ["data", "fetch", "acebench", "--from", str(shared), "--dest", str(dest), "--json"]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert json.loads(first.output)["fetched"] == 17
    again = json.loads(runner.invoke(app, args).output)
    assert (again["fetched"], again["skipped"]) == (0, 17)
    loaded = load_acebench(dest)
    assert len(loaded.tasks) == 300 and not loaded.problems
    assert load_prompts(dest, "zh").user == "对话历史1..t:\n{question}"


def test_a_damaged_local_copy_is_refused_in_one_line(shared: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(shared / "acebench", copy / "acebench")
    target = copy / "acebench" / "prompts" / "system_special_en.txt"
    target.chmod(0o644)
    target.write_text("You are helpful. {time} {function}", encoding="utf-8")
    result = CliRunner().invoke(
        app, ["data", "fetch", "acebench", "--from", str(copy), "--dest", str(tmp_path / "d")]
    )
    assert isinstance(result.exception, AahError)
    message = str(result.exception)
    assert "sha256 mismatch" in message and "system_special_en.txt" in message
    assert "\n" not in message


def test_the_prompt_texts_are_upstreams_string_constants_read_not_run() -> None:
    source = (
        b'import os\nos.system("echo never run")\n'
        b'USER_PROMPT_EN = """Conversation history 1..t:\\n{question}"""\n'
        b"OTHER = 1\n"
    )
    assert derive_bytes("python-string:USER_PROMPT_EN", source, "x") == (
        b"Conversation history 1..t:\n{question}"
    )
    for published, words in (
        (source, "assigns no string MISSING"),
        (b"def (:\n", "is not Python source"),
        (b"\xff\xfe", "is not Python source"),
    ):
        with pytest.raises(AahError, match=words) as caught:
            derive_bytes("python-string:MISSING", published, "acebench/prompts/user_en.txt")
        assert "\n" not in str(caught.value)
    with pytest.raises(ValueError, match="unknown derivation"):
        Origin(repo=REPO, commit=COMMIT, path="p.py", derive="python-string:not a name")


class _Mirror:
    """Raw files on 127.0.0.1: ``/<owner>/<repo>/<commit>/<path>`` -> bytes."""

    def __init__(self, files: dict[str, bytes]) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
                body = files.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def upstream(shared: Path) -> Iterator[_Mirror]:
    """Upstream's commit as a mirror: its data files, and prompt_{en,zh}.py holding the texts."""
    files: dict[str, bytes] = {}
    modules: dict[str, list[str]] = {}
    for entry in packaged_manifest().folder("acebench").files:
        local = (shared / entry.path).read_bytes()
        url = origin_url("", entry.origin)
        if entry.origin.derive is None:
            files[url] = local
            continue
        name = entry.origin.derive.removeprefix("python-string:")
        modules.setdefault(url, ['"""Prompts."""', "x = 1"]).append(
            f"{name} = {local.decode('utf-8')!r}  # noqa: E501"
        )
    files.update({url: "\n".join(lines).encode("utf-8") for url, lines in modules.items()})
    mirror = _Mirror(files)
    thread = threading.Thread(target=mirror.server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield mirror
    mirror.server.shutdown()
    mirror.server.server_close()


def test_download_derives_the_prompt_texts_from_upstreams_python(
    upstream: _Mirror, tmp_path: Path
) -> None:
    manifest = packaged_manifest().folder("acebench")
    report = fetch_data(tmp_path, base_url=upstream.url, manifest=manifest)
    assert (report.fetched, report.skipped) == (17, 0)
    prompts = load_prompts(tmp_path, "en")
    assert prompts.system.endswith("API Specifications:\n{function}")
    assert prompts.user == "Conversation history 1..t:\n{question}"
