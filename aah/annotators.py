"""Annotator names: one spelling per person, whichever keyboard, font or paste it came from.

A person's answers are counted and compared under their name, so two
spellings of one name would split their counter and make one annotator
look like two in agreement. Every place a name enters aah (the web
sign-in, a saved web sign-in, ``aah tui --annotator``, the session store)
passes it through ``annotator_key``; the places that let a person choose
a name check it with ``check_annotator_name``.

What is one name:

- Unicode compatibility forms are one: fullwidth ``ａｌｉｃｅ``, math letters
  ``𝕒lice``, ligatures, and a letter typed with a separate accent
  (``e`` + U+0301) are the plain letters (NFKC);
- case does not count (``ALICE`` is ``alice``), nor does how many spaces of
  which kind stand between words, or around them;
- invisible characters are dropped: zero-width spaces and joiners, bidi
  controls, soft hyphens, variation selectors, and accent marks left over
  on a Latin, Greek or Cyrillic letter that has no accented form;
- digits of every script are ASCII digits;
- Latin letters that are a plain letter in another shape, which NFKC leaves
  alone, are that letter: small capitals (``ᴀʟɪᴄᴇ``), the IPA alpha, script g
  and iota (``ɑlice``), dotless i and j. Letters that spell differently in a
  living orthography (``ɓ``, ``ɛ``, ``ŋ``) are kept as they are.

What is refused (``check_annotator_name``): a name mixing letters of
several scripts (``аlice`` with a Cyrillic ``а``), a Cyrillic or Greek name
made only of letters that look Latin (``аlісе``), reserved names, and
anything but letters, digits, spaces and ``. _ - @``.

Names written by older versions stay in the store as written (a record is
never rewritten); reading answers for agreement compares their keys.
"""

from __future__ import annotations

import functools
import re
import unicodedata

__all__ = [
    "MAX_NAME_CHARS",
    "RESERVED_NAMES",
    "annotator_key",
    "check_annotator_name",
]

MAX_NAME_CHARS = 40
# The names non-human channels record as ``answered_by``: an annotator using
# one would be counted as a machine (or a machine as them) in agreement.
RESERVED_NAMES = frozenset(
    {"oracle", "simulated", "scripted", "console", "unknown", "deadline-fallback", "published"}
)
_PUNCTUATION = frozenset(" ._-@")
# Scripts whose accent marks sit on letters that have precomposed forms; a
# mark left on one after NFKC is decoration (or disguise), not spelling.
_ACCENTED_SCRIPTS = frozenset({"LATIN", "GREEK", "CYRILLIC"})
# Scripts that one name may mix: Japanese and Korean writing do.
_WRITING_SYSTEMS = (
    frozenset({"CJK", "IDEOGRAPHIC", "HIRAGANA", "KATAKANA", "KATAKANA-HIRAGANA"}),
    frozenset({"CJK", "IDEOGRAPHIC", "HANGUL"}),
)
# Cyrillic and Greek letters that look like Latin ones in common fonts.
_LATIN_LOOKALIKES = frozenset(
    "аеорсухѕіјӏһԁԛԝАВЕЅІЈКМНОРСТХУӀ"  # Cyrillic
    "αεικνορτυχγΑΒΕΖΗΙΚΜΝΟΡΤΥΧ"  # Greek
)
# Default-ignorable characters that are not format (Cf) characters.
_IGNORABLE = frozenset(
    {"\u034f", "\u115f", "\u1160", "\u17b4", "\u17b5", "\u3164", "\uffa0", "\u2800"}
)


def annotator_key(name: str) -> str:
    """``name`` as the one spelling aah stores and compares (see the module's rules).

    Never fails: the store uses it on names written by any version; an
    empty result means the name had nothing visible in it.
    """
    text = unicodedata.normalize("NFKC", name)
    text = "".join(_plain_latin(char) for char in _visible(text)).casefold()
    # Case folding can undo NFKC (ß -> ss is fine, but some folds decompose).
    text = unicodedata.normalize("NFKC", text)
    text = "".join(_without_stray_marks(text))
    text = "".join(_ascii_digit(char) for char in text)
    return " ".join(text.split())


def check_annotator_name(name: str) -> str:
    """The key of ``name``, if a person may use it to sign in.

    Raises:
        ValueError: One line saying how to fix the name: it is empty, too
            long, reserved, mixes scripts, looks Latin in other letters, or
            has characters other than letters, digits, spaces and ``. _ - @``.
    """
    key = annotator_key(name)
    if not key:
        raise ValueError("type your name to sign in: answers are stored under it")
    if len(key) > MAX_NAME_CHARS:
        raise ValueError(f"use a name of at most {MAX_NAME_CHARS} characters")
    odd = next((char for char in key if not _name_char(char)), None)
    if odd is not None:
        raise ValueError(
            f"use only letters, digits, spaces and . _ - @ in your name (not U+{ord(odd):04X})"
        )
    scripts = {_script(char) for char in key if char.isalpha()}
    if len(scripts) > 1 and not any(scripts <= system for system in _WRITING_SYSTEMS):
        raise ValueError(
            f"write your name in one script, not a mix of {', '.join(sorted(scripts)).lower()}"
            " letters (some look alike)"
        )
    shown = unicodedata.normalize("NFKC", "".join(_visible(name)))
    letters = [char for char in shown if char.isalpha()]
    if scripts & {"CYRILLIC", "GREEK"} and all(char in _LATIN_LOOKALIKES for char in letters):
        raise ValueError("your name looks Latin but is typed in other letters: type it in Latin")
    if key in RESERVED_NAMES or key.startswith("human:"):
        raise ValueError(f"{key!r} is reserved for automatic answers: pick another name")
    return key


def _visible(text: str) -> list[str]:
    """``text`` without invisible characters; every kind of space becomes a plain one."""
    kept = []
    for char in text:
        if char.isspace():
            kept.append(" ")
        elif unicodedata.category(char) in ("Cf", "Cc") or char in _IGNORABLE:
            continue
        elif 0xFE00 <= ord(char) <= 0xFE0F or 0xE0100 <= ord(char) <= 0xE01EF:
            continue  # variation selectors
        else:
            kept.append(char)
    return kept


def _without_stray_marks(text: str) -> list[str]:
    """``text`` keeping only the marks that spell: those on a letter of a script that needs them."""
    kept: list[str] = []
    base = ""
    for char in text:
        if unicodedata.category(char) in ("Mn", "Me"):
            if base and _script(base) not in _ACCENTED_SCRIPTS:
                kept.append(char)  # a vowel sign of Devanagari, Thai, Arabic...
            continue
        base = char if char.isalpha() else ""
        kept.append(char)
    return kept


# Unicode names of Latin letters that are a basic letter in another shape.
_PLAIN_SHAPES = re.compile(
    r"LATIN (?:LETTER SMALL CAPITAL|SMALL LETTER (?:DOTLESS|SCRIPT)) ([A-Z])"
    r"|LATIN (?:SMALL|CAPITAL) LETTER (ALPHA|IOTA)"
)
_GREEK_NAMED = {"ALPHA": "a", "IOTA": "i"}


@functools.cache
def _plain_latin(char: str) -> str:
    """The basic Latin letter ``char`` is a shape of (see the module's rules), else ``char``."""
    if char.isascii() or not char.isalpha():
        return char
    shape = _PLAIN_SHAPES.fullmatch(unicodedata.name(char, ""))
    if shape is None:
        return char
    letter, named = shape.groups()
    return letter.lower() if letter else _GREEK_NAMED[named]


def _ascii_digit(char: str) -> str:
    value = unicodedata.decimal(char, None)
    return str(value) if value is not None else char


def _script(char: str) -> str:
    """The script a letter belongs to, from its Unicode name's first word."""
    return unicodedata.name(char, "UNKNOWN").split(" ", 1)[0]


def _name_char(char: str) -> bool:
    category = unicodedata.category(char)
    return char in _PUNCTUATION or category[0] in ("L", "N") or category in ("Mn", "Mc")
