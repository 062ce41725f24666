"""How long the web page holds a question for its annotator: ``AAH_WEB_LEASE_SECONDS``."""

from __future__ import annotations

import os

from aah.bounds import MAX_WAIT_SECONDS, OutOfBounds, check_seconds
from aah.desk import HEARTBEAT_LEASE_S

LEASE_ENV = "AAH_WEB_LEASE_SECONDS"


def lease_from_env() -> float:
    """The claim lease in seconds: ``AAH_WEB_LEASE_SECONDS``, else ``HEARTBEAT_LEASE_S``.

    Raises:
        ValueError: The variable is set to something other than a positive
            number of seconds, at most 30 days.
    """
    raw = os.environ.get(LEASE_ENV, "").strip()
    if not raw:
        return HEARTBEAT_LEASE_S
    try:
        return check_seconds(raw, LEASE_ENV)
    except OutOfBounds:
        raise ValueError(
            f"set {LEASE_ENV} to a positive number of seconds, at most "
            f"{MAX_WAIT_SECONDS:,.0f} (30 days), not {raw[:40]!r}"
        ) from None
