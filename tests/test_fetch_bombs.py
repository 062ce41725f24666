"""``aah data fetch`` against a mirror that sends compressed bombs.

A small body that decompresses to a gigabyte must end as one-line error with
nothing kept, and memory must stay small: the cap counts decompressed bytes,
read a chunk at a time, for plain files and for files derived in memory.
"""

from __future__ import annotations

import gzip
import hashlib
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from hostile_tool_server import (
    Behaviour,
    HostileToolServer,
    answer,
    brotli_bomb,
    chunked,
    gzip_bomb,
    nested_gzip_bomb,
    raw_deflate_bomb,
    zlib_bomb,
)

from aah.data.fetch import Manifest, ManifestFile, Origin, fetch_data
from aah.errors import AahError

REAL = b'{"q": "Which city?", "answers": [1, 2]}\n'
GZ = {"Content-Encoding": "gzip"}

BOMBS: dict[str, Callable[[], Behaviour]] = {
    "gzip": lambda: answer(gzip_bomb(), GZ),
    "deflate (zlib)": lambda: answer(zlib_bomb(), {"Content-Encoding": "deflate"}),
    "deflate (raw)": lambda: answer(raw_deflate_bomb(), {"Content-Encoding": "deflate"}),
    "gzip, gzip": lambda: answer(nested_gzip_bomb(), {"Content-Encoding": "gzip, gzip"}),
    "chunked gzip, no Content-Length": lambda: chunked(gzip_bomb(), GZ),
    "gzip with a lying Content-Length": lambda: answer(gzip_bomb(), GZ, length=300_000),
    "br": lambda: answer(brotli_bomb() or gzip_bomb(), {"Content-Encoding": "br"}),
    "gzip named over plain bytes": lambda: answer(b"not gzip at all" * 100, GZ),
    "a real file, gzip, sent whole": lambda: answer(gzip.compress(REAL), GZ),
}


def _manifest(derive: str | None) -> Manifest:
    expected = b'{"q": "Which city?"}\n' if derive else REAL
    entry = ManifestFile(
        path="when2call/questions.jsonl",
        sha256=hashlib.sha256(expected).hexdigest(),
        size=len(expected),
        origin=Origin(repo="o/r", commit="c" * 40, path="q.jsonl", derive=derive),
    )
    return Manifest(files=[entry])


@pytest.mark.parametrize("derive", [None, "drop-fields:answers"], ids=["plain", "derived"])
@pytest.mark.parametrize("bomb", list(BOMBS))
def test_a_bomb_is_one_line_and_costs_little_memory(
    bomb: str, derive: str | None, tmp_path: Path
) -> None:
    behaviour = BOMBS[bomb]()
    dest = tmp_path / "data"
    with HostileToolServer({f"/o/r/{'c' * 40}/q.jsonl": behaviour}) as server:
        tracemalloc.start()
        try:
            if bomb.startswith("a real file"):
                fetch_data(dest, base_url=server.url(""), manifest=_manifest(derive), retries=0)
                error = None
            else:
                with pytest.raises(AahError) as caught:
                    fetch_data(dest, base_url=server.url(""), manifest=_manifest(derive), retries=0)
                error = str(caught.value)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 50_000_000, peak
    if error is None:
        assert (dest / "when2call" / "questions.jsonl").is_file()
        return
    assert "\n" not in error and "when2call/questions.jsonl" in error, error
    assert not (dest / "when2call" / "questions.jsonl").exists()
    assert not list(dest.rglob("*.part"))
