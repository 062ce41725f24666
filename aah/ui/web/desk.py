"""An annotator's moves on the queue: open a question (claiming it), skip, decline, undo.

No Gradio here. A question is claimed only while it is open in the Queue
tab of a live page: opening it claims it for a short lease
(``HEARTBEAT_LEASE_S``), the page's heartbeat (its refresh, every few
seconds) renews the lease at most once per ``renew_every`` seconds, and
the claim ends when the annotator leaves the tab, closes the page (the page
sends a beacon) or the heartbeat stops for about a lease.

A decline or a skip can be undone for ``undo_seconds``. A skip only lets
go of the question, so undoing it claims it again. A decline reaches the
agent only once that time has passed (the claim holds the question
meanwhile), so undoing it costs nothing: the agent never saw it.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Literal

from aah.bounds import MAX_WAIT_SECONDS, OutOfBounds, check_seconds
from aah.store import HumanRequestRecord, SessionStore
from aah.ui.web.queue import OpenedRequest, submit_answer

LEASE_ENV = "AAH_WEB_LEASE_SECONDS"
# Without a heartbeat for about this long, a page's claim ends.
HEARTBEAT_LEASE_S = 60.0
RENEW_EVERY_S = 30.0
# How long a decline or a skip can be undone.
UNDO_SECONDS = 6.0
# How far past the skipped questions ``next_for`` looks for one not skipped.
_LOOKAHEAD = 20

_log = logging.getLogger(__name__)


def lease_from_env() -> float:
    """The claim lease in seconds: ``AAH_WEB_LEASE_SECONDS``, else ``HEARTBEAT_LEASE_S``.

    Raises:
        ValueError: The variable is set to something other than a positive
            number of seconds, at most 30 days.
    """
    raw = os.environ.get(LEASE_ENV, "").strip()
    if not raw:
        return HEARTBEAT_LEASE_S
    try:
        return check_seconds(raw, LEASE_ENV)
    except OutOfBounds:
        raise ValueError(
            f"set {LEASE_ENV} to a positive number of seconds, at most "
            f"{MAX_WAIT_SECONDS:,.0f} (30 days), not {raw[:40]!r}"
        ) from None


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
        until: When it can no longer be undone (the desk's clock).
        decided_at: When the annotator declined (epoch seconds).
    """

    kind: Literal["declined", "skipped"]
    opened: OpenedRequest
    rating: int | None = None
    until: float = 0.0
    decided_at: float = field(default_factory=time.time)
    timer: threading.Timer | None = None


class QueueDesk:
    """Claims, heartbeats, declines and undos for every annotator of one page server.

    Args:
        store: The session store.
        lease_seconds: How long a claim holds a question without a heartbeat.
        clock: Monotonic seconds (a test can move time).
        undo_seconds: How long a decline or a skip can be undone (0: at once final).
    """

    def __init__(
        self,
        store: SessionStore,
        lease_seconds: float = HEARTBEAT_LEASE_S,
        clock: Callable[[], float] = time.monotonic,
        undo_seconds: float = UNDO_SECONDS,
    ) -> None:
        self.store = store
        self.lease_seconds = lease_seconds
        # A third of the lease: two heartbeats may be lost before it runs out.
        self.renew_every = min(RENEW_EVERY_S, lease_seconds / 3)
        self.undo_seconds = undo_seconds
        self._clock = clock
        self._renewed: dict[tuple[str, str], float] = {}
        # Questions each page has left (sent, skipped, declined), and when.
        self._left: dict[tuple[str, str], float] = {}
        self._undo: dict[str, Undoable] = {}
        self._lock = threading.Lock()

    def next_for(self, annotator: str, skipped: Collection[str] = ()) -> Next:
        """Claim the question ``annotator`` should answer now, passing over ``skipped``.

        Their own live claim comes first (a reloaded page gets its question
        back); then the oldest free question. When only skipped questions
        are left, the oldest of them comes back, with a note saying so. A
        question they declined a moment ago (still undoable) never comes back.
        """
        held = self._declining(annotator)
        request = self.store.claim_next(annotator, self.lease_seconds)
        if request is None or (request.id not in skipped and request.id not in held):
            return Next(request)
        if request.id not in held:
            self.store.release_claim(request.id, annotator)
        listing = self.store.queue_listing(annotator, limit=len(skipped) + len(held) + _LOOKAHEAD)
        entries = [entry for entry in listing.entries if entry.id not in held]
        for entry in entries:
            if entry.id in skipped:
                continue
            if self.store.claim_request(entry.id, annotator, self.lease_seconds):
                return Next(self.store.get_human_request(entry.id))
        for entry in entries:
            if self.store.claim_request(entry.id, annotator, self.lease_seconds):
                note = "Only questions you skipped are left: here is the oldest again."
                return Next(self.store.get_human_request(entry.id), note)
        return Next(None)

    def open(self, annotator: str, request_id: str) -> bool:
        """Claim ``request_id`` for ``annotator``; False when it is taken or wants no answer."""
        if request_id in self._declining(annotator):
            return False
        try:
            claimed = self.store.claim_request(request_id, annotator, self.lease_seconds)
        except KeyError:
            return False
        return claimed

    def opened(self, annotator: str, request: HumanRequestRecord) -> OpenedRequest:
        """Note that ``annotator`` now has ``request`` open (for heartbeats), and since when."""
        now = self._clock()
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
        return OpenedRequest(request.id, time.time(), request.question)

    def leave(self, annotator: str, request_id: str, *, release: bool) -> None:
        """``annotator`` is done with ``request_id``; ``release`` frees their claim.

        A question they are declining keeps its claim until the decline is sent.
        """
        with self._lock:
            self._renewed.pop((annotator, request_id), None)
            self._left[(annotator, request_id)] = self._clock()
        if release and request_id not in self._declining(annotator):
            self.store.release_claim(request_id, annotator)

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
        now = self._clock()
        with self._lock:
            if (annotator, request_id) in self._left:
                return True
            renewed = self._renewed.get((annotator, request_id))
            if renewed is not None and now - renewed < self.renew_every:
                return True
            self._renewed[(annotator, request_id)] = now
        try:
            return self.store.claim_request(request_id, annotator, self.lease_seconds)
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
            return self.store.closed_reason(request_id)
        except KeyError:
            return None

    # -- undo -------------------------------------------------------------

    def decline(self, annotator: str, opened: OpenedRequest, rating: int | None) -> None:
        """Decline ``opened`` for ``annotator`` once ``undo_seconds`` have passed.

        The claim stays on the question until then. An earlier decline still
        waiting is sent at once: only the latest can be undone.
        """
        self.settle(annotator)
        with self._lock:
            self._renewed.pop((annotator, opened.request_id), None)
            self._left[(annotator, opened.request_id)] = self._clock()
        if self.undo_seconds <= 0:
            self._send(annotator, Undoable("declined", opened, rating))
            return
        undo = Undoable("declined", opened, rating, self._clock() + self.undo_seconds)
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
                until = self._clock() + self.undo_seconds
                self._undo[annotator] = Undoable("skipped", opened, until=until)

    def undoable(self, annotator: str) -> Undoable | None:
        """The decline or skip ``annotator`` may still undo, if any."""
        with self._lock:
            undo = self._undo.get(annotator)
            return undo if undo is not None and self._clock() < undo.until else None

    def undo(self, annotator: str) -> Undoable | None:
        """Take back ``annotator``'s latest decline or skip; None when too late.

        A declined question is still theirs; a skipped one is claimed again
        (None when someone else has it now).
        """
        with self._lock:
            undo = self._undo.get(annotator)
            if undo is None or self._clock() >= undo.until:
                return None
            del self._undo[annotator]
        if undo.timer is not None:
            undo.timer.cancel()
        if undo.kind == "skipped" and not self.open(annotator, undo.opened.request_id):
            return None
        return undo

    def settle(self, annotator: str | None = None) -> None:
        """Send the declines whose undo time is over (``annotator``'s: at once)."""
        now = self._clock()
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
            submit_answer(
                self.store, annotator, undo.opened, "", undo.rating, True, at=undo.decided_at
            )
        except (LookupError, ValueError) as exc:
            _log.info("a decline of %s was not stored: %s", annotator, exc)

    def _declining(self, annotator: str) -> set[str]:
        with self._lock:
            undo = self._undo.get(annotator)
        return {undo.opened.request_id} if undo is not None and undo.kind == "declined" else set()
