"""Keeping a face's start-up objects out of Python's full garbage collections.

A face lives for hours and holds everything it imported (Gradio, Textual,
the registry): a quarter of a million objects that a full collection walks
each time, about 130 ms of pause, which a listing of 10,000 waiting requests
sets off once in ten. Frozen after start-up, they are never walked again.
"""

from __future__ import annotations

import gc


def freeze_start_up() -> None:
    """Move every object alive now out of the collector's reach (``gc.freeze``).

    Call it once, after the face is built and before it serves: what it
    made up to then lives as long as the process anyway. Collecting first
    leaves start-up's garbage out of the frozen set.
    """
    gc.collect()
    gc.freeze()
