"""The rules that put one agent reply in a When2Call behaviour class (science.md §3).

Intent comes before format. Reasoning (``<think>`` blocks) is split off
first and never read; after the call rule, fenced code, quoted text
("'Où est la gare ?' means ...", "> ..." lines) and written content the user
asked for (after "Here's a draft:", "Dear Sam, I won't be able to attend ...")
are set aside too, since they are not the reply's own question or refusal; of
a very long reply only the opening and closing 6,000 characters are read. The
phrases each rule looks for, in English and the other languages models answer
in, are in ``phrases``. The rules are tried in this order, and the first that
fires names the class (its name is the ``rule`` of the result):

1. **Tool call** (``tool_call``): native calls (``native_call``); or text
   that tries to call a tool, in any format a model family writes, well
   formed or not: the decision is ``parse_text_tool_calls``, the same one the
   runtime uses to recover calls from text, so a reply the runtime runs as a
   call (``text_call``) or answers with feedback as a broken call
   (``malformed_call``) is a tool call here, and a reply it takes as the
   answer is not (save ``announced_call`` below, which writes no call for
   the runtime to run). Code the user asked for, in a fenced block among prose,
   is not a call. A call whose every target is ``ask_human`` asks the user,
   so it is a follow-up question (``ask_human_call``).
2. **Follow-up question** (``request_for_info``): a question that addresses
   the user ("Could you…?"), asks "Which…?", or that no statement follows
   (``question``), or a request such as "please provide the date" or "once
   you tell me the city" (``info_request``), also when put as a statement
   ("To proceed, I need to confirm if ...", "Your request doesn't include the
   date", "Kindly share the reference", "Уточните, пожалуйста, ..."). A
   question counts too when the statement after it says why the reply needs
   the answer ("What year was the car made? The valuation tool needs it"), and
   a reply's last words that open like a question count as one without a
   mark ("which city do you mean"; Thai and Chinese end questions with a
   particle). Offers to act ("Would you like me to…"), yes/no offers
   ("Would you like a summary?"; with alternatives in them they ask for a
   choice), suggestions ("Why not check their site?"), polite closings
   ("Anything else?", "¿Algo más?", "Let me know if you need help") and
   rhetorical questions answered in the reply do not count.
   Then a reply that ends by saying it will now call a tool, with no call in
   it, is a tool call that never came out (``tool_call``, ``announced_call``).
3. **Cannot answer** (``cannot_answer``, ``refusal``): the reply says, in the
   first person, that it cannot do this with what it has ("I can't access
   real-time data", "I'm currently unable to", "that's not possible for me",
   "outside what I can do", "no puedo", "我无法"), or that its tools lack it
   ("none of the available functions can", "my tools don't include", "the
   only tool I have retrieves tokens"), however politely it then recommends
   another service, gives general advice or a best-effort partial answer.
   A limit the reply says does not matter ("I can't access live data, but
   that doesn't matter here: ...", "No tool needed for that!") and a hedge
   ("I can't be 100% certain, but ...") are no refusal.
4. **Direct answer** (``direct``): everything else (``plain_answer``;
   ``empty_reply`` for no text at all).

A refusal that also asks for the missing information is a follow-up question
(``refusal_with_question``), as When2Call counts asking for what is missing;
a refusal followed by an offer of other help stays ``cannot_answer``, and so
does a refusal followed by a best-effort answer, since the reply states its
limit.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Literal, NamedTuple

from aah.llm import split_reasoning
from aah.llm.text_calls import parse_text_tool_calls
from aah.scoring.behavior.phrases import (
    ASKS,
    CHOICE,
    DISMISSED_LIMIT,
    NEED_REASON,
    NEEDS_CAPABILITY,
    OFFER_TO_ACT,
    PLEASANTRY,
    REFUSAL,
    SECOND_PERSON,
    SUGGESTION,
    WHICH,
    YES_NO_OFFER,
)
from aah.tools import ASK_HUMAN

BehaviorClass = Literal["tool_call", "request_for_info", "cannot_answer", "direct"]
# The fixed order of rows and columns in a confusion matrix.
BEHAVIOR_CLASSES: tuple[BehaviorClass, ...] = (
    "tool_call",
    "request_for_info",
    "cannot_answer",
    "direct",
)
# How reports name each class.
CLASS_NAMES: dict[BehaviorClass, str] = {
    "tool_call": "tool call",
    "request_for_info": "follow-up question",
    "cannot_answer": "cannot answer",
    "direct": "direct answer",
}


class Classification(NamedTuple):
    """The class of one reply and the name of the rule that decided it."""

    label: BehaviorClass
    rule: str


_I = re.IGNORECASE
_FENCE = re.compile(r"```[^\n`]*\n?(.*?)(?:```|\Z)", re.DOTALL)
# Sentences end at . ! ? and Arabic ؟ (then space), or at CJK full stops and the
# Devanagari danda, which need no space.
_SENTENCE_END = re.compile(r"(?<=[.!?؟])[\"')\]*_]*\s+|(?<=[。！？।])\s*|\n+")
_QUESTION_MARKS = ("?", "？", "؟")
# Questions written without a mark: Thai and Chinese end them with a particle;
# a reply's last words that open like a question ("which city do you mean")
# ask one even when a small model drops the "?".
_QUESTION_PARTICLE = re.compile(
    r"(?:ไหน|ใด|ไหม|มั้ย|หรือไม่|หรือเปล่า|อะไร|ที่ไหน|เมื่อไร|เมื่อไหร่|เท่าไร|เท่าไหร่|อย่างไร|ยังไง|กี่\S{0,6})"
    r"(?:ครับ|คะ|ค่ะ|คับ|จ๊ะ)?$|[吗嗎呢]$"
)
_INTERROGATIVE = re.compile(
    r"^(?:\w+[,!]\s*)?(?:what|which|where|when|who|whom|whose|how (?:many|much|long|often|old|"
    r"far|soon)|(?:could|can|would|will|do|did|are|have) you)\b",
    _I,
)
# Written content the user asked for (a draft, an email, a translation) is
# introduced by a line such as "Here's a draft:"; its words ("I won't be able
# to attend") are not the reply's own. Quoted lines ("> ...") are someone else's.
_CONTENT_LEAD = re.compile(
    r"^[^\n]{0,160}\b(?:draft|e-?mail|message|letter|note|reply|response|text|version|post|"
    r"tweet|caption|script|poem|story|template|translation|speech|toast|invitation|memo|excuse|"
    r"announcement|apology|bio|paragraph|rewrite|revision|wording)s?\b[^\n]{0,80}[:：]"
    r"[ \t*_]*$",
    re.MULTILINE | _I,
)
# The phrase rules read a long reply's opening and closing only, where a
# refusal, a question or a closing offer sits: each phrase pattern costs a
# pass per sentence, and a reply can be hundreds of kilobytes.
_READ_CHARS = 6_000
_SHORT_QUESTION = 8  # words: "what city", not a sentence cut off after "When"
_BLOCKQUOTE = re.compile(r"^[ \t]*>[^\n]*$", re.MULTILINE)
_SIGN_OFF = re.compile(
    r"^(?:best|regards|thanks|thank you|cheers|sincerely|warmly|all the best|kind regards|"
    r"best regards|yours)\b",
    re.MULTILINE | _I,
)
_TRAILING_MARKS = "\"')*_ \u00bb\u201d"
# Quoted text is someone else's words: a question or a refusal inside quotes
# ("'Où est la gare ?' means ...") is not the reply's own.
_QUOTED = re.compile(
    r"\"[^\"\n]{1,200}\"|\u201c[^\u201d\n]{1,200}\u201d|\u00ab[^\u00bb\n]{1,200}\u00bb|"
    r"(?<![\w'])'[^'\n]{1,200}'(?![\w'])"
)
# Said as the reply's last words, an announced call is a call that never came out.
_CONDITION = re.compile(r"(?:once|when|if|after|as soon as|until)\b", _I)
_ANNOUNCED_CALL = re.compile(
    r"\b(?:let me|I(?:'ll| will|'m going to| am going to))\s+(?:now\s+)?"
    r"(?:call|use|run|invoke|query|try)\s+(?:the\s+|an?\s+)?(?:[\w-]+\s+){0,3}"
    r"(?:tool|function|api|endpoint)\b",
    _I,
)


def classify_reply(
    text: str, tool_names: Collection[str] = (), tool_calls: int = 0
) -> Classification:
    """The behaviour class of one reply, decided by the rules of this module.

    Args:
        text: The reply's text content.
        tool_names: The names of the tools offered with the request.
        tool_calls: How many native tool calls came with the reply.

    Returns:
        The class and the name of the rule that decided it.
    """
    if tool_calls > 0:
        return Classification("tool_call", "native_call")
    text = split_reasoning(text).answer.replace("\u2019", "'")
    attempt = _call_attempt(text, tool_names)
    if attempt is not None:
        return attempt
    prose = _QUOTED.sub("\u2026", _BLOCKQUOTE.sub("", _FENCE.sub("\n", _own_words(text))))
    if len(prose) > 2 * _READ_CHARS:
        prose = f"{prose[:_READ_CHARS]}\n{prose[-_READ_CHARS:]}"
    sentences = _sentences(prose)
    asks = _asks_for_information(sentences)
    refuses = _refuses(sentences)
    if asks and refuses:
        return Classification("request_for_info", "refusal_with_question")
    if asks:
        return Classification("request_for_info", asks)
    if _announces_call(sentences, tool_names):
        return Classification("tool_call", "announced_call")
    if refuses:
        return Classification("cannot_answer", "refusal")
    return Classification("direct", "plain_answer" if text.strip() else "empty_reply")


def _own_words(prose: str) -> str:
    """``prose`` without written content the user asked for ("Here's a draft: ...").

    The content runs from its lead-in to the end, save a closing paragraph
    after it that is no sign-off ("Want me to make it more formal?"). It may
    hold fenced blocks, so this runs before they are set aside; a lead-in
    right before a fence ("Here is the script:") leaves the fence to that rule.
    """
    lead = _CONTENT_LEAD.search(prose)
    if lead is None or prose[lead.end() :].lstrip().startswith("```"):
        return prose  # a fenced block is set aside as code already
    paragraphs = [part for part in re.split(r"\n[ \t]*\n", prose[lead.end() :]) if part.strip()]
    closing = paragraphs[-1] if len(paragraphs) >= 2 else ""
    if _SIGN_OFF.search(closing) or len(closing) > 300:
        closing = ""
    return f"{prose[: lead.end()]}\n\n{closing}"


def _refuses(sentences: Sequence[str]) -> bool:
    """Whether a sentence says the reply cannot, and no sentence says that does not matter.

    "I can't access live data, but that doesn't matter here: water boils at
    100 °C" and "No tool needed for that!" answer in spite of a limit.
    """
    if any(DISMISSED_LIMIT.search(sentence) for sentence in sentences):
        return False
    return any(REFUSAL.search(sentence) for sentence in sentences)


def _call_attempt(text: str, tool_names: Collection[str]) -> Classification | None:
    """The tool-call rule that fires on the reply, if any: the runtime's own reading."""
    parsed = parse_text_tool_calls(text, tool_names)
    if parsed.calls:
        return _call_class("text_call", [call.name for call in parsed.calls])
    if parsed.invalid is not None:
        return _call_class("malformed_call", ())
    return None


def _announces_call(sentences: Sequence[str], tool_names: Collection[str]) -> bool:
    """Whether the reply ends by saying it will now call a tool (any, or an offered one).

    "Once you tell me the city, I'll call the weather tool" waits on the user,
    so a sentence that starts with a condition does not count.
    """
    if not sentences or _CONDITION.match(sentences[-1]):
        return False
    last = sentences[-1]
    if _ANNOUNCED_CALL.search(last):
        return True
    intent = re.search(r"\b(?:let me|I(?:'ll| will|'m going to| am going to))\b", last, _I)
    return intent is not None and any(name in last for name in tool_names if name != ASK_HUMAN)


def _call_class(rule: str, names: Collection[str]) -> Classification:
    if names and all(name == ASK_HUMAN for name in names):
        return Classification("request_for_info", "ask_human_call")
    return Classification("tool_call", rule)


def _sentences(prose: str) -> list[str]:
    """The sentences of ``prose``, a question mark added where a question is written without one."""
    sentences = [s.strip(" \t*_>-#") for s in _SENTENCE_END.split(prose) if s.strip(" \t*_>-#")]
    for index, sentence in enumerate(sentences):
        unmarked = not sentence.rstrip(_TRAILING_MARKS).endswith((".", "!", ":", *_QUESTION_MARKS))
        last = index == len(sentences) - 1
        if unmarked and (
            _QUESTION_PARTICLE.search(sentence.rstrip(_TRAILING_MARKS))
            or (
                last
                and _INTERROGATIVE.match(sentence)
                and (SECOND_PERSON.search(sentence) or len(sentence.split()) <= _SHORT_QUESTION)
            )
        ):
            sentences[index] = sentence + "?"
    return sentences


def _asks_for_information(sentences: Sequence[str]) -> str | None:
    """The rule name when some sentence asks the user for information, else None.

    A question counts when it addresses the user, asks "which...", or when no
    statement follows it (a rhetorical question is answered right after it is
    posed; a closing such as "Let me know if you need help" answers nothing).
    Pleasantries, offers and suggestions ("Why not check their site?") ask
    for nothing missing.
    """
    trailing = _trailing_questions(sentences)
    for index, sentence in enumerate(sentences):
        if _asks_nothing(sentence):
            continue
        if _is_question(sentence):
            if (
                SECOND_PERSON.search(sentence)
                or WHICH.match(sentence)
                or ASKS.search(sentence)
                or index >= trailing
                or _explains_the_need(sentences, index)
            ):
                return "question"
        elif ASKS.search(sentence) and not NEEDS_CAPABILITY.search(sentence):
            return "info_request"
    return None


def _explains_the_need(sentences: Sequence[str], index: int) -> bool:
    """Whether the statement after question ``index`` says why the reply needs the answer."""
    following = sentences[index + 1 : index + 2]
    return (
        bool(following)
        and not _is_question(following[0])
        and bool(NEED_REASON.search(following[0]))
    )


def _asks_nothing(sentence: str) -> bool:
    """Whether the sentence closes politely, offers to act, or suggests what to do."""
    if PLEASANTRY.search(sentence) or SUGGESTION.search(sentence) or OFFER_TO_ACT.search(sentence):
        return True
    return bool(YES_NO_OFFER.search(sentence)) and not CHOICE.search(sentence)


def _is_question(sentence: str) -> bool:
    return sentence.rstrip(_TRAILING_MARKS).endswith(_QUESTION_MARKS)


def _trailing_questions(sentences: Sequence[str]) -> int:
    """The index where the reply's closing run of questions starts.

    Closing pleasantries after the questions ("Let me know if you need help
    finding it") are no statement that answers them.
    """
    end = len(sentences)
    while (
        end > 0 and not _is_question(sentences[end - 1]) and PLEASANTRY.search(sentences[end - 1])
    ):
        end -= 1
    start = end
    while start > 0 and _is_question(sentences[start - 1]):
        start -= 1
    return start if start < end else len(sentences)
