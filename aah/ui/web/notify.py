"""Telling people that questions are waiting: Apprise notifications from ``aah web``.

When questions have waited longer than ``AAH_NOTIFY_AFTER`` seconds, one
message goes to every Apprise URL in ``AAH_NOTIFY`` (Slack, e-mail, Matrix,
ntfy, a JSON webhook...), with how many wait and a link to the queue; then
none for ``AAH_NOTIFY_INTERVAL`` seconds, however many more arrive.

The web app sends, not the runners: it watches one database's whole queue
(every runner's questions, whatever process asked them), so one message
covers them all, and it knows the address the link must point to. Runners
are many (shards, several machines), and each would have to agree with the
others on who sends. Apprise is an optional extra (``aah[notify]``),
imported only when ``AAH_NOTIFY`` is set.
"""

from __future__ import annotations

import importlib
import json
import logging
import re
import subprocess
import sys
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from aah.errors import AahError
from aah.secrets import scrub_text
from aah.store import SessionStore
from aah.ui.counts import kinds_text
from aah.ui.web.decision_link import DEFAULT_LINK_MINUTES, DecisionLinks

NOTIFY_EXTRA_MISSING = "AAH_NOTIFY needs the notify extra: pip install 'aah[notify]'"
# How long one message may take to send, all its URLs together.
SEND_TIMEOUT_S = 30.0
_log = logging.getLogger(__name__)
_URL_SEPARATORS = re.compile(r"[\s,]+")
_KIND_WORDS = {"question": "a question", "approval": "a call", "elicitation": "a form"}


@dataclass(frozen=True)
class NotifySettings:
    """Where and when to notify.

    Attributes:
        urls: Apprise URLs, e.g. ``json://127.0.0.1:8000/`` or ``ntfy://topic``.
        queue_url: The link to the web queue put in each message.
        after_seconds: How long a question waits before it is worth a message.
        interval_seconds: The least time between two messages.
        links: How many waiting items get a link that decides them (0: none).
        link_minutes: How long such a link holds.
        link_to: Whom the URLs reach, when one person (their links need no name
            typed); None: a group, whose page asks each time.
    """

    urls: tuple[str, ...]
    queue_url: str
    after_seconds: float = 300.0
    interval_seconds: float = 1800.0
    links: int = 0
    link_minutes: float = DEFAULT_LINK_MINUTES
    link_to: str | None = None

    @property
    def check_seconds(self) -> float:
        """How often the queue is looked at: often enough for ``after_seconds``."""
        return max(0.5, min(30.0, self.after_seconds / 4))


def parse_urls(text: str | None) -> tuple[str, ...]:
    """The Apprise URLs in ``AAH_NOTIFY`` (separated by commas or spaces)."""
    return tuple(url for url in _URL_SEPARATORS.split(text or "") if url)


def load_apprise() -> Any:
    """The ``apprise`` module.

    Raises:
        AahError: It is not installed (the ``notify`` extra).
    """
    try:
        return importlib.import_module("apprise")
    except ImportError:
        raise AahError(NOTIFY_EXTRA_MISSING) from None


def apprise_sender(urls: tuple[str, ...], timeout: float = SEND_TIMEOUT_S) -> IsolatedSender:
    """A sender to every URL of ``urls``, each message sent from a bounded child process.

    The URLs are checked here, once, so that a wrong one stops ``aah web`` at
    start with one line rather than failing every message later.

    Raises:
        AahError: Apprise is missing, or cannot use one of the URLs.
    """
    apprise = load_apprise()
    checker = apprise.Apprise()
    for url in urls:
        if not checker.add(url):
            raise AahError(
                f"AAH_NOTIFY: Apprise cannot use {url!r}: "
                "see https://github.com/caronc/apprise/wiki for URL forms"
            )
    return IsolatedSender(urls, timeout)


class IsolatedSender:
    """Sends each message through Apprise in a child process (``aah.ui.web.notify_send``).

    A notification service is a server aah does not control: its reply may be
    a compressed bomb or may never end. The child caps its own memory and is
    killed after ``timeout`` seconds, so neither reaches the web app.
    """

    def __init__(self, urls: tuple[str, ...], timeout: float = SEND_TIMEOUT_S) -> None:
        self.urls = urls
        self.timeout = timeout

    def notify(self, *, title: str, body: str) -> bool:
        """Send one message to every URL; False (with one logged line) when it did not go."""
        message = json.dumps({"urls": list(self.urls), "title": title, "body": body})
        try:
            child = subprocess.run(
                [sys.executable, "-m", "aah.ui.web.notify_send"],
                input=message,
                capture_output=True,
                text=True,
                timeout=self.timeout,
            )
        except subprocess.TimeoutExpired:
            _log.warning(
                "aah web: the notification took longer than %.0f s and was stopped", self.timeout
            )
            return False
        if child.returncode != 0 and child.stderr.strip():
            why = scrub_text(" ".join(child.stderr.split())[-300:])
            _log.warning("aah web: the notification was not sent: %s", why)
        return child.returncode == 0


class QueueNotifier:
    """Sends one message when questions wait too long, then waits an interval.

    Args:
        store: The session database whose queue is watched.
        settings: Where and when to notify.
        sender: What sends (``notify(title=..., body=...) -> bool``); by
            default an ``apprise.Apprise`` on ``settings.urls``.
        links: Issues the links that decide one item (``settings.links`` of
            them a message); None: messages carry only the queue's link.

    Raises:
        AahError: Apprise is missing or cannot use a URL (when ``sender`` is None).
    """

    def __init__(
        self,
        store: SessionStore,
        settings: NotifySettings,
        sender: Any = None,
        links: DecisionLinks | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self._sender = sender if sender is not None else apprise_sender(settings.urls)
        self._links = links
        self.last_sent: datetime | None = None

    def message(self, now: datetime | None = None) -> tuple[str, str] | None:
        """The title and body to send now, or None when no question has waited long enough."""
        moment = now or datetime.now(UTC)
        cutoff = moment - timedelta(seconds=self.settings.after_seconds)
        # The oldest question says whether any is overdue, and how long it
        # waited; the counts come from indexes: the queue is never listed.
        # (The queue's order puts approvals and forms first: its first item is
        # not the oldest.) What waits is counted by kind, as on every face.
        asked = self.store.humans.oldest_waiting()
        if asked is None or _aware(asked) > cutoff:
            return None
        listing = self.store.humans.queue_listing(limit=0)
        waiting = listing.total
        overdue = self.store.humans.queue_waited(_aware(cutoff))
        if not overdue or not waiting:  # answered in between
            return None
        oldest = int((moment - _aware(asked)).total_seconds() // 60)
        what = kinds_text(listing.by_kind)
        verb = "waits" if waiting == 1 else "wait"
        title = f"aah: {what} {verb} for an answer"
        body = (
            f"{what} {verb} for a person; {overdue} for more than "
            f"{_span(self.settings.after_seconds)} (the oldest {oldest} min). "
            f"Answer at {self.settings.queue_url}"
        )
        return title, body + self._decision_links()

    def _decision_links(self) -> str:
        """A line per waiting item (the first ``settings.links``), each with a link deciding it."""
        if self._links is None or self.settings.links <= 0:
            return ""
        entries = self.store.humans.queue_listing(limit=self.settings.links).entries
        minutes = self.settings.link_minutes
        lines = [f"\n\nDecide one here (each link works once, for {_span(minutes * 60)}):"]
        for entry in entries:
            url = self._links.url(
                self.settings.queue_url, entry.id, to=self.settings.link_to, minutes=minutes
            )
            asked = " ".join(entry.question.split())
            asked = asked if len(asked) <= 80 else asked[:79] + "…"
            lines.append(f"- {_KIND_WORDS.get(entry.kind, 'an item')} \u201c{asked}\u201d: {url}")
        return "\n".join(lines) if len(lines) > 1 else ""

    def check(self, now: datetime | None = None) -> bool:
        """Send a message if questions wait too long and the interval has passed.

        Returns:
            True when a message was sent.
        """
        moment = now or datetime.now(UTC)
        interval = timedelta(seconds=self.settings.interval_seconds)
        if self.last_sent is not None and moment - self.last_sent < interval:
            return False
        found = self.message(moment)
        if found is None:
            return False
        title, body = found
        if not self._sender.notify(title=title, body=body):
            _log.warning("aah web: could not send the waiting-questions notification")
            return False
        self.last_sent = moment
        return True

    def watch(self, stop: threading.Event) -> None:
        """Check every ``check_seconds`` until ``stop`` is set (a thread's target)."""
        while not stop.wait(self.settings.check_seconds):
            try:
                self.check()
            except Exception as exc:  # a full disk or a locked file must not stop the web app
                _log.warning("aah web: notification check failed: %s", exc)


def start_notifier(
    store: SessionStore, settings: NotifySettings, links: DecisionLinks | None = None
) -> threading.Event:
    """Watch the queue in a daemon thread; set the returned event to stop it.

    Args:
        store: The session database whose queue is watched.
        settings: Where and when to notify.
        links: Issues links that decide one item (None: no such links).

    Raises:
        AahError: Apprise is missing or cannot use a URL.
    """
    notifier = QueueNotifier(store, settings, links=links)
    stop = threading.Event()
    threading.Thread(target=notifier.watch, args=(stop,), name="aah-notify", daemon=True).start()
    return stop


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _span(seconds: float) -> str:
    whole = int(seconds)
    if whole < 120:
        return f"{whole} s"
    if whole < 7200:
        return f"{whole // 60} min"
    return f"{whole // 3600} h"
