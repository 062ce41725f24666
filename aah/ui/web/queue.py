"""The question queue as the web page sees it: what waits, what to show, how to answer.

No Gradio here: these functions take the store and the signed-in annotator
and return plain values, so the page module stays a thin layer of wiring.
A request is listed while it still wants this annotator's answer
(``SessionStore.humans.queue_listing``): pending ones, and, when a request asks for
``k`` annotators, answered ones until ``k`` people have answered; the table
also shows the questions others hold now, as taken by them.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from aah.desk import Sent, question_context
from aah.scoring import SETTINGS
from aah.store import (
    AnnotatorStats,
    AnsweredEntry,
    HumanRequestRecord,
    QueueEntry,
    QueueFilter,
    RequestKind,
    SessionStore,
)
from aah.ui.briefing import Briefing, briefing, deadline_note, word_diff_html
from aah.ui.counts import kind_word, kinds_text, only_questions
from aah.ui.guidelines import guidelines_html
from aah.ui.web.answered import sent_text
from aah.ui.web.format import clip, conversation_text, plain, waited
from aah.ui.web.session_view import session_facts, used_tools_html

QUEUE_HEADERS = ["waited", "task", "setting", "request", "kind", "question", "status", "fallback"]
ANSWERED_HEADERS = ["question", "your answer", "request", "session"]
_LABEL_CHARS = 90
_REQUEST_CHARS = 48
# How ``QueueApprover`` words an approval request's question.
APPROVAL_PREFIX = "Approve this call? "


@dataclass(frozen=True)
class RequestView:
    """What the answer form shows for one request (all plain text but ``meta``).

    Attributes:
        meta: One Markdown line about the request, its text made inert.
        persona: The user's full original request, when the task has one.
        query: The request the agent was given.
        conversation: The session so far, one ``role: text`` paragraph a step.
        question: The agent's question.
        briefing: HTML, every text in it escaped: what the agent was given
            (its tools, what was taken away from it).
        request: HTML, every text in it escaped: what the annotator may do,
            and the user's request with the words the agent did not get
            marked (or the request as given, when there is no fuller one).
    """

    meta: str
    persona: str
    query: str
    conversation: str
    question: str
    briefing: str = ""
    request: str = ""


# The queue's filters as the page offers them: (label, value).
KIND_CHOICES = [
    ("every kind", "all"),
    ("approvals and forms (an agent is blocked)", "blocking"),
    ("approvals", "approval"),
    ("forms (MCP servers')", "elicitation"),
    ("questions", "question"),
]
_KINDS_KEPT: dict[str, frozenset[RequestKind]] = {
    "blocking": frozenset({"approval", "elicitation"}),
    "approval": frozenset({"approval"}),
    "elicitation": frozenset({"elicitation"}),
    "question": frozenset({"question"}),
}
SETTING_CHOICES = [("any setting", "any"), *((name, name) for name in SETTINGS)]
AGE_CHOICES = [
    ("any time", "any"),
    ("over 1 min", "over:60"),
    ("over 10 min", "over:600"),
    ("over 1 h", "over:3600"),
    ("under 10 min", "under:600"),
]
_AGES = {value: value.partition(":") for _, value in AGE_CHOICES if ":" in value}
# A run's name typed in the filter is cut here (names are short; a page may send anything).
_RUN_CHARS = 200


def queue_filter(
    kind: str | None, run: str | None, setting: str | None, age: str | None
) -> QueueFilter:
    """The store's filter for the page's controls; a value the page does not offer keeps all."""
    name = " ".join((run or "").split())[:_RUN_CHARS]
    older = newer = None
    if age in _AGES:
        side, _, seconds = _AGES[age]
        older, newer = (float(seconds), None) if side == "over" else (None, float(seconds))
    return QueueFilter(
        kinds=_KINDS_KEPT.get(kind or "", frozenset()),
        run=name or None,
        setting=setting if setting in SETTINGS else None,
        older_than=older,
        newer_than=newer,
    )


def queue_rows(
    entries: list[QueueEntry], annotator: str, now: datetime | None = None
) -> list[list[str]]:
    """One row per entry: waited, task, setting, request, kind, question, status, fallback.

    The kind is ``question`` or ``approval`` (a tool call to approve, edit or
    reject); an approval's "question" is the call.
    """
    return [
        [
            waited(entry.created, now),
            entry.task_id or "-",
            entry.setting or "interactive",
            clip(" ".join(entry.request.split()), _REQUEST_CHARS) or "-",
            kind_word(entry.kind),
            clip(_asked(entry), _LABEL_CHARS),
            holder_note(entry, annotator),
            deadline_note(entry, now) or "none: waits for a person",
        ]
        for entry in entries
    ]


def rows_html(headers: list[str], rows: list[list[str]], empty: str, label: str = "") -> str:
    """A table of plain-text ``rows`` as HTML, every cell escaped.

    Each cell carries its header (``data-label``), so that a narrow screen
    can show a row as a card of labelled lines instead of clipping columns.
    """
    if not rows:
        return f'<p class="aah-empty">{html.escape(empty)}</p>'
    head = "".join(f'<th scope="col">{html.escape(name)}</th>' for name in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td data-label="{html.escape(name, quote=True)}">{html.escape(cell)}</td>'
            for name, cell in zip(headers, row, strict=True)
        )
        + "</tr>"
        for row in rows
    )
    caption = f"<caption>{html.escape(label)}</caption>" if label else ""
    return (
        f'<table class="aah-rows">{caption}<thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


def entry_label(entry: QueueEntry) -> str:
    """One line that tells ``entry`` apart from others asking the same: task, setting, request."""
    request = clip(" ".join(entry.request.split()), _REQUEST_CHARS)
    where = f"task {entry.task_id}" if entry.task_id else "no task"
    said = f" · “{request}”" if request else ""
    marker = "approval: " if entry.kind == "approval" else ""
    return f"[{where} · {entry.setting or 'interactive'}{said}] {marker}{clip(_asked(entry), 60)}"


def _asked(entry: QueueEntry) -> str:
    # An approval's question reads "Approve this call? POST ...": the kind says the first half.
    return (
        entry.question.removeprefix(APPROVAL_PREFIX) if entry.kind == "approval" else entry.question
    )


def holder_note(entry: QueueEntry, annotator: str) -> str:
    """Who has ``entry`` open: ``you``, ``taken by NAME``, or what it waits for."""
    if annotator in entry.claimed_by:
        return "open: yours"
    others = [name for name in entry.claimed_by if name != annotator]
    if others and len(others) + entry.answers >= entry.k:
        return f"taken by {', '.join(others)}"
    if entry.status == "pending":
        return "agent waiting"
    return f"answered; {entry.k} annotators wanted"


def queue_choices(entries: list[QueueEntry], annotator: str) -> list[tuple[str, str]]:
    """Picker choices ``(label, request id)`` for the entries ``annotator`` may open.

    The label leaves out the wait (the table shows it), so that it stays the
    same from one refresh to the next.
    """
    return [
        (entry_label(entry), entry.id)
        for entry in entries
        if not holder_note(entry, annotator).startswith("taken by")
    ]


def queue_summary(
    waiting: int,
    shown: list[QueueEntry],
    now: datetime | None = None,
    held: int = 0,
    by_kind: Mapping[RequestKind, int] | None = None,
) -> str:
    """One Markdown line: what waits for this annotator, by kind, and the longest wait listed.

    ``held`` counts the questions others hold now, which wait too but not for
    them; ``by_kind`` (``QueueListing.by_kind``) splits ``waiting`` by kind
    ("3 approvals, 12 questions, 1 form"); without it all are questions.
    """
    others = f" {held:,} more {'is' if held == 1 else 'are'} held by others." if held else ""
    if not waiting:
        return f"Nothing waits for you.{others} The list refreshes by itself."
    oldest = (
        waited(min(entry.created for entry in shown), now or datetime.now(UTC)) if shown else "?"
    )
    what = kinds_text(by_kind if by_kind else {"question": waiting})
    verb = "waits" if waiting == 1 else "wait"
    more = f" (the first {len(shown)} are listed)" if len(shown) < waiting else ""
    return f"**{what} {verb}** for you{more}; the oldest has waited {oldest}.{others}"


def counter_line(stats: AnnotatorStats) -> str:
    """The annotator's counter in one Markdown line; questions others hold are counted apart.

    What waits is split by kind when any is no question ("**20** waiting:
    3 approvals, 16 questions, 1 form").
    """
    median = "-" if stats.median_seconds is None else f"{stats.median_seconds:.0f} s"
    held = f", **{stats.held_by_others:,}** held by others" if stats.held_by_others else ""
    kinds = (
        "" if only_questions(stats.waiting_by_kind) else f" ({kinds_text(stats.waiting_by_kind)})"
    )
    return (
        f"**{stats.answered_today:,}** answered today · **{stats.waiting_now:,}** waiting{kinds}"
        f"{held} · **{median}** median per answer"
    )


def request_view(store: SessionStore, request: HumanRequestRecord) -> RequestView:
    """What the form shows for ``request``."""
    context = question_context(request.context)
    query = context.query
    if not query:  # an interactive session's request holds no copy of its query
        session = store.get_session(request.session_id)
        query = session.query if session else ""
    # A call or an MCP form may carry no context of its own: the session's is read.
    facts = session_facts(store, request) if request.kind != "question" else None
    task = context.task_id or (facts.task if facts else "")
    run = context.run or (facts.run if facts else "")
    where = [f"setting **{plain(context.setting or 'interactive')}**"]
    if facts is None or task or run:
        where += [f"task {plain(task or '-')}", f"run {plain(run or '-')}"]
    if facts is not None and facts.asker:
        where.append(f"asked by MCP server **{plain(facts.asker)}**")
    where.append(f"waited {waited(request.created)}")
    fallback = deadline_note(request)
    if fallback:
        where.append(f"fallback {plain(fallback)}")
    if request.status != "pending":
        where.append("already answered: yours is kept for agreement")
    brief = briefing(context, query)
    return RequestView(
        meta=" · ".join(where),
        persona=context.original_query,
        query=query,
        conversation=conversation_text(
            context.conversation or (facts.conversation if facts else [])
        ),
        question=request.question,
        # A person playing a user with tools of their own sees those, under the answer box.
        briefing=""
        if context.user_tools is not None
        else used_tools_html(facts)
        if facts is not None and not brief.tools
        else briefing_html(brief),
        # The run's guidelines (``--guidelines``) beside every item of that run.
        request=request_html(brief) + guidelines_html(store.team.guidelines_for(request.id)),
    )


def request_html(brief: Briefing) -> str:
    """The rule and the user's request as HTML, the words the agent was not told marked.

    Every text from the request's context is escaped here, and the diff
    escapes each word (``word_diff_html``).
    """
    parts = []
    if brief.rule:
        parts.append(f'<p class="aah-rule"><b>You may:</b> {html.escape(brief.rule)}</p>')
    if brief.full_request:
        diff = word_diff_html(brief.full_request, brief.given_request)
        parts.append(
            "<p><b>The user's request</b> (marked: what the agent was not told; struck:"
            f' what it got instead):</p><p class="aah-request-diff">{diff}</p>'
        )
    elif brief.given_request:
        given = html.escape(brief.given_request)
        parts.append(f'<p><b>The user\'s request:</b></p><p class="aah-request-diff">{given}</p>')
    return "\n".join(parts)


def briefing_html(brief: Briefing) -> str:
    """What the agent was given as HTML: its tools, and what was taken away from it.

    Every text from the request's context is escaped here.
    """
    tools = brief.tools or ["(no tools but ask_human)"]
    items = "".join(f"<li><code>{html.escape(line)}</code></li>" for line in tools)
    parts = [f'<p><b>The agent was given:</b></p><ul class="aah-tools">{items}</ul>']
    if brief.unavailable:
        items = "".join(f"<li>{html.escape(line)}</li>" for line in brief.unavailable)
        parts.append(f'<p><b>Taken away from it:</b></p><ul class="aah-missing">{items}</ul>')
    return "\n".join(parts)


def answer_note(sent: Sent, declined: bool = False) -> str:
    """What came of an answer (or a decline), in one Markdown line."""
    verb = "Declined" if declined else "Answered"
    if sent.outcome == "closed":
        return f"{plain(sent.closed or 'this question is closed')}: your answer was not used."
    if sent.outcome == "repeat":
        return "You already answered this question; your first answer stands."
    if sent.outcome == "settled":
        return f"{verb} **{plain(clip(sent.request.question, 60))}**: the agent goes on with it."
    if sent.outcome == "late":
        return f"{verb}: the agent had stopped waiting; your answer is kept for agreement."
    return f"{verb}: someone answered first; your answer is kept for agreement."


def answered_rows(answers: list[AnsweredEntry]) -> list[list[str]]:
    """The annotator's latest answers, newest first, with each request's and session's status."""
    return [
        [
            clip(given.question, 60),
            sent_text(given),  # a decision with its arguments or reason; a form's values
            given.request_status,
            given.session_status,
        ]
        for given in answers
    ]
