"""The compiled tool registry: every endpoint in SQLite, searchable with FTS5.

Building reads all sources once (seconds); opening the result afterwards
costs milliseconds, so every command and session can use all 900+ tools.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import sqlite_utils

from aah import __version__
from aah.errors import AahError
from aah.tools.failtalms import import_failtalms
from aah.tools.fixes import apply_fixes, load_fixes
from aah.tools.openapi import import_openapi
from aah.tools.spec import EndpointSpec, ImportResult, Rejection

# Column weights for bm25: a word in an endpoint's name or tool says more
# about what it does than the same word somewhere in a long description.
_FTS_COLUMNS = ("words", "tool", "category", "description", "params")
_FTS_WEIGHTS = (6.0, 3.0, 3.0, 1.0, 0.5)
_STOPWORDS = frozenset(
    "a an and are as at be by can do does for from get give how i in is it me my of on "
    "or please show tell the this to what when where which who with you".split()
)
_WORD = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])|\d+")


class SearchHit(NamedTuple):
    """One search result: the endpoint and its relevance (higher is better)."""

    spec: EndpointSpec
    score: float


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


def build_registry(data_dir: Path, path: Path, fixes_path: Path | None = None) -> BuildReport:
    """Import every source under ``data_dir`` and compile it into ``path``.

    The database is written beside the target and renamed into place, so a
    reader never sees a half-built registry.

    Raises:
        AahError: a source folder is missing, or two endpoints share a name.
    """
    started = time.perf_counter()
    result = _import_all(data_dir)
    fixes_applied = apply_fixes(result.endpoints, load_fixes(fixes_path)) if fixes_path else []
    _check_unique(result.endpoints)
    registry_hash = _hash_specs(result.endpoints)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.unlink(missing_ok=True)
    _write(partial, result, registry_hash, data_dir)
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
    )


def _import_all(data_dir: Path) -> ImportResult:
    failtalms, openapi = data_dir / "fail-talms", data_dir / "openapi"
    if not (failtalms / "tools").is_dir():
        raise AahError(f"no Fail-TaLMs tools under {data_dir}: run `aah data fetch` or pass --data")
    result = import_failtalms(failtalms)
    if openapi.is_dir():
        result.extend(import_openapi(openapi))
    return result


def _check_unique(endpoints: list[EndpointSpec]) -> None:
    counts = Counter(spec.qualified_name for spec in endpoints)
    clashes = sorted(name for name, count in counts.items() if count > 1)
    if clashes:
        raise AahError(f"endpoint names clash after import: {', '.join(clashes[:5])}")


def _hash_specs(endpoints: list[EndpointSpec]) -> str:
    digest = hashlib.sha256()
    for spec in sorted(endpoints, key=lambda s: s.qualified_name):
        digest.update(spec.model_dump_json().encode())
    return digest.hexdigest()


def name_words(text: str) -> str:
    """Split identifiers like ``get_weatherForecast`` into searchable words."""
    return " ".join(word.lower() for word in _WORD.findall(text))


def _write(path: Path, result: ImportResult, registry_hash: str, data_dir: Path) -> None:
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
    db.table("search").insert_all(
        (
            {
                "qualified_name": spec.qualified_name,
                "words": name_words(f"{spec.tool} {spec.name}"),
                "tool": name_words(spec.tool),
                "category": spec.category.lower(),
                "description": spec.description,
                "params": " ".join(f"{p.name} {p.description}" for p in spec.parameters),
            }
            for spec in result.endpoints
        ),
    )
    db.table("search").enable_fts(_FTS_COLUMNS, tokenize="porter unicode61")
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
    }
    db.table("meta").insert_all(({"key": k, "value": v} for k, v in meta.items()), pk="key")
    db.close()


class Registry:
    """Read access to a compiled registry: lookup, listing and search."""

    def __init__(self, path: Path) -> None:
        """Open the registry at ``path``.

        Raises:
            AahError: there is no registry there yet.
        """
        if not path.is_file():
            raise AahError(f"no tool registry at {path}: run `aah tools build` first")
        self.path = path
        # Read-only and shareable between threads: sessions look up specs
        # from worker threads while the event loop searches.
        uri = f"file:{path}?mode=ro"
        self._conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
        self._cache: dict[str, EndpointSpec] = {}

    def close(self) -> None:
        """Close the database connection."""
        self._conn.close()

    @property
    def meta(self) -> dict[str, str]:
        """Build facts: hash, aah version, time, data dir, endpoint count."""
        return dict(self._conn.execute("SELECT key, value FROM meta").fetchall())

    @property
    def registry_hash(self) -> str:
        """A hash of every spec, to pin a run to the tools it saw."""
        return self.meta["registry_hash"]

    def __len__(self) -> int:
        return int(self._conn.execute("SELECT count(*) FROM endpoints").fetchone()[0])

    def __contains__(self, name: object) -> bool:
        row = self._conn.execute(
            "SELECT 1 FROM endpoints WHERE qualified_name = ?", (name,)
        ).fetchone()
        return row is not None

    def get(self, name: str) -> EndpointSpec:
        """The endpoint called ``name`` (a qualified ``<tool>__<endpoint>`` name).

        Raises:
            AahError: no such endpoint; the message suggests close names.
        """
        if name in self._cache:
            return self._cache[name]
        row = self._conn.execute(
            "SELECT spec FROM endpoints WHERE qualified_name = ?", (name,)
        ).fetchone()
        if row is None:
            hint = ", ".join(hit.spec.qualified_name for hit in self.search(name, k=3))
            suggestion = f" (did you mean {hint}?)" if hint else ""
            raise AahError(f"no tool named {name!r}{suggestion}: see `aah tools search`")
        spec = EndpointSpec.model_validate_json(row[0])
        self._cache[name] = spec
        return spec

    def names(self) -> list[str]:
        """Every qualified name, sorted."""
        rows = self._conn.execute("SELECT qualified_name FROM endpoints ORDER BY 1")
        return [row[0] for row in rows]

    def endpoints(self, category: str | None = None) -> list[EndpointSpec]:
        """All endpoints, or those of one category (case-insensitive)."""
        sql = "SELECT spec FROM endpoints"
        params: tuple[str, ...] = ()
        if category:
            sql += " WHERE lower(category) = lower(?)"
            params = (category,)
        rows = self._conn.execute(sql + " ORDER BY qualified_name", params)
        return [EndpointSpec.model_validate_json(row[0]) for row in rows]

    def categories(self) -> dict[str, int]:
        """Endpoint count per category."""
        rows = self._conn.execute(
            "SELECT category, count(*) FROM endpoints GROUP BY category ORDER BY category"
        )
        return {row[0]: int(row[1]) for row in rows}

    def rejections(self) -> list[dict[str, str]]:
        """Source entries that could not become endpoints, with reasons."""
        cursor = self._conn.execute("SELECT source, file, tool, name, reason FROM rejections")
        columns = [d[0] for d in cursor.description]
        return [dict(zip(columns, row, strict=True)) for row in cursor]

    def search(self, query: str, k: int = 10) -> list[SearchHit]:
        """The ``k`` endpoints that best match ``query``.

        BM25 over name, tool, category, description and parameters; words are
        stemmed, so "forecasts" finds "forecast".
        """
        terms = [w for w in name_words(query).split() if w not in _STOPWORDS]
        if not terms or k <= 0:
            return []
        match = " OR ".join(f'"{term}"' for term in dict.fromkeys(terms))
        weights = ", ".join(str(w) for w in _FTS_WEIGHTS)
        rows = self._conn.execute(
            f"SELECT s.qualified_name, bm25(search_fts, {weights}) AS rank "
            "FROM search_fts JOIN search s ON s.rowid = search_fts.rowid "
            "WHERE search_fts MATCH ? ORDER BY rank LIMIT ?",
            (match, k),
        ).fetchall()
        return [SearchHit(self.get(name), -float(rank)) for name, rank in rows]
