"""The five Fail-TaLMs settings as typed tasks, with what the raw data leaves unsaid.

Each setting is one file, ``benchmark/<Folder>/all_<Folder>_queries.json``.
A derived query (under-specified, replaceable, non-replaceable, no-tools) is
linked to the Original query it was made from (see ``aah.benchmark.failtalms.derive``),
which gives the endpoints the task really needs, the unavailable ones, and
the facts an under-specified query hides.

Parsing and derivation are cached per data folder and file stamp, so a
second load costs nothing; tasks are frozen because the cache shares them.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from aah.benchmark.failtalms import derive as derive_module
from aah.benchmark.failtalms.derive import (
    Match,
    MatchKind,
    OriginalIndex,
    candidate,
    content_words,
    hidden_facts,
    similarity,
    words,
)
from aah.benchmark.failtalms.settings import SETTING_FOLDERS as SETTING_FOLDERS
from aah.benchmark.failtalms.settings import SETTINGS as SETTINGS
from aah.benchmark.failtalms.settings import Setting as Setting
from aah.config import get_settings
from aah.data import failtalms_dir
from aah.errors import AahError
from aah.tools.importers import benchmark_endpoint_name
from aah.tools.registry import Registry

SAME_REQUEST = 0.9  # similarity above which two queries ask the same thing


class Task(BaseModel):
    """One benchmark query with the fields derived from its original.

    Attributes:
        id: ``<setting>-<query_id>``, stable across loads.
        setting: the setting the query belongs to.
        query_id: the source's ``query_id`` (unique within a setting).
        query: the user request.
        offered: qualified names of the endpoints offered (the ``api_list``).
        needed: the endpoints the task needs: the offered ones (perfect,
            under-specified) or the original's (the others).
        hidden_facts: under-specified only: the original's phrases the query
            removed or replaced.
        unavailable: replaceable / non-replaceable only: needed endpoints that
            are not offered.
        original_query: the Original query this one was made from, if found.
        original_id: that query's task id.
        match: how the original was found (``self`` for the Original setting).
        similarity: word-level text similarity of the query and its original.
        missing_endpoints: offered or needed names the registry lacks (only
            checked when a registry is given).
    """

    model_config = ConfigDict(frozen=True)

    id: str
    setting: Setting
    query_id: int
    query: str
    offered: list[str]
    needed: list[str]
    hidden_facts: list[str] = Field(default_factory=list)
    unavailable: list[str] = Field(default_factory=list)
    original_query: str | None = None
    original_id: str | None = None
    match: MatchKind
    similarity: float
    missing_endpoints: list[str] = Field(default_factory=list)


@dataclass(frozen=True)
class _RawQuery:
    query_id: int
    text: str
    endpoints: tuple[str, ...]


def task_id(setting: Setting, query_id: int) -> str:
    """The id of a setting's query: ``<setting>-<query_id>``."""
    return f"{setting}-{query_id}"


def setting_file(data_dir: Path, setting: Setting) -> Path:
    """The query file of ``setting`` under a data directory."""
    folder = SETTING_FOLDERS[setting]
    return failtalms_dir(data_dir) / "benchmark" / folder / f"all_{folder}_queries.json"


def load_tasks(
    data_dir: Path,
    settings: Sequence[Setting] | None = None,
    registry: Registry | None = None,
) -> list[Task]:
    """Load the tasks of some settings (all by default), in data order per setting.

    Args:
        data_dir: the data directory (holding ``fail-talms/benchmark``).
        settings: which settings, in the order to return them.
        registry: when given, each task's ``missing_endpoints`` lists the
            offered or needed names it lacks.

    Returns:
        The tasks, setting after setting.

    Raises:
        AahError: a query file is missing or is not the expected JSON.
    """
    chosen = SETTINGS if settings is None else tuple(settings)
    stamp = _stamp(data_dir)
    tasks = [task for setting in chosen for task in _tasks_of(data_dir, setting, stamp)]
    return _with_missing(tasks, registry) if registry is not None else tasks


@lru_cache(maxsize=64)
def _tasks_of(
    data_dir: Path, setting: Setting, stamp: tuple[tuple[str, int, int], ...]
) -> tuple[Task, ...]:
    """A setting's tasks from the on-disk cache, else derived (and then cached).

    Deriving all settings takes about half a second; every command that needs
    tasks (a run, a report, the apps) would pay it at start. The cache key is
    the query files' stamp and the derivation code itself, so a changed file
    or a changed rule derives afresh.
    """
    cache = _cache_file(setting, stamp)
    if cache.is_file():
        try:
            return tuple(Task.model_validate(item) for item in json.loads(cache.read_bytes()))
        except (OSError, ValueError):
            pass  # a damaged cache is derived again and rewritten
    tasks = _derived(data_dir, setting, stamp)
    _write_cache(cache, tasks)
    return tasks


def _cache_file(setting: Setting, stamp: tuple[tuple[str, int, int], ...]) -> Path:
    digest = hashlib.sha256(repr(stamp).encode())
    for module in (__file__, derive_module.__file__):
        digest.update(Path(module).read_bytes())
    return get_settings().cache_dir / "tasks" / f"{setting}-{digest.hexdigest()[:16]}.json"


def _write_cache(path: Path, tasks: Sequence[Task]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.partial")
        partial.write_text(json.dumps([task.model_dump(mode="json") for task in tasks]))
        os.replace(partial, path)
    except OSError:
        pass  # a read-only cache directory only costs the next command the derivation


def load_setting(data_dir: Path, setting: Setting, registry: Registry | None = None) -> list[Task]:
    """The tasks of one setting, in data order (see ``load_tasks``)."""
    return load_tasks(data_dir, [setting], registry)


def _stamp(data_dir: Path) -> tuple[tuple[str, int, int], ...]:
    """Path, mtime and size of every query file: the cache key of a derivation."""
    stamp = []
    for setting in SETTINGS:
        path = setting_file(data_dir, setting)
        if not path.is_file():
            raise AahError(
                f"no {SETTING_FOLDERS[setting]} queries at {path}: "
                "run `aah data fetch` or pass --data DIR"
            )
        info = path.stat()
        stamp.append((str(path.resolve()), info.st_mtime_ns, info.st_size))
    return tuple(stamp)


@lru_cache(maxsize=32)
def _read(path: Path, mtime_ns: int) -> tuple[_RawQuery, ...]:
    try:
        items = json.loads(path.read_text(encoding="utf-8"))
        return tuple(_raw_query(item) for item in items)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise AahError(f"cannot read the queries in {path} ({exc}): fetch the data again") from exc


def _raw_query(item: dict[str, Any]) -> _RawQuery:
    names = (benchmark_endpoint_name(a["tool_name"], a["api_name"]) for a in item["api_list"])
    # dict.fromkeys keeps the data's order and drops a repeated endpoint.
    return _RawQuery(int(item["query_id"]), str(item["query"]), tuple(dict.fromkeys(names)))


def _queries(data_dir: Path, setting: Setting) -> tuple[_RawQuery, ...]:
    path = setting_file(data_dir, setting)
    return _read(path, path.stat().st_mtime_ns)


@lru_cache(maxsize=8)
def _index(data_dir: Path, stamp: tuple[tuple[str, int, int], ...]) -> OriginalIndex:
    originals = _queries(data_dir, "perfect")
    return OriginalIndex([candidate(q.query_id, q.text, q.endpoints) for q in originals])


@lru_cache(maxsize=64)
def _derived(
    data_dir: Path, setting: Setting, stamp: tuple[tuple[str, int, int], ...]
) -> tuple[Task, ...]:
    queries = _queries(data_dir, setting)
    index = _index(data_dir, stamp)
    if setting == "perfect":
        own = (Match(original, "self", 1.0) for original in index.originals)
        return tuple(Task(**_linked(setting, q, m)) for q, m in zip(queries, own, strict=True))
    if setting == "underspecified":
        return tuple(_underspecified(q, index) for q in queries)
    if setting == "notools":
        return tuple(Task(**_linked(setting, q, index.match_notools(q.text))) for q in queries)
    same = _SameRequest([*_queries(data_dir, "replaceable"), *_queries(data_dir, "nonreplaceable")])
    return tuple(_unavailable(setting, q, index, same) for q in queries)


def _linked(setting: Setting, query: _RawQuery, match: Match) -> dict[str, Any]:
    """The fields a task takes from its query and the original found for it."""
    found = match.original
    return {
        "id": task_id(setting, query.query_id),
        "setting": setting,
        "query_id": query.query_id,
        "query": query.text,
        "offered": list(query.endpoints),
        "needed": list(found.endpoint_list if found else query.endpoints),
        "original_query": found.text if found else None,
        "original_id": task_id("perfect", found.query_id) if found else None,
        "match": match.kind,
        "similarity": round(match.similarity, 4),
    }


def _underspecified(query: _RawQuery, index: OriginalIndex) -> Task:
    match = index.match_underspecified(query.text, frozenset(query.endpoints))
    fields = _linked("underspecified", query, match)
    # The offered endpoints are what the query needs, even when the original
    # found had another list: only the information is missing.
    fields["needed"] = list(query.endpoints)
    if match.original is not None:
        fields["hidden_facts"] = hidden_facts(match.original.text, query.text)
    return Task(**fields)


class _SameRequest:
    """The replaceable and non-replaceable queries, grouped by what they ask.

    Queries asking the same thing in these settings often offer different
    endpoints (each lacks another one), so together they show the needed set.
    """

    def __init__(self, queries: Sequence[_RawQuery]) -> None:
        self._queries = queries
        self._content = [content_words(words(query.text)) for query in queries]
        union: dict[str, set[str]] = defaultdict(set)
        for query in queries:
            union[query.text.strip()].update(query.endpoints)
        self._by_text = {text: frozenset(names) for text, names in union.items()}

    def offered(self, query: _RawQuery, *, near: bool = False) -> frozenset[str]:
        """Every endpoint offered by a query of the same text as ``query``.

        With ``near``, also by one at least ``SAME_REQUEST`` similar: a
        setting's copy of a query sometimes adds a word ("using Celestrak").
        """
        union = set(self._by_text.get(query.text.strip(), query.endpoints))
        if near:
            mine = content_words(words(query.text))
            for other, theirs in zip(self._queries, self._content, strict=True):
                # Similarity is a mean with the content overlap, so a pair
                # below 2 * SAME_REQUEST - 1 of it cannot reach SAME_REQUEST.
                overlap = 2 * len(mine & theirs) / max(1, len(mine) + len(theirs))
                close = overlap >= 2 * SAME_REQUEST - 1
                if close and similarity(query.text, other.text) >= SAME_REQUEST:
                    union.update(other.endpoints)
        return frozenset(union)


def _unavailable(
    setting: Setting, query: _RawQuery, index: OriginalIndex, same: _SameRequest
) -> Task:
    offered = frozenset(query.endpoints)
    together = same.offered(query)
    match = index.match_unavailable(query.text, offered, together)
    if match.original is None and together == offered:
        together = same.offered(query, near=True)
        match = index.match_unavailable(query.text, offered, together)
    fields = _linked(setting, query, match)
    if match.original is None:
        # No original: the queries asking the same thing still say which
        # endpoints this one lacks.
        fields["needed"] = [*query.endpoints, *sorted(together - offered)]
    fields["unavailable"] = [name for name in fields["needed"] if name not in offered]
    return Task(**fields)


def _with_missing(tasks: list[Task], registry: Registry) -> list[Task]:
    names = {name for task in tasks for name in (*task.offered, *task.needed)}
    missing = {name for name in names if name not in registry}
    if not missing:
        return tasks
    return [
        task.model_copy(update={"missing_endpoints": _missing_of(task, missing)})
        if missing.intersection([*task.offered, *task.needed])
        else task
        for task in tasks
    ]


def _missing_of(task: Task, missing: set[str]) -> list[str]:
    return [name for name in dict.fromkeys([*task.offered, *task.needed]) if name in missing]
