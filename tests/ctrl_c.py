"""Ctrl-C for the processes a test starts and then interrupts.

A shell hands the jobs it starts in the background (``pytest ... &``, as
``.ci/run`` starts the interop suite) SIGINT ignored, and their children
inherit that: a test that presses Ctrl-C (SIGINT) on its child would wait in
vain. ``Popen(..., preexec_fn=restore_ctrl_c)`` gives the child the default.
"""

from __future__ import annotations

import signal


def restore_ctrl_c() -> None:
    """In the child, before it runs: SIGINT has its default action again."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
