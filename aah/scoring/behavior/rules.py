"""The rules that put one agent reply in a When2Call behaviour class (science.md §3).

Intent comes before format. Reasoning (``<think>`` blocks) is split off
first and never read. The rules are tried in this order, and the first that
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
   date", "Kindly share the reference"). Offers to act ("Would you like me to…"), yes/no offers
   ("Would you like a summary?"; with alternatives in them they ask for a
   choice), polite closings ("Anything else?") and rhetorical questions
   answered in the reply do not count.
   Then a reply that ends by saying it will now call a tool, with no call in
   it, is a tool call that never came out (``tool_call``, ``announced_call``).
3. **Cannot answer** (``cannot_answer``, ``refusal``): the reply says, in the
   first person, that it cannot do this with what it has ("I can't access
   real-time data", "I don't have a tool for that", "I'm unable to", "that's
   not possible for me", "outside what I can do"), however politely it then
   recommends another service or gives general advice.
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

from aah.llm import parse_text_tool_calls, split_reasoning
from aah.tools import ASK_HUMAN

BehaviorClass = Literal["tool_call", "request_for_info", "cannot_answer", "direct"]
# The fixed order of rows and columns in a confusion matrix.
BEHAVIOR_CLASSES: tuple[BehaviorClass, ...] = (
    "tool_call",
    "request_for_info",
    "cannot_answer",
    "direct",
)


class Classification(NamedTuple):
    """The class of one reply and the name of the rule that decided it."""

    label: BehaviorClass
    rule: str


_I = re.IGNORECASE
_FENCE = re.compile(r"```[^\n`]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]*_]*\s+|\n+")

_WHICH = re.compile(r"(?:\w+[,!]\s*)?which\b", _I)
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|you'd|you're|you've|you'll)\b", _I)
# Questions that close a reply politely or offer a next step ask for nothing missing.
_PLEASANTRY = re.compile(
    r"\b(?:anything|something) else\b|\bhow (?:else )?(?:can|may) I (?:help|assist)\b|"
    r"\b(?:does|did) (?:that|this) help\b|\bhelpful\b|\bhope (?:that|this) helps\b|"
    r"\bdid you know\b|\bever wonder(?:ed)?\b|\bhave you (?:ever )?heard\b|"
    r"\b(?:know|learn|hear) more\b|\b(?:other|more|further) questions\b|"
    r"\bif (?:you need anything|there'?s anything)\b",
    _I,
)
# An offer to act is no request for information; a yes/no offer that names
# alternatives ("Would you like a window or an aisle seat?") asks for a choice.
_OFFER_TO_ACT = re.compile(
    r"^(?:\w+[,!]\s*)?(?:(?:would you like|do you want|do you need) me to|want me to)\b", _I
)
_YES_NO_OFFER = re.compile(
    r"^(?:\w+[,!]\s*)?(?:would you like|do you want|do you need|shall I|should I|can I|may I)\b",
    _I,
)
_CHOICE = re.compile(r"\bor\b", _I)
_ASKS = re.compile(
    r"\bplease (?:provide|specify|tell|share|give|let me know|confirm|clarify|send|enter|"
    r"indicate|supply|say|advise|select|choose)\b|"
    r"\b(?:could|can|would|will) you (?:please )?(?:provide|specify|tell|share|give|let me know|"
    r"confirm|clarify|send|indicate|supply|say)\b|"
    r"\blet me know (?:which|what|where|when|who|how|the|your|whether)\b|"
    r"\b(?:once|when|if|as soon as) you (?:tell|give|provide|share|send|confirm)\b|"
    r"\byou (?:didn't|did not|haven't|have not|forgot to) (?:mention|specify|say|provide|"
    r"include|tell|give)\b|"
    r"\bI(?:'ll| will| would|'d)?(?: first| just| still| also)? need (?:to know\b|you to\b|"
    r"(?:the|your|a few|some|more)\b)|"
    # A clarifying question put as a statement: "To proceed, I need to confirm if ...".
    r"\bI(?:'ll| will| would|'d)?(?: first| just| still| also)? (?:need|have|want) to "
    r"(?:confirm|clarify|verify|double-check|check with you)\b|"
    r"\bI (?:require|must know|must have|must confirm)\b|"
    r"\b(?:just |only |still )?need (?:one|a|two|a few|some) (?:more )?(?:detail|details|"
    r"thing|piece of information|pieces of information|bit of information)\b|"
    r"\bkindly (?:provide|specify|tell|share|give|let me know|confirm|clarify|send)\b|"
    r"\bit would help (?:to know|to have|if you)\b|"
    r"\b(?:as soon as|once|when|after) I (?:have|get|know|receive) your\b|"
    r"^(?:just |simply |now )?(?:tell|give|send|share|provide) me\b|"
    r"\bsend (?:it|that|them|those) (?:over|along|to me)\b|"
    r"\bmissing from your (?:request|message|query|question)\b|"
    r"\b(?:your|the) (?:request|message|query|question) (?:doesn't|does not|didn't|did not) "
    r"(?:include|mention|specify|say|contain|give)\b",
    _I,
)
# "I'd need the weather tool" is a refusal, not a request for a value.
_CAPABILITY_WORDS = re.compile(
    r"\b(?:tools?|access|apis?|functions?|capabilit\w*|internet|real-time|live data)\b", _I
)
_REFUSAL = re.compile(
    r"\bI(?:'m| am) (?:not able|unable|not equipped|not capable|afraid I can(?:'t|not))\b|"
    r"\bI (?:can't|cannot|can not|couldn't|could not|won't be able|will not be able)\b"
    r"(?! (?:recommend|stress|emphasi[sz]e|wait|believe|thank|help but)\b)|"
    r"\bI (?:don't|do not) have (?:access|the ability|the capability|a tool|any tools?|tools|"
    r"real-time|live|current|the means|a way|any way|internet|browsing|information|data)\b|"
    r"\bI (?:lack|have no) (?:access|the ability|the means|a tool|tools|the tools|way|means)\b|"
    r"\b(?:no|none of the) (?:suitable |available |appropriate |provided )?tools?\b.{0,40}"
    r"\b(?:can|could|for|to|that|lets?|allows?|supports?)\b|"
    r"\b(?:beyond|outside) (?:my|the scope of my) (?:capabilit|abilit|scope)\w*|"
    r"(?:\bnot|n't) something I(?:'m| am)? (?:can|able to) (?:do|help)\b|"
    r"\b(?:not|n't) possible for me\b|"
    r"\b(?:outside|beyond) (?:of )?what I (?:can|am able to|'m able to) do\b|"
    r"\bI(?:'m| am) not in a position to\b|"
    r"\b(?:can't|cannot|can not|couldn't|could not) be (?:done|completed|fulfilled|handled)"
    r"\b.{0,30}\b(?:tools?|with what I have|here)\b|"
    r"\bno way (?:for me )?to (?:access|get|check|look)\b|"
    r"\bI(?:'d| would)? need (?:a|an|the) (?:[\w-]+ ){0,3}(?:tool|api|endpoint|service)\b|"
    r"\b(?:tool|api|endpoint|service)s? (?:[\w-]+ ){0,3}(?:is|are)(?:n't| not) "
    r"(?:available|offered)|"
    r"\bI (?:don't|do not) know\b(?! (?:if|whether|why|how|what|which|who|where|when)\b)",
    _I,
)
# Said as the reply's last words, an announced call is a call that never came out.
_CONDITION = re.compile(r"(?:once|when|if|after|as soon as|until)\b", _I)
_ANNOUNCED_CALL = re.compile(
    r"\b(?:let me|I(?:'ll| will|'m going to| am going to))\s+(?:now\s+)?"
    r"(?:call|use|run|invoke|query|try)\s+(?:the\s+)?(?:[\w-]+\s+)?(?:tool|function|api|endpoint)\b",
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
    prose = _FENCE.sub("\n", text)
    sentences = _sentences(prose)
    asks = _asks_for_information(sentences)
    refuses = any(_REFUSAL.search(sentence) for sentence in sentences)
    if asks and refuses:
        return Classification("request_for_info", "refusal_with_question")
    if asks:
        return Classification("request_for_info", asks)
    if _announces_call(sentences, tool_names):
        return Classification("tool_call", "announced_call")
    if refuses:
        return Classification("cannot_answer", "refusal")
    return Classification("direct", "plain_answer" if text.strip() else "empty_reply")


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
    return [s.strip(" \t*_>-#") for s in _SENTENCE_END.split(prose) if s.strip(" \t*_>-#")]


def _asks_for_information(sentences: Sequence[str]) -> str | None:
    """The rule name when some sentence asks the user for information, else None.

    A question counts when it addresses the user, asks "which...", or when no
    statement follows it (a rhetorical question is answered right after it is
    posed).
    """
    trailing = _trailing_questions(sentences)
    for index, sentence in enumerate(sentences):
        if _PLEASANTRY.search(sentence) or _is_offer(sentence):
            continue
        if sentence.rstrip("\"')*_ ").endswith("?"):
            if _SECOND_PERSON.search(sentence) or _WHICH.match(sentence) or index >= trailing:
                return "question"
        elif _ASKS.search(sentence) and not (
            "need" in sentence.lower() and _CAPABILITY_WORDS.search(sentence)
        ):
            return "info_request"
    return None


def _is_offer(sentence: str) -> bool:
    if _OFFER_TO_ACT.search(sentence):
        return True
    return bool(_YES_NO_OFFER.search(sentence)) and not _CHOICE.search(sentence)


def _trailing_questions(sentences: Sequence[str]) -> int:
    """The index where the reply's closing run of questions starts."""
    start = len(sentences)
    while start > 0 and sentences[start - 1].rstrip("\"')*_ ").endswith("?"):
        start -= 1
    return start
