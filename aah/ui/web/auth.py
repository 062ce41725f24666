"""Who may use the web app: sign-in with a name, a shared token, an admin token.

The rules, kept simple on purpose:

- ``AAH_WEB_TOKEN`` set: signing in needs that token (or the admin token).
  Unset: a name is enough, which is fine because the app binds to
  127.0.0.1 unless told otherwise.
- ``AAH_WEB_ADMIN_TOKEN`` set: whoever signs in with it is an admin.
  Unset: everyone signed in is an admin when no ``AAH_WEB_TOKEN`` is set
  (a local app), and no one is when it is (launch runs from the command line,
  or set an admin token).

Only admins may launch batch runs. Every page action checks the signed-in
user held in the page's server-side state; nothing is done anonymously.

Sign-in attempts are limited per client address (the connecting one, or
what a proxy in ``AAH_WEB_TRUSTED_PROXIES`` forwards; an IPv6 client's /64):
after
``MAX_FAILED_SIGN_INS`` failures within ``SIGN_IN_WINDOW_S`` seconds, the
address may not try again until the oldest of them is that old, so guessing
a token runs at a few tries a minute.
"""

from __future__ import annotations

import hmac
import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import gradio as gr

from aah.annotators import check_annotator_name
from aah.ui.web.proxies import client_key

TOKEN_ENV = "AAH_WEB_TOKEN"
ADMIN_TOKEN_ENV = "AAH_WEB_ADMIN_TOKEN"
MAX_FAILED_SIGN_INS = 5
SIGN_IN_WINDOW_S = 60.0


def page_error(message: str) -> gr.Error:
    """The one-line error the page shows for a person's mistake (no sign-in, a bad choice).

    The server prints no traceback for it: a client can send these at will.
    """
    return gr.Error(message, print_exception=False)


class SignInLimiter:
    """Failed sign-ins per client address, and whether that address may try again.

    Args:
        limit: Failures allowed within ``window`` seconds.
        window: The sliding window, in seconds.
        clock: Monotonic seconds (a test can move time).
    """

    def __init__(
        self,
        limit: int = MAX_FAILED_SIGN_INS,
        window: float = SIGN_IN_WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit = limit
        self.window = window
        self._clock = clock
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def wait_seconds(self, client: str) -> float:
        """How long ``client`` must wait before its next attempt (0: it may try now)."""
        with self._lock:
            recent = self._recent(client)
            if len(recent) < self.limit:
                return 0.0
            return max(0.0, recent[0] + self.window - self._clock())

    def failed(self, client: str) -> None:
        """Count one failed attempt by ``client``."""
        with self._lock:
            self._recent(client).append(self._clock())

    def _recent(self, client: str) -> deque[float]:
        now = self._clock()
        recent = self._failures.setdefault(client, deque())
        while recent and recent[0] <= now - self.window:
            recent.popleft()
        # Forget idle clients, so a scan of many addresses does not grow the map for good.
        for other in [c for c, times in self._failures.items() if not times and c != client]:
            del self._failures[other]
        return recent


@dataclass(frozen=True)
class Annotator:
    """A signed-in user of the web app."""

    name: str
    admin: bool


@dataclass(frozen=True)
class WebAuth:
    """The tokens the app checks; ``None`` means not required or not set."""

    token: str | None = None
    admin_token: str | None = None
    limiter: SignInLimiter = field(default_factory=SignInLimiter, compare=False, repr=False)

    @classmethod
    def from_env(cls) -> WebAuth:
        """The tokens from ``AAH_WEB_TOKEN`` and ``AAH_WEB_ADMIN_TOKEN`` (empty = unset)."""
        return cls(os.environ.get(TOKEN_ENV) or None, os.environ.get(ADMIN_TOKEN_ENV) or None)

    @property
    def needs_token(self) -> bool:
        """Whether signing in asks for a token."""
        return self.token is not None

    def sign_in(self, name: str, token: str, client: str = "") -> Annotator:
        """The annotator ``name`` signs in as with ``token``, from address ``client``.

        Raises:
            gr.Error: The client gave a wrong token too often lately, the
                name is not usable, or the token is wrong.
        """
        client = client_key(client)
        wait = self.limiter.wait_seconds(client)
        if wait > 0:
            raise page_error(
                f"too many failed sign-ins from this address: try again in {math.ceil(wait)} s"
            )
        clean = check_name(name)
        is_admin_token = _same(token, self.admin_token)
        if self.token is not None and not (_same(token, self.token) or is_admin_token):
            self.limiter.failed(client)
            raise page_error("wrong access token: ask the admin for the current AAH_WEB_TOKEN")
        admin = is_admin_token if self.admin_token is not None else self.token is None
        return Annotator(name=clean, admin=admin)


def _same(given: str, expected: str | None) -> bool:
    """Whether ``given`` is ``expected``, in time that does not depend on where they differ."""
    if expected is None:
        return False
    return hmac.compare_digest(given.encode(), expected.encode())


def check_name(name: str) -> str:
    """``name`` as aah stores it (``annotator_key``), if it can identify an annotator.

    Raises:
        gr.Error: Empty, too long, reserved, mixing scripts, or with
            characters other than letters, digits, spaces and ``. _ - @``
            (``check_annotator_name`` says which, in one line).
    """
    try:
        return check_annotator_name(name)
    except ValueError as refused:
        raise page_error(str(refused)) from None


def require(user: Annotator | None) -> Annotator:
    """The signed-in annotator.

    Raises:
        gr.Error: Nobody is signed in on this page.
    """
    if user is None:
        raise page_error("sign in first (top of the page): answers are never anonymous")
    return user


def require_admin(user: Annotator | None) -> Annotator:
    """The signed-in annotator, who must be an admin.

    Raises:
        gr.Error: Nobody is signed in, or they are not an admin.
    """
    signed_in = require(user)
    if not signed_in.admin:
        raise page_error(
            f"only an admin may launch runs: sign in with the admin token ({ADMIN_TOKEN_ENV})"
        )
    return signed_in
