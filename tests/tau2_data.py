"""τ²'s data for the tests: the shared copy, a damaged copy of it, and loaded domains."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aah.benchmark.tau2 import Tau2Domain, load_tau2_domain
from aah.data import find_data_dir

CORPUS = Path(__file__).parent / "fixtures" / "hostile" / "tau2_files.jsonl"


def shared_data() -> Path:
    """The data directory holding tau2/ (../shared/datasets), or skip."""
    data = find_data_dir()
    if not (data / "tau2" / "domains").is_dir():
        pytest.skip(f"no tau2/ in {data}")
    return data


def domain(name: str, wheel: Path) -> Tau2Domain:
    """A domain of the shared copy, read once a process."""
    return load_tau2_domain(name, shared_data(), wheel=wheel)


def corpus() -> list[dict[str, Any]]:
    """The damaged-file cases (tests/fixtures/hostile/tau2_files.jsonl)."""
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line]


def damaged_copy(root: Path, file: str, mutation: dict[str, Any]) -> Path:
    """A data directory at ``root`` whose tau2/ links the shared files, ``file`` mutated.

    Mutations (data, from the corpus): truncate (keep N bytes), write (text,
    repeated), append (text), bytes (hex), json_set (path, value), nest
    (depth), delete, folder.
    """
    source = shared_data() / "tau2"
    for path in source.rglob("*"):
        if path.is_file():
            target = root / "tau2" / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(path)
    target = root / "tau2" / file
    original = target.resolve().read_bytes()
    target.unlink()
    kind = mutation["kind"]
    if kind == "truncate":
        target.write_bytes(original[: mutation["keep"]])
    elif kind == "write":
        target.write_text(mutation["text"] * mutation.get("repeat", 1), encoding="utf-8")
    elif kind == "append":
        target.write_bytes(original + mutation["text"].encode("utf-8"))
    elif kind == "bytes":
        target.write_bytes(bytes.fromhex(mutation["hex"]))
    elif kind == "json_set":
        value = json.loads(original)
        *parents, last = mutation["path"]
        node = value
        for key in parents:
            node = node[key]
        node[last] = mutation["value"]
        target.write_text(json.dumps(value), encoding="utf-8")
    elif kind == "nest":
        target.write_text("[" * mutation["depth"] + "]" * mutation["depth"], encoding="utf-8")
    elif kind == "folder":
        target.mkdir()
    elif kind != "delete":
        raise ValueError(f"unknown mutation {kind!r}")
    return root
