"""The pass verdict: a majority vote of LLM graders over a session (science.md §2).

The grader sees the request, each tool call with its shortened result, the
questions put to a person with the replies, and the final answer, and must
begin each reply with Pass or Fail. V votes (V odd) are sampled at a
temperature above 0 in one request with ``n = V`` where the server honours
``n``, else in V single requests. Unparseable votes are asked for again a
bounded number of times, then dropped; the verdict is the majority of the
valid votes when at least ceil(V/2) of them are valid (a quorum). With fewer,
or on a tie, it is a Fail flagged ``no_quorum`` or ``tie``. Every vote is stored.

Only finished sessions are graded. Skipped sessions (awareness said no) and
sessions with no final answer (in error, cancelled, stopped at the step limit
or cut off by the length limit) are Fail without asking the grader, and those
still running have no verdict yet: none of them gets a grade row, and metrics
read their outcome from the session status. Grade rows thus hold only
judgements the grader really made, which keeps its vote statistics true.

A grade's key hashes the prompt text, grader model, V and prompt version and
is kept in every stored vote: grading again with the same key sends nothing,
so ``grade_run`` resumes where it stopped.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, NamedTuple

from langchain_core.messages import HumanMessage
from rich.progress import Progress

from aah.errors import AahError
from aah.events import excerpt
from aah.llm import ChatClient, ModelConfig, ModelStatusError, parse_verdict_reply
from aah.scoring.grader.case import load_case, load_grader_prompt, render_prompt
from aah.store import (
    STOPPED_STATUSES,
    GradeFlagReason,
    GradeRecord,
    SessionRecord,
    SessionStore,
    StoreFileError,
    Verdict,
)

DEFAULT_VOTES = 5
DEFAULT_TEMPERATURE = 1.0
DEFAULT_VOTE_RETRIES = 2
DEFAULT_CONCURRENCY = 8
# A stored vote keeps the start of the grader's reply, where the verdict is.
RAW_VOTE_CHARS = 2_000

Vote = Literal["pass", "fail"]
GradeOutcome = Literal["graded", "cached", "skipped", "unfinished", "no_answer"]
# Statuses of sessions that ended with no final answer: Fail, never sent.
NO_ANSWER_STATUSES = ("error", "cancelled", *STOPPED_STATUSES)

# How servers that refuse n > 1 word it: OpenAI names the param, llama.cpp
# says "Only one completion choice is allowed".
_N_REJECTED = re.compile(r"['\"`]n['\"`]|\bn\b|\bchoices?\b", re.IGNORECASE)


def parse_vote(text: str, reasoning: str | None = None) -> Vote | None:
    """``pass`` or ``fail`` when the grader's reply begins with that verdict, else None.

    The reply is read by the one reply grammar (``aah.llm.parse_verdict_reply``):
    reasoning, markdown, quotes and a leading label such as ``Verdict:`` are
    peeled first; an echoed ``Pass/Fail`` is no vote, and a reply that only
    mentions the word later, or names both, is None.

    Args:
        text: The reply's content.
        reasoning: Its separate reasoning field, if the server sent one.
    """
    return parse_verdict_reply(text, reasoning)


class MajorityVerdict(NamedTuple):
    """The verdict from the valid votes, and why it is flagged (``no_quorum``, ``tie``)."""

    verdict: Verdict
    flagged: bool
    flag: GradeFlagReason | None = None


def quorum(votes: int) -> int:
    """The valid votes a verdict needs out of ``votes`` asked for: ceil(V/2)."""
    return -(-votes // 2)


def majority_vote(votes: Sequence[Vote | None], asked: int | None = None) -> MajorityVerdict:
    """The majority of the valid votes (None entries are dropped), given a quorum.

    With fewer than ceil(V/2) valid votes (V = ``asked``, default
    ``len(votes)``) the verdict is a Fail flagged ``no_quorum``; on a tie, a
    Fail flagged ``tie`` (science.md §2).
    """
    passes = sum(vote == "pass" for vote in votes)
    fails = sum(vote == "fail" for vote in votes)
    if passes + fails < max(quorum(len(votes) if asked is None else asked), 1):
        return MajorityVerdict("fail", flagged=True, flag="no_quorum")
    if passes == fails:
        return MajorityVerdict("fail", flagged=True, flag="tie")
    return MajorityVerdict("pass" if passes > fails else "fail", flagged=False)


def grade_key(prompt_text: str, model: str, votes: int, prompt_version: str) -> str:
    """The cache key of a grade: same key, same question to the same grader."""
    digest = hashlib.sha256()
    for part in (prompt_version, model, str(votes), prompt_text):
        digest.update(part.encode())
        digest.update(b"\0")  # so that no two part lists join into the same bytes
    return digest.hexdigest()[:32]


def check_vote_settings(votes: int, temperature: float) -> None:
    """Refuse settings that cannot give a majority vote.

    Raises:
        AahError: ``votes`` is not a positive odd number, or ``temperature`` is not above 0.
    """
    if votes < 1 or votes % 2 == 0:
        odd = votes + 1 if votes > 0 else DEFAULT_VOTES
        raise AahError(
            f"--votes must be odd and positive so a majority exists, not {votes}: try {odd}"
        )
    if temperature <= 0:
        raise AahError(
            f"--temperature must be above 0 so that votes can differ, not {temperature}: try 1.0"
        )


class SessionGrade(NamedTuple):
    """How one session was dealt with, and its grade when it has one."""

    session_id: str
    outcome: GradeOutcome
    grade: GradeRecord | None = None


class MajorityVoteGrader:
    """Samples votes from the grader model and stores them as grades.

    An async context manager: it owns one model client for all its requests,
    and remembers for its lifetime whether the server honours ``n``.

    Args:
        config: The grader model (``model_config("grader")``).
        votes: Votes per verdict (odd).
        temperature: Sampling temperature of the votes (above 0).
        vote_retries: Extra rounds asking for votes still missing after
            unparseable replies, before they are dropped.

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
        check_vote_settings(votes, temperature)
        self.config = config
        self.votes = votes
        self.temperature = temperature
        self.vote_retries = vote_retries
        self.prompt = load_grader_prompt()
        self.requests_sent = 0
        # None until a reply shows whether the server honours n.
        self.n_supported: bool | None = None
        self._n_probe = asyncio.Lock()
        self._client = ChatClient(config)

    async def __aenter__(self) -> MajorityVoteGrader:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._client.aclose()

    def cache_key(self, prompt_text: str) -> str:
        """The key a grade of ``prompt_text`` by this grader is stored under."""
        return grade_key(prompt_text, self.config.model, self.votes, self.prompt.version)

    async def grade(self, store: SessionStore, session: SessionRecord) -> SessionGrade:
        """Grade ``session`` unless it is not finished or already graded with the same key.

        Raises:
            AahError: The grader model could not be reached or used.
        """
        if session.status != "finished":
            return SessionGrade(session.id, ungraded_outcome(session.status))
        case = await asyncio.to_thread(load_case, store, session)
        prompt_text = render_prompt(case, self.prompt)
        key = self.cache_key(prompt_text)
        cached = await asyncio.to_thread(find_cached_grade, store, session.id, key)
        if cached is not None:
            return SessionGrade(session.id, "cached", cached)
        records = await self.collect_votes(prompt_text)
        verdict, flagged, flag = majority_vote([record["vote"] for record in records], self.votes)
        payload = [{**record, "grade_key": key} for record in records]
        grade = await asyncio.to_thread(
            store.add_grade,
            session.id,
            self.config.model,
            self.prompt.version,
            payload,
            verdict,
            flagged,
            flag,
        )
        return SessionGrade(session.id, "graded", grade)

    async def collect_votes(self, prompt_text: str) -> list[dict[str, Any]]:
        """Every vote asked for on ``prompt_text``: ``{round, raw, vote}``, invalid ones too.

        Round 0 asks for all ``V`` votes; each later round asks only for the
        votes still missing, up to ``vote_retries`` rounds.
        """
        records: list[dict[str, Any]] = []
        missing = self.votes
        for attempt in range(self.vote_retries + 1):
            texts = await self._sample(prompt_text, missing)
            for text in texts:
                vote = parse_vote(text)
                records.append(
                    {"round": attempt, "raw": excerpt(text, RAW_VOTE_CHARS), "vote": vote}
                )
                missing -= vote is not None
            if missing == 0:
                break
        return records

    async def _sample(self, prompt_text: str, count: int) -> list[str]:
        """``count`` replies: one request with ``n`` where it works, single requests otherwise."""
        texts = await self._sample_with_n(prompt_text, count) if count > 1 else []
        singles = await asyncio.gather(
            *(self._request(prompt_text, 1) for _ in range(count - len(texts)))
        )
        return texts + [replies[0] if replies else "" for replies in singles]

    async def _sample_with_n(self, prompt_text: str, count: int) -> list[str]:
        if self.n_supported is None:
            # One request finds out whether n works; concurrent sessions wait for
            # its answer rather than each sending a request the server may refuse.
            async with self._n_probe:
                if self.n_supported is None:
                    return await self._try_n(prompt_text, count)
        return await self._try_n(prompt_text, count) if self.n_supported else []

    async def _try_n(self, prompt_text: str, count: int) -> list[str]:
        try:
            texts = (await self._request(prompt_text, count))[:count]
        except ModelStatusError as exc:
            if not _rejects_n(exc):
                raise
            self.n_supported = False
            return []
        self.n_supported = len(texts) == count
        return texts

    async def _request(self, prompt_text: str, n: int) -> list[str]:
        """The answers of one request for ``n`` votes, reasoning split off.

        Raises:
            ModelError: the grader model failed (one line, from the client).
        """
        self.requests_sent += 1
        replies = await self._client.reply_texts(
            [HumanMessage(prompt_text)], n=n, temperature=self.temperature
        )
        return replies.texts


def ungraded_outcome(status: str) -> GradeOutcome:
    """What grading does with a session that is not ``finished``: never sent to the grader."""
    if status == "skipped":
        return "skipped"
    return "no_answer" if status in NO_ANSWER_STATUSES else "unfinished"


def _rejects_n(exc: ModelStatusError) -> bool:
    """Whether a failed request for several votes was refused because of ``n``."""
    if exc.status != 400:
        return False
    return exc.param == "n" or bool(_N_REJECTED.search(exc.server_message))


def find_cached_grade(store: SessionStore, session_id: str, key: str) -> GradeRecord | None:
    """The newest grade of the session stored under ``key``, if any."""
    for grade in reversed(store.grades(session_id)):
        if any(isinstance(v, dict) and v.get("grade_key") == key for v in grade.votes):
            return grade
    return None


async def grade_session(
    store: SessionStore,
    session_id: str,
    config: ModelConfig,
    *,
    votes: int = DEFAULT_VOTES,
    temperature: float = DEFAULT_TEMPERATURE,
    vote_retries: int = DEFAULT_VOTE_RETRIES,
) -> SessionGrade:
    """Grade one session (or return its cached grade).

    Raises:
        AahError: No such session, bad vote settings, or the grader model failed.
    """
    session = await asyncio.to_thread(store.get_session, session_id)
    if session is None:
        raise AahError(f"no session {session_id!r}: see `aah sessions list`")
    async with MajorityVoteGrader(
        config, votes=votes, temperature=temperature, vote_retries=vote_retries
    ) as grader:
        return await grader.grade(store, session)


@dataclass
class GradeSummary:
    """What ``grade_run`` did with a run's sessions, and the requests it sent.

    ``graded`` were sent now, ``cached`` had a grade with the same key;
    ``skipped`` (awareness no) and ``no_answer`` (no final answer: ``ended``
    counts them by status) were not sent and count as fails; ``unfinished``
    (still running or waiting) have no verdict yet. ``passed`` and
    ``flagged`` count verdicts, ``no_quorum`` the flagged ones short of a quorum.
    ``failed`` sessions got no verdict (the grader model failed for them):
    ``failures`` counts their errors by message; a rerun grades them.
    """

    sessions: int = 0
    graded: int = 0
    cached: int = 0
    skipped: int = 0
    unfinished: int = 0
    no_answer: int = 0
    passed: int = 0
    flagged: int = 0
    no_quorum: int = 0
    ended: Counter[str] = field(default_factory=Counter)
    requests: int = 0
    failed: int = 0
    failures: Counter[str] = field(default_factory=Counter)

    def fail(self, message: str) -> None:
        """Count one session that got no verdict, and why."""
        self.failed += 1
        self.failures[message] += 1

    def add(self, result: SessionGrade, status: str = "finished") -> None:
        """Count one session's outcome (``status``: the session's, for those with no answer)."""
        # Each outcome name is also the name of the field that counts it.
        setattr(self, result.outcome, getattr(self, result.outcome) + 1)
        if result.outcome == "no_answer":
            self.ended[status] += 1
        if result.grade is not None:
            self.passed += result.grade.verdict == "pass"
            self.flagged += result.grade.flagged
            self.no_quorum += result.grade.flag == "no_quorum"


async def grade_run(
    store: SessionStore,
    run: str,
    config: ModelConfig,
    votes: int = DEFAULT_VOTES,
    concurrency: int = DEFAULT_CONCURRENCY,
    temperature: float = DEFAULT_TEMPERATURE,
    progress: bool = True,
    vote_retries: int = DEFAULT_VOTE_RETRIES,
) -> GradeSummary:
    """Grade every finished session of ``run``, ``concurrency`` at a time.

    Sessions already graded with the same key are not sent again, so an
    interrupted run resumes where it stopped. A session the grader model fails
    on is counted in ``failed`` and the others go on.

    Raises:
        AahError: Unknown run, or bad vote settings.
    """
    check_vote_settings(votes, temperature)
    await asyncio.to_thread(_require_run, store, run)
    sessions = await asyncio.to_thread(store.list_sessions, run)
    summary = GradeSummary(sessions=len(sessions))
    limit = asyncio.Semaphore(max(concurrency, 1))
    async with MajorityVoteGrader(
        config, votes=votes, temperature=temperature, vote_retries=vote_retries
    ) as grader:
        with Progress(disable=not progress, transient=True) as bar:
            bar_task = bar.add_task(f"grading {run}", total=len(sessions))

            async def grade_one(session: SessionRecord) -> None:
                # One session's failure never cancels the others: each verdict
                # is stored as it is made, and a rerun grades the failed ones.
                async with limit:
                    try:
                        summary.add(await grader.grade(store, session), session.status)
                    except StoreFileError:
                        raise  # the store's file failed: every other verdict would too
                    except AahError as exc:
                        summary.fail(str(exc))
                bar.advance(bar_task)

            await asyncio.gather(*(grade_one(session) for session in sessions))
        summary.requests = grader.requests_sent
    return summary


def _require_run(store: SessionStore, run: str) -> None:
    if store.get_run(run) is not None:
        return
    known = [r.name for r in store.runs()]
    if not known:
        raise AahError(f"no run named {run!r}: this database has no runs yet, run a batch first")
    raise AahError(f"no run named {run!r}: pass --run with one of {', '.join(known)}")
