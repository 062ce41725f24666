"""Links that decide: a signed, single-use, expiring link to one item of the queue.

A notification may carry, for a few waiting items, a link that opens a page
for that item alone (``aah.ui.web.decision_page``): a question, a call to
approve or an MCP server's form. The link's token names the item, whom the
link was sent to (a person, or nobody: a group, whose page asks for a
name), a random id and when it expires, signed with HMAC-SHA256. Nothing
else is trusted: the page reads the item's id from the signed token only.

The key is derived from the secret ``aah web`` keeps for its sign-in tokens
(``web-secret`` beside the database, see ``signin_token.app_secret``), under
a label of its own: a sign-in token is no link and a link no sign-in. A link
is used once: its id is recorded in the store's signed-out ids (as
``link:<id>``, kept until it would have expired), so every app on the
database refuses it from then on. Opening a link changes nothing (a chat
service that previews it must not use it up); only a decision uses it.

Every bound is checked before the signature: a token is at most
``MAX_TOKEN_CHARS`` characters of the URL-safe base64 alphabet and one dot,
an item id at most ``MAX_REQUEST_ID_CHARS``. A token is never logged, and
each one issued is known to the scrubber (``aah.secrets``), which redacts it
wherever a line quotes it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from aah.annotators import check_annotator_name
from aah.secrets import remember_secret

if TYPE_CHECKING:  # both need Gradio, which notifications do without
    from aah.ui.web.auth import WebAuth
    from aah.ui.web.signin_token import SignedOutTokens

DECIDE_PATH = "/aah/decide/"
MAX_TOKEN_CHARS = 640
MAX_REQUEST_ID_CHARS = 200
DEFAULT_LINK_MINUTES = 60.0
# The longest a link may live: a day.
MAX_LINK_MINUTES = 24 * 60.0
USED_PREFIX = "link:"
_LABEL = b"aah-decision-link\0"
_ID_BYTES = 12
_SIGNATURE_CHARS = 43  # SHA-256 in unpadded base64
_SHAPE = re.compile(r"[A-Za-z0-9_-]{1,%d}\.[A-Za-z0-9_-]{%d}" % (MAX_TOKEN_CHARS, _SIGNATURE_CHARS))


class LinkClaims(NamedTuple):
    """What a link's token says.

    Attributes:
        request_id: The one item the link opens.
        to: The person the link was sent to; None: a group's link (the page asks a name).
        link_id: The link's random id (what marks it used).
        expires: When it stops working, epoch seconds.
    """

    request_id: str
    to: str | None
    link_id: str
    expires: int


def link_key(folder: Path, auth: WebAuth) -> bytes | None:
    """The key links are signed with, from the web app's kept secret; None if it cannot be kept.

    A folder the app may not write leaves the app with a key of the moment
    (``app._signing_key``): links then stay off, since another process could
    not check them.
    """
    from aah.ui.web.signin_token import app_secret

    try:
        sign_in_key = app_secret(folder, auth)
    except OSError:
        return None
    return hmac.new(sign_in_key, _LABEL, hashlib.sha256).digest()


def read_link(token: str, key: bytes) -> LinkClaims | None:
    """The claims of ``token`` if ``key`` signed it and its shape holds (at any age); else None.

    Never raises, whatever ``token`` holds.
    """
    if not isinstance(token, str) or len(token) > MAX_TOKEN_CHARS:
        return None
    if _SHAPE.fullmatch(token) is None:
        return None
    body, _, signature = token.partition(".")
    if not hmac.compare_digest(signature, _encode(_sign(key, body))):
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    except (ValueError, TypeError):
        return None
    if not isinstance(claims, dict):
        return None
    request_id, to = claims.get("r"), claims.get("t")
    link_id, expires = claims.get("i"), claims.get("e")
    if not isinstance(request_id, str) or not 0 < len(request_id) <= MAX_REQUEST_ID_CHARS:
        return None
    if not isinstance(link_id, str) or not 0 < len(link_id) <= 32:
        return None
    if type(expires) is not int:
        return None
    if to is not None:
        if not isinstance(to, str):
            return None
        try:
            to = check_annotator_name(to)
        except ValueError:
            return None
    return LinkClaims(request_id, to, link_id, expires)


class LinkCheck(NamedTuple):
    """A link's token as the page finds it: its claims, or the one line that says why not."""

    claims: LinkClaims | None
    problem: str = ""


NOT_A_LINK = "This link is not valid (cut short, changed, or not from aah): ask for a new one."
EXPIRED = "This link has expired: open the queue, or ask for a new link."
USED = "This link was already used: each link decides once."


class DecisionLinks:
    """Issues links, checks them, and marks them used.

    Args:
        key: The signing key (``link_key``).
        used: Where used ids are kept for every app on the database (a ``SessionStore``).
        clock: Epoch seconds (a test can move time).
    """

    def __init__(
        self,
        key: bytes,
        used: SignedOutTokens,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._key = key
        self._used = used
        self._clock = clock

    def issue(
        self, request_id: str, *, to: str | None = None, minutes: float = DEFAULT_LINK_MINUTES
    ) -> str:
        """A token for ``request_id``, sent to ``to`` (None: a group), good for ``minutes``.

        Raises:
            ValueError: The item id is empty or too long, the name is not one a
                person may use, or ``minutes`` is not above 0 and at most a day.
        """
        if not 0 < len(request_id) <= MAX_REQUEST_ID_CHARS:
            raise ValueError(f"a link names an item id of 1 to {MAX_REQUEST_ID_CHARS} characters")
        if not 0 < minutes <= MAX_LINK_MINUTES:
            raise ValueError(f"a link lives above 0 and at most {MAX_LINK_MINUTES:g} minutes")
        claims = {
            "r": request_id,
            "t": None if to is None else check_annotator_name(to),
            "i": _encode(secrets.token_bytes(_ID_BYTES)),
            "e": int(self._clock() + minutes * 60),
        }
        body = _encode(json.dumps(claims, separators=(",", ":")).encode())
        token = f"{body}.{_encode(_sign(self._key, body))}"
        if len(token) > MAX_TOKEN_CHARS:
            raise ValueError("the item id and the name make too long a link: shorten the name")
        # A sender's error (Apprise's, on the child's stderr) may quote the message.
        remember_secret(token)
        return token

    def url(
        self,
        base_url: str,
        request_id: str,
        *,
        to: str | None = None,
        minutes: float = DEFAULT_LINK_MINUTES,
    ) -> str:
        """The whole link under ``base_url`` (the page's public address) for ``request_id``.

        Raises:
            ValueError: As ``issue``.
        """
        token = self.issue(request_id, to=to, minutes=minutes)
        return base_url.rstrip("/") + DECIDE_PATH + token

    def check(self, token: str) -> LinkCheck:
        """The claims of ``token`` if it may still decide; else the one line to show."""
        claims = read_link(token, self._key)
        if claims is None:
            return LinkCheck(None, NOT_A_LINK)
        if self.is_used(claims):
            return LinkCheck(None, USED)
        if claims.expires <= self._clock():
            return LinkCheck(None, EXPIRED)
        return LinkCheck(claims)

    def is_used(self, claims: LinkClaims) -> bool:
        """Whether the link of ``claims`` has decided already (on any app of the database)."""
        return self._used.is_signed_out(USED_PREFIX + claims.link_id)

    def mark_used(self, claims: LinkClaims) -> None:
        """Refuse the link of ``claims`` from now on, until it would have expired anyway."""
        now = self._clock()
        self._used.sign_out_token(
            USED_PREFIX + claims.link_id,
            datetime.fromtimestamp(max(now, claims.expires) + 60, UTC),
            now=datetime.fromtimestamp(now, UTC),
        )


def _sign(key: bytes, body: str) -> bytes:
    return hmac.new(key, body.encode(), hashlib.sha256).digest()


def _encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
