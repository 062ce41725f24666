"""The compiled tool registry, read side: lookup, listing and hybrid search.

Opening a registry costs milliseconds, so every command and session can use
all 900+ tools; building one is ``aah.tools.registry.build``.

Search fuses BM25 over the words a person searches by (fast, and it says
which words matched where) and, with the ``[retrieval]`` extra, two rankings
from one small model: the cosine similarity of dense sentence vectors (it
finds "will it rain tomorrow?" in a weather forecast that never says
"rain") and late interaction of the request's words with each candidate's
(it finds which of a tool's endpoints holds the asked detail).
"""

from __future__ import annotations

import re
import sqlite3
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from aah.errors import AahError
from aah.storable import storable_text
from aah.terminal_text import printable
from aah.tools.registry.dense import Embedder, best_matches, dense_available, model_id
from aah.tools.registry.index import (
    INDEX_VERSION,
    PARTS,
    STOPWORDS,
    name_words,
    request_words,
)
from aah.tools.spec import EndpointSpec

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["Registry", "SearchHit", "name_words"]

# Each ranking hands this many candidates to the fusion.
_POOL = 50
# Reciprocal rank fusion (Cormack et al. 2009): a hit's share is 1 / (K + rank)
# in each ranking. The paper's K = 60 suits long rankings; with 50 candidates
# it made places 1 and 5 nearly equal, and K = 10 measured better
# (perf/tool_retrieval.py: perfect recall@5 0.830 -> 0.842, natural 0.800 -> 0.822).
_RRF_K = 10
# A request that names no service ("will it rain in Lisbon tomorrow?") is
# asked in the words of its need, which the model reads better than BM25
# does: a stray word ("tomorrow" in a prayer tool's name) must not outrank
# its meaning, so there the dense ranking counts this much more. One that
# names a tool or its site anywhere ("papers on arXiv") is written in the
# services' own terms, and is ranked by both alike, in all its parts; so is
# a keyword search ("weather"). perf/tool_retrieval.py, with the category
# share below: natural requests recall@5 0.733 -> 0.844, MRR 0.610 -> 0.687;
# the perfect setting (which mostly names its services) recall@5 0.857 ->
# 0.856, recall@10 0.932 -> 0.940.
_UNNAMED_DENSE_WEIGHT = 2.0
# Late interaction (each content word of a request matched with its best
# word of an endpoint's text, ColBERT's MaxSim over the same model's token
# states) ranks each text's BM25 and dense candidates once more, with this
# share in the fusion. It tells apart an endpoint that holds the asked
# detail from its tool's other endpoints, which the pooled vectors cannot
# (perf/tool_retrieval.py: perfect recall@5 0.855 -> 0.871, recall@10 0.941
# -> 0.935, MRR 0.881 -> 0.899; under-specified recall@5 0.814 -> 0.831;
# natural requests recall@5 0.806 -> 0.828, recall@10 0.888 -> 0.910).
_LATE_WEIGHT = 1.0
# Late interaction ranks this many of each text's BM25 and dense candidates
# (as many as 50 ranked the same, at twice the cost).
_LATE_POOL = 30
# The searchable parts that hold names, searched for words run together too.
_NAME_COLUMNS = frozenset({"words", "tool"})
# The shortest run of joined words searched for (see ``_compound_words``).
_COMPOUND_MIN = 7
# A search of at most this many content words is a keyword search.
_KEYWORD_SEARCH_WORDS = 2
# Each endpoint's vector is its own plus this share of its category's name's
# ("Weather"): a request about rain or heat is near "weather" even where it
# is far from an endpoint's own words (alone: natural recall@5 0.733 ->
# 0.778, perfect recall@10 0.932 -> 0.937).
_CATEGORY_WEIGHT = 0.4
_MARK = re.compile("\x02(.*?)\x03")
# Where one ask of a request may end and another begin: a sentence's end, or
# a joining word ("and", "also", "additionally", "as well as", "then"...). A
# wrong split costs little: the whole request is searched as well.
_SPLIT = re.compile(
    r"(?<=[.?!;])\s+|\s*,?\s*\b(?:and also|and then|additionally|also|as well as|plus|"
    r"furthermore|moreover|besides|then|and)\b\s*,?\s*",
    re.IGNORECASE,
)


class SearchHit(NamedTuple):
    """One search result: the endpoint, its relevance (higher is better) and why.

    Attributes:
        spec: the endpoint.
        score: the fused score (reciprocal rank fusion) in hybrid search, the
            BM25 score otherwise.
        bm25_rank: its place in the BM25 ranking (1 is first), None if no word matched.
        dense_rank: its place in the dense ranking, None without dense vectors.
        matched: the query words that matched, per part (name, tool,
            category, description, params, examples), as BM25 saw them.
        late_rank: its place in the late-interaction ranking of the
            request's words against its text's, None without dense vectors.
    """

    spec: EndpointSpec
    score: float
    bm25_rank: int | None = None
    dense_rank: int | None = None
    matched: tuple[tuple[str, tuple[str, ...]], ...] = ()
    late_rank: int | None = None


class _Vectors(NamedTuple):
    """A hybrid registry's vectors, as search reads them."""

    names: list[str]
    # Each endpoint's unit vector plus its category's, one per column.
    columns: NDArray[np.float32]
    # Every endpoint's token states; by name, its place in ``starts`` and
    # ``lengths`` (which say where its rows are).
    tokens: NDArray[np.float32]
    places: dict[str, int]
    starts: NDArray[np.int64]
    lengths: NDArray[np.int64]


class Registry:
    """Read access to a compiled registry: lookup, listing and search."""

    def __init__(self, path: Path, *, dense: bool | None = None) -> None:
        """Open the registry at ``path``.

        Args:
            path: the registry database.
            dense: use dense vectors in search; by default when the
                ``[retrieval]`` extra is installed and ``AAH_RETRIEVAL`` is
                not ``bm25``. Either way only when the registry holds vectors
                of the installed model.

        Raises:
            AahError: there is no registry there yet.
        """
        if not path.is_file():
            raise AahError(f"no tool registry at {path}: run `aah tools build` first")
        self.path = path
        # Read-only and shareable between threads: sessions look up specs
        # from worker threads while the event loop searches.
        self._uri = f"file:{path}?mode=ro"
        self._conn = sqlite3.connect(self._uri, uri=True, check_same_thread=False)
        self._cache: dict[str, EndpointSpec] = {}
        self._dense_wanted = dense
        self._vectors: _Vectors | None = None
        self._embedder: Embedder | None = None
        self._hybrid: bool | None = None
        self._worker: ThreadPoolExecutor | None = None
        # The thread that ranks a request's parts by BM25, with a connection
        # of its own: one connection runs one statement at a time.
        self._lexical: tuple[ThreadPoolExecutor, sqlite3.Connection] | None = None
        self._closed = False
        self._count: int | None = None
        self._loading = threading.Lock()

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its path: another process (a Ray actor) opens the same file anew."""
        return (partial(Registry, dense=self._dense_wanted), (self.path,))

    def close(self) -> None:
        """Close the database connection (and the threads that embed and rank parts, if any)."""
        self._closed = True
        if self._worker is not None:
            self._worker.shutdown(wait=True)
        if self._lexical is not None:
            thread, conn = self._lexical
            thread.shutdown(wait=True)
            conn.close()
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
        return self._size()

    def _size(self) -> int:
        if self._count is None:  # read-only: the count never changes
            self._count = int(self._conn.execute("SELECT count(*) FROM endpoints").fetchone()[0])
        return self._count

    def __contains__(self, name: object) -> bool:
        if isinstance(name, str):
            name = storable_text(name)
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
        # A command line's bytes that are not UTF-8 arrive as lone surrogates.
        name = storable_text(name)
        row = self._conn.execute(
            "SELECT spec FROM endpoints WHERE qualified_name = ?", (name,)
        ).fetchone()
        if row is None:
            # Close spellings: BM25 on the name's words, not the meaning.
            hint = ", ".join(found for found, _ in self._bm25(name, 3))
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
            params = (storable_text(category),)
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

    @property
    def hybrid(self) -> bool:
        """Whether search fuses dense vectors with BM25 (else BM25 alone).

        Decided once per opened registry: its model never changes, nor
        (within a process) the installed extra, and the checks cost a search
        half a millisecond.
        """
        if self._hybrid is None:
            wanted = dense_available() if self._dense_wanted is None else self._dense_wanted
            # A stale registry's vectors may lack what this install reads.
            self._hybrid = (
                wanted and not self.stale and self.meta.get("embedding_model") == model_id()
            )
        return self._hybrid

    @property
    def stale(self) -> bool:
        """Whether its search index is older than this install's: it must be rebuilt to be read.

        A registry without vectors for this install's model is not stale: it
        is read with BM25 alone (``vectors_missing`` says so, and ``aah tools
        build`` adds them). Commands that only read the registry never spend
        a vector build, nor rewrite a registry someone built, on their own.
        """
        return self.meta.get("search_index") != INDEX_VERSION

    @property
    def vectors_missing(self) -> bool:
        """Whether hybrid search could run here but the registry has no vectors of its model."""
        return dense_available() and self.meta.get("embedding_model") != model_id()

    def search(self, query: str, k: int = 10) -> list[SearchHit]:
        """The ``k`` endpoints that best match ``query``, best first.

        BM25 over name, tool, category, description, parameters and example
        values (words are stemmed, so "forecasts" finds "forecast"), fused
        by reciprocal rank with the dense ranking when the registry is hybrid.
        """
        # A query from a command line or a model may hold lone surrogates,
        # which neither the tokenizer nor SQLite takes, and terminal control
        # sequences, which every face leaves out when it shows the query:
        # what is searched is what is shown.
        query = printable(storable_text(query))
        if k <= 0 or not query.strip():
            return []
        if self._closed:
            raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
        k = min(k, self._size())  # no more hits than endpoints, however many are asked for
        pool = max(k, _POOL)
        # A request that asks for two things ("the weather in Paris, and also
        # the euro rate") is searched whole and part by part, so neither
        # part's tools bury the other's.
        spans = request_spans(query)
        texts = [query, *(query[start:end] for start, end in spans)]
        # The model reads the request on another thread while SQLite ranks
        # its words: both let go of the GIL, so the two overlap. One pass of
        # the model gives the request's vector and each part's (perfect
        # recall@10 0.923 -> 0.932 over the whole request's alone).
        pending = self._dense(query, spans, pool) if self.hybrid else None
        # The parts' BM25 runs on a third thread while this one ranks the
        # whole request (SQLite lets go of the GIL too).
        parts = self._bm25_parts(texts[1:], pool)
        bm25 = [self._bm25(query, pool), *(parts.result() if parts is not None else [])]
        dense: list[list[tuple[str, float]]] = []
        late: list[list[tuple[str, float]]] = []
        if pending is not None:
            dense, query_tokens = pending.result()
            late = self._late(query_tokens, bm25, dense)
        weight = _UNNAMED_DENSE_WEIGHT if dense and self._asks_in_own_words(query) else 1.0
        ranked = _fuse(bm25, dense, weight, late)[:k]
        matched = self._matched(query, [name for name, *_ in ranked])
        return [
            SearchHit(self.get(name), score, lexical, semantic, matched.get(name, ()), words)
            for name, score, lexical, semantic, words in ranked
        ]

    def _bm25_parts(self, texts: list[str], k: int) -> Future[list[list[tuple[str, float]]]] | None:
        """The BM25 ranking of each of ``texts``, computed on the lexical thread; None for none."""
        if not texts:
            return None
        with self._loading:
            if self._lexical is None:
                conn = sqlite3.connect(self._uri, uri=True, check_same_thread=False)
                thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="aah-bm25")
                self._lexical = (thread, conn)
        thread, conn = self._lexical
        return thread.submit(lambda: [self._bm25(text, k, conn) for text in texts])

    def _bm25(
        self, query: str, k: int, conn: sqlite3.Connection | None = None
    ) -> list[tuple[str, float]]:
        match = _match_expression(query)
        if match is None:
            return []
        named = _name_expression(query, match)
        # Each part's bm25 (negative: lower is better) times its weight, summed.
        parts = " UNION ALL ".join(
            f"SELECT s.qualified_name AS name, {weight} * bm25(search_{column}_fts) AS score "
            f"FROM search_{column}_fts JOIN search_{column} s "
            f"ON s.rowid = search_{column}_fts.rowid WHERE search_{column}_fts MATCH "
            + (":named" if column in _NAME_COLUMNS else ":match")
            for column, _, weight in PARTS
        )
        rows = (
            (conn or self._conn)
            .execute(
                f"SELECT name, sum(score) AS total FROM ({parts}) GROUP BY name "
                "ORDER BY total LIMIT :k",
                {"match": match, "named": named, "k": k},
            )
            .fetchall()
        )
        return [(name, -float(total)) for name, total in rows]

    def _asks_in_own_words(self, query: str) -> bool:
        """Whether ``query`` is a request in a person's words, naming no service.

        A search of a word or two ("weather") is a keyword search, whose
        words rank as much as its meaning; so is one whose words name a tool
        or its site (checked against the tools' names).
        """
        terms = _content_words(query)
        if len(terms) <= _KEYWORD_SEARCH_WORDS:
            return False
        row = self._conn.execute(
            "SELECT 1 FROM search_tool_fts WHERE search_tool_fts MATCH ? LIMIT 1",
            (_name_expression(query, _any_of(terms)),),
        ).fetchone()
        return row is None

    def _dense(
        self, query: str, spans: list[tuple[int, int]], k: int
    ) -> Future[tuple[list[list[tuple[str, float]]], tuple[NDArray[np.float32], ...]]]:
        """The dense ranking of the request and of each of its parts, computed on a worker thread.

        The endpoint vectors are read once, into one unit-length matrix, so
        a query costs one pass of the model (its parts' vectors come from
        the same pass, see ``Embedder.embed_query``) and one product.

        Returns:
            A future of the rankings, and of the query's content token
            states per text (for ``_late``).
        """
        import numpy as np

        with self._loading:  # sessions search from several threads
            if self._embedder is None:
                self._embedder = Embedder()
            if self._vectors is None:
                self._vectors = self._load_vectors(self._embedder)
            if self._worker is None:
                self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="aah-embed")
        names, columns = self._vectors.names, self._vectors.columns
        embedder = self._embedder

        def rank() -> tuple[list[list[tuple[str, float]]], tuple[NDArray[np.float32], ...]]:
            vectors = embedder.embed_query(query, spans)
            rankings: list[list[tuple[str, float]]] = []
            for similarity in vectors.pooled @ columns if names else ():
                depth = min(k, len(names))
                top = np.argpartition(-similarity, depth - 1)[:depth]
                top = top[np.argsort(-similarity[top])]
                rankings.append([(names[i], float(similarity[i])) for i in top])
            return rankings, vectors.tokens

        return self._worker.submit(rank)

    def _load_vectors(self, embedder: Embedder) -> _Vectors:
        """Every endpoint's vector (plus its category's) and token states, read once."""
        import numpy as np

        rows = self._conn.execute(
            "SELECT v.qualified_name, v.vector, v.tokens, e.category FROM vectors AS v"
            " JOIN endpoints AS e ON e.qualified_name = v.qualified_name"
        ).fetchall()
        blob = b"".join(row[1] for row in rows)
        matrix = np.frombuffer(blob, dtype=np.float32).reshape(len(rows), -1)
        # Plus each one's category's vector (``_CATEGORY_WEIGHT``), the few
        # category names embedded once, here.
        categories = sorted({row[3] for row in rows})
        words = embedder.embed([name_words(c) or c for c in categories])
        which = {category: i for i, category in enumerate(categories)}
        if rows:
            matrix = matrix + _CATEGORY_WEIGHT * words[[which[row[3]] for row in rows]]
        # Token states (stored 16-bit) are read into 32-bit, about 40 MB:
        # a search gathers its candidates' rows, and turning them to 32-bit
        # each time cost it more than the matching.
        width = matrix.shape[1] if rows else 0
        lengths = np.array(
            [len(row[2]) // (2 * width) if width else 0 for row in rows], dtype=np.int64
        )
        starts = np.zeros(len(rows), dtype=np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
        blob = b"".join(row[2] for row in rows)
        tokens = np.frombuffer(blob, dtype=np.float16).astype(np.float32).reshape(-1, width or 1)
        return _Vectors(
            [row[0] for row in rows],
            np.ascontiguousarray(matrix.T),
            tokens,
            {row[0]: i for i, row in enumerate(rows) if lengths[i]},
            starts,
            lengths,
        )

    def _late(
        self,
        query_tokens: tuple[NDArray[np.float32], ...],
        bm25: list[list[tuple[str, float]]],
        dense: list[list[tuple[str, float]]],
    ) -> list[list[tuple[str, float]]]:
        """Each text's BM25 and dense candidates, ranked by late interaction with its tokens.

        The texts' candidates are gathered and matched once, together.
        """
        import numpy as np

        assert self._vectors is not None  # loaded by ``_dense``
        places = self._vectors.places
        per_text = []
        for lexical, semantic in zip(bm25, dense, strict=True):
            candidates = (name for name, _ in (*lexical[:_LATE_POOL], *semantic[:_LATE_POOL]))
            per_text.append([name for name in dict.fromkeys(candidates) if name in places])
        union = list(dict.fromkeys(name for names in per_text for name in names))
        if not union or not sum(len(tokens) for tokens in query_tokens):
            return [[] for _ in per_text]
        which = np.array([places[name] for name in union])
        best = best_matches(
            np.vstack(query_tokens),
            self._vectors.tokens,
            self._vectors.starts[which],
            self._vectors.lengths[which],
        )
        column = {name: i for i, name in enumerate(union)}
        rankings: list[list[tuple[str, float]]] = []
        row = 0
        for tokens, names in zip(query_tokens, per_text, strict=True):
            mine = best[row : row + len(tokens)]
            row += len(tokens)
            if not len(tokens) or not names:
                rankings.append([])
                continue
            scores = mine[:, [column[name] for name in names]].mean(axis=0)
            scored = zip(names, scores.tolist(), strict=True)
            rankings.append(sorted(scored, key=lambda item: -item[1]))
        return rankings

    def _matched(
        self, query: str, names: list[str]
    ) -> dict[str, tuple[tuple[str, tuple[str, ...]], ...]]:
        """Per endpoint, the query words BM25 matched in each part (FTS5's own highlight)."""
        match = _match_expression(query)
        if match is None or not names:
            return {}
        named = _name_expression(query, match)
        marks = ",".join("?" * len(names))
        found: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
        for column, part, _ in PARTS:
            rows = self._conn.execute(
                f"SELECT s.qualified_name, highlight(search_{column}_fts, 0, char(2), char(3)) "
                f"FROM search_{column}_fts JOIN search_{column} s "
                f"ON s.rowid = search_{column}_fts.rowid "
                f"WHERE search_{column}_fts MATCH ? AND s.qualified_name IN ({marks})",
                (named if column in _NAME_COLUMNS else match, *names),
            ).fetchall()
            for name, text in rows:
                words = tuple(dict.fromkeys(w.lower() for w in _MARK.findall(text or "")))
                if words:
                    found.setdefault(name, []).append((part, words))
        return {name: tuple(parts) for name, parts in found.items()}


def _content_words(query: str) -> list[str]:
    """The words of ``query`` that may say which tool it needs, each once."""
    return list(dict.fromkeys(w for w in request_words(query).split() if w not in STOPWORDS))


def _name_expression(query: str, match: str) -> str:
    """``match`` for the parts that hold names: with the request's words run together too.

    A service's name is often its words run together ("the Met Museum" is
    "metmuseum", "Chuck Norris jokes" is "chucknorrisjokes").
    """
    joined = _compound_words(query)
    return f"{match} OR {joined}" if joined else match


def _compound_words(query: str) -> str | None:
    """An FTS5 query for two or three neighbouring words of ``query`` run together, as prefixes.

    "the Met Museum" gives "themet*", "metmuseum*" and "themetmuseum*".
    Joined words shorter than ``_COMPOUND_MIN`` letters are left out: they
    begin too many names.
    """
    words = request_words(query, split=False).split()
    joined = [
        "".join(words[i : i + n])
        for n in (2, 3)
        for i in range(len(words) - n + 1)
        if all(w.isalpha() for w in words[i : i + n])
    ]
    terms = [w for w in dict.fromkeys(joined) if len(w) >= _COMPOUND_MIN]
    return " OR ".join(f'"{term}" *' for term in terms) or None


def _any_of(terms: list[str]) -> str:
    """An FTS5 query matching any of ``terms``."""
    return " OR ".join(f'"{term}"' for term in terms)


def _match_expression(query: str) -> str | None:
    """An FTS5 query matching any of the query's content words, or None if it has none."""
    terms = _content_words(query)
    return _any_of(terms) if terms else None


def request_parts(query: str) -> list[str]:
    """The separate asks of a request: its sentences and the clauses joined by "and also"...

    Returns nothing for a request that asks one thing (it is searched whole).
    """
    return [query[start:end] for start, end in request_spans(query)]


def request_spans(query: str) -> list[tuple[int, int]]:
    """Where each separate ask of a request lies in it, as ``(start, end)`` offsets.

    Returns nothing for a request that asks one thing.
    """
    pieces, start = [], 0
    for separator in _SPLIT.finditer(query):
        pieces.append((start, separator.start()))
        start = separator.end()
    pieces.append((start, len(query)))
    spans = []
    for start, end in pieces:
        text = query[start:end]
        stripped = text.strip()
        if stripped and _match_expression(stripped):
            begin = start + len(text) - len(text.lstrip())
            spans.append((begin, begin + len(stripped)))
    return spans if len(spans) > 1 else []


def _fuse(
    bm25: list[list[tuple[str, float]]],
    dense: list[list[tuple[str, float]]],
    dense_weight: float = 1.0,
    late: list[list[tuple[str, float]]] | None = None,
) -> list[tuple[str, float, int | None, int | None, int | None]]:
    """Fuse the rankings of each text (the request, then its parts) into one.

    Per text, BM25, dense and late interaction are fused by reciprocal
    rank, the dense share times ``dense_weight``, the late one's
    ``_LATE_WEIGHT`` divided by it. Across texts an
    endpoint takes its best place (then its best score), so the top of each
    part's ranking comes before the middle of any: summing across parts
    would favour endpoints that are middling for every part.

    Returns:
        (name, score, best BM25 rank, best dense rank, best late-interaction
        rank), best first.
    """
    best_place: dict[str, int] = {}
    best_score: dict[str, float] = {}
    # Per endpoint, its best BM25, dense and late-interaction ranks.
    ranks: dict[str, list[int | None]] = {}
    for i, lexical in enumerate(bm25):
        semantic = dense[i] if i < len(dense) else []
        # Late interaction matches words, if softly: where meaning counts
        # more, it counts less ("how hot will it be" is not about the "hot"
        # board games).
        words = late[i] if late and i < len(late) else []
        shares = ((lexical, 1.0), (semantic, dense_weight), (words, _LATE_WEIGHT / dense_weight))
        scores: dict[str, float] = {}
        for which, (ranking, share) in enumerate(shares):
            for rank, (name, _) in enumerate(ranking, 1):
                scores[name] = scores.get(name, 0.0) + share / (_RRF_K + rank)
                best = ranks.setdefault(name, [None, None, None])
                best[which] = min(rank, best[which] or rank)
        ordered = sorted(scores.items(), key=lambda item: -item[1])
        for place, (name, score) in enumerate(ordered, 1):
            best_place[name] = min(place, best_place.get(name, place))
            best_score[name] = max(score, best_score.get(name, 0.0))
    fused = sorted(best_place, key=lambda name: (best_place[name], -best_score[name]))
    return [
        (name, best_score[name], ranks[name][0], ranks[name][1], ranks[name][2]) for name in fused
    ]
