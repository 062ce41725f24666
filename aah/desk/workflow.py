"""The annotator's workflow on the queue, for every face: open, renew, leave, answer, decide, undo.

No face here. The web page and the terminal app both go through one
``DeskWorkflow``, so a claim, its renewal and an answer follow one set of
rules whichever face a person uses. Opening a question claims it for a
lease; a face's heartbeat (the page's refresh, the terminal app's timer)
renews the claim at most once per ``renew_every`` seconds; the claim ends
when the person leaves the question, answers it, or the heartbeat stops for
about a lease.

A decline or a skip can be undone for ``undo_seconds``. A skip only lets
go of the question, so undoing it claims it again. A decline reaches the
agent only once that time has passed (the claim holds the question
meanwhile), so undoing it costs nothing: the agent never saw it.

Every reading of the time goes through the workflow's ``Clock`` (the
store's by default), so tests move a ``FakeClock`` instead of sleeping.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from aah.clock import Clock
from aah.desk.elicitation import ElicitationResult, stored_answer
from aah.desk.elicitation_form import ContentInvalid
from aah.desk.requests import question_context
from aah.desk.user_tools import check_user_call
from aah.store import EVERYTHING, HumanRequestRecord, QueueFilter, SessionStore

# Without a heartbeat for about this long, a page's claim ends.
HEARTBEAT_LEASE_S = 60.0
RENEW_EVERY_S = 30.0
# How long a decline or a skip can be undone.
UNDO_SECONDS = 6.0
# How far past the skipped questions ``next_for`` looks for one not skipped.
_LOOKAHEAD = 20
MAX_ANSWER_CHARS = 4_000
# How long a call's follow-up question is looked for, after which it is forgotten.
FOLLOW_UP_KEPT_S = 600.0

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OpenedRequest:
    """The request an annotator has open, when they opened it (epoch seconds), its question."""

    request_id: str
    opened_at: float
    question: str = ""


SentOutcome = Literal["settled", "kept", "late", "closed", "repeat"]


@dataclass(frozen=True)
class Sent:
    """What came of an answer or a decision sent to the store.

    Attributes:
        outcome: ``settled`` (the agent goes on with it), ``kept`` (someone
            answered first; kept for agreement), ``late`` (the agent had
            stopped waiting; kept for agreement), ``closed`` (nobody can use
            it: ``closed`` says why), ``repeat`` (this person had already
            answered; their first answer stands).
        request: The request as it was when the reply was sent.
        closed: Why the request can no longer use a reply (the store's words).
    """

    outcome: SentOutcome
    request: HumanRequestRecord
    closed: str | None = None


@dataclass(frozen=True)
class Next:
    """What ``next_for`` found: the request opened (None: nothing free) and a note."""

    request: HumanRequestRecord | None
    note: str = ""


@dataclass
class Undoable:
    """The latest decline or skip of one annotator, while it can still be undone.

    Attributes:
        kind: ``declined`` or ``skipped``.
        opened: The question as it was open.
        rating: The rating given with a decline.
        until: When it can no longer be undone (the clock's monotonic seconds).
        decided_at: When the annotator declined (epoch seconds).
    """

    kind: Literal["declined", "skipped"]
    opened: OpenedRequest
    rating: int | None = None
    until: float = 0.0
    decided_at: float = 0.0
    timer: threading.Timer | None = None


class DeskWorkflow:
    """Claims, heartbeats, answers, decisions, declines and undos for every annotator of a face.

    One instance serves every person of one face (a page server, a terminal
    app); it holds only what must outlive a request (renewal times, undos).

    Args:
        store: The session store.
        lease_seconds: How long a claim holds a question without a heartbeat.
        clock: Where the time is read; default the store's clock.
        undo_seconds: How long a decline or a skip can be undone (0: at once final).
    """

    def __init__(
        self,
        store: SessionStore,
        lease_seconds: float = HEARTBEAT_LEASE_S,
        clock: Clock | None = None,
        undo_seconds: float = UNDO_SECONDS,
    ) -> None:
        self.store = store
        self.lease_seconds = lease_seconds
        # A third of the lease: two heartbeats may be lost before it runs out.
        self.renew_every = min(RENEW_EVERY_S, lease_seconds / 3)
        self.undo_seconds = undo_seconds
        self.clock = clock or store.clock
        self._renewed: dict[tuple[str, str], float] = {}
        # Questions each page has left (sent, skipped, declined), and when.
        self._left: dict[tuple[str, str], float] = {}
        self._undo: dict[str, Undoable] = {}
        # The question each annotator's last call leads to, and since when (monotonic).
        self._awaited: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def next_for(
        self, annotator: str, skipped: Collection[str] = (), only: QueueFilter = EVERYTHING
    ) -> Next:
        """Claim the question ``annotator`` should answer now, passing over ``skipped``.

        Their own live claim comes first (a reloaded page gets its question
        back); then the first free one in the queue's order (approvals and
        MCP forms, whose agents are blocked, then the nearest deadline, then
        the oldest), among those ``only`` keeps. When only skipped questions
        are left, the first of them comes back, with a note saying so. A
        question they declined a moment ago (still undoable) never comes back.
        """
        followed = self.follow_up(annotator)
        if followed is not None:
            return Next(followed, "The result of your call is back.")
        held = self._declining(annotator)
        request = self.store.humans.claim_next(annotator, self.lease_seconds, only)
        if request is None or (request.id not in skipped and request.id not in held):
            return Next(request)
        if request.id not in held:
            self.store.humans.release_claim(request.id, annotator)
        listing = self.store.humans.queue_listing(
            annotator, limit=len(skipped) + len(held) + _LOOKAHEAD, only=only
        )
        entries = [entry for entry in listing.entries if entry.id not in held]
        for entry in entries:
            if entry.id in skipped:
                continue
            if self.store.humans.claim_request(entry.id, annotator, self.lease_seconds):
                return Next(self.store.humans.get_human_request(entry.id))
        for entry in entries:
            if self.store.humans.claim_request(entry.id, annotator, self.lease_seconds):
                note = "Only questions you skipped are left: here is the first of them again."
                return Next(self.store.humans.get_human_request(entry.id), note)
        return Next(None)

    def open(self, annotator: str, request_id: str) -> bool:
        """Claim ``request_id`` for ``annotator``; False when it is taken or wants no answer."""
        if request_id in self._declining(annotator):
            return False
        try:
            claimed = self.store.humans.claim_request(request_id, annotator, self.lease_seconds)
        except KeyError:
            return False
        return claimed

    def opened(self, annotator: str, request: HumanRequestRecord) -> OpenedRequest:
        """Note that ``annotator`` now has ``request`` open (for heartbeats), and since when."""
        now = self.clock.monotonic()
        with self._lock:
            # Forget pages gone without a word: their leases ran out long ago.
            forget = 2 * self.lease_seconds
            for kept in (self._renewed, self._left):
                for key in [key for key, at in kept.items() if now - at > forget]:
                    del kept[key]
            self._left.pop((annotator, request.id), None)
            # The first heartbeat checks the claim at once (someone coming back
            # to a question long open learns whether it is still theirs).
            self._renewed[(annotator, request.id)] = now - self.renew_every
        return OpenedRequest(request.id, self._epoch(), request.question)

    def leave(self, annotator: str, request_id: str, *, release: bool) -> None:
        """``annotator`` is done with ``request_id``; ``release`` frees their claim.

        A question they are declining keeps its claim until the decline is sent.
        """
        with self._lock:
            self._renewed.pop((annotator, request_id), None)
            self._left[(annotator, request_id)] = self.clock.monotonic()
        if release and request_id not in self._declining(annotator):
            self.store.humans.release_claim(request_id, annotator)

    def beat(self, annotator: str, request_id: str) -> bool:
        """The page of ``annotator`` still shows ``request_id``: renew the claim when due.

        A beat for a question the page has left since (a heartbeat sent
        before a send or a skip, answered after it) renews nothing and
        reports nothing: it must neither claim the question again nor cover
        what the send said with "your hold ran out".

        Returns:
            False when the claim is lost (the lease ran out and someone else
            holds the question, or it wants no answer any more); True otherwise.
        """
        now = self.clock.monotonic()
        with self._lock:
            if (annotator, request_id) in self._left:
                return True
            renewed = self._renewed.get((annotator, request_id))
            if renewed is not None and now - renewed < self.renew_every:
                return True
            self._renewed[(annotator, request_id)] = now
        try:
            return self.store.humans.claim_request(request_id, annotator, self.lease_seconds)
        except KeyError:
            return False

    def closed(self, annotator: str, request_id: str) -> str | None:
        """Why the question the page of ``annotator`` shows can no longer use an answer, or None.

        Its session ended (cancelled, failed) or its deadline's fallback
        answered: said when its claim cannot be renewed, in place of "your
        hold ran out". None for a question the page has left since, whose
        send said what happened.
        """
        with self._lock:
            if (annotator, request_id) in self._left:
                return None
        try:
            return self.store.humans.closed_reason(request_id)
        except KeyError:
            return None

    # -- replies ------------------------------------------------------------

    def answer(
        self,
        annotator: str,
        opened: OpenedRequest,
        answer: str,
        *,
        rating: int | None = None,
        declined: bool = False,
        at: float | None = None,
    ) -> Sent:
        """Store ``annotator``'s answer to ``opened`` (or their decline); their claim ends.

        The rating is optional (stored as NULL when not given), so that an
        answer costs its typing and one keystroke. ``at`` is when they gave
        it (epoch seconds; default now): a decline is sent after its undo time.

        Raises:
            ValueError: The answer is missing or too long, or the rating is
                not 0 or 1; the message says what to do.
            LookupError: The request is gone.
        """
        answer = answer.strip()
        if not declined and not answer:
            raise ValueError("type an answer, or press Decline (Esc) if you cannot answer")
        if len(answer) > MAX_ANSWER_CHARS:
            raise ValueError(f"shorten the answer to at most {MAX_ANSWER_CHARS:,} characters")
        if rating not in (None, 0, 1):
            raise ValueError("rate the question yes (1) or no (2), or leave it unrated")
        request, early = self._before_reply(annotator, opened, "that question is gone")
        if early is not None:
            return early
        settled = self.store.humans.answer_human_request(
            request.id,
            annotator,
            answer,
            declined=declined,
            rating=rating,
            seconds=self._took(opened, at),
        )
        return self._after_reply(request, settled)

    def decide(
        self,
        annotator: str,
        opened: OpenedRequest,
        decision: str,
        *,
        arguments: Mapping[str, Any] | None = None,
        reason: str = "",
        response: str = "",
        at: float | None = None,
    ) -> Sent:
        """Store ``annotator``'s decision on the tool call ``opened`` asks about; their claim ends.

        ``response`` is a respond's text: the call's result, given by the person.

        Raises:
            ValueError: The request is no approval, the decision is unknown,
                or an edit came without arguments (the store's checks).
            LookupError: The request is gone.
        """
        request, early = self._before_reply(annotator, opened, "that call is gone")
        if early is not None:
            return early
        settled = self.store.humans.decide_approval(
            request.id,
            annotator,
            decision,
            arguments=arguments,
            reason=reason,
            response=response,
            seconds=self._took(opened, at),
        )
        return self._after_reply(request, settled)

    def elicited(
        self,
        annotator: str,
        opened: OpenedRequest,
        result: ElicitationResult,
        *,
        at: float | None = None,
    ) -> Sent:
        """Store ``annotator``'s reply to an MCP server's question ``opened``; their claim ends.

        Accepted content is stored as the server receives it; a decline is a
        declined answer, a cancel an answer the server reads as cancel.

        Raises:
            LookupError: The request is gone.
        """
        request, early = self._before_reply(annotator, opened, "that question is gone")
        if early is not None:
            return early
        declined = result.action == "decline"
        settled = self.store.humans.answer_human_request(
            request.id,
            annotator,
            "" if declined else stored_answer(result),
            declined=declined,
            seconds=self._took(opened, at),
        )
        return self._after_reply(request, settled)

    def called(
        self,
        annotator: str,
        opened: OpenedRequest,
        tool: Any,
        values: Any,
        draft: Any = "",
        *,
        at: float | None = None,
    ) -> Sent:
        """Store ``annotator``'s call of one of their own tools as their reply to ``opened``.

        The call is checked against the tools the question's context offers
        (``aah.desk.check_user_call``) before anything is stored; ``draft`` is
        the message typed so far, shown again with the call's result. Their
        claim ends; the asker makes the call and asks again, and
        :meth:`follow_up` (or :meth:`next_for`) opens that question for them.

        Raises:
            ContentInvalid: the question offers no tools, or the call does not
                fit; one line saying what to change, nothing stored.
            LookupError: The request is gone.
        """
        request, early = self._before_reply(annotator, opened, "that question is gone")
        if early is not None:
            return early
        tools = question_context(request.context).user_tools
        if tools is None or request.kind != "question":
            raise ContentInvalid("this question offers no tools of yours to call: answer it")
        call = check_user_call(tools, tool, values, draft)
        settled = self.store.humans.answer_human_request(
            request.id, annotator, "", seconds=self._took(opened, at), user_call=call.stored()
        )
        if settled:
            with self._lock:
                self._awaited[annotator] = (tools.next_request_id(), self.clock.monotonic())
        return self._after_reply(request, settled)

    def follow_up(
        self,
        annotator: str,
        *,
        wait_seconds: float = 0.0,
        poll_seconds: float = 0.1,
        sleep: Callable[[float], None] = time.sleep,
    ) -> HumanRequestRecord | None:
        """The question after ``annotator``'s last call, claimed for them once it is asked.

        Looks for it for up to ``wait_seconds`` (on the workflow's clock,
        ``sleep`` between looks). None when there is none to wait for, it has
        not come yet (:meth:`next_for` offers it first when it has), or
        someone else holds it.
        """
        until = self.clock.monotonic() + wait_seconds
        while True:
            with self._lock:
                awaited = self._awaited.get(annotator)
                now = self.clock.monotonic()
                if awaited is not None and now - awaited[1] > FOLLOW_UP_KEPT_S:
                    del self._awaited[annotator]
                    awaited = None
            if awaited is None:
                return None
            request = self.store.humans.get_human_request(awaited[0])
            if request is not None:
                with self._lock:
                    if self._awaited.get(annotator) == awaited:
                        del self._awaited[annotator]
                if request.status == "pending" and self.open(annotator, request.id):
                    return self.store.humans.get_human_request(request.id)
                return None
            if self.clock.monotonic() >= until:
                return None
            sleep(poll_seconds)

    def _before_reply(
        self, annotator: str, opened: OpenedRequest, gone: str
    ) -> tuple[HumanRequestRecord, Sent | None]:
        request = self.store.humans.get_human_request(opened.request_id)
        if request is None:
            raise LookupError(f"{gone}: refresh the queue")
        closed = self.store.humans.closed_reason(request.id)
        if closed is not None:
            return request, Sent("closed", request, closed)
        if any(
            given.annotator == annotator for given in self.store.humans.human_answers(request.id)
        ):
            return request, Sent("repeat", request)
        return request, None

    def _after_reply(self, request: HumanRequestRecord, settled: bool) -> Sent:
        if settled:
            return Sent("settled", request)
        closed = self.store.humans.closed_reason(request.id)
        if closed is not None:  # it ended between the check before and the reply
            return Sent("closed", request, closed)
        return Sent("late" if request.status == "expired" else "kept", request)

    def _took(self, opened: OpenedRequest, at: float | None) -> float:
        return max(0.0, (self._epoch() if at is None else at) - opened.opened_at)

    # -- undo -------------------------------------------------------------

    def decline(self, annotator: str, opened: OpenedRequest, rating: int | None) -> None:
        """Decline ``opened`` for ``annotator`` once ``undo_seconds`` have passed.

        The claim stays on the question until then. An earlier decline still
        waiting is sent at once: only the latest can be undone.
        """
        self.settle(annotator)
        with self._lock:
            self._renewed.pop((annotator, opened.request_id), None)
            self._left[(annotator, opened.request_id)] = self.clock.monotonic()
        if self.undo_seconds <= 0:
            self._send(annotator, Undoable("declined", opened, rating, decided_at=self._epoch()))
            return
        until = self.clock.monotonic() + self.undo_seconds
        undo = Undoable("declined", opened, rating, until, decided_at=self._epoch())
        undo.timer = threading.Timer(self.undo_seconds, self._send_if_kept, [annotator, undo])
        # Not a daemon: a server stopped within the undo time still sends it.
        undo.timer.daemon = False
        with self._lock:
            self._undo[annotator] = undo
        undo.timer.start()

    def skipped(self, annotator: str, opened: OpenedRequest) -> None:
        """Let go of ``opened`` for ``annotator``; undoable for ``undo_seconds``."""
        self.settle(annotator)
        self.leave(annotator, opened.request_id, release=True)
        if self.undo_seconds > 0:
            with self._lock:
                until = self.clock.monotonic() + self.undo_seconds
                self._undo[annotator] = Undoable(
                    "skipped", opened, until=until, decided_at=self._epoch()
                )

    def undoable(self, annotator: str) -> Undoable | None:
        """The decline or skip ``annotator`` may still undo, if any."""
        with self._lock:
            undo = self._undo.get(annotator)
            return undo if undo is not None and self.clock.monotonic() < undo.until else None

    def undo(self, annotator: str) -> Undoable | None:
        """Take back ``annotator``'s latest decline or skip; None when too late.

        A declined question is still theirs; a skipped one is claimed again
        (None when someone else has it now).
        """
        with self._lock:
            undo = self._undo.get(annotator)
            if undo is None or self.clock.monotonic() >= undo.until:
                return None
            del self._undo[annotator]
        if undo.timer is not None:
            undo.timer.cancel()
        if undo.kind == "skipped" and not self.open(annotator, undo.opened.request_id):
            return None
        return undo

    def settle(self, annotator: str | None = None) -> None:
        """Send the declines whose undo time is over (``annotator``'s: at once)."""
        now = self.clock.monotonic()
        with self._lock:
            due = [
                (who, undo)
                for who, undo in self._undo.items()
                if who == annotator or now >= undo.until
            ]
            for who, _ in due:
                del self._undo[who]
        for who, undo in due:
            if undo.timer is not None:
                undo.timer.cancel()
            if undo.kind == "declined":
                self._send(who, undo)

    def _send_if_kept(self, annotator: str, undo: Undoable) -> None:
        with self._lock:
            if self._undo.get(annotator) is not undo:
                return  # undone, or already sent
            del self._undo[annotator]
        self._send(annotator, undo)

    def _send(self, annotator: str, undo: Undoable) -> None:
        try:
            self.answer(
                annotator, undo.opened, "", rating=undo.rating, declined=True, at=undo.decided_at
            )
        except (LookupError, ValueError) as exc:
            _log.info("a decline of %s was not stored: %s", annotator, exc)

    def _epoch(self) -> float:
        return self.clock.now().timestamp()

    def _declining(self, annotator: str) -> set[str]:
        with self._lock:
            undo = self._undo.get(annotator)
        return {undo.opened.request_id} if undo is not None and undo.kind == "declined" else set()
