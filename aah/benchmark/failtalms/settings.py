"""The five Fail-TaLMs settings, as aah names them and as the data folders do."""

from __future__ import annotations

from typing import Literal, get_args

Setting = Literal["perfect", "underspecified", "replaceable", "nonreplaceable", "notools"]
SETTINGS: tuple[Setting, ...] = get_args(Setting)
SETTING_FOLDERS: dict[Setting, str] = {
    "perfect": "Original",
    "underspecified": "Underspecified",
    "replaceable": "Replaceable",
    "nonreplaceable": "Non-replaceable",
    "notools": "No-tools",
}
# How the paper's folders and common spellings map onto the stored names.
_SETTING_ALIASES = {"original": "perfect", "notool": "notools"}


def canonical_setting(value: str | None) -> str | None:
    """The stored setting name for ``value`` ("Non-replaceable" -> "nonreplaceable").

    Unknown names are returned as given, so that they still form their own cell.
    """
    if value is None:
        return None
    key = "".join(ch for ch in value.lower() if ch.isalnum())
    key = _SETTING_ALIASES.get(key, key)
    return key if key in SETTINGS else value
