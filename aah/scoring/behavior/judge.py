"""An LLM judge of When2Call behaviour classes, for ``--judge llm`` (science.md §3).

The judge model reads one reply and the names of the tools offered with it,
and must name the class first: TOOL_CALL, QUESTION, CANNOT_ANSWER or DIRECT.
Its prompt is data (``prompts/behavior.md``), versioned in its front matter;
the version goes into the rule of every result, so labels say what made them.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from aah.errors import AahError
from aah.llm import ReplyGrammar
from aah.runtime.prompts import Prompt, read_prompt
from aah.scoring.behavior.rules import BehaviorClass, Classification, classify_reply

# Reports import this module for its names only; the client loads when judging.
if TYPE_CHECKING:
    from aah.llm import ChatClient, ModelConfig

PROMPT_PATH = Path(__file__).resolve().parent / "prompts" / "behavior.md"
JUDGE_RETRIES = 2
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


async def classify_with_llm(
    text: str,
    tool_names: Collection[str],
    config: ModelConfig,
    *,
    tool_calls: int = 0,
    client: ChatClient | None = None,
    retries: int = JUDGE_RETRIES,
) -> Classification:
    """The behaviour class of one reply, as an LLM judge sees it.

    The judge must name the class first; an unreadable verdict is asked for
    again up to ``retries`` times, then the rules decide (the rule name then
    starts with ``llm_unparsed:``). Native calls need no judge.

    Args:
        text: The reply's text content.
        tool_names: The names of the tools offered with the request.
        config: The judge model's endpoint.
        tool_calls: How many native tool calls came with the reply.
        client: An open client to reuse across many replies; one is made if None.
        retries: How many times an unreadable verdict is asked for again.

    Raises:
        AahError: The judge model cannot be reached or refuses the request.
    """
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

    from aah.llm import ChatClient, ModelError

    if tool_calls > 0:
        return Classification("tool_call", "native_call")
    prompt = load_judge_prompt()
    tools = ", ".join(sorted(tool_names)) or "(none)"
    messages: list[BaseMessage] = [HumanMessage(prompt.template.format(tools=tools, reply=text))]
    judge = client or ChatClient(config)
    try:
        for _ in range(retries + 1):
            replies = await judge.reply_texts(messages, temperature=0)
            answer = replies.texts[0] if replies.choices else ""
            label = parse_judge_reply(answer)
            if label is not None:
                return Classification(label, f"llm:{prompt.version}")
            messages.append(AIMessage(answer))
            messages.append(HumanMessage(_RETRY_TEXT))
    except ModelError as exc:
        raise AahError(f"the behaviour judge failed: {exc}") from exc
    finally:
        if client is None:
            await judge.aclose()
    fallback = classify_reply(text, tool_names)
    return Classification(fallback.label, f"llm_unparsed:{fallback.rule}")
