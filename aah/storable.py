r"""Text that UTF-8 and SQLite can hold: the one function that makes it so.

Text reaches aah from places it does not control: a model server's JSON may
hold a ``\ud800`` escape (a lone surrogate, which no UTF-8 encoder accepts),
a command line may carry bytes that are not UTF-8 (Python hands them over as
surrogates), and a NUL character ends a text for SQLite's own functions
(``length()``, ``LIKE``). Any of them would make a store write, a console
line or an event fail long after the text came in.

``storable_text`` replaces each such character with U+FFFD, the replacement
character, so the reader sees that something was there; a well-formed
surrogate pair becomes the one character it encodes. It runs where text
enters (the model reply decoder, tool-call arguments, the user's query) and,
as the last guard, inside the scrubber every store write and console line
goes through.
"""

from __future__ import annotations

import re
from typing import Any

REPLACEMENT = "\ufffd"
# Lone surrogates (from JSON escapes or undecodable argv bytes) and NUL.
_UNSTORABLE = re.compile("[\ud800-\udfff\x00]")


def storable_text(text: str) -> str:
    """``text`` with every character UTF-8 or SQLite cannot hold replaced by U+FFFD.

    A high surrogate followed by a low one becomes the character the pair
    encodes; any other surrogate, and NUL, becomes U+FFFD. Text without them
    (nearly all text) is returned as it is, after one scan.
    """
    if text.isascii():
        return text.replace("\x00", REPLACEMENT) if "\x00" in text else text
    if _UNSTORABLE.search(text) is None:
        return text
    # UTF-16 joins a well-formed pair and reports each lone half, which
    # "replace" turns into U+FFFD.
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return joined.replace("\x00", REPLACEMENT)


def storable(value: Any) -> Any:
    """JSON-like ``value`` with :func:`storable_text` applied to every string, keys too."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        return {storable(key): storable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [storable(item) for item in value]
    return value
