"""The five Fail-TaLMs settings (``aah.scoring.settings``) and the data folders that hold them."""

from __future__ import annotations

from aah.scoring import SETTINGS as SETTINGS
from aah.scoring import Setting as Setting
from aah.scoring import canonical_setting as canonical_setting

SETTING_FOLDERS: dict[Setting, str] = {
    "perfect": "Original",
    "underspecified": "Underspecified",
    "replaceable": "Replaceable",
    "nonreplaceable": "Non-replaceable",
    "notools": "No-tools",
}
