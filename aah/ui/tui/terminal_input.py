r"""What the terminal sends, made safe for Textual to read.

Textual's drivers decode the terminal's input with a strict UTF-8 decoder:
one stray byte (a terminal set to Latin-1, a paste of binary junk, a key
sent as a raw byte) raises ``UnicodeDecodeError`` in the input thread, the
app exits with a traceback, and a running session ends in error with the
answer being typed. And Textual's parser ends a bracketed paste at the
first escape character inside it: a paste of coloured text ("Lisbon
\x1b[31mred\x1b[0m") came out as keys first and the paste's start last,
the answer reordered. ``tolerate_undecodable_input`` makes the drivers'
decoders replace bytes that are not UTF-8 (they show as U+FFFD where they
were typed) and drop escape sequences inside a paste (its text stays, in
order).
"""

from __future__ import annotations

import codecs
import functools
import importlib
from typing import Any

from aah.terminal_text import without_escape_sequences

# The drivers that read a terminal (Textual names the decoder in each module).
_DRIVERS = (
    "textual.drivers.linux_driver",
    "textual.drivers.linux_inline_driver",
)


def tolerate_undecodable_input() -> None:
    """Make Textual's terminal drivers decode their input with ``errors="replace"``."""
    for name in _DRIVERS:
        try:
            module = importlib.import_module(name)
        except ImportError:  # another platform's drivers
            continue
        if getattr(module, "getincrementaldecoder", None) is not None:
            setattr(module, "getincrementaldecoder", _replacing_decoder)  # noqa: B010


def _replacing_decoder(encoding: str) -> Any:
    return functools.partial(_TerminalDecoder, encoding)


PASTE_START = "\x1b[200~"
PASTE_END = "\x1b[201~"


class _TerminalDecoder:
    """An incremental decoder of terminal input: bad bytes replaced, pastes without escapes."""

    def __init__(self, encoding: str) -> None:
        self._bytes = codecs.getincrementaldecoder(encoding)(errors="replace")
        self._pasting = False
        self._held = ""  # the end of the last chunk, when it may begin a marker

    def decode(self, data: bytes, final: bool = False) -> str:
        """The text of ``data`` (and of what was held back), as Textual's parser should see it."""
        text, self._held = self._held + self._bytes.decode(data, final), ""
        out: list[str] = []
        while text:
            marker = PASTE_END if self._pasting else PASTE_START
            found = text.find(marker)
            if found == -1:
                # Inside a paste, the end of a chunk may be the start of its end
                # marker; outside, nothing is held back (a lone Esc is a key).
                keep = _partial_marker(text, marker) if self._pasting and not final else 0
                body, self._held = text[: len(text) - keep], text[len(text) - keep :]
                out.append(without_escape_sequences(body) if self._pasting else body)
                break
            body = text[:found]
            out.append(without_escape_sequences(body) if self._pasting else body)
            out.append(marker)
            self._pasting = not self._pasting
            text = text[found + len(marker) :]
        return "".join(out)


def _partial_marker(text: str, marker: str) -> int:
    """How many characters at the end of ``text`` could begin ``marker``."""
    for size in range(min(len(marker) - 1, len(text)), 0, -1):
        if marker.startswith(text[-size:]):
            return size
    return 0
