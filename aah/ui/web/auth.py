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
"""

from __future__ import annotations

import hmac
import os
import unicodedata
from dataclasses import dataclass

import gradio as gr

TOKEN_ENV = "AAH_WEB_TOKEN"
ADMIN_TOKEN_ENV = "AAH_WEB_ADMIN_TOKEN"
MAX_NAME_CHARS = 40
# The names non-human channels record as ``answered_by``: an annotator using
# one would be counted as a machine (or a machine as them) in agreement.
RESERVED_NAMES = frozenset(
    {"oracle", "simulated", "scripted", "console", "unknown", "deadline-fallback"}
)
_NAME_PUNCTUATION = frozenset(" ._-@")


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

    @classmethod
    def from_env(cls) -> WebAuth:
        """The tokens from ``AAH_WEB_TOKEN`` and ``AAH_WEB_ADMIN_TOKEN`` (empty = unset)."""
        return cls(os.environ.get(TOKEN_ENV) or None, os.environ.get(ADMIN_TOKEN_ENV) or None)

    @property
    def needs_token(self) -> bool:
        """Whether signing in asks for a token."""
        return self.token is not None

    def sign_in(self, name: str, token: str) -> Annotator:
        """The annotator ``name`` signs in as with ``token``.

        Raises:
            gr.Error: The name is not usable or the token is wrong.
        """
        clean = check_name(name)
        is_admin_token = _same(token, self.admin_token)
        if self.token is not None and not (_same(token, self.token) or is_admin_token):
            raise gr.Error("wrong access token: ask the admin for the current AAH_WEB_TOKEN")
        admin = is_admin_token if self.admin_token is not None else self.token is None
        return Annotator(name=clean, admin=admin)


def _same(given: str, expected: str | None) -> bool:
    """Whether ``given`` is ``expected``, in time that does not depend on where they differ."""
    if expected is None:
        return False
    return hmac.compare_digest(given.encode(), expected.encode())


def check_name(name: str) -> str:
    """``name`` trimmed, if it can identify an annotator.

    Raises:
        gr.Error: Empty, too long, reserved, or with characters other than
            letters, digits, spaces and ``. _ - @``.
    """
    clean = " ".join(name.split())
    if not clean:
        raise gr.Error("type your name to sign in: answers are stored under it")
    if len(clean) > MAX_NAME_CHARS:
        raise gr.Error(f"use a name of at most {MAX_NAME_CHARS} characters")
    if not all(_name_char(char) for char in clean):
        raise gr.Error("use only letters, digits, spaces and . _ - @ in your name")
    if clean.lower() in RESERVED_NAMES or clean.lower().startswith("human:"):
        raise gr.Error(f"{clean!r} is reserved for automatic answers: pick another name")
    return clean


def _name_char(char: str) -> bool:
    return char in _NAME_PUNCTUATION or unicodedata.category(char)[0] in ("L", "N")


def require(user: Annotator | None) -> Annotator:
    """The signed-in annotator.

    Raises:
        gr.Error: Nobody is signed in on this page.
    """
    if user is None:
        raise gr.Error("sign in first (top of the page): answers are never anonymous")
    return user


def require_admin(user: Annotator | None) -> Annotator:
    """The signed-in annotator, who must be an admin.

    Raises:
        gr.Error: Nobody is signed in, or they are not an admin.
    """
    signed_in = require(user)
    if not signed_in.admin:
        raise gr.Error(
            f"only an admin may launch runs: sign in with the admin token ({ADMIN_TOKEN_ENV})"
        )
    return signed_in
