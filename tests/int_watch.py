"""``int`` as ``aah.bounds`` sees it in a test: every text it is asked to read, recorded.

Patched in as ``aah.bounds.int`` (``isinstance`` still answers as for ``int``),
it lets a test check that no digit string past the bound ever reached ``int()``.
"""

from __future__ import annotations

import builtins
from typing import Any


class _IntWatch(type):
    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, builtins.int)


class WatchedInt(builtins.int, metaclass=_IntWatch):
    """``int``, recording in ``texts`` each text it reads."""

    texts: list[str] = []

    def __new__(cls, *args: Any) -> int:  # type: ignore[misc]
        if args and isinstance(args[0], str):
            WatchedInt.texts.append(args[0])
        return builtins.int(*args)
