"""The terminal's input as Textual's parser reads it: bad bytes replaced, pastes kept in order."""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from textual._xterm_parser import XTermParser  # noqa: E402

from aah.ui.tui.terminal_input import _TerminalDecoder  # noqa: E402


def read(*chunks: bytes) -> list[tuple[str, str]]:
    """What the app hears of ``chunks`` read one after another: (event, key or pasted text)."""
    decoder, parser = _TerminalDecoder("utf-8"), XTermParser()
    events = []
    for chunk in chunks:
        text = decoder.decode(chunk)
        if text:  # as the driver does: nothing decoded yet (half a character) feeds nothing
            events += parser.feed(text)
    events += parser.tick()
    return [
        (type(e).__name__, e.text if type(e).__name__ == "Paste" else e.key)  # type: ignore[attr-defined]
        for e in events
    ]


COLOURED = b"\x1b[200~Lisbon \x1b[31mred\x1b[0m end\x1b[201~"
PASTES = [
    # A paste of coloured text: its escapes go, its text stays whole and in order.
    ([COLOURED], "Lisbon red end"),
    # The same, the terminal's reads cut anywhere: in a sequence, in the end marker.
    ([COLOURED[:20], COLOURED[20:37], COLOURED[37:]], "Lisbon red end"),
    ([COLOURED[:-3], COLOURED[-3:]], "Lisbon red end"),
    # A window title, a hyperlink, a bell: gone; the words around them stay.
    ([b"\x1b[200~a\x1b]0;PWNED\x07b\x1b]8;;http://x\x1b\\c\x1b]8;;\x1b\\d\x1b[201~"], "abcd"),
    # Right-to-left text and emoji are text.
    (["\x1b[200~שלום 😀\x1b[201~".encode()], "שלום 😀"),
]


@pytest.mark.parametrize(("chunks", "pasted"), PASTES)
def test_a_paste_with_escape_sequences_arrives_whole_and_in_order(
    chunks: list[bytes], pasted: str
) -> None:
    assert read(*chunks) == [("Paste", pasted)]


@pytest.mark.parametrize(
    "chunks",
    [
        [b"\xff"],
        [b"\xed\xa0\x80"],  # a lone surrogate, as UTF-8 would write it
        [b"\xc3", b"x"],  # half a character, then another one
        [b"caf\xe9 ok"],  # Latin-1
        [b"\x1b[200~bad \xff\x1b[201~"],
    ],
)
def test_bytes_that_are_not_utf8_are_read_as_the_replacement_character(
    chunks: list[bytes],
) -> None:
    heard = read(*chunks)
    assert heard and all(isinstance(what, str) for _, what in heard)
    assert any("\ufffd" in what or what == "replacement_character" for _, what in heard)


def test_keys_outside_a_paste_pass_as_they_are() -> None:
    assert read(b"ab", b"\x1b[A") == [("Key", "a"), ("Key", "b"), ("Key", "up")]
