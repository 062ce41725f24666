"""An LLM judge of When2Call behaviour classes, for ``--judge llm`` (science.md §3).

The judge model reads one reply and the names of the tools offered with it,
and must name the class first: TOOL_CALL, QUESTION, CANNOT_ANSWER or DIRECT.
It may vote V times; its label stands only with a quorum of readable votes
and no tie, as science.md §2 asks of every LLM judge, else the rules decide.
Its prompt is data (``prompts/behavior.md``), versioned in its front matter;
the version goes into the rule of every result, so labels say what made them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from aah.errors import AahError
from aah.llm import ReplyGrammar
from aah.runtime.prompts import Prompt, read_prompt
from aah.scoring.behavior.rules import BehaviorClass, Classification, classify_reply
from aah.storable import storable_text

# Reports import this module for its names only; the client loads when judging.
if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from aah.llm import ChatClient, ModelConfig

PROMPT_PATH = Path(__file__).resolve().parent / "prompts" / "behavior.md"
JUDGE_RETRIES = 2
# Several votes must be sampled above temperature 0, or they could not differ.
DEFAULT_VOTE_TEMPERATURE = 1.0
_RETRY_TEXT = "Start with one word: TOOL_CALL, QUESTION, CANNOT_ANSWER or DIRECT."
_JUDGE_WORDS: dict[str, BehaviorClass] = {
    "tool_call": "tool_call",
    "tool": "tool_call",
    "toolcall": "tool_call",
    "question": "request_for_info",
    "request_for_info": "request_for_info",
    "follow_up": "request_for_info",
    "followup": "request_for_info",
    "cannot_answer": "cannot_answer",
    "cannot": "cannot_answer",
    "direct": "direct",
    "direct_answer": "direct",
}


# The judge's prompt template and the version in its front matter.
JudgePrompt = Prompt


def load_judge_prompt() -> JudgePrompt:
    """The prompt in ``prompts/behavior.md``, split from its front matter."""
    return read_prompt(PROMPT_PATH)


# The same reply grammar as votes and awareness answers: labels, markdown and
# an echoed list of the classes are peeled, two classes at once are no answer.
_JUDGE_REPLIES = ReplyGrammar(_JUDGE_WORDS)


def parse_judge_reply(text: str, reasoning: str | None = None) -> BehaviorClass | None:
    """The class a judge's reply begins with, or None.

    Args:
        text: The reply's content.
        reasoning: Its separate reasoning field, if the server sent one.
    """
    choice = _JUDGE_REPLIES.read(text, reasoning)
    return choice.value if choice is not None else None


class JudgeVotes(NamedTuple):
    """The judge's votes on one reply and the label they give, if any.

    Attributes:
        label: The class with the most valid votes, or None without a quorum
            or on a tie.
        flag: Why there is no label: ``no quorum`` or ``tie``; None with one.
        votes: Every vote asked for, None where the reply was unreadable.
    """

    label: BehaviorClass | None
    flag: str | None
    votes: list[BehaviorClass | None]


def tally_votes(votes: Sequence[BehaviorClass | None], asked: int) -> JudgeVotes:
    """The label of ``asked`` votes by the quorum rule of science.md §2.

    The label is the class with the most valid votes, used only when at
    least ceil(asked / 2) votes are valid; with fewer it is flagged ``no
    quorum``, and a tie for the most votes is flagged ``tie``. With four
    classes a plurality, not more than half the votes, decides: the rule's
    "majority" of two outcomes read for several (the project's choice).
    """
    valid = [vote for vote in votes if vote is not None]
    if len(valid) < math.ceil(asked / 2) or not valid:
        return JudgeVotes(None, "no quorum", list(votes))
    ranked = Counter(valid).most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return JudgeVotes(None, "tie", list(votes))
    return JudgeVotes(ranked[0][0], None, list(votes))


# The rule prefixes of a reply whose label the judge did not give, by flag.
FALLBACK_PREFIXES = {"no quorum": "llm_no_quorum:", "tie": "llm_tie:"}


async def classify_with_llm(
    text: str,
    tool_names: Collection[str],
    config: ModelConfig,
    *,
    tool_calls: int = 0,
    client: ChatClient | None = None,
    retries: int = JUDGE_RETRIES,
    votes: int = 1,
    temperature: float | None = None,
) -> Classification:
    """The behaviour class of one reply, as an LLM judge sees it.

    The judge must name the class first. ``votes`` replies are asked for
    (in one request with ``n`` where the server gives them all); unreadable
    ones are asked for again up to ``retries`` times. The label is their
    plurality under the quorum rule (`tally_votes`); without a quorum or on
    a tie the rules decide, and the rule name says so (``llm_no_quorum:``
    or ``llm_tie:`` before the rules' own). Native calls need no judge.

    Args:
        text: The reply's text content.
        tool_names: The names of the tools offered with the request.
        config: The judge model's endpoint.
        tool_calls: How many native tool calls came with the reply.
        client: An open client to reuse across many replies; one is made if None.
        retries: How many times unreadable votes are asked for again.
        votes: Votes per reply (V); one vote is asked for at temperature 0.
        temperature: Sampling temperature of several votes (default 1.0).

    Raises:
        AahError: The judge model cannot be reached or refuses the request.
    """
    from aah.llm import ChatClient, ModelError

    if tool_calls > 0:
        return Classification("tool_call", "native_call")
    prompt = load_judge_prompt()
    judge = client or ChatClient(config)
    try:
        tally = await _judge_votes(judge, prompt, text, tool_names, votes, retries, temperature)
    except ModelError as exc:
        raise AahError(storable_text(f"the behaviour judge failed: {exc}")) from exc
    finally:
        if client is None:
            await judge.aclose()
    if tally.label is not None:
        return Classification(tally.label, f"llm:{prompt.version}")
    fallback = classify_reply(text, tool_names)
    return Classification(
        fallback.label, f"{FALLBACK_PREFIXES[tally.flag or 'no quorum']}{fallback.rule}"
    )


async def _judge_votes(
    judge: ChatClient,
    prompt: JudgePrompt,
    text: str,
    tool_names: Collection[str],
    votes: int,
    retries: int,
    temperature: float | None,
) -> JudgeVotes:
    """Ask for ``votes`` votes, then again for the unreadable ones, ``retries`` rounds at most.

    A retry shows the judge its unreadable answer and asks for the class word.
    """
    from langchain_core.messages import AIMessage, HumanMessage

    tools = ", ".join(sorted(tool_names)) or "(none)"
    reply = storable_text(text)
    messages: list[BaseMessage] = [HumanMessage(prompt.template.format(tools=tools, reply=reply))]
    heat = 0.0 if votes == 1 else (DEFAULT_VOTE_TEMPERATURE if temperature is None else temperature)
    valid: list[BehaviorClass] = []
    for _ in range(retries + 1):
        answers = await _sample(judge, messages, votes - len(valid), heat)
        labels = [parse_judge_reply(answer) for answer in answers]
        valid += [label for label in labels if label is not None]
        if len(valid) >= votes:
            break
        unreadable = next(a for a, label in zip(answers, labels, strict=True) if label is None)
        messages += [AIMessage(unreadable), HumanMessage(_RETRY_TEXT)]
    return tally_votes([*valid, *[None] * (votes - len(valid))], votes)


async def _sample(
    judge: ChatClient, messages: list[BaseMessage], count: int, temperature: float
) -> list[str]:
    """``count`` answers: one request with ``n``, topped up with single requests.

    A server that ignores ``n`` sends one choice, and one that refuses it
    answers HTTP 400; the votes still missing are then asked for one by one.
    """
    from aah.llm import ModelStatusError

    try:
        replies = await judge.reply_texts(messages, n=count, temperature=temperature)
        answers = [storable_text(answer) for answer in replies.texts[:count]]
    except ModelStatusError as exc:
        if count == 1 or exc.status != 400:
            raise
        answers = []  # the server refuses n > 1: ask one vote at a time
    while count > 1 and len(answers) < count:
        single = await judge.reply_texts(messages, temperature=temperature)
        if not single.texts:
            break
        answers.append(storable_text(single.texts[0]))
    return answers + [""] * (count - len(answers))
