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
