"""What counts as a secret, and the one scrubber every disk write and console line uses.

A secret is found three ways:

- By value: the keys aah is configured with (any environment variable with a
  credential-like name: ``AAH_API_KEY``, ``AAH_HUMAN_API_KEY``,
  ``AAH_GRADER_API_KEY``, ``AAH_JUDGE_API_KEY``, ``OPENAI_API_KEY``,
  ``AAH_WEB_TOKEN``...), passwords inside ``*_URL`` settings, and any value
  once seen under a credential-like name (a tool argument ``api_key``, a
  header ``X-Auth-Token``). Each is matched raw, URL-encoded, JSON-escaped and
  base64-encoded, so an endpoint that echoes the key in an error page, a
  redirect URL or a ``Basic`` header is scrubbed too. Escaped text stays
  valid: a JSON document aah prints is still one after the scrubber.
- By shape: OpenAI- and Hugging Face-style keys (``sk-...``, ``sk-proj-...``,
  ``hf_...``), GitHub, GitLab, Slack, AWS, Google and Stripe keys (``ghp_...``,
  ``github_pat_...``, ``glpat-...``, ``xoxb-...``, ``AKIA...``, ``AIza...``,
  ``sk_live_...``), ``Bearer``/``Basic``/``Token`` credentials (also ``Bearer+TOKEN``
  and ``Bearer%20TOKEN`` in URLs), and credential-named query values
  (``?api_key=...``) or JSON members (``"token": "..."``) inside any text.
- By name: values under credential-like keys (``api_key``, ``token``,
  ``authorization``, ``password``...) at any depth of a mapping.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TextIO
from urllib.parse import quote, quote_plus, unquote, urlsplit

from aah.storable import storable_text

REDACTED = "[redacted]"
# Key names whose values are credentials, after lowercasing and turning
# "-" and " " into "_". "token" must end the name: "max_tokens" is a count.
# Bare "key", "appid" and "auth" are how many public APIs name their key.
_SECRET_KEY = re.compile(
    r"api_?key|secret|passw(or)?d|authorization|credential|private_?key|access_?key"
    r"|cookie|(^|_)token$|^(key|app_?id|app_?key|auth)$|_auth$|^auth_"
)
# Values shorter than this are never matched by value: scrubbing every "abc"
# in every text would mangle it, and so short a value protects nothing.
MIN_SECRET_LENGTH = 6
# Values seen under credential names are remembered up to this many (oldest
# forgotten first), so a long run's memory stays bounded.
_MAX_REMEMBERED = 4096

# A credential after its scheme word may already be cut in part (a known
# key inside a Basic pair), so "[redacted]" counts as part of it.
_CUT = re.escape(REDACTED)
_TOKEN = rf"(?:[A-Za-z0-9._~+/\-]|{_CUT})"
_URL_TOKEN = rf"(?:[A-Za-z0-9._~/\-]|{_CUT})"
# At least 8 (16) characters and a digit, "+", "/" or "=" among them: a
# credential, not the next word of a sentence ("Basic authentication").
_LONG = r"(?=\S{8})(?=[A-Za-z._~\-]*[0-9+/=%\[])"
_LONGER = r"(?=\S{16})(?=[A-Za-z._~\-]*[0-9+/=%\[])"
_KEY_SHAPES = re.compile(
    r"\b(?:sk-(?:proj-|ant-|svcacct-)?[A-Za-z0-9_\-]{16,}|hf_[A-Za-z0-9]{16,})"
    # Keys MCP servers are started with: GitHub, GitLab, Slack, AWS, Google, Stripe.
    r"|\b(?:gh[opusr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_\-]{20,})"
    r"|\b(?:xox[abposr]-[A-Za-z0-9\-]{10,}|(?:AKIA|ASIA)[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{35})"
    r"|\b(?:[sr]k_(?:live|test)_[A-Za-z0-9]{16,})"
    # The scheme word stays, so "Bearer [redacted]" still says what was there.
    rf"|(?<=[Bb]earer ){_LONG}{_TOKEN}+=*"
    rf"|(?<=[Bb]asic ){_LONG}{_TOKEN}+=*"
    rf"|(?<=[Tt]oken ){_LONGER}{_TOKEN}+=*"
    rf"|(?<=[Bb]earer\+){_LONG}{_URL_TOKEN}+(?:=|%3[Dd])*"
    rf"|(?<=[Bb]earer%20){_LONG}{_URL_TOKEN}+(?:=|%3[Dd])*"
    rf"|(?<=[Bb]asic\+){_LONG}{_URL_TOKEN}+(?:=|%3[Dd])*"
    rf"|(?<=[Bb]asic%20){_LONG}{_URL_TOKEN}+(?:=|%3[Dd])*"
)
# name=value in a query string or a form body; the name decides. A backslash
# ends the value: in escaped text (a JSON document, a repr) it belongs to the
# escape that follows, and cutting it would unescape a quote and break the text.
_NAMED_QUERY_VALUE = re.compile(
    r"(?<![A-Za-z0-9_.\-])([A-Za-z][A-Za-z0-9_.\-]*)=([^&\s\"'#<>;,\\]+)"
)
# "name": "value" in JSON text (an error body that repeats the request).
_NAMED_JSON_VALUE = re.compile(r"\"([A-Za-z][A-Za-z0-9_\- ]*)\"\s*:\s*\"((?:[^\"\\]|\\.)+)\"")
# Cheap substring tests that decide whether a text can hold a shaped secret.
_SHAPE_HINTS = (
    *("sk-", "hf_", "earer", "asic", "oken ", "=", '":'),
    *("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xox"),
    *("AKIA", "ASIA", "AIza", "k_live_", "k_test_"),
)
_URL_NAME = re.compile(r"(^|_)(URL|ENDPOINT|DSN|PROXY)$", re.IGNORECASE)


@functools.lru_cache(maxsize=4096)
def is_secret_name(key: str) -> bool:
    """Whether values named ``key`` are credentials (any case, ``-`` or ``_``)."""
    # Cached: every key of every stored dict is asked, and the names repeat.
    return bool(_SECRET_KEY.search(key.lower().replace("-", "_").replace(" ", "_")))


def encoded_forms(value: str) -> list[str]:
    """``value`` as it may be written: raw, URL-encoded, JSON-escaped, and base64 at any alignment.

    Base64 text of a value embedded in a longer string (``user:key`` in a
    ``Basic`` header) depends on where the value starts, so the part of each
    of the three alignments that only the value decides is listed.
    """
    forms = {value, quote(value, safe=""), quote_plus(value), quote(value)}
    # Inside a JSON document (a report, an error body): its escaped forms.
    forms |= {json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
    data = value.encode()
    for pad in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(b"\0" * pad + data).decode()
            first = 1 if pad else 0
            last = (pad + len(data)) // 3
            if last - first >= 2:
                forms.add(text[4 * first : 4 * last])
    return sorted((f for f in forms if len(f) >= MIN_SECRET_LENGTH), key=len, reverse=True)


class _KnownSecrets:
    """The secret values aah knows, from the environment and from what it saw."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._remembered: dict[str, None] = {}
        self._env_names: tuple[str, ...] = ()
        self._env_key: tuple[Any, ...] = ()
        # The forms, their pattern, and the texts already scrubbed against
        # exactly these forms, replaced as one: a new memo comes with every
        # rebuild, so each text is scrubbed again once a secret is added.
        self._state: tuple[tuple[str, ...], re.Pattern[str] | None, dict[str, str]] = ((), None, {})
        # No pattern is a valid state (no secret configured), so staleness
        # needs its own flag: scrubbing runs on every write.
        self._stale = True

    def remember(self, value: str) -> None:
        """Match ``value`` (and its encodings) from now on."""
        if len(value) < MIN_SECRET_LENGTH or value in self._remembered:
            return
        with self._lock:
            self._remembered[value] = None
            while len(self._remembered) > _MAX_REMEMBERED:
                del self._remembered[next(iter(self._remembered))]
            self._stale = True

    def forms(self) -> tuple[tuple[str, ...], re.Pattern[str] | None]:
        """Every form of every known value, longest first, and one pattern of them."""
        forms, pattern, _ = self.current()
        return forms, pattern

    def current(self) -> tuple[tuple[str, ...], re.Pattern[str] | None, dict[str, str]]:
        """`forms`, and the memo of texts already scrubbed against them."""
        # The names as stored (a tuple of the raw keys: under a microsecond)
        # and the known values: any variable added, removed or renamed, even
        # one added as another goes, sends us back to scan the environment.
        key = (_environ_names(), *(os.environ.get(name) for name in self._env_names))
        if key != self._env_key or self._stale:
            with self._lock:
                self._rebuild()
        return self._state

    @property
    def stale(self) -> bool:
        """Whether a value was remembered since the forms were last built."""
        return self._stale

    def _rebuild(self) -> None:
        names = sorted(n for n in os.environ if is_secret_name(n) or _URL_NAME.search(n))
        values = [*_secret_env_values(names), *self._remembered]
        forms = {form for value in values for form in encoded_forms(value)}
        ordered = tuple(sorted(forms, key=len, reverse=True))
        pattern = re.compile("|".join(map(re.escape, ordered))) if forms else None
        self._state = (ordered, pattern, {})
        self._env_names = tuple(names)
        self._env_key = (_environ_names(), *(os.environ.get(name) for name in names))
        self._stale = False


def _environ_names() -> tuple[Any, ...]:
    """The environment's variable names, cheaply: CPython's raw keys where it has them."""
    raw = getattr(os.environ, "_data", None)
    return tuple(raw) if isinstance(raw, dict) else tuple(os.environ)


def _secret_env_values(names: Iterable[str]) -> list[str]:
    values = []
    for name in names:
        value = os.environ.get(name) or ""
        if is_secret_name(name):
            values.append(value)
        else:
            # A password in a base URL (https://user:pass@host/v1).
            try:
                password = urlsplit(value).password
            except ValueError:
                password = None
            if password:
                values += [password, unquote(password)]
    return [v for v in values if len(v) >= MIN_SECRET_LENGTH]


_KNOWN = _KnownSecrets()


def remember_secret(value: str) -> None:
    """Treat ``value`` as a secret from now on, wherever it shows up (raw or encoded)."""
    _KNOWN.remember(value)


# What an escape's backslash takes after it: \uXXXX, or one character.
_ESCAPE_TAIL = re.compile(r"u[0-9A-Fa-f]{4}|.", re.DOTALL)


def _redact_known(match: re.Match[str]) -> str:
    r"""A known secret's form, cut; one that starts inside an escape keeps the escape whole.

    In escaped text (``\n1234`` in a JSON document) a form that begins right
    after an escape's backslash shares its first characters with the escape:
    those stay, so the text stays valid, and the rest of the form is cut.
    """
    text, start = match.string, match.start()
    before = start
    while before and text[before - 1] == "\\":
        before -= 1
    if (start - before) % 2 == 0:
        return REDACTED
    tail = _ESCAPE_TAIL.match(text, start)
    kept = tail.end() - start if tail else 0
    return match.group(0)[:kept] + REDACTED


def _redact_named(match: re.Match[str]) -> str:
    name, value = match.group(1), match.group(2)
    if not is_secret_name(name) or value == REDACTED:
        return match.group(0)
    start, end = match.span(2)
    whole = match.group(0)
    base = match.start(0)
    return whole[: start - base] + REDACTED + whole[end - base :]


def scrub_text(text: str | None) -> str | None:
    """``text`` with every known secret and key-like substring replaced; None stays None.

    Every store write and console line passes here, so it is also where
    text UTF-8 or SQLite cannot hold is made storable (``storable_text``),
    whatever path brought it in.
    """
    if not text:
        return text
    return _scrub_known(text, *_KNOWN.current())


# Texts longer than this are scrubbed every time, not kept in the memo (tool
# results, whole conversations: rarely written twice, and costly to hold).
_MEMO_TEXT_CHARS = 1024
_MEMO_ENTRIES = 4096


def _scrub_known(
    text: str,
    forms: tuple[str, ...],
    pattern: re.Pattern[str] | None,
    memo: dict[str, str],
) -> str:
    """:func:`scrub_text` of a non-empty ``text`` against ``forms``, remembered in ``memo``.

    The same short texts (tool descriptions, parameter names, a request's
    question) are written again and again: each is scrubbed once per set of
    known secrets, and looked up after that.
    """
    # Plain str only: a str subclass (an enum) must come back as itself.
    if type(text) is not str or len(text) > _MEMO_TEXT_CHARS:
        return _scrub_once(text, forms, pattern)
    done = memo.get(text)
    if done is None:
        done = _scrub_once(text, forms, pattern)
        if len(memo) >= _MEMO_ENTRIES:
            memo.clear()
        memo[text] = done
    return done


def _scrub_once(text: str, forms: tuple[str, ...], pattern: re.Pattern[str] | None) -> str:
    text = storable_text(text)
    if pattern is not None and any(form in text for form in forms):
        text = pattern.sub(_redact_known, text)
    if not any(hint in text for hint in _SHAPE_HINTS):
        return text
    text = _KEY_SHAPES.sub(REDACTED, text)
    if "=" in text:
        text = _NAMED_QUERY_VALUE.sub(_redact_named, text)
    if '":' in text or '" :' in text:
        text = _NAMED_JSON_VALUE.sub(_redact_named, text)
    return text


def scrub(value: Any) -> Any:
    """A copy of JSON-like ``value`` with every secret replaced by ``[redacted]``.

    Values under credential-like keys (at any depth, any case) are replaced
    unless None, and remembered, so the same value is cut wherever else it
    appears (a URL path, an echoing response). Strings go through
    :func:`scrub_text`. Other leaves that JSON cannot hold (paths, enums)
    become text.
    """
    return Scrubber().scrub(value)


class Scrubber:
    """One write's scrubbing: the known secrets are read once, and again after a remember.

    :func:`scrub`, :func:`scrub_tree` and :func:`scrub_text` each check the
    environment for new secrets on every call; a writer that scrubs many
    values at once (a checkpoint's messages) makes one ``Scrubber`` and
    scrubs them all through it.
    """

    __slots__ = ("forms", "memo", "pattern")

    def __init__(self) -> None:
        self.forms, self.pattern, self.memo = _KNOWN.current()

    def text(self, text: str) -> str:
        """:func:`scrub_text` of ``text``."""
        return _scrub_known(text, self.forms, self.pattern, self.memo) if text else text

    def named(self, values: Mapping[Any, Any]) -> None:
        """:func:`remember_named`; a value remembered is cut from the rest of the write too."""
        remember_named(values)
        if _KNOWN.stale:
            self.forms, self.pattern, self.memo = _KNOWN.current()

    def scrub(self, value: Any) -> Any:
        """:func:`scrub` of ``value``."""
        if isinstance(value, str):
            return self.text(value)
        if value is None or isinstance(value, bool | int | float):
            return value
        if isinstance(value, Mapping):
            self.named(value)
            return {
                storable_text(str(key)): REDACTED
                if item is not None and is_secret_name(str(key))
                else self.scrub(item)
                for key, item in value.items()
            }
        if isinstance(value, list | tuple | set | frozenset):
            return [self.scrub(item) for item in value]
        return self.text(str(value))

    def tree(self, value: Any) -> Any:
        """:func:`scrub_tree` of ``value``."""
        if isinstance(value, dict):
            self.named(value)
            return {
                storable_text(key) if isinstance(key, str) else key: _redacted_like(item)
                if _is_named_secret(key, item)
                else self.tree(item)
                for key, item in value.items()
            }
        if isinstance(value, list | tuple):
            return type(value)(self.tree(item) for item in value)
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, bytes):
            try:
                text = value.decode()
            except UnicodeDecodeError:
                return scrub_bytes(value)
            return self.text(text).encode()
        return value


def scrub_tree(value: Any) -> Any:
    """:func:`scrub` that keeps every type: for data that must load back as it was.

    Dicts, lists and tuples keep their type, credential-named values become
    ``[redacted]`` (bytes stay bytes), strings and UTF-8 bytes are scrubbed,
    and any other leaf is returned as it is.
    """
    return Scrubber().tree(value)


def _is_named_secret(key: Any, item: Any) -> bool:
    return isinstance(key, str) and isinstance(item, str | bytes) and is_secret_name(key)


def _redacted_like(item: str | bytes) -> str | bytes:
    return REDACTED.encode() if isinstance(item, bytes) else REDACTED


def remember_named(values: Mapping[Any, Any]) -> None:
    """Remember the key-like values of ``values`` that sit under credential-like names.

    A name alone is weak evidence (an API's ``key`` parameter may be a sort
    key such as ``temperature``), and a remembered value is cut from every
    later text, so only values shaped like a credential are remembered.
    """
    for key, item in values.items():
        if isinstance(item, str | int) and not isinstance(item, bool) and is_secret_name(str(key)):
            text = str(item)
            if _looks_like_a_credential(text):
                remember_secret(text)


def _looks_like_a_credential(text: str) -> bool:
    """Eight characters or more, no spaces, and not one plain word or number."""
    if len(text) < 8 or any(char.isspace() for char in text):
        return False
    if text.isdigit() or text.isalpha() and (text.islower() or text.isupper()):
        return False
    return True


def scrub_bytes(data: bytes) -> bytes:
    """``data`` with every known secret's forms masked, keeping its length.

    For serialized data whose framing counts bytes (msgpack, pickle): the
    object-level scrub has already run; this catches a known value that
    survived inside an object it cannot walk.
    """
    forms, pattern = _KNOWN.forms()
    if pattern is None:
        return data
    for form in forms:
        raw = form.encode()
        if raw in data:
            data = data.replace(raw, b"*" * len(raw))
    return data


class ScrubbingStream:
    """A text stream that writes to ``target`` what :func:`scrub_text` leaves.

    The command line wraps stdout and stderr in one, so every console line,
    whatever printed it, is scrubbed.
    """

    def __init__(self, target: TextIO) -> None:
        self._target = target

    def write(self, text: str) -> int:
        """Write ``text``, scrubbed; returns the length given, as callers expect.

        Raises:
            TypeError: ``text`` is not a string (as any text stream would say;
                click tells text streams from binary ones this way).
        """
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._target.write(scrub_text(text) or "")
        return len(text)

    @property
    def buffer(self) -> _ScrubbingBuffer:
        """The binary stream beneath, scrubbed as well."""
        return _ScrubbingBuffer(self._target.buffer)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)


class _ScrubbingBuffer:
    """A binary stream whose UTF-8 text goes through :func:`scrub_text`."""

    def __init__(self, target: Any) -> None:
        self._target = target

    def write(self, data: bytes) -> int:
        if not isinstance(data, bytes | bytearray):
            raise TypeError(f"a bytes-like object is required, not {type(data).__name__!r}")
        try:
            text = bytes(data).decode()
        except UnicodeDecodeError:
            self._target.write(scrub_bytes(bytes(data)))
        else:
            self._target.write((scrub_text(text) or "").encode())
        return len(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)


def scrub_console() -> Callable[[], None]:
    """Route ``sys.stdout`` and ``sys.stderr`` through the scrubber; returns the undo."""
    import sys

    saved = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, ScrubbingStream):
        sys.stdout = ScrubbingStream(sys.stdout)
    if not isinstance(sys.stderr, ScrubbingStream):
        sys.stderr = ScrubbingStream(sys.stderr)

    def undo() -> None:
        sys.stdout, sys.stderr = saved

    return undo
