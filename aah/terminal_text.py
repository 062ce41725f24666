"""Text from models, tools and people made safe to show on a terminal.

A model reply, a tool's response or a person's answer may hold terminal
control sequences: escape codes that clear the screen or move the cursor,
window titles and hyperlinks (OSC), device queries, a bell, C1 controls, a
carriage return that makes a line overwrite the one before it, or bidi
overrides that show text in another order than it is stored. Shown raw,
they act on the reader's terminal instead of being read. ``printable``
removes them and keeps every other character, line breaks and tabs
included; rich markup in the text is left for the face to escape.
"""

from __future__ import annotations

import re
from typing import Any

# An escape sequence (7-bit or its 8-bit C1 form): a control string (OSC,
# DCS, SOS, PM, APC) up to its terminator, or left open to the end; a CSI
# sequence up to its final byte; any other escape with its one character.
_SEQUENCE = re.compile(
    r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]?"
)
# Controls left once sequences are gone: C0 but tab and newline, DEL, C1,
# and the bidi embeddings, overrides and isolates.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# A carriage return ends a line where it goes with a newline; alone, it would
# send the cursor back over what the line already shows.
_RETURN = re.compile(r"\r+(\n?)")


def printable(text: str) -> str:
    """``text`` without terminal control sequences; line breaks and tabs stay.

    A lone carriage return becomes a space, so the text it would have hidden
    shows beside what follows it.
    """
    if text.isprintable():
        return text  # the common case: nothing to look for
    text = _RETURN.sub(lambda m: m.group(1) or " ", text)
    return _CONTROL.sub("", _SEQUENCE.sub("", text))


def without_escape_sequences(text: str) -> str:
    """``text`` without its escape sequences; every other character, controls included, stays."""
    return _SEQUENCE.sub("", text) if "\x1b" in text or not text.isascii() else text


def printable_value(value: Any) -> Any:
    """``value`` with :func:`printable` applied to every string inside it (dict keys too)."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable_value(k): printable_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [printable_value(item) for item in value]
    return value
