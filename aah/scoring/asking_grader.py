"""Whether a question addresses a blocker, as the majority-vote grader reads it (science.md §8).

Where the rules (``aah.scoring.asking.rule_reading``) cannot say, the grader
is asked, with the prompt ``grader/prompts/asking.md`` (versioned): V votes
at a temperature above 0, each beginning with Yes or No; unparseable votes
(a reply that begins otherwise, or whose reason repeats the prompt's rule for
the other answer) are asked for again a bounded number of times, then
dropped; the reading is
the majority of the valid votes given a quorum of ceil(V/2), else not
addressed and flagged ``no_quorum`` (or ``tie``), as the pass verdict's
grader does (§2). Every vote is stored beside the rules' reading
(``SessionStore.ask_readings``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aah.events import excerpt
from aah.llm import ModelConfig, parse_awareness_reply
from aah.runtime.prompts import Prompt, read_prompt
from aah.scoring.asking import (
    AskingTask,
    Blocker,
    rule_reading,
)
from aah.scoring.grader import (
    DEFAULT_TEMPERATURE,
    DEFAULT_VOTE_RETRIES,
    DEFAULT_VOTES,
    RAW_VOTE_CHARS,
    MajorityVoteGrader,
    majority_vote,
)
from aah.store import AskReading, SessionStore

PROMPT_PATH = Path(__file__).resolve().parent / "grader" / "prompts" / "asking.md"
QUESTION_CHARS = 2_000
REQUEST_CHARS = 4_000


def load_asking_prompt() -> Prompt:
    """The prompt in ``grader/prompts/asking.md``, split from its front matter."""
    return read_prompt(PROMPT_PATH)


# Words of the prompt's rule for each answer. A vote whose reason repeats the
# other answer's rule contradicts itself ("Yes: the question asks for
# something else"): a small model copying the prompt, not a vote.
RULE_WORDS = {
    True: "a person answering the question would naturally say",
    False: "the question asks for something else",
}


def parse_asking_vote(text: str, reasoning: str | None = None) -> bool | None:
    """True for a reply beginning with Yes, False for No; None for anything else.

    A reply whose reason repeats the prompt's rule for the other answer is None too.
    """
    parsed = parse_awareness_reply(text, reasoning)
    if parsed is None or parsed[0] not in ("yes", "no"):
        return None
    said = parsed[0] == "yes"
    reason = " ".join(parsed[1].casefold().split())
    return None if RULE_WORDS[not said] in reason else said


def blocker_text(blocker: Blocker) -> str:
    """The blocker as the grader reads it."""
    if blocker.kind == "span":
        return f"these words of the user's full request: {blocker.text}"
    described = f": {blocker.text}" if blocker.text else ""
    return f"the value of the parameter {blocker.name}{described}"


class AskingGrader(MajorityVoteGrader):
    """The majority-vote grader, asked whether a question addresses a blocker.

    An async context manager, as ``MajorityVoteGrader`` is (one client for
    all its requests; whether the server honours ``n`` is found once).

    Raises:
        AahError: ``votes`` is not positive and odd, or ``temperature`` is not above 0.
    """

    def __init__(
        self,
        config: ModelConfig,
        *,
        votes: int = DEFAULT_VOTES,
        temperature: float = DEFAULT_TEMPERATURE,
        vote_retries: int = DEFAULT_VOTE_RETRIES,
    ) -> None:
        super().__init__(config, votes=votes, temperature=temperature, vote_retries=vote_retries)
        self.prompt = load_asking_prompt()

    async def collect_votes(self, prompt_text: str) -> list[dict[str, Any]]:
        """Each vote: ``{round, raw, vote}`` (``pass`` yes, ``fail`` no, None: invalid)."""
        records: list[dict[str, Any]] = []
        missing = self.votes
        for attempt in range(self.vote_retries + 1):
            for text in await self._sample(prompt_text, missing):
                said = parse_asking_vote(text)
                vote = None if said is None else ("pass" if said else "fail")
                records.append(
                    {"round": attempt, "raw": excerpt(text, RAW_VOTE_CHARS), "vote": vote}
                )
                missing -= vote is not None
            if missing == 0:
                break
        return records

    async def read(self, request: str, question: str, blocker: Blocker) -> AskVerdict:
        """The grader's reading of ``question`` against ``blocker``, with its votes."""
        prompt_text = self.prompt.render(
            request=excerpt(request.strip(), REQUEST_CHARS),
            blocker=blocker_text(blocker),
            question=excerpt(question.strip(), QUESTION_CHARS),
        )
        records = await self.collect_votes(prompt_text)
        verdict, flagged, flag = majority_vote([r["vote"] for r in records], self.votes)
        return AskVerdict(None if flag == "no_quorum" else verdict == "pass", records, flag)


class AskVerdict:
    """The grader's reading (None: no quorum), its votes, and why it is flagged."""

    def __init__(self, reading: bool | None, votes: list[dict[str, Any]], flag: str | None):
        self.reading = reading
        self.votes = votes
        self.flag = flag


async def read_tasks(
    store: SessionStore,
    tasks: Sequence[AskingTask],
    requests: Mapping[str, str],
    grader: AskingGrader | None,
) -> dict[str, dict[tuple[int, str], bool | None]]:
    """Read every question of ``tasks`` against every blocker, store both readings.

    The rules read first; the grader is asked only where they cannot say (and
    not at all when ``grader`` is None). A reading already stored by the same
    grader model and prompt version is used again, never asked twice.

    Returns:
        Per session, the grader's readings, for ``run_asking_tasks``.
    """
    stored = {
        (r.session_id, r.question_seq, r.blocker): r
        for r in store.ask_readings.of_sessions([t.session_id for t in tasks])
    }
    found: dict[str, dict[tuple[int, str], bool | None]] = {}
    for task in tasks:
        rows: list[AskReading] = []
        for question in task.questions:
            for blocker in task.blockers:
                ruled = rule_reading(question.text, blocker)
                before = stored.get((task.session_id, question.seq, blocker.key))
                if ruled or grader is None:
                    row = AskReading(
                        session_id=task.session_id,
                        question_seq=question.seq,
                        blocker=blocker.key,
                        rules=ruled,
                    )
                elif (
                    before is not None
                    and before.grader_model == grader.config.model
                    and before.prompt_version == grader.prompt.version
                ):
                    row = before
                else:
                    verdict = await grader.read(
                        requests.get(task.session_id, ""), question.text, blocker
                    )
                    row = AskReading(
                        session_id=task.session_id,
                        question_seq=question.seq,
                        blocker=blocker.key,
                        rules=ruled,
                        grader=verdict.reading,
                        grader_model=grader.config.model,
                        prompt_version=grader.prompt.version,
                        votes=verdict.votes,
                        flag=verdict.flag,
                    )
                rows.append(row)
                found.setdefault(task.session_id, {})[(question.seq, blocker.key)] = row.grader
        store.ask_readings.save(rows)
    return found


async def grade_asking(
    store: SessionStore,
    run: str,
    blockers: Mapping[str, Sequence[Blocker]],
    config: ModelConfig | None,
    *,
    votes: int = DEFAULT_VOTES,
    temperature: float = DEFAULT_TEMPERATURE,
) -> tuple[int, int]:
    """Read every question of ``run`` against its task's blockers and store both readings.

    Args:
        store: The session store.
        run: The run.
        blockers: Per session, its task's blockers (``Benchmark.blockers``).
        config: The grader model; None: the rules' readings only.
        votes: Grader votes per reading (odd).
        temperature: Their sampling temperature (above 0).

    Returns:
        How many (question, blocker) pairs were read, and how many of them the grader read.

    Raises:
        AahError: bad vote settings, or the grader model could not be reached or used.
    """
    from aah.scoring.asking import run_asking_tasks

    tasks = run_asking_tasks(store, run, blockers)
    requests = {s.id: s.query for s in store.list_sessions(run=run)}
    if config is None:
        await read_tasks(store, tasks, requests, None)
    else:
        grader = AskingGrader(config, votes=votes, temperature=temperature)
        async with grader:
            await read_tasks(store, tasks, requests, grader)
    stored = store.ask_readings.of_sessions([t.session_id for t in tasks])
    return len(stored), sum(reading.grader_model is not None for reading in stored)
