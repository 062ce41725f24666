"""What the registry indexes about each endpoint: the words a person searches by.

BM25 gets one column per part, weighted by how much a word there says about
what the endpoint does (a name word more than a word of a long description);
the tool's part holds its name and the site name of its host ("wikipedia"
for the "mediawiki" tool), the name people use for a service.
The dense model gets one short text per endpoint: its name in words and its
description (its pooled vector and its tokens' states are stored). Changing
either changes ``INDEX_VERSION``, so older registries are rebuilt on their
next open.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from aah.tools.spec import EndpointSpec

INDEX_VERSION = "5"

# Words of a request that say nothing about which tool it needs.
STOPWORDS = frozenset(
    "a about also an and any are as at be been by can could do does for from get give "
    "had has have how i i'd i'm if in is it its let like me might my need of on or our "
    "please provide should show so some tell than that the their them then there these "
    "this those to us want was we were what when where which who whose why will with "
    "would you your".split()
    # The scheme and endings of a web address in a request ("the icon of
    # github.com") name no tool, though a tool's name may end in one
    # ("randomlovecraft_com").
    + "http https www com org net html htm".split()
)

# Searchable parts with their weights (each part has its own BM25, so a long
# parameter list does not dilute a name) and the name `aah tools search`
# shows. The weights are coarse on purpose: name, description and the tool's
# own description count most, parameters and example values least
# (perf/tool_retrieval.py measured flat weights 0.81 and these 0.83 BM25
# recall@5 on the perfect setting).
PARTS: tuple[tuple[str, str, float], ...] = (
    ("words", "name", 1.5),
    ("tool", "tool", 1.0),
    ("category", "category", 1.0),
    ("description", "description", 1.5),
    ("about", "about the tool", 1.5),
    ("params", "params", 0.7),
    ("examples", "examples", 0.3),
)
FTS_COLUMNS = tuple(column for column, _, _ in PARTS)

_WORD = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])|\d+")
# A run of letters and digits: a word as written, before identifiers are split.
_RUN = re.compile(r"[A-Za-z0-9]+")
_PLACEHOLDER = re.compile(r"\{[^}]*\}")
# Words of a host name that name no service ("api.coinlore.net" is Coinlore).
_HOST_NOISE = frozenset(
    "api apis www com org net io co dev app gov edu uk us eu en v1 v2 v3 cdn herokuapp "
    "vercel firebaseio".split()
)
# Example values longer than this are payloads (JSON bodies, long texts), not
# words a person would search by.
_MAX_EXAMPLE = 60


def _without_accents(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def name_words(text: str) -> str:
    """Split identifiers like ``get_weatherForecast`` into searchable words.

    Accents are dropped first ("Pokémon" is "pokemon"), as FTS5's unicode61
    tokenizer drops them from the indexed text.
    """
    return " ".join(word.lower() for word in _WORD.findall(_without_accents(text)))


def request_words(text: str, *, split: bool = True) -> str:
    """The words of a request, as ``name_words`` gives them, and each word as written too.

    A name written with capitals inside ("arXiv", "GitHub", "openFDA") is
    split as an identifier is ("ar xiv"), which no tool name holds: the
    whole word ("arxiv") is searched as well. With ``split=False``, only
    each word as written (lower case, accents dropped).
    """
    words: list[str] = []
    for run in _RUN.findall(_without_accents(text)):
        if not split:
            words.append(run.lower())
            continue
        parts = [part.lower() for part in _WORD.findall(run)]
        words += parts
        if len(parts) > 1:
            words.append(run.lower())
    return " ".join(words)


def host_words(host: str) -> str:
    """The words of a host name that name its service: "en.wikipedia.org" is "wikipedia".

    People call a service by its site ("on Wikipedia"), which its tool name
    may not say (the tool is "mediawiki").
    """
    words = name_words(host.split(":", 1)[0]).split()
    return " ".join(w for w in dict.fromkeys(words) if w not in _HOST_NOISE and not w.isdigit())


def search_columns(spec: EndpointSpec, about: str = "") -> dict[str, str]:
    """The text of each searchable part of ``spec``, keyed by FTS column.

    Args:
        spec: the endpoint.
        about: what its source says about the whole tool (see ``tool_abouts``).
    """
    params = " ".join(f"{name_words(p.name)} {p.description}".strip() for p in spec.parameters)
    return {
        "words": name_words(f"{spec.tool} {spec.name}"),
        "tool": f"{name_words(spec.tool)} {host_words(spec.host)}".strip(),
        "category": f"{spec.category.lower()} {name_words(spec.category)}",
        "description": spec.description,
        "about": about,
        "params": params,
        "examples": " ".join(_examples(spec)),
    }


def dense_text(spec: EndpointSpec, about: str = "") -> str:
    """The text the dense model embeds for ``spec``: what it is called and what it does.

    The tool's own description goes last: the model reads 128 tokens, and
    the endpoint's words say most about it.
    """
    tool = _first_sentence(about) or name_words(spec.tool)
    text = f"{name_words(spec.name)}. {spec.description} ({tool})"
    if spec.parameters:
        text += ". Inputs: " + ", ".join(name_words(p.name) for p in spec.parameters)
    return text


def tool_abouts(failtalms_dir: Path, files: Iterable[str], max_bytes: int) -> dict[str, str]:
    """What each Fail-TaLMs tool file says about its tool (title and description), by file.

    The endpoint descriptions are often terse ("Submit a data request.");
    the tool's ("the USGS Earthquake Catalog") says what it is for. A file
    that cannot be read lends nothing: its endpoints were imported from it,
    so this only happens if it changed since.
    """
    abouts: dict[str, str] = {}
    for file in set(files):
        path = failtalms_dir / file
        try:
            if path.stat().st_size > max_bytes:
                continue
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            continue
        if isinstance(data, dict):
            title, about = data.get("title"), data.get("tool_description")
            parts = [str(v).strip() for v in (title, about) if isinstance(v, str) and v.strip()]
            abouts[file] = ". ".join(parts)
    return abouts


def _first_sentence(text: str) -> str:
    return text.split(". ", 1)[0].strip()


def _examples(spec: EndpointSpec) -> list[str]:
    """Example values from the spec: defaults, enum choices and the URL's fixed path words."""
    values: list[str] = []
    for param in spec.parameters:
        values.extend(_short(param.default))
        for choice in param.enum or []:
            values.extend(_short(choice))
    path = _PLACEHOLDER.sub(" ", spec.url_template.split("?", 1)[0])
    values.append(name_words(path.split("//", 1)[-1]))
    return [v for v in values if v]


def _short(value: Any) -> list[str]:
    if isinstance(value, bool) or value is None:
        return []
    text = str(value)
    return [text] if 0 < len(text) <= _MAX_EXAMPLE else []
