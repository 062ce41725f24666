"""Model text as a report quotes it: short in characters, lines and words, and inert.

A report shows what models, servers and tools wrote (final answers, queries,
error messages). Such text can be anything: a degenerate reply of a thousand
one-character lines, line breaks a terminal or a table reads differently
(CR alone, U+2028/U+2029, form feeds), one "word" of ten thousand characters
that would stretch a table column, terminal escape sequences that recolour or
clear the screen, zero-width characters and bidirectional overrides that make
a text read other than it is. ``quote`` turns it into a short, plain excerpt
that every output format (terminal, Markdown, HTML, JSON) can show as is, and
says what it left out.
"""

from __future__ import annotations

import re

QUOTE_LINES = 3
WORD_CHARS = 60
# A long word keeps this much, then says how much it lost.
WORD_KEEP = 40

# Escape sequences (CSI, OSC, other ESC forms, and their 8-bit C1 forms): dropped whole.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, screen clears
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: titles, hyperlinks
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS, SOS, PM, APC strings
    r"|\x1b[ -/]*[0-~]?"  # any other escape
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
    r"|\x9d[^\x07\x9c]*(?:\x07|\x9c)?"  # 8-bit OSC
)
# Everything a terminal, a table or a text editor may read as a line break.
_LINE_BREAKS = re.compile(r"\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
# Bidirectional controls: shown by name, so that a text reads in the order it is stored.
_BIDI = re.compile(r"[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# Zero-width and invisible characters that hide or split words (joiners are kept: scripts
# and emoji need them).
_INVISIBLE = re.compile(r"[\u00ad\u180e\u200b\u2060-\u2064\ufeff]")
# Other control characters (C0 but tab, DEL, C1): dropped.
_CONTROLS = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f]")
_LONG_WORD = re.compile(rf"\S{{{WORD_CHARS + 1},}}")


def plain_text(text: str) -> str:
    r"""``text`` with no escape sequence, control, invisible or bidi character left.

    Line breaks of every kind become ``\n``; tabs become spaces; a bidi
    control becomes its visible name (``<U+202E>``).
    """
    text = _ESCAPES.sub("", text)
    text = _LINE_BREAKS.sub("\n", text).replace("\t", " ")
    text = _BIDI.sub(lambda found: f"<U+{ord(found.group()):04X}>", text)
    text = _INVISIBLE.sub("", text)
    return _CONTROLS.sub("", text)


def quote(text: str, chars: int, lines: int = QUOTE_LINES) -> str:
    """A plain excerpt of ``text``: at most ``lines`` lines and about ``chars`` characters.

    Blank lines and trailing spaces are dropped first; a word longer than
    ``WORD_CHARS`` keeps its first ``WORD_KEEP`` characters. What was cut is
    said at the end: ``…[+N lines, +M chars]``.

    Args:
        text: What a model, server or tool wrote.
        chars: The most characters kept (the marker comes on top).
        lines: The most lines kept.
    """
    kept = [line.strip() for line in plain_text(text).split("\n")]
    kept = [_cut_words(line) for line in kept if line]
    cut_lines = max(len(kept) - lines, 0)
    kept = kept[:lines]
    joined = "\n".join(kept)
    cut_chars = max(len(joined) - chars, 0)
    if cut_chars:
        joined = joined[:chars].rstrip()
    # Characters left out with the lines dropped, so the marker counts all that is missing.
    lost = []
    if cut_lines:
        lost.append(f"+{cut_lines} line{'s' if cut_lines > 1 else ''}")
    if cut_chars:
        lost.append(f"+{cut_chars} chars")
    return f"{joined}…[{', '.join(lost)}]" if lost else joined


def _cut_words(line: str) -> str:
    def cut(found: re.Match[str]) -> str:
        word = found.group()
        return f"{word[:WORD_KEEP]}…[+{len(word) - WORD_KEEP} chars]"

    return _LONG_WORD.sub(cut, line)
