"""Recover what the Fail-TaLMs queries leave unsaid: each one's original, and the hidden facts.

The derived settings do not link back to the Original query they were made
from, so the link is found by text and endpoint set.

**Similarity** is the mean of difflib's ratio over lower-cased word tokens
and the Dice overlap of the content words (words that are not filler).
Measured on the under-specified queries, as the number of them for which an
Original with other endpoints reads more alike than the best one with the
same endpoints: character ratio 36, word ratio 27, this mean 13. Word
tokens are also about twenty times faster than characters.

- **under-specified**: every Original query is scored by similarity plus
  ``ENDPOINT_WEIGHT`` times the Jaccard overlap of the endpoint sets, so the
  original with the same endpoints wins unless another text is far closer.
  Four under-specified queries (33, 225, 229, 238) carry an endpoint list
  that does not fit their text, and the text they were plainly made from
  wins; one (156) has no Original with its endpoints at all. Such a match
  is ``fuzzy``; one with the same endpoints is ``exact``;
- **replaceable / non-replaceable**: the same text in Original (``exact``),
  else the most similar Original whose endpoint set strictly contains the
  offered one. When queries of the same text offer different endpoints, the
  union of what they offer is the needed set and only an Original with
  exactly that set is taken (the endpoints are then strong evidence, so the
  text floor is low);
- **no-tools**: the same text, else the most similar text.

A best candidate within ``AMBIGUITY_MARGIN`` of the runner-up makes the
match ``ambiguous`` (the best is still used).

Hidden facts are the original's words that a word-level diff marks as
replaced or deleted in the under-specified query.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Literal, NamedTuple

MatchKind = Literal["exact", "fuzzy", "ambiguous", "unmatched", "self"]

# Below this text similarity a match is listed among the hard cases.
LOW_SIMILARITY = 0.6
# Two candidates closer than this (on the score that ranks them) are a near tie.
AMBIGUITY_MARGIN = 0.05
# How much a shared endpoint set counts against text similarity when ranking
# the originals of an under-specified query (a full match adds this much).
ENDPOINT_WEIGHT = 0.4
# Fuzzy floors for replaceable / non-replaceable: a candidate only known to
# hold the offered endpoints must be textually close (the right ones score
# 0.61 and up, the wrong ones 0.31 and below); one whose endpoint set equals
# what same-text queries offer together is already well evidenced.
SUPERSET_FLOOR = 0.5
SIBLING_FLOOR = 0.2
# The highest score of an original sharing no content word and no endpoint.
_NO_OVERLAP_BOUND = 0.5

# Words, numbers and identifiers keep inner punctuation (BTC-USDT, 51.5074,
# N.exchange); any other non-space character is a token of its own.
_TOKEN = re.compile(r"\w+(?:[-'’./:@]\w+)*|[^\w\s]")
_WORD = re.compile(r"\w")
_QUOTES = frozenset("'\"‘’“”")
_BRACKETS = (("(", ")"), ("[", "]"), ("{", "}"))
# Words that carry no value a tool needs: function words and the phrasing of
# a request. A fact is trimmed of them at both ends and dropped if only them.
_FILLER = frozenset(
    """a an the this that these those some any all each every another other such
    and or but nor so also as well both either neither than then too very just
    of in on at to for from by with about into onto over under between through
    during within without around near along across after before since until per
    via using based related regarding according
    i me my mine we us our you your yours he him his she her it its they them their
    is are was were be been being am do does did done have has had having
    can could would should will shall may might must
    please kindly provide give tell show find get fetch retrieve list search look
    looking want wanted like know need needs needed help share check let see
    what which who whom whose when where why how there here
    more most much many few several specific certain particular given one
    if not no yes up out""".split()
)


@dataclass(frozen=True)
class Candidate:
    """An Original query as matching sees it."""

    query_id: int
    text: str
    endpoint_list: tuple[str, ...]  # as the data lists them
    endpoints: frozenset[str]
    words: tuple[str, ...]
    content: frozenset[str]


class Match(NamedTuple):
    """The original found for a query, how, and the text similarity of the pair."""

    original: Candidate | None
    kind: MatchKind
    similarity: float


class _Scored(NamedTuple):
    score: float
    similarity: float
    candidate: Candidate


def words(text: str) -> tuple[str, ...]:
    """The lower-cased word tokens of ``text`` (punctuation dropped)."""
    return tuple(t.lower() for t in _TOKEN.findall(text) if _WORD.match(t))


def content_words(tokens: Iterable[str]) -> frozenset[str]:
    """The distinct words of ``tokens`` that are not filler."""
    return frozenset(t for t in tokens if t not in _FILLER)


def similarity(query: str, original: str) -> float:
    """How alike a query reads to a candidate original, from 0 to 1.

    The mean of difflib's ratio over the word tokens and the Dice overlap of
    the content words. difflib's ratio depends a little on the order of its
    arguments; this is the order matching uses.
    """
    mine, theirs = words(query), words(original)
    sequence = SequenceMatcher(None, theirs, mine, autojunk=False).ratio()
    first, second = content_words(mine), content_words(theirs)
    return (sequence + _dice(len(first & second), len(first), len(second))) / 2


def candidate(query_id: int, text: str, endpoints: Sequence[str]) -> Candidate:
    """Prepare an Original query for matching."""
    tokens = words(text)
    listed = tuple(endpoints)
    return Candidate(query_id, text, listed, frozenset(listed), tokens, content_words(tokens))


class OriginalIndex:
    """The Original queries, looked up by exact text and scored by similarity."""

    def __init__(self, originals: Sequence[Candidate]) -> None:
        """Index ``originals`` (the Original setting, in data order)."""
        self.originals = list(originals)
        self._by_text = {c.text.strip(): c for c in self.originals}
        # Content word -> positions of the originals using it: overlap counts
        # for every original in one pass over the query's few content words.
        self._postings: dict[str, list[int]] = defaultdict(list)
        self._endpoint_postings: dict[str, list[int]] = defaultdict(list)
        for position, original in enumerate(self.originals):
            for word in original.content:
                self._postings[word].append(position)
            for name in original.endpoints:
                self._endpoint_postings[name].append(position)

    def exact(self, text: str) -> Candidate | None:
        """The Original query with exactly this text, if any."""
        return self._by_text.get(text.strip())

    def match_underspecified(self, text: str, offered: frozenset[str]) -> Match:
        """The original of an under-specified query (see the module docstring)."""
        pool = range(len(self.originals))
        ranked = self._rank(text, pool, offered, ENDPOINT_WEIGHT)
        if not ranked:
            return Match(None, "unmatched", 0.0)
        best = ranked[0]
        if _near_tie(ranked):
            return Match(best.candidate, "ambiguous", best.similarity)
        kind: MatchKind = "exact" if best.candidate.endpoints == offered else "fuzzy"
        return Match(best.candidate, kind, best.similarity)

    def match_unavailable(
        self, text: str, offered: frozenset[str], together: frozenset[str]
    ) -> Match:
        """The original of a replaceable or non-replaceable query.

        Args:
            text: the query.
            offered: the endpoints it offers.
            together: the endpoints offered by all queries of the same text in
                the replaceable and non-replaceable settings.
        """
        found = self.exact(text)
        if found is not None:
            return Match(found, "exact", 1.0)
        if together > offered:
            pool = [i for i, c in enumerate(self.originals) if c.endpoints == together]
            floor = SIBLING_FLOOR
        else:
            pool = [i for i, c in enumerate(self.originals) if c.endpoints > offered]
            floor = SUPERSET_FLOOR
        return _fuzzy(self._rank(text, pool, offered, 0.0), floor)

    def match_notools(self, text: str) -> Match:
        """The original of a no-tools query: the same text, else the closest."""
        found = self.exact(text)
        if found is not None:
            return Match(found, "exact", 1.0)
        return _fuzzy(self._rank(text, range(len(self.originals)), frozenset(), 0.0), 0.0)

    def _rank(
        self, text: str, pool: Iterable[int], offered: frozenset[str], weight: float
    ) -> list[_Scored]:
        """Score the originals at ``pool`` against ``text``, best first.

        The score is ``similarity`` plus ``weight`` times the endpoint-set
        Jaccard overlap. Candidates are visited in order of a cheap upper
        bound of their score (a sequence ratio is at most the ratio of the
        lengths) and the visit stops once no candidate left could win or come
        within the ambiguity margin of the winner: the list holds the winner
        and its near ties, not every loser. An original sharing neither a
        content word nor an endpoint scores at most 0.5, so those are only
        looked at when nothing better turned up.
        """
        query = words(text)
        mine = content_words(query)
        shared = _count(self._postings, mine)
        shared_endpoints = _count(self._endpoint_postings, offered)

        def bound(position: int) -> tuple[float, float, float, Candidate]:
            original = self.originals[position]
            overlap = _dice(shared.get(position, 0), len(mine), len(original.content))
            both = shared_endpoints.get(position, 0)
            union = len(offered) + len(original.endpoints) - both
            bonus = weight * (both / union if union else 1.0)
            length = len(original.words)
            length_ratio = _dice(min(len(query), length), len(query), length)
            return (length_ratio + overlap) / 2 + bonus, overlap, bonus, original

        pool = list(pool)
        touched = [p for p in pool if p in shared or p in shared_endpoints]
        scored = _score(query, [bound(p) for p in touched])
        if not scored or scored[0].score - AMBIGUITY_MARGIN < _NO_OVERLAP_BOUND:
            rest = [p for p in pool if p not in shared and p not in shared_endpoints]
            scored = _best_first([*scored, *_score(query, [bound(p) for p in rest])])
        return scored


def _score(
    query: tuple[str, ...], bounded: list[tuple[float, float, float, Candidate]]
) -> list[_Scored]:
    """Score candidates best bound first, stopping once the rest cannot matter."""
    bounded.sort(key=lambda item: -item[0])
    matcher = SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(query)  # difflib indexes seq2 once; candidates vary seq1
    scored: list[_Scored] = []
    bar = -1.0
    for upper, overlap, bonus, original in bounded:
        if upper < bar:
            break
        matcher.set_seq1(original.words)
        similarity = (matcher.ratio() + overlap) / 2
        scored.append(_Scored(similarity + bonus, similarity, original))
        bar = max(bar, similarity + bonus - AMBIGUITY_MARGIN)
    return _best_first(scored)


def _best_first(scored: list[_Scored]) -> list[_Scored]:
    return sorted(scored, key=lambda s: (-s.score, s.candidate.query_id))


def _count(postings: dict[str, list[int]], keys: Iterable[str]) -> dict[int, int]:
    """How many of ``keys`` each position's posting lists hold."""
    counts: dict[int, int] = defaultdict(int)
    for key in keys:
        for position in postings.get(key, ()):
            counts[position] += 1
    return counts


def _fuzzy(ranked: list[_Scored], floor: float) -> Match:
    if not ranked or ranked[0].similarity < floor:
        return Match(None, "unmatched", ranked[0].similarity if ranked else 0.0)
    best = ranked[0]
    return Match(best.candidate, "ambiguous" if _near_tie(ranked) else "fuzzy", best.similarity)


def _near_tie(ranked: list[_Scored]) -> bool:
    return len(ranked) > 1 and ranked[0].score - ranked[1].score < AMBIGUITY_MARGIN


def _dice(shared: int, size_a: int, size_b: int) -> float:
    return 2 * shared / (size_a + size_b) if size_a + size_b else 1.0


def hidden_facts(original: str, underspecified: str) -> list[str]:
    """The phrases of ``original`` that ``underspecified`` removed or replaced.

    A word-level diff of the two texts marks the original's tokens in
    ``replace`` and ``delete`` runs. Runs separated by a single filler token
    are merged into one phrase; each phrase is cut from the original
    text (keeping its spacing and inner punctuation) and trimmed of filler and
    punctuation at both ends. A phrase is dropped when nothing is left, or
    when it has two or more words and the under-specified query says it in
    its own new wording (it moved; it is not hidden).

    Args:
        original: the Original query.
        underspecified: the query made from it.

    Returns:
        The facts, in the order the original states them, without repeats.
    """
    spans = [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(original)]
    tokens = [t for _, _, t in spans]
    theirs = [t.lower() for t in _TOKEN.findall(underspecified)]
    matcher = SequenceMatcher(None, [t.lower() for t in tokens], theirs, autojunk=False)
    runs, new_wording = [], []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op in ("replace", "delete"):
            runs.append((i1, i2))
        if op in ("replace", "insert"):
            new_wording.append(" " + " ".join(theirs[j1:j2]) + " ")
    facts: list[str] = []
    for start, end in _merge_runs(runs, tokens):
        kept = _trim(tokens, start, end)
        if kept is None:
            continue
        first, last = _balance(tokens, *kept)
        fact = original[spans[first][0] : spans[last - 1][1]]
        phrase = " " + " ".join(tokens[first:last]).lower() + " "
        moved = last - first > 1 and any(phrase in said for said in new_wording)
        if not moved and fact not in facts:
            facts.append(fact)
    return facts


def _is_filler(tokens: list[str], i: int) -> bool:
    token = tokens[i]
    # A capitalised word is a name even when it spells a filler: US, IT, and a
    # lone capital inside a sentence ("table A"); "I" and a sentence's first
    # word are not names.
    if token.isupper() and token != "I" and (len(token) > 1 or not _starts_sentence(tokens, i)):
        return False
    return token.lower() in _FILLER or not _WORD.match(token)


def _starts_sentence(tokens: list[str], i: int) -> bool:
    return i == 0 or tokens[i - 1] in (".", "?", "!")


def _merge_runs(runs: list[tuple[int, int]], tokens: list[str]) -> list[tuple[int, int]]:
    """Join runs that a single filler token separates ("Sydney , Australia").

    A longer gap ("... and also ...") usually separates two facts.
    """
    merged: list[tuple[int, int]] = []
    for start, end in runs:
        if merged:
            prev_start, prev_end = merged[-1]
            gap = range(prev_end, start)
            if len(gap) <= 1 and all(_is_filler(tokens, i) for i in gap):
                merged[-1] = (prev_start, end)
                continue
        merged.append((start, end))
    return merged


def _balance(tokens: list[str], first: int, last: int) -> tuple[int, int]:
    """Take back a quote or bracket that trimming cut off while its partner stayed.

    "a 'lorelei' style" trims to "lorelei' style"; this restores "'lorelei' style".
    """
    inside = tokens[first:last]
    if sum(t in _QUOTES for t in inside) % 2 == 1:
        if first > 0 and tokens[first - 1] in _QUOTES:
            first -= 1
        elif last < len(tokens) and tokens[last] in _QUOTES:
            last += 1
    for opening, closing in _BRACKETS:
        if inside.count(opening) > inside.count(closing) and tokens[last : last + 1] == [closing]:
            last += 1
        elif inside.count(closing) > inside.count(opening) and first > 0:
            if tokens[first - 1] == opening:
                first -= 1
    return first, last


def _trim(tokens: list[str], start: int, end: int) -> tuple[int, int] | None:
    while start < end and _is_filler(tokens, start):
        start += 1
    while end > start and _is_filler(tokens, end - 1):
        end -= 1
    return (start, end) if start < end else None
