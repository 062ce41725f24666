"""Does a simulated user's reply reveal more than the agent asked for?

A simulated user knows the whole original request; a good one answers only
the question. ``leak_flags`` marks a reply that gives more away:

- ``leak:extra_fact``: the reply states a hidden fact that the question does
  not ask for while it does ask for another one (see ``fact_fit``). The
  asked-for facts are cut from the reply first; what is left states a fact
  when it holds the fact's words in a row, or at least ``FACT_WORD_SHARE`` of
  its content words that the asked-for facts do not share. Facts the agent
  already has (in its query or its question) are not counted. A vague
  question fits every fact, so it flags none.
- ``leak:pasted_request``: the reply copies a large part of the original
  request, both less the facts the question asks for: a common run of at least
  ``PASTE_MIN_WORDS`` words that is also at least ``PASTE_RUN_SHARE`` of the
  request's words, or at least ``PASTE_COVER_SHARE`` of the request's content
  words.
- ``leak:answer``: the reply holds a number that is in neither the question,
  the request nor the facts: answer-like content the user should not have
  (e.g. a price). In a replaceable task a question asking for the missing
  tool's job is exempt, since the user is meant to do that job.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Set
from difflib import SequenceMatcher

from aah.benchmark.failtalms.fact_fit import (
    TaskFacts,
    asks_for_tool_job,
    content_stems,
    fitting_facts,
    tokens,
)

EXTRA_FACT = "leak:extra_fact"
PASTED_REQUEST = "leak:pasted_request"
ANSWER = "leak:answer"

FACT_WORD_SHARE = 0.6
PASTE_MIN_WORDS = 8
PASTE_RUN_SHARE = 0.5
PASTE_COVER_SHARE = 0.7
# Too few content words make coverage meaningless ("Weather in Oslo?").
PASTE_COVER_MIN_WORDS = 5

# A number standing alone, not the digits inside a code such as YESB0DNB002.
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])")


def leak_flags(question: str, reply: str, facts: TaskFacts) -> list[str]:
    """The leak flags of ``reply`` to ``question`` (empty when it gives nothing away).

    Args:
        question: What the agent asked.
        reply: What the simulated user answered.
        facts: What the user knows about the task.

    Returns:
        Zero or more of ``leak:extra_fact``, ``leak:pasted_request``, ``leak:answer``.
    """
    flags: list[str] = []
    if extra_facts(question, reply, facts):
        flags.append(EXTRA_FACT)
    asked = fitting_facts(question, facts).facts
    if pastes_request(without_facts(reply, asked), without_facts(facts.original, asked)):
        flags.append(PASTED_REQUEST)
    if answer_numbers(question, reply, facts):
        flags.append(ANSWER)
    return flags


def extra_facts(question: str, reply: str, facts: TaskFacts) -> list[str]:
    """The hidden facts ``reply`` states that ``question`` did not ask for."""
    fit = fitting_facts(question, facts)
    if not fit.specific:
        return []
    # What the asked-for facts explain is no evidence of another fact, even
    # where two facts share words ("named 'Game of Thrones" and "'Game of Thrones").
    rest = without_facts(reply, fit.facts)
    asked_words = set().union(*(content_stems(f) for f in fit.facts))
    known = f"{facts.query}\n{question}"
    return [
        fact
        for fact in facts.hidden_facts
        if fact not in fit.facts
        and states(rest, fact, ignore=asked_words)
        and not states(known, fact)
    ]


def states(text: str, fact: str, ignore: Set[str] = frozenset()) -> bool:
    """Whether ``text`` holds ``fact``, verbatim or by most of its content words.

    Words in ``ignore`` neither count for nor against the fact.
    """
    if f" {_squash(fact)} " in f" {_squash(text)} ":
        return True
    wanted = content_stems(fact) - ignore
    if not wanted:
        return False
    return len(wanted & content_stems(text)) >= FACT_WORD_SHARE * len(wanted)


def without_facts(text: str, facts: Iterable[str]) -> str:
    """``text`` (as lower-cased tokens) with every occurrence of ``facts`` cut out."""
    words = tokens(text)
    for fact in sorted(facts, key=len, reverse=True):
        cut = tokens(fact)
        if not cut:
            continue
        kept: list[str] = []
        i = 0
        while i < len(words):
            if words[i : i + len(cut)] == cut:
                i += len(cut)
            else:
                kept.append(words[i])
                i += 1
        words = kept
    return " ".join(words)


def _squash(text: str) -> str:
    return " ".join(tokens(text))


def pastes_request(reply: str, request: str) -> bool:
    """Whether ``reply`` copies a large part of ``request`` (see the module docstring)."""
    ours = [t for t in tokens(reply) if t[0].isalnum()]
    theirs = [t for t in tokens(request) if t[0].isalnum()]
    if not ours or not theirs:
        return False
    matcher = SequenceMatcher(None, theirs, ours, autojunk=False)
    run = matcher.find_longest_match(0, len(theirs), 0, len(ours)).size
    if run >= PASTE_MIN_WORDS and run >= PASTE_RUN_SHARE * len(theirs):
        return True
    wanted = content_stems(request)
    if len(wanted) < PASTE_COVER_MIN_WORDS:
        return False
    return len(wanted & content_stems(reply)) >= PASTE_COVER_SHARE * len(wanted)


def answer_numbers(question: str, reply: str, facts: TaskFacts) -> list[str]:
    """Numbers in ``reply`` that nothing the user was given or asked contains."""
    if facts.setting == "replaceable" and asks_for_tool_job(question):
        return []
    given = " ".join([question, facts.query, facts.original, *facts.hidden_facts])
    known = {_plain_number(n) for n in _NUMBER.findall(given)}
    return [n for n in _NUMBER.findall(reply) if _plain_number(n) not in known]


def _plain_number(text: str) -> str:
    # 3,245.10 and 3245.1 are the same number; a comma is read as a thousands mark.
    plain = text.replace(",", "")
    if "." in plain:
        plain = plain.rstrip("0").rstrip(".")
    return plain
