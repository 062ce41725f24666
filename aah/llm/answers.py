"""One grammar for the short answers models must begin a reply with.

The grader must begin each vote with Pass or Fail, the awareness reply with
Yes, IDK or No (science.md §1, §2), and the behaviour judge with a class
name. Models wrap those words in many ways, and a misread word silently
changes a headline number, so every such reply is read by the same rules:

1. Reasoning is not the answer: ``<think>`` blocks and a separate reasoning
   field are split off first (``split_reasoning``).
2. The text is normalised: NFKC (full-width letters and colons become plain
   ones), zero-width characters dropped, curly apostrophes made straight.
3. Wrappers at the start are peeled, again and again: whitespace, markdown
   (emphasis, headings, block quotes, code fences), list markers (``1.``,
   ``-``, ``a)``), quotes, brackets, an opening tag (``<answer>``) and a
   leading label (``Verdict:``, ``Final answer -``, ``The answer is``, a
   ``## Decision`` line).
4. An echoed option list (``Pass/Fail``, ``Yes, IDK or No?``) is never an
   answer: followed by a colon, question mark, equals sign, dash or line
   break it is peeled like a label (``Pass/Fail: Fail`` is Fail); standing
   alone it leaves no answer.
5. The answer is the option the rest begins with, as a whole word
   (``Passable``, ``Noted``, ``No-go`` are not answers). Inflections count
   (Passed, Passes, Failed, Fails), and so does IDK spelled out (``I don't
   know``, ``I do not know``, with any apostrophe).
6. An option joined to a different one (``Yes or no``, ``Pass and fail``,
   ``Yes/No.``) is ambiguous: no answer.

No answer is None: callers ask again a bounded number of times, then record
the reply as unparsed.

Decision: paraphrases are not answers. ``Not sure``, ``Unsure``, ``Maybe``,
``Nope`` and ``Yeah`` read as None and are asked again. science.md fixes the
words a reply must begin with; IDK abbreviates "I don't know", so spelling
it out is the same word, while "not sure" is a paraphrase, and paraphrases
have no natural end ("probably", "I think so"). The retry prompt asks for the
exact word, and retries are bounded.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from aah.llm.reasoning import split_reasoning

VerdictWord = Literal["pass", "fail"]
AwarenessWord = Literal["yes", "idk", "no"]
T = TypeVar("T", bound=str)

VERDICT_WORDS: dict[str, VerdictWord] = {
    "pass": "pass",
    "passed": "pass",
    "passes": "pass",
    "fail": "fail",
    "failed": "fail",
    "fails": "fail",
}
AWARENESS_WORDS: dict[str, AwarenessWord] = {
    "yes": "yes",
    "idk": "idk",
    "i don't know": "idk",
    "i do not know": "idk",
    "don't know": "idk",
    "no": "no",
}

_ZERO_WIDTH = re.compile("[\u200b-\u200f\u2060\ufeff]")
_APOSTROPHES = str.maketrans(dict.fromkeys("\u2018\u2019\u201b\u02bc\u2032\u00b4", "'"))
# Words that name the answer to come; never an option word themselves.
_LABEL_NOUN = (
    r"verdict|answer|awareness|decision|response|reply|result|grade|grading|judge?ment"
    r"|evaluation|assessment|output|conclusion|label|rating|vote|outcome|classification"
    r"|class|category|behaviou?r|choice|a"  # "A: Yes", as in Q/A
)
_LABEL_PREFIX = r"final|my|the|overall|short|tool|information|info|awareness|correct"
# "The answer to this question is No": what the label answers, named after it.
_LABEL_OBJECT = r"(?:\s+(?:to|for)\s+(?:this|the|that|your|my)\s+(?:question|task|request))?"
_LABEL = (
    rf"(?:(?:{_LABEL_PREFIX})\s+){{0,2}}(?:{_LABEL_NOUN})(?!\w){_LABEL_OBJECT}"
    r"(?:\s*\([^)\n]{0,40}\))?"  # "Verdict (Pass/Fail): Pass"
)
_PEELS = (
    re.compile(r"\s+"),
    re.compile(r"`{3,}[\w+-]*[ \t]*\n?"),  # a code fence and its language
    re.compile(r"</?[A-Za-z][\w-]*\s*/?>"),  # <answer>
    re.compile(r"\d{1,3}[.)](?=\s)"),  # 1. or 2)
    re.compile(r"[A-Za-z]\)(?=\s)"),  # a)
    re.compile(r"\[[ xX]?\]"),  # a task-list box: - [x]
    re.compile(rf"{_LABEL}[\s\"'*_`\])]*(?:[:=>\-\u2013\u2014]|\n)", re.IGNORECASE),
    re.compile(rf"{_LABEL}\s+(?:is|would\s+be|will\s+be)(?!\w)\s*:?", re.IGNORECASE),
    re.compile(rf"{_LABEL}[\"'*_`\])]+\s", re.IGNORECASE),  # [Verdict] Pass, **Answer** Yes
    re.compile(rf"{_LABEL}[ \t*_#]*$", re.IGNORECASE | re.MULTILINE),  # a heading line
    re.compile(r"(?:[^\w\s]|_)+"),  # emphasis, quotes, brackets, bullets, >, #
)
# What may join options into a list: "/", "|", "&", "or", "and", "vs", a comma.
_JOIN = (
    r"(?:\s*[/|\\&+]\s*|\s*,\s*(?:(?:or|and)\s+)?|\s+(?:or|and|nor|vs\.?|versus)\s+)"
    r"(?:[*_\"'`]*)"
)
# A joiner that makes a list of options, unlike a comma ("Yes, no extra data").
_LIST_WORD = re.compile(r"[/|\\&+]|(?<!\w)(?:or|and|nor|vs|versus)(?!\w)", re.IGNORECASE)
# After an echoed list: what turns it into a heading for the real answer.
_ECHO_END = re.compile(r"[\s*_\"'`\])]*(?:\?|:|=|-|\u2013|\u2014|\n)")
_NOTHING_LEFT = re.compile(r"[\W_]*\Z")
# An option ends where its word does: "Passable", "No-go" are other words, "__Fail__" is not.
_WORD_END = r"(?![^\W_]|-\w)"
_CLOSING = "*_\"'`)\\]}>\u00bb\u201d\u2019\u300d\u300f\u3011"
_CLOSING_TAG = re.compile(r"\s*</[A-Za-z][\w-]*>\s*\Z")
_REASON_START = re.compile(rf"[\s{re.escape(_CLOSING)}]*[:.,;!\-\u2013\u2014]?\s*")


def _spelling_pattern(spelling: str) -> str:
    parts = re.split(r"[\s_\-]+", spelling.strip())
    return r"[\s_\-]+".join(re.escape(part).replace("'", "'?") for part in parts)


def _spelling_key(word: str) -> str:
    return re.sub(r"[\s_\-]+", " ", word.lower().replace("'", "")).strip()


def _reason(after: str) -> str:
    start = _REASON_START.match(after)
    reason = _CLOSING_TAG.sub("", after[start.end() if start else 0 :])
    return reason.strip(" \t\n\"'*`\u00ab\u00bb\u201c\u201d")


@dataclass(frozen=True)
class Choice(Generic[T]):
    """The option a reply begins with, and the text after it (the reason)."""

    value: T
    rest: str


class ReplyGrammar(Generic[T]):
    """Reads which of a fixed set of options a reply begins with.

    Args:
        options: Each accepted spelling (lower case) and the option it means.
            In a spelling, a space, ``_`` or ``-`` matches any run of them,
            and an apostrophe may be left out.
    """

    def __init__(self, options: Mapping[str, T]) -> None:
        self._values = {_spelling_key(spelling): value for spelling, value in options.items()}
        spellings = sorted(options, key=len, reverse=True)
        words = "|".join(_spelling_pattern(spelling) for spelling in spellings)
        # A whole word: "Passable" and "No-go" are no answers.
        self._word = re.compile(rf"(?:{words}){_WORD_END}", re.IGNORECASE)
        self._joined = re.compile(rf"{_JOIN}(?P<word>(?:{words})){_WORD_END}", re.IGNORECASE)

    def read(self, text: str, reasoning: str | None = None) -> Choice[T] | None:
        """The option ``text`` begins with once wrappers are peeled, or None.

        Args:
            text: The reply's content.
            reasoning: The reply's separate reasoning field, if the server sent one.
        """
        rest = normalise_reply(split_reasoning(text or "", reasoning).answer)
        while True:
            rest = peel_wrappers(rest)
            first = self._word.match(rest)
            if first is None:
                return None
            values = [self._value(first.group(0))]
            only_commas = True
            end = first.end()
            while (joined := self._joined.match(rest, end)) is not None:
                values.append(self._value(joined.group("word")))
                joiner = rest[joined.start() : joined.start("word")]
                only_commas = only_commas and _LIST_WORD.search(joiner) is None
                end = joined.end()
            if len(set(values)) == 1:
                return Choice(values[0], _reason(rest[first.end() :]))
            echo_end = _ECHO_END.match(rest, end)
            if echo_end is not None and _NOTHING_LEFT.match(rest, end) is None:
                rest = rest[echo_end.end() :]  # an echoed option list: the answer follows
                continue
            if only_commas and _NOTHING_LEFT.match(rest, end) is None:
                # "Yes, no extra data is needed": a comma is no list of options.
                return Choice(values[0], _reason(rest[first.end() :]))
            return None  # only the options, or an answer naming two of them

    def _value(self, word: str) -> T:
        return self._values[_spelling_key(word)]


def normalise_reply(text: str) -> str:
    """``text`` in NFKC, without zero-width characters, with straight apostrophes."""
    return _ZERO_WIDTH.sub("", unicodedata.normalize("NFKC", text)).translate(_APOSTROPHES)


def peel_wrappers(text: str) -> str:
    """``text`` without the markdown, list markers, quotes and labels it starts with."""
    while True:
        for peel in _PEELS:
            match = peel.match(text)
            if match is not None and match.end() > 0:
                text = text[match.end() :]
                break
        else:
            return text


VERDICT_REPLIES: ReplyGrammar[VerdictWord] = ReplyGrammar(VERDICT_WORDS)
AWARENESS_REPLIES: ReplyGrammar[AwarenessWord] = ReplyGrammar(AWARENESS_WORDS)


def parse_verdict_reply(text: str, reasoning: str | None = None) -> VerdictWord | None:
    """``pass`` or ``fail`` when the reply begins with that verdict, else None.

    Args:
        text: The grader's reply content.
        reasoning: Its separate reasoning field, if the server sent one.
    """
    choice = VERDICT_REPLIES.read(text, reasoning)
    return choice.value if choice is not None else None


def parse_awareness_reply(
    text: str, reasoning: str | None = None
) -> tuple[AwarenessWord, str] | None:
    """``(answer, reason)`` when the reply begins with Yes, IDK or No, else None.

    Args:
        text: The awareness reply content.
        reasoning: Its separate reasoning field, if the server sent one.
    """
    choice = AWARENESS_REPLIES.read(text, reasoning)
    return (choice.value, choice.rest) if choice is not None else None
