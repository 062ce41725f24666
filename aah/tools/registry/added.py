"""Tools added to a registry after its build: MCP servers' tools (``aah tools add-mcp``).

They are kept in a JSON file beside the registry (``registry.added.json``),
so a rebuild from the data sources keeps them, and compiled into the
registry with the rest: searchable and listed beside the HTTP endpoints.
A source endpoint keeps its name if an added tool takes the same one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from aah.errors import AahError
from aah.tools.spec import EndpointSpec, ImportResult


def added_path(registry: Path) -> Path:
    """Where the added tools of the registry at ``registry`` are kept."""
    return registry.with_name(f"{registry.stem}.added.json")


def load_added(registry: Path) -> ImportResult:
    """The tools added to ``registry``, by server (none when nothing was added).

    Raises:
        AahError: the file is not what ``aah tools add-mcp`` writes.
    """
    path = added_path(registry)
    if not path.is_file():
        return ImportResult()
    try:
        servers = json.loads(path.read_text(encoding="utf-8"))
        specs = [EndpointSpec.model_validate(item) for items in servers.values() for item in items]
    except (OSError, ValueError, AttributeError, ValidationError) as exc:
        raise AahError(
            f"cannot read the added tools in {path} ({type(exc).__name__}): "
            "delete it and add the servers again with `aah tools add-mcp`"
        ) from None
    return ImportResult(endpoints=specs)


def save_added(registry: Path, server: str, specs: Sequence[EndpointSpec]) -> None:
    """Keep ``specs`` as ``server``'s tools, replacing its earlier ones; no specs removes it."""
    path = added_path(registry)
    servers: dict[str, list[object]] = {}
    if path.is_file():
        load_added(registry)  # an unreadable file is reported, never overwritten
        servers = json.loads(path.read_text(encoding="utf-8"))
    servers.pop(server, None)
    if specs:
        servers[server] = [spec.model_dump(mode="json") for spec in specs]
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(servers, ensure_ascii=False, indent=1), encoding="utf-8")
    os.replace(partial, path)
