"""The five settings of science.md §1 that every per-setting figure is cut by.

A run's sessions each carry one setting (or none); the metrics, repeats and
behaviour tables group by it, in the paper's order. The names are aah's
stored names; ``canonical_setting`` maps the paper's folder names and common
spellings onto them. Which data folder holds each setting is the Fail-TaLMs
benchmark's business (``aah.benchmark.failtalms``).
"""

from __future__ import annotations

from typing import Literal, get_args

Setting = Literal["perfect", "underspecified", "replaceable", "nonreplaceable", "notools"]
SETTINGS: tuple[Setting, ...] = get_args(Setting)
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
