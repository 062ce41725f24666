"""Humans for batch runs: an oracle that answers from the task's facts, and a simulated user.

Both implement the runtime's ``HumanChannel``, so a batch run plugs one in
where an interactive session plugs in a person.

**The oracle** is deterministic and knows only the task text. For each
question, in order:

1. A question asking for a tool's job (``fact_fit.asks_for_tool_job``) is
   declined with "I can't look that up myself.", unless it asks what the user
   wants and a hidden fact fits it specifically (then 3 applies). The oracle
   has no knowledge of the world, so it declines in every setting; in a
   replaceable task it does the two easy jobs that need none: easy arithmetic
   on two numbers the question states, and a joke.
2. A task with no hidden facts (perfect, replaceable...) has nothing to add:
   "I don't know."
3. Otherwise it replies with the hidden facts that fit the question
   (``fact_fit.fitting_facts``), or with all of them when none fits
   specifically.

**The simulated user** is an LLM (the ``human`` role's model) that knows the
whole original request and, in replaceable tasks, may do the missing tool's
easy job. Its replies go through ``leak_check.leak_flags``; the flags ride on
the reply into the session's log. It fills an MCP server's form as the user
would (``simulated_elicitation``), or declines it.
"""

from __future__ import annotations

import asyncio
import operator
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar, NamedTuple

from langchain_core.messages import HumanMessage, SystemMessage

from aah.benchmark.failtalms.fact_fit import (
    TaskFacts,
    asks_about_the_user,
    asks_for_tool_job,
    fitting_facts,
)
from aah.benchmark.failtalms.leak_check import leak_flags
from aah.benchmark.failtalms.oracle_elicitation import oracle_elicitation
from aah.benchmark.failtalms.simulated_elicitation import (
    declined,
    describe_fields,
    read_elicitation_reply,
)
from aah.desk import ElicitationResult
from aah.errors import AahError
from aah.events import ModelCallEvent
from aah.extensions import BatchHumanName, choose
from aah.llm import ChatClient, ModelConfig, ModelError, TextReplies, model_config
from aah.prompts import Prompt, PromptFolder
from aah.runtime import (
    IDK_REPLY,
    ApprovalReply,
    ApprovalRequest,
    EditCheck,
    ElicitationAsk,
    HumanChannel,
    HumanReply,
    HumanRequest,
    QueueHuman,
)
from aah.store import SessionStore

PROMPT_DIR = Path(__file__).resolve().parent / "prompts"
BENCHMARK_PROMPTS = PromptFolder(PROMPT_DIR)
# The oracle's fixed replies are text the model reads: prompt files, with versions.
CANNOT_HELP = BENCHMARK_PROMPTS.load("oracle_cannot_help").render()
JOKE = BENCHMARK_PROMPTS.load("oracle_joke").render()

_OPERATORS: dict[str, Callable[[float, float], float]] = {
    "+": operator.add,
    "plus": operator.add,
    "-": operator.sub,
    "minus": operator.sub,
    "*": operator.mul,
    "x": operator.mul,
    "×": operator.mul,
    "times": operator.mul,
    "multiplied by": operator.mul,
    "/": operator.truediv,
    "÷": operator.truediv,
    "divided by": operator.truediv,
}
# "-" and "x" need spaces around them, so a date (2024-05-01) or a size
# (1920x1080) is not read as a sum.
_ARITHMETIC = re.compile(
    r"(-?\d+(?:\.\d+)?)"
    r"(\s*[+*/×÷]\s*|\s+(?:multiplied by|divided by|plus|minus|times|x|-)\s+)"
    r"(-?\d+(?:\.\d+)?)"
)


class OracleHuman:
    """Answers from the task's hidden facts by fixed rules (see the module docstring)."""

    answered_by = "oracle"
    answers_at_once: ClassVar[bool] = True

    def __init__(self, facts: TaskFacts) -> None:
        """Answer questions about the task that ``facts`` describe."""
        self.facts = facts

    async def ask(self, request: HumanRequest) -> HumanReply:
        """The oracle's reply to ``request.question``."""
        return HumanReply(answer=self.reply_to(request.question), answered_by=self.answered_by)

    async def elicit(self, ask: ElicitationAsk) -> ElicitationResult:
        """An MCP server's form, filled from the hidden facts (see ``oracle_elicitation``)."""
        return oracle_elicitation(ask.request, self.facts)

    async def decide(self, request: ApprovalRequest, check: EditCheck) -> ApprovalReply:
        """Approve the call unless a hidden fact is a rule against it (``forbidding_fact``)."""
        rule = forbidding_fact(request.tool, self.facts)
        if rule is None:
            return ApprovalReply(decision="approve", decided_by=self.answered_by)
        return ApprovalReply(decision="reject", reason=rule, decided_by=self.answered_by)

    def reply_to(self, question: str) -> str:
        """The reply text for ``question``."""
        fit = fitting_facts(question, self.facts)
        wants_fact = fit.specific and asks_about_the_user(question)
        if asks_for_tool_job(question) and not wants_fact:
            return self._easy_job(question) or CANNOT_HELP
        if not self.facts.hidden_facts:
            return IDK_REPLY
        return "; ".join(fit.facts)

    def _easy_job(self, question: str) -> str | None:
        """A replaceable task's easy job, when it needs no knowledge of the world."""
        if self.facts.setting != "replaceable":
            return None
        if "joke" in question.lower():
            return JOKE
        return easy_arithmetic(question)


_FORBIDS = re.compile(
    r"\b(do not|don't|dont|never|must not|mustn't|not allowed|no one may|forbidden)\b", re.I
)


def forbidding_fact(tool: str, facts: TaskFacts) -> str | None:
    """The first hidden fact that forbids calling ``tool``, or None.

    A fact forbids a call when it says no (do not, never, must not, not
    allowed...) and names the tool: its qualified name, its tool part or its
    endpoint part, with ``_`` and ``-`` read as spaces.
    """
    tool_part, _, endpoint = tool.partition("__")
    names = {_words(n) for n in (tool, tool_part, endpoint) if n}
    for fact in facts.hidden_facts:
        text = _words(fact)
        if _FORBIDS.search(fact) and any(re.search(rf"\b{re.escape(n)}\b", text) for n in names):
            return fact
    return None


def _words(text: str) -> str:
    return " ".join(re.sub(r"[_\-]+", " ", text.lower()).split())


def easy_arithmetic(question: str) -> str | None:
    """The result of the first "a op b" in ``question`` (e.g. "12 times 3"), if any."""
    found = _ARITHMETIC.search(question.lower())
    if found is None:
        return None
    left, op, right = float(found[1]), _OPERATORS[found[2].strip()], float(found[3])
    if op is operator.truediv and right == 0:
        return None
    result = round(op(left, right), 6)
    return str(int(result)) if result.is_integer() else f"{result:f}".rstrip("0")


class SimulatedHuman:
    """An LLM playing the user, who knows the whole original request."""

    answered_by = "simulated"

    def __init__(
        self,
        facts: TaskFacts,
        config: ModelConfig,
        *,
        store: SessionStore | None = None,
        temperature: float = 0.0,
    ) -> None:
        """Play the user of the task ``facts`` describe, on ``config``'s model.

        Args:
            facts: What the user knows about the task.
            config: The model (normally ``model_config("human")``).
            store: When given, each model call is logged in the asking session
                as a ``ModelCallEvent`` with purpose ``human``.
            temperature: Sampling temperature; 0 keeps runs repeatable.
        """
        self.facts = facts
        self.config = config
        self.store = store
        self.system_prompt = simulated_human_prompt(facts)
        self.calls: list[ModelCallEvent] = []
        self._model = shared_client(config, temperature)

    async def ask(self, request: HumanRequest) -> HumanReply:
        """Ask the model for the user's reply; flag it if it leaks.

        Raises:
            AahError: the simulated user's model failed (one line, saying so).
        """
        messages = [SystemMessage(self.system_prompt), HumanMessage(request.question)]
        started = time.perf_counter()
        try:
            replies = await self._model.reply_texts(messages)
        except ModelError as exc:
            raise AahError(f"simulated human: {exc}") from exc
        seconds = time.perf_counter() - started
        # Reasoning a reasoning model sent is not what the user says.
        text = replies.texts[0] if replies.choices else ""
        await self._record(request.session_id, replies, text, seconds)
        return HumanReply(
            answer=text.strip(),
            answered_by=self.answered_by,
            seconds=seconds,
            flags=leak_flags(request.question, text, self.facts),
        )

    async def decide(self, request: ApprovalRequest, check: EditCheck) -> ApprovalReply:
        """Ask the model, as the user, whether the call may run: APPROVE, or REJECT: reason.

        A reply that is neither is a rejection: a call runs only when approved.

        Raises:
            AahError: the simulated user's model failed (one line, saying so).
        """
        asked = _load_prompt("simulated_approver").render(call=request.summary)
        messages = [SystemMessage(self.system_prompt), HumanMessage(asked)]
        started = time.perf_counter()
        try:
            replies = await self._model.reply_texts(messages)
        except ModelError as exc:
            raise AahError(f"simulated human: {exc}") from exc
        seconds = time.perf_counter() - started
        text = replies.texts[0] if replies.choices else ""
        await self._record(request.session_id, replies, text, seconds)
        word, _, rest = text.strip().partition(" ")
        word = word.strip(" :.,!*").lower()
        if word == "approve" or word == "approved":
            return ApprovalReply(decision="approve", decided_by=self.answered_by, seconds=seconds)
        reason = rest.strip(" :") if word in ("reject", "rejected") else ""
        reason = reason or f"the simulated user did not approve ({text.strip()[:200]!r})"
        return ApprovalReply(
            decision="reject", reason=reason, decided_by=self.answered_by, seconds=seconds
        )

    async def elicit(self, ask: ElicitationAsk) -> ElicitationResult:
        """Ask the model, as the user, to fill an MCP server's form: JSON content, or DECLINE.

        A link is declined unasked (the simulated user opens nothing); a reply
        that is not content fitting the form is a decline saying why (see
        ``read_elicitation_reply``).

        Raises:
            AahError: the simulated user's model failed (one line, saying so).
        """
        request = ask.request
        if request.mode == "url":
            return declined("the simulated user opens no links")
        asked = _load_prompt("simulated_elicitation").render(
            server=request.asker, message=request.message, fields=describe_fields(request)
        )
        messages = [SystemMessage(self.system_prompt), HumanMessage(asked)]
        started = time.perf_counter()
        try:
            replies = await self._model.reply_texts(messages)
        except ModelError as exc:
            raise AahError(f"simulated human: {exc}") from exc
        seconds = time.perf_counter() - started
        text = replies.texts[0] if replies.choices else ""
        await self._record(ask.session_id, replies, text, seconds)
        result = read_elicitation_reply(request, text)
        return result.model_copy(update={"seconds": seconds})

    async def _record(
        self, session_id: str, replies: TextReplies, text: str, seconds: float
    ) -> None:
        event = ModelCallEvent(
            session_id=session_id,
            model=self.config.model,
            purpose="human",
            prompt_tokens=replies.prompt_tokens,
            completion_tokens=replies.completion_tokens,
            latency_ms=seconds * 1000,
            text=text,
            reasoning=replies.choices[0].reasoning or None if replies.choices else None,
        )
        self.calls.append(event)
        if self.store is not None:
            await asyncio.to_thread(self.store.append_event, event)


# One client per simulated-user model (and temperature) for the whole process:
# a run asks thousands of questions, one per task would open as many
# connection pools. The client closes its connections when its loop ends.
_SHARED_CLIENTS: dict[tuple[int, float], tuple[ModelConfig, ChatClient]] = {}


def shared_client(config: ModelConfig, temperature: float) -> ChatClient:
    """The one client that every simulated user on ``config`` shares."""
    # The config is kept beside its client, so its id cannot be reused.
    key = (id(config), temperature)
    if key not in _SHARED_CLIENTS:
        _SHARED_CLIENTS[key] = (config, ChatClient(config, temperature=temperature))
    return _SHARED_CLIENTS[key][1]


def _load_prompt(name: str) -> Prompt:
    """The prompt ``prompts/<name>.md`` beside this module, with its front-matter version."""
    return BENCHMARK_PROMPTS.load(name)


def simulated_human_prompt(facts: TaskFacts) -> str:
    """The simulated user's system prompt for the task ``facts`` describe."""
    main, notes = _split_setting_notes(_load_prompt("simulated_human").template)
    note = notes.get(facts.setting, notes["default"])
    unavailable = [
        f"- {name}: {description}" if description else f"- {name}"
        for name, description in _with_descriptions(facts)
    ]
    values = {
        "hidden_facts": "\n".join(f"- {fact}" for fact in facts.hidden_facts) or "- (none)",
        "unavailable": "\n".join(unavailable) or "- (not named)",
    }
    return main.format(
        original_request=facts.original,
        shown_query=facts.query,
        setting_note=note.format(**values).strip(),
    ).strip()


def simulated_human_prompt_version() -> str:
    """The version of the simulated user's prompt, for a run's manifest."""
    return _load_prompt("simulated_human").version


def benchmark_prompt_versions() -> dict[str, str]:
    """The version of every prompt of the benchmark package, for a run's manifest."""
    return BENCHMARK_PROMPTS.versions()


def _split_setting_notes(template: str) -> tuple[str, dict[str, str]]:
    """The main template, and the note for each setting (``## setting: <name>`` sections)."""
    main, *sections = re.split(r"^## setting: *", template, flags=re.MULTILINE)
    notes = {}
    for section in sections:
        name, _, body = section.partition("\n")
        notes[name.strip()] = body.strip()
    return main, notes


def _with_descriptions(facts: TaskFacts) -> list[tuple[str, str]]:
    descriptions = list(facts.unavailable_descriptions)
    descriptions += [""] * (len(facts.unavailable) - len(descriptions))
    return list(zip(facts.unavailable, descriptions, strict=False))


class BatchHumanOptions(NamedTuple):
    """What a batch human's factory may need, the same for every task of a run.

    Attributes:
        config: The simulated user's model; default ``model_config("human")``.
        deadline_seconds: How long the queue waits for a person before it
            replies "I don't know."; None waits forever.
    """

    config: ModelConfig | None = None
    deadline_seconds: float | None = None


# Given what a batch human knows of one task and the run's store, that task's human.
TaskHumanFactory = Callable[[TaskFacts, SessionStore], HumanChannel]
# Prepared once a run (a missing model fails before the first task), then per task.
BatchHumanFactory = Callable[[BatchHumanOptions], TaskHumanFactory]


def _oracle(options: BatchHumanOptions) -> TaskHumanFactory:
    return lambda facts, store: OracleHuman(facts)


def _simulated(options: BatchHumanOptions) -> TaskHumanFactory:
    config = options.config or model_config("human")
    return lambda facts, store: SimulatedHuman(facts, config, store=store)


def _queue(options: BatchHumanOptions) -> TaskHumanFactory:
    # Parked: thousands of sessions may wait at once, holding nothing but the request.
    return lambda facts, store: QueueHuman(
        store, deadline_seconds=options.deadline_seconds, park=True
    )


# Who answers a benchmark task (``aah bench run --human``), by name.
BATCH_HUMANS: dict[BatchHumanName, BatchHumanFactory] = {
    "oracle": _oracle,
    "simulated": _simulated,
    "queue": _queue,
}


def task_human_factory(kind: str, options: BatchHumanOptions) -> TaskHumanFactory:
    """The per-task factory of the batch human called ``kind``.

    Raises:
        AahError: ``kind`` is unknown, or no model is configured for the simulated user.
    """
    return choose(BATCH_HUMANS, kind, "human")(options)


def make_batch_human(
    kind: str,
    facts: TaskFacts,
    store: SessionStore,
    config: ModelConfig | None = None,
    *,
    deadline_seconds: float | None = None,
) -> HumanChannel:
    """The human channel of a batch run for one task.

    Args:
        kind: ``oracle`` (rules over the hidden facts), ``simulated`` (an LLM
            playing the user) or ``queue`` (people answering from the web or
            terminal app): a key of :data:`BATCH_HUMANS`.
        facts: What the oracle or simulated user knows about the task.
        store: The session store (the queue, and the simulated user's call log).
        config: The simulated user's model; default ``model_config("human")``.
        deadline_seconds: How long the queue waits for a person before it
            replies "I don't know."; None waits forever.

    Raises:
        AahError: ``kind`` is unknown, or no model is configured for the simulated user.
    """
    options = BatchHumanOptions(config, deadline_seconds)
    return task_human_factory(kind, options)(facts, store)
