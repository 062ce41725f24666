"""A face freezes what it made at start-up, after collecting start-up's garbage."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import gc, weakref
from aah.ui.heap import freeze_start_up

class Node:
    pass

kept = [Node() for _ in range(1000)]
cycle = Node(); cycle.me = cycle
gone = weakref.ref(cycle)
del cycle
gc.disable()  # only the call below may collect
freeze_start_up()
print(gone() is None, gc.get_freeze_count() >= 1000, gc.get_count()[0] < 10)
"""


def test_start_up_garbage_is_collected_and_the_rest_frozen() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split() == ["True", "True", "True"]
