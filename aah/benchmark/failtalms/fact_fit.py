"""Which of a task's hidden facts a question asks for, and whether it asks for a tool's job.

Batch humans (the oracle, the leak check on the simulated user) read an
agent's question with the same small, deterministic rules:

**Fit.** Each hidden fact gets a profile of words that stand for it:

- its own words ("the Binance Smart Chain *network*"),
- the words the under-specified query put in its place ("a specific
  *cryptocurrency*" where the original said "Ethereum"), found by a word diff
  of the original and the shown query,
- its neighbourhood: up to ``NEIGHBOUR_WINDOW`` content words on each side of
  it in the original, within the sentence ("top *markets* and *exchanges* for
  Ethereum"), less the own words of every fact,
- its kind (place, date, number, identifier), matched against question cues
  (where → place; when, which date → date; how many, how much → number;
  which code, symbol, pair → identifier).

A fact scores ``OWN_WEIGHT`` when the question uses any of its own words,
``REPLACED_WEIGHT`` per stand-in word, ``NEIGHBOUR_WEIGHT`` per neighbour word
(each word counted once, at its best weight) and ``CUE_WEIGHT`` when a cue
asks for its kind. Words are compared lower-cased with a light plural
stemming; filler and question phrasing ("details", "specify", "please") never
count, and a few everyday synonyms meet ("coin" is "cryptocurrency"). The
facts that fit are those scoring above zero and at least
``FIT_SHARE`` of the best score (so "which coin and which network?" gets
both). When no fact scores above zero the question is vague and every fact
fits, but not *specifically*.

**Tool job.** A question asks the user to do a tool's work when it uses a
look-up verb (look up, check, fetch, search, calculate, convert, do you
know...), or mentions live data (current, latest, right now) or says "tell me
the/what/how" without asking what the user wants ("you mean", "you want",
"your"...).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Literal, NamedTuple

from pydantic import BaseModel, Field

from aah.benchmark.failtalms.settings import Setting

FactKind = Literal["place", "date", "number", "identifier", "thing"]

OWN_WEIGHT = 3.0
REPLACED_WEIGHT = 2.0
NEIGHBOUR_WEIGHT = 1.0
CUE_WEIGHT = 2.0
NEIGHBOUR_WINDOW = 4
FIT_SHARE = 0.5


class TaskFacts(BaseModel):
    """What a batch human knows about the task behind the agent's questions.

    Attributes:
        query: The query the agent was given.
        original_query: The full request it was made from (None: the query is whole).
        hidden_facts: The spans of the original that the query leaves out.
        setting: The task's Fail-TaLMs setting.
        unavailable: Qualified names of the needed endpoints that are not offered.
        unavailable_descriptions: What those endpoints do, in the same order.
    """

    query: str
    original_query: str | None = None
    hidden_facts: list[str] = Field(default_factory=list)
    setting: Setting = "perfect"
    unavailable: list[str] = Field(default_factory=list)
    unavailable_descriptions: list[str] = Field(default_factory=list)

    @property
    def original(self) -> str:
        """The full request: the original query, or the query when it is whole."""
        return self.original_query or self.query


class FactFit(NamedTuple):
    """The facts a question asks for; ``specific`` is False when it fits none in particular."""

    facts: list[str]
    specific: bool


# Words, numbers and codes keep inner punctuation (BTC-USDT, N.exchange);
# other punctuation is a token of its own so sentence ends can be seen.
_TOKEN = re.compile(r"\w+(?:[-'’./:@]\w+)*|[^\w\s]")
_SENTENCE_END = frozenset(".?!;")
_STOP = frozenset(
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
    if not no yes up out ok okay sure
    detail details information info clarify clarification specify exactly mean
    meant request query task missing question questions prefer preferred
    interested wish use confirm""".split()
)
# A few everyday synonyms an agent uses for the query's category words
# ("which coin?" for "a specific cryptocurrency"); each maps to the group's first.
_SYNONYM_GROUPS = (
    ("cryptocurrency", "crypto", "coin", "token"),
    ("city", "town"),
    ("movie", "film"),
    ("song", "track", "tune"),
    ("company", "firm", "business"),
    ("stock", "equity"),
    ("country", "nation"),
)
_SAME_AS = {word: group[0] for group in _SYNONYM_GROUPS for word in group[1:]}
_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december"
    "|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_DATE = re.compile(
    rf"\b(?:{_MONTHS}|monday|tuesday|wednesday|thursday|friday|saturday|sunday"
    r"|today|tomorrow|yesterday|tonight|weekend|(?:next|last|this) (?:week|month|year)"
    r"|(?:19|20)\d\d|\d{1,2}[/.-]\d{1,2}(?:[/.-]\d{2,4})?|\d{1,2}:\d\d)\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"^\s*-?\d[\d,.]*\s*%?\s*[A-Za-z]{0,12}\s*$")
_PLACE_BEFORE = frozenset({"in", "near", "at", "around", "to", "from", "of"})
_CUES: list[tuple[FactKind, re.Pattern[str]]] = [
    ("place", re.compile(r"\bwhere\b|\b(?:city|country|place|location|area|region|town)\b")),
    ("date", re.compile(r"\bwhen\b|\b(?:date|day|time|year|month|week)\b")),
    ("number", re.compile(r"\bhow (?:many|much|long|far|old)\b|\b(?:number|amount|quantity)\b")),
    ("identifier", re.compile(r"\b(?:code|id|symbol|ticker|pair|identifier|address|isbn)\b")),
]
_JOB_VERBS = re.compile(
    r"\b(?:look(?:ing)? (?:it |that |this )?up|lookup|check|fetch|search|find out|retrieve"
    r"|calculate|compute|convert|work out|figure out|translate|a joke|do you (?:happen to )?know"
    r"|for me)\b"
)
# Live data, or "tell me the ...": a tool's job unless it is about what the user wants.
_MAYBE_JOB = re.compile(
    r"\b(?:current|currently|latest|right now|real[- ]time|live|today'?s"
    r"|tell me (?:the|what|how))\b"
)
_ABOUT_THE_USER = re.compile(
    r"^\W*which\b|\b(?:you (?:mean|meant|want|wanted|need|prefer|have in mind"
    r"|are (?:interested|looking)|'re (?:interested|looking))"
    r"|you'd like|you would like|your|did you|should i|shall i)\b"
)


def tokens(text: str) -> list[str]:
    """The lower-cased tokens of ``text``: words (with inner punctuation) and punctuation."""
    return [t.lower() for t in _TOKEN.findall(text)]


def stem(word: str) -> str:
    """``word`` without a plural ending, so "exchanges" meets "exchange"; synonyms meet too."""
    word = word.removesuffix("'s").removesuffix("’s")
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif word.endswith(("sses", "xes", "ches", "shes")):
        word = word[:-2]
    elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return _SAME_AS.get(word, word)


def is_content(token: str) -> bool:
    """Whether ``token`` is a word that can name a value (not filler, not punctuation)."""
    return token[0].isalnum() and token not in _STOP and len(token) > 1


def content_stems(text: str) -> set[str]:
    """The stemmed content words of ``text``."""
    return {stem(t) for t in tokens(text) if is_content(t)}


_Opcode = tuple[str, int, int, int, int]


class FactProfile(NamedTuple):
    """The words that stand for one hidden fact, and its kind."""

    fact: str
    own: frozenset[str]
    replaced: frozenset[str]
    near: frozenset[str]
    kind: FactKind


def profile_facts(facts: TaskFacts) -> list[FactProfile]:
    """A profile for each hidden fact of ``facts`` (see the module docstring)."""
    original = tokens(facts.original)
    shown = tokens(facts.query)
    opcodes = SequenceMatcher(None, original, shown, autojunk=False).get_opcodes()
    profiles = [_profile(fact, original, shown, opcodes) for fact in facts.hidden_facts]
    # A word of one fact is no clue to its neighbour: "Ethereum" sits near "Binance".
    owned = frozenset().union(*(p.own for p in profiles))
    return [p._replace(near=p.near - owned - p.replaced) for p in profiles]


def _profile(
    fact: str, original: list[str], shown: list[str], opcodes: Sequence[_Opcode]
) -> FactProfile:
    own = frozenset(content_stems(fact))
    span = _find(tokens(fact), original)
    if span is None:
        return FactProfile(fact, own, frozenset(), frozenset(), _kind(fact, None))
    start, end = span
    replaced = {
        stem(t)
        for op, i1, i2, j1, j2 in opcodes
        if op in ("replace", "delete") and i1 < end and start < i2
        for t in shown[j1:j2]
        if is_content(t)
    }
    near = _neighbours(original, start, end)
    before = original[start - 1] if start > 0 else None
    return FactProfile(fact, own, frozenset(replaced - own), frozenset(near), _kind(fact, before))


def _find(needle: list[str], haystack: list[str]) -> tuple[int, int] | None:
    """Where the token run ``needle`` first occurs in ``haystack``."""
    if not needle:
        return None
    for start in range(len(haystack) - len(needle) + 1):
        if haystack[start : start + len(needle)] == needle:
            return start, start + len(needle)
    return None


def _neighbours(original: list[str], start: int, end: int) -> set[str]:
    found: set[str] = set()
    for step, edge in ((-1, start - 1), (1, end)):
        taken, i = 0, edge
        while 0 <= i < len(original) and taken < NEIGHBOUR_WINDOW:
            if original[i] in _SENTENCE_END:
                break
            if is_content(original[i]):
                found.add(stem(original[i]))
                taken += 1
            i += step
    return found


def _kind(fact: str, word_before: str | None) -> FactKind:
    if _DATE.search(fact):
        return "date"
    if _NUMBER.match(fact):
        return "number"
    if _looks_like_code(fact):
        return "identifier"
    if word_before in _PLACE_BEFORE and fact[:1].isupper():
        return "place"
    return "thing"


def _looks_like_code(fact: str) -> bool:
    # A code mixes letters and digits (YESB0DNB002) or joins capitals (BTC-USDT, BTC/USD).
    for word in fact.strip("'\"").split():
        has_digit = any(c.isdigit() for c in word)
        if has_digit and any(c.isalpha() for c in word):
            return True
        if re.fullmatch(r"[A-Z]{2,}[-/][A-Z]{2,}", word):
            return True
    return False


def fact_score(question: str, profile: FactProfile) -> float:
    """How strongly ``question`` asks for the fact of ``profile`` (0: not at all)."""
    asked = content_stems(question)
    own = asked & profile.own
    replaced = (asked & profile.replaced) - own
    near = (asked & profile.near) - own - replaced
    # Own words count once: a question that names one fact in full ("is it
    # Binance Smart Chain, and which coin?") must not drown another it asks for.
    score = OWN_WEIGHT * bool(own) + REPLACED_WEIGHT * len(replaced)
    score += NEIGHBOUR_WEIGHT * len(near)
    if profile.kind in asked_kinds(question):
        score += CUE_WEIGHT
    return score


def asked_kinds(question: str) -> set[FactKind]:
    """The kinds of value the question's cue words ask for."""
    lowered = question.lower()
    return {kind for kind, cue in _CUES if cue.search(lowered)}


def fitting_facts(question: str, facts: TaskFacts) -> FactFit:
    """The hidden facts that ``question`` asks for (every fact when it fits none)."""
    profiles = profile_facts(facts)
    scores = [fact_score(question, p) for p in profiles]
    best = max(scores, default=0.0)
    if best <= 0:
        return FactFit(list(facts.hidden_facts), specific=False)
    chosen = [p.fact for p, s in zip(profiles, scores, strict=True) if s >= FIT_SHARE * best]
    return FactFit(chosen, specific=True)


def asks_about_the_user(question: str) -> bool:
    """Whether the question asks what the user wants or means."""
    return bool(_ABOUT_THE_USER.search(question.lower()))


def asks_for_tool_job(question: str) -> bool:
    """Whether the question asks the user to look up, fetch or compute something."""
    lowered = question.lower()
    if _JOB_VERBS.search(lowered):
        return True
    return bool(_MAYBE_JOB.search(lowered)) and not asks_about_the_user(question)
