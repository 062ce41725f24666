"""Bytes from the terminal that are not UTF-8 are read as U+FFFD, not a crash.

Textual's drivers decode the terminal's input with a strict UTF-8 decoder:
one stray byte (a terminal set to Latin-1, a paste of binary junk, a key
sent as a raw byte) raises ``UnicodeDecodeError`` in the input thread, the
app exits with a traceback, and a running session ends in error with the
answer being typed. ``tolerate_undecodable_input`` makes those decoders
replace such bytes, which then show as U+FFFD where they were typed.
"""

from __future__ import annotations

import codecs
import functools
import importlib
from typing import Any

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
    return functools.partial(codecs.getincrementaldecoder(encoding), errors="replace")
