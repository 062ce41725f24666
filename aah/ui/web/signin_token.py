"""A sign-in that survives a page reload: a signed, expiring token the page keeps.

After a sign-in the server hands the page a token (the annotator's name,
whether they are an admin, a random id, when it was issued and when it
expires), signed with HMAC-SHA256; the page keeps it in the browser's local
storage and shows it back on load, and gets a fresh token of the same id
each time. Nothing else is trusted: a token whose signature, shape or age
is wrong is refused, and the page asks for a sign-in again. Its age is
checked against the lifetime in force (``AAH_WEB_SIGNIN_HOURS``, default
12), so a lifetime shortened since it was issued applies to it too.

Signing out records the token's id in the session store
(``SessionStore.sign_out_token``) until every token of that id would have
expired: each web app on the database refuses them from then on, in any
browser, after a restart too. A token without an id (issued by an older
aah) is refused.

The key is derived from two things, so that each does one job:

- a random secret kept beside the session database (``web-secret``, readable
  by its owner only), so nobody who lacks the machine's files can forge a
  token, and tokens outlive a restart of ``aah web``;
- the access tokens in force (``AAH_WEB_TOKEN``, ``AAH_WEB_ADMIN_TOKEN``), so
  changing either signs every page out.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import os
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple, Protocol

import gradio as gr

from aah.bounds import OutOfBounds
from aah.ui.web.auth import Annotator, WebAuth, check_name

SIGNIN_HOURS_ENV = "AAH_WEB_SIGNIN_HOURS"
TOKEN_LIFETIME_S = 12 * 3600.0
# The longest a sign-in may be kept: a signed-out id is remembered this long.
MAX_SIGNIN_HOURS = 30 * 24
SECRET_FILE = "web-secret"
_SECRET_BYTES = 32
_ID_BYTES = 16
_MAX_ID_CHARS = 64


def lifetime_from_env() -> float:
    """How long a kept sign-in holds, in seconds: ``AAH_WEB_SIGNIN_HOURS``, else 12 hours.

    Raises:
        OutOfBounds: The setting is no number of hours above 0 and at most
            ``MAX_SIGNIN_HOURS`` (30 days).
    """
    raw = os.environ.get(SIGNIN_HOURS_ENV, "").strip()
    if not raw:
        return TOKEN_LIFETIME_S
    try:
        hours = float(raw)
    except ValueError:
        hours = math.nan
    if not math.isfinite(hours) or not 0 < hours <= MAX_SIGNIN_HOURS:
        raise OutOfBounds(
            f"set {SIGNIN_HOURS_ENV} to a number of hours above 0 and at most "
            f"{MAX_SIGNIN_HOURS} (30 days), not {raw[:40]!r}"
        )
    return hours * 3600


class SignedOutTokens(Protocol):
    """Where signed-out ids are kept for every app on a database (a ``SessionStore``)."""

    def sign_out_token(self, token_id: str, until: datetime, *, now: datetime) -> None:
        """Record that ``token_id`` was signed out, until ``until``."""

    def is_signed_out(self, token_id: str) -> bool:
        """Whether ``token_id`` was signed out."""


class _Claims(NamedTuple):
    who: Annotator
    token_id: str


class Renewed(NamedTuple):
    """A kept sign-in that holds: who it signs in, and a fresh token of it for the page."""

    who: Annotator
    token: str


def app_secret(folder: Path, auth: WebAuth) -> bytes:
    """The signing key for ``auth``'s tokens, from the secret kept in ``folder``.

    The secret file is created (mode 0600) on first use.

    Raises:
        OSError: ``folder`` cannot be created or the secret cannot be read or written.
    """
    path = folder / SECRET_FILE
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        # O_EXCL: two apps starting at once must not write two secrets.
        try:
            handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(handle, "w") as out:
                out.write(secrets.token_hex(_SECRET_BYTES))
    stored = path.read_text().strip().encode()
    tokens = "\0".join([auth.token or "", auth.admin_token or ""]).encode()
    return hmac.new(stored, b"aah-web-sign-in\0" + tokens, hashlib.sha256).digest()


class SignInTokens:
    """Issues and checks the page's sign-in tokens, and signs them out.

    Args:
        key: The signing key (``app_secret``).
        lifetime: How long a token is good for, in seconds (``lifetime_from_env``).
        clock: Epoch seconds (a test can move time).
        signed_out: Where signed-out ids are kept; None: in this object only
            (a page whose store is elsewhere, a test).
    """

    def __init__(
        self,
        key: bytes,
        lifetime: float = TOKEN_LIFETIME_S,
        clock: Callable[[], float] = time.time,
        signed_out: SignedOutTokens | None = None,
    ) -> None:
        self._key = key
        self.lifetime = lifetime
        self._clock = clock
        self._signed_out = signed_out or _InMemorySignOuts()

    def issue(self, who: Annotator, *, token_id: str | None = None) -> str:
        """A token that signs ``who`` in until the lifetime is over.

        Args:
            who: The annotator.
            token_id: The id of the sign-in this token renews (None: a new
                sign-in, with a new id); signing out one token of an id
                signs out all.
        """
        issued = int(self._clock())
        claims = {
            "name": who.name,
            "admin": who.admin,
            "id": token_id or _encode(secrets.token_bytes(_ID_BYTES)),
            "issued": issued,
            "expires": int(issued + self.lifetime),
        }
        body = _encode(json.dumps(claims, separators=(",", ":")).encode())
        return f"{body}.{_encode(self._sign(body))}"

    def check(self, token: str) -> Annotator | None:
        """The annotator ``token`` signs in, or None if forged, malformed, expired or signed out."""
        claims = self._claims(token)
        return claims.who if claims is not None else None

    def renew(self, token: str) -> Renewed | None:
        """Who ``token`` signs in and a fresh token of its id; None if ``token`` does not hold."""
        claims = self._claims(token)
        if claims is None:
            return None
        return Renewed(claims.who, self.issue(claims.who, token_id=claims.token_id))

    def sign_out(self, token: str) -> bool:
        """Refuse ``token`` and every token of its sign-in from now on; False if it held none.

        The id is kept until the longest lifetime the setting allows is
        over from now: no token of it issued before can outlive that.
        """
        claims = self._claims(token)
        if claims is None:
            return False
        now = self._clock()
        self._signed_out.sign_out_token(
            claims.token_id,
            datetime.fromtimestamp(now + MAX_SIGNIN_HOURS * 3600, UTC),
            now=datetime.fromtimestamp(now, UTC),
        )
        return True

    def signed_out(self, token: str) -> bool:
        """Whether ``token``'s sign-in was signed out (on any app of the database).

        Its age is not looked at: a page open since it signed in stays
        signed in until it reloads, unless signed out.
        """
        claims = self._read(token)
        return claims is None or self._signed_out.is_signed_out(claims[1])

    def _claims(self, token: str) -> _Claims | None:
        read = self._read(token)
        if read is None:
            return None
        who, token_id, issued, expires = read
        now = self._clock()
        # The lifetime in force now, not only the one the token was issued under.
        if expires <= now or issued + self.lifetime <= now:
            return None
        if self._signed_out.is_signed_out(token_id):
            return None
        return _Claims(who, token_id)

    def _read(self, token: str) -> tuple[Annotator, str, int, int] | None:
        """What a token of ours says (who, id, issued, expires), whatever its age; None: forged."""
        body, dot, signature = token.strip().partition(".")
        expected = _encode(self._sign(body)).encode()
        if not dot or not hmac.compare_digest(signature.encode(errors="replace"), expected):
            return None
        try:
            claims = json.loads(_decode(body))
        except ValueError:
            return None
        if not isinstance(claims, dict):
            return None
        name, admin, token_id = claims.get("name"), claims.get("admin"), claims.get("id")
        issued, expires = claims.get("issued"), claims.get("expires")
        if not isinstance(name, str) or not isinstance(admin, bool):
            return None
        if not isinstance(token_id, str) or not 0 < len(token_id) <= _MAX_ID_CHARS:
            return None
        if type(issued) is not int or type(expires) is not int:
            return None
        try:
            who = Annotator(name=check_name(name), admin=admin)
        except gr.Error:  # a name the rules no longer allow (reserved since, say)
            return None
        return who, token_id, issued, expires

    def _sign(self, body: str) -> bytes:
        return hmac.new(self._key, body.encode(errors="replace"), hashlib.sha256).digest()


class _InMemorySignOuts:
    """Signed-out ids kept in this process only (no store to keep them in)."""

    def __init__(self) -> None:
        self._ids: dict[str, datetime] = {}

    def sign_out_token(self, token_id: str, until: datetime, *, now: datetime) -> None:
        self._ids = {kept: end for kept, end in self._ids.items() if end >= now}
        self._ids[token_id] = until

    def is_signed_out(self, token_id: str) -> bool:
        return token_id in self._ids


def _encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _decode(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError) as exc:
        raise ValueError("not base64") from exc
