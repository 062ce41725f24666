"""Redundant human questions: asking for a fact the user's query already gave.

The rule is a simple, deliberately cautious heuristic (it misses some
redundant questions rather than flag a fair one). A question is redundant
when all three hold:

1. it has at least one *key word*: a word of three or more characters (or
   any number) that is not a function word or a stock asking phrase
   ("please", "provide", "which", "specific"...); plurals count as singulars;
2. every key word appears in the query;
3. the query gives a concrete value beside one of those words: within three
   words either side there is a word with a digit or a capitalized word
   (not the query's first word, not "I", not one of the key words).

Condition 3 is what tells "Which IFSC code?" asked of "...a bank using IFSC
code YESB0DNB002" (redundant) from "Which cryptocurrency?" asked of "...the
top markets for a specific cryptocurrency" (a fair question: the query names
the kind of thing, not the thing), the very shape of under-specified tasks.
"""

from __future__ import annotations

import re

_WINDOW = 3
_TOKEN = re.compile(r"[A-Za-z0-9]+")
_FUNCTION_WORDS = frozenset(
    """
    the and for you your yours are was were will would could can cannot please provide
    specify tell let know which what when where who whom whose how why want like need
    give share confirm with from that this these those there their them they have has
    had does did any some about into also just more mean meant should may might shall
    interested looking exact exactly specific particular kind type sure okay thanks
    thank help get use using info information detail details one ones its our ours not
    but all out such than then very much many other another same own here been being
    able make find show look check clarify correct right exist else something anything
    """.split()
)


def _normal(word: str) -> str:
    word = word.lower()
    # "codes" and "code" are one key word; short words ("bus", "gas") keep their s.
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def key_words(question: str) -> set[str]:
    """The question's content words, normalized (see the module docstring)."""
    words = (_normal(token) for token in _TOKEN.findall(question))
    return {w for w in words if (len(w) >= 3 or w.isdigit()) and w not in _FUNCTION_WORDS}


def _is_concrete(token: str, position: int) -> bool:
    if any(ch.isdigit() for ch in token):
        return True
    return position > 0 and token[0].isupper() and token != "I"


def is_redundant_question(question: str, query: str) -> bool:
    """Whether ``question`` asks for something ``query`` already said (module rule)."""
    keys = key_words(question)
    if not keys:
        return False
    tokens = _TOKEN.findall(query)
    normals = [_normal(token) for token in tokens]
    if not keys <= set(normals):
        return False
    for index, word in enumerate(normals):
        if word not in keys:
            continue
        start, stop = max(0, index - _WINDOW), min(len(tokens), index + _WINDOW + 1)
        # A neighbour the question itself names ("IFSC" in "IFSC code") is no value.
        near = (i for i in range(start, stop) if normals[i] not in keys)
        if any(_is_concrete(tokens[i], i) for i in near):
            return True
    return False
