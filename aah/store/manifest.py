"""What a run's manifest pins: the fields two parts of one run must agree on.

A run resumed under the same name, and the shards of one run merged into one
database, are one experiment only if these fields match; any other field
(seed, settings, prompt versions...) may differ between the parts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

PINNED_FIELDS = (
    "model",
    "aah",
    "human",
    "http",
    "unavailable",
    "step_limit",
    "registry_hash",
    "tools",
    "discover",
    "discover_k",
    # Which calls need a person's approval: another policy is another run.
    "approvals",
)


class ManifestDifference(NamedTuple):
    """A pinned field that two manifests of one run disagree on."""

    field: str
    ours: Any
    theirs: Any


def pinned_difference(
    ours: Mapping[str, Any], theirs: Mapping[str, Any]
) -> ManifestDifference | None:
    """The first pinned field both manifests name with different values, or None.

    A field only one of them names does not count: older runs may lack it.
    """
    for name in PINNED_FIELDS:
        if name in ours and name in theirs and ours[name] != theirs[name]:
            return ManifestDifference(name, ours[name], theirs[name])
    return None
