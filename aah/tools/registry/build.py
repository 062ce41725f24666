"""Building the tool registry: every endpoint of every source into SQLite + FTS5.

Building reads all sources once (about a second) and writes the database
beside its target, renaming it into place, so readers never see half of one.

No source file can stop a build: a file that cannot be read (too large,
not UTF-8, malformed, nesting or expanding out of bounds) is one rejection
naming it, and an endpoint whose qualified name another source already holds
is rejected on its own. Fail-TaLMs is imported first, so its names (the ones
the benchmark tasks call) are always the ones kept.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import sqlite_utils

from aah import __version__
from aah.errors import AahError
from aah.tools.importers import (
    DEFAULT_MAX_SPEC_BYTES,
    apply_fixes,
    import_failtalms,
    import_openapi,
    load_fixes,
)
from aah.tools.registry.added import load_added
from aah.tools.registry.dense import Embedder, dense_available, embed_cached
from aah.tools.registry.index import (
    FTS_COLUMNS,
    INDEX_VERSION,
    dense_text,
    search_columns,
    tool_abouts,
)
from aah.tools.spec import EndpointSpec, ImportResult, Rejection


@dataclass
class BuildReport:
    """What a build produced, for the command line and for run manifests."""

    path: Path
    endpoints: int
    by_source: dict[str, int]
    by_category: dict[str, int]
    rejections: list[Rejection]
    fixes_applied: list[str]
    registry_hash: str
    seconds: float
    repairs: int = field(default=0)
    embedding_model: str | None = None
    vector_seconds: float = 0.0


def build_registry(
    data_dir: Path,
    path: Path,
    fixes_path: Path | None = None,
    *,
    max_spec_bytes: int = DEFAULT_MAX_SPEC_BYTES,
    vectors: bool | None = None,
) -> BuildReport:
    """Import every source under ``data_dir`` and compile it into ``path``.

    The database is written beside the target and renamed into place, so a
    reader never sees a half-built registry.

    Args:
        data_dir: the folder holding ``fail-talms/`` and ``openapi/``.
        path: where the registry database goes.
        fixes_path: the project's fixes file, if any.
        max_spec_bytes: a source file larger than this is rejected unread.
        vectors: compute every endpoint's dense vector (for hybrid search);
            by default when the ``[retrieval]`` extra is installed and
            ``AAH_RETRIEVAL`` is not ``bm25``.

    Raises:
        AahError: the Fail-TaLMs folder is missing, or the fixes file is
            invalid or names an unknown endpoint.
    """
    started = time.perf_counter()
    result = _import_all(data_dir, max_spec_bytes)
    result.extend(load_added(path))  # MCP servers' tools (`aah tools add-mcp`)
    result = _without_clashes(result)
    if not result.endpoints:
        raise AahError(_nothing_imported(data_dir, result))
    fixes_applied = apply_fixes(result.endpoints, load_fixes(fixes_path)) if fixes_path else []
    registry_hash = _hash_specs(result.endpoints)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.unlink(missing_ok=True)
    about = _abouts(data_dir, result.endpoints, max_spec_bytes)
    _write(partial, result, registry_hash, data_dir, about)
    embedding_model, vector_seconds = None, 0.0
    if dense_available() if vectors is None else vectors:
        vectors_started = time.perf_counter()
        embedding_model = _write_vectors(partial, result.endpoints, about)
        vector_seconds = time.perf_counter() - vectors_started
    os.replace(partial, path)
    return BuildReport(
        path=path,
        endpoints=len(result.endpoints),
        by_source=dict(Counter(spec.source.kind for spec in result.endpoints)),
        by_category=dict(sorted(Counter(spec.category for spec in result.endpoints).items())),
        rejections=result.rejections,
        fixes_applied=fixes_applied,
        registry_hash=registry_hash,
        seconds=time.perf_counter() - started,
        repairs=sum(len(spec.repairs) for spec in result.endpoints),
        embedding_model=embedding_model,
        vector_seconds=vector_seconds,
    )


def _import_all(data_dir: Path, max_bytes: int) -> ImportResult:
    failtalms, openapi = data_dir / "fail-talms", data_dir / "openapi"
    if not (failtalms / "tools").is_dir():
        raise AahError(f"no Fail-TaLMs tools under {data_dir}: run `aah data fetch` or pass --data")
    result = import_failtalms(failtalms, max_bytes)
    if openapi.is_dir():
        result.extend(import_openapi(openapi, max_bytes))
    return result


def _nothing_imported(data_dir: Path, result: ImportResult) -> str:
    if not result.rejections:
        return f"no endpoint found under {data_dir}: add spec files, or pass --data"
    first = result.rejections[0]
    return (
        f"no endpoint could be imported from {data_dir}: {len(result.rejections)} rejected, "
        f"the first {first.source.file} ({first.reason}); fix the files, or pass --data"
    )


def _without_clashes(result: ImportResult) -> ImportResult:
    """The endpoints with each qualified name's first holder kept, later ones rejected."""
    kept: dict[str, EndpointSpec] = {}
    rejections = list(result.rejections)
    for spec in result.endpoints:
        holder = kept.get(spec.qualified_name)
        if holder is None:
            kept[spec.qualified_name] = spec
            continue
        reason = (
            f"name {spec.qualified_name!r} is already the {holder.source.kind} endpoint "
            f"from {holder.source.file}: left out (rename the tool or the operation)"
        )
        rejections.append(
            Rejection(source=spec.source, tool=spec.tool, name=spec.name, reason=reason)
        )
    return ImportResult(endpoints=list(kept.values()), rejections=rejections)


def _hash_specs(endpoints: list[EndpointSpec]) -> str:
    digest = hashlib.sha256()
    for spec in sorted(endpoints, key=lambda s: s.qualified_name):
        digest.update(spec.model_dump_json().encode())
    return digest.hexdigest()


def _abouts(data_dir: Path, endpoints: list[EndpointSpec], max_bytes: int) -> dict[str, str]:
    """What each endpoint's tool is about, by qualified name (Fail-TaLMs tools only)."""
    failtalms = [spec for spec in endpoints if spec.source.kind == "fail-talms"]
    by_file = tool_abouts(
        data_dir / "fail-talms", (spec.source.file for spec in failtalms), max_bytes
    )
    return {spec.qualified_name: by_file.get(spec.source.file, "") for spec in failtalms}


def _write(
    path: Path, result: ImportResult, registry_hash: str, data_dir: Path, about: dict[str, str]
) -> None:
    db = sqlite_utils.Database(path)
    db.table("endpoints").insert_all(
        (
            {
                "qualified_name": spec.qualified_name,
                "tool": spec.tool,
                "category": spec.category,
                "name": spec.name,
                "method": spec.method,
                "host": spec.host,
                "source": spec.source.kind,
                "spec": spec.model_dump_json(),
            }
            for spec in result.endpoints
        ),
        pk="qualified_name",
    )
    db.table("endpoints").create_index(["category"])
    # One FTS5 table per part: FTS5's bm25 normalises by the length of the
    # whole row, so in one table an endpoint with many documented parameters
    # would lose to a terse one on a word both have in their names.
    texts = [
        (spec.qualified_name, search_columns(spec, about.get(spec.qualified_name, "")))
        for spec in result.endpoints
    ]
    for column in FTS_COLUMNS:
        part = db.table(f"search_{column}")
        part.insert_all(
            {"qualified_name": name, "text": columns[column]} for name, columns in texts
        )
        part.enable_fts(["text"], tokenize="porter unicode61")
    db.table("rejections").insert_all(
        (
            {
                "source": r.source.kind,
                "file": r.source.file,
                "tool": r.tool,
                "name": r.name,
                "reason": r.reason,
            }
            for r in result.rejections
        ),
        alter=True,
    )
    meta = {
        "registry_hash": registry_hash,
        "aah_version": __version__,
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "data_dir": str(data_dir),
        "endpoints": str(len(result.endpoints)),
        "search_index": INDEX_VERSION,
    }
    db.table("meta").insert_all(({"key": k, "value": v} for k, v in meta.items()), pk="key")
    db.close()


def _write_vectors(path: Path, endpoints: list[EndpointSpec], about: dict[str, str]) -> str:
    """Store every endpoint's dense vector and token states, and the model that made them.

    Token states are stored as 16-bit floats (about 20 MB for 956
    endpoints): late interaction ranks as well with them as with 32-bit.

    Returns:
        The model's id.
    """
    import numpy as np

    embedder = Embedder()
    texts = [dense_text(spec, about.get(spec.qualified_name, "")) for spec in endpoints]
    vectors = embed_cached(embedder, texts)
    db = sqlite_utils.Database(path)
    db.table("vectors").insert_all(
        (
            {
                "qualified_name": spec.qualified_name,
                "vector": row.tobytes(),
                "tokens": tokens.astype(np.float16).tobytes(),
            }
            for spec, row, tokens in zip(endpoints, vectors.pooled, vectors.tokens, strict=True)
        ),
        pk="qualified_name",
    )
    db.table("meta").insert({"key": "embedding_model", "value": embedder.model}, replace=True)
    db.close()
    return embedder.model
