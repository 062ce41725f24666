r"""Reading a source file into plain data, within bounds a hostile file cannot push.

A spec file is untrusted input: the registry build must survive any file and
name the one it could not read. So, before anything else looks at the data:

- a file larger than ``max_bytes`` (20 MB unless the build says otherwise) is
  not read at all;
- text must be UTF-8 (a leading byte-order mark is allowed);
- YAML aliases are shared, not copied, while loading, so an 800-byte file
  can describe a billion nodes ("billion laughs"); every later step walks the
  expanded tree, so the tree is measured as if expanded, without expanding
  it, and refused past ``MAX_EXPANDED_NODES``; an alias inside itself (a
  cycle, which JSON cannot express) is refused too;
- nesting deeper than ``MAX_NESTING`` levels is refused, so no later step
  runs out of Python's recursion limit (a parser that does is caught too).

YAML is read with libyaml when PyYAML has it (about six times faster on a
large spec), but only after a pass over the parser's events has shown the
nesting is within bounds: libyaml's composer recurses in C and crashes the
process on very deep input instead of raising.

Each refusal is a :class:`SpecFileError` whose message is the reason.

Text the store cannot hold (a ``\ud800`` escape, NUL) is replaced by U+FFFD
as the data is read, the one boundary every spec file, tool list and repair
file passes, so no later step (hashing, the index, an event) meets it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml
from yaml.events import MappingEndEvent, MappingStartEvent, SequenceEndEvent, SequenceStartEvent

from aah.bounds import MAX_NESTING
from aah.peer_read import NotARegularFile, PeerBound, PeerOutOfBounds, read_file
from aah.storable import storable_text

DEFAULT_MAX_SPEC_BYTES = 20_000_000
# The real specs hold a few thousand nodes.
MAX_EXPANDED_NODES = 2_000_000


class SpecFileError(ValueError):
    """A file that cannot be read as data within bounds; the message says why."""


class SpecLoader(yaml.SafeLoader):
    """A safe loader that reads scalars the way JSON would.

    Dates stay text and only true/false are booleans (YAML 1.1 would read a
    country code ``NO`` as False).
    """


_JSON_LIKE_RESOLVERS = {
    first: [(tag, regex) for tag, regex in resolvers if not tag.endswith(("timestamp", "bool"))]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
SpecLoader.yaml_implicit_resolvers = _JSON_LIKE_RESOLVERS
SpecLoader.add_implicit_resolver("tag:yaml.org,2002:bool", _BOOL, list("tTfF"))

_FastSpecLoader: type[Any] | None = None
if yaml.__with_libyaml__:

    class _LibyamlSpecLoader(yaml.CSafeLoader):
        """:class:`SpecLoader`'s reading of scalars on libyaml's parser."""

    _LibyamlSpecLoader.yaml_implicit_resolvers = SpecLoader.yaml_implicit_resolvers
    _FastSpecLoader = _LibyamlSpecLoader


def _size_of(path: Path, at_least: int) -> int:
    """The file's size as the folder tells it (what was read, if it cannot)."""
    try:
        return max(path.stat().st_size, at_least)
    except OSError:
        return at_least


def read_text(path: Path, max_bytes: int = DEFAULT_MAX_SPEC_BYTES) -> str:
    """The UTF-8 text of ``path``, refused when the file is over ``max_bytes``.

    Raises:
        SpecFileError: the file cannot be read, is too large or is not UTF-8.
    """
    try:
        data = read_file(path, PeerBound(str(path), max_bytes))
    except NotARegularFile:
        # A pipe or a device would never end, or block the build forever.
        raise SpecFileError("is not a regular file") from None
    except PeerOutOfBounds as error:
        raise SpecFileError(
            f"is {_size_of(path, error.bound.max_bytes + 1):,} bytes, over the {max_bytes:,}-byte "
            "cap on a spec file (raise it with `aah tools build --max-spec-mb`)"
        ) from None
    except OSError as error:
        raise SpecFileError(f"cannot be read ({error.strerror})") from error
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        byte = data[error.start]
        raise SpecFileError(
            f"is not UTF-8 text (byte 0x{byte:02x} at offset {error.start}): save it as UTF-8"
        ) from error


def load_json(path: Path, max_bytes: int = DEFAULT_MAX_SPEC_BYTES) -> Any:
    """The JSON value in ``path``, checked by :func:`check_bounds`.

    Raises:
        SpecFileError: the file is unreadable, not JSON, or out of bounds.
    """
    text = read_text(path, max_bytes)
    try:
        data = json.loads(text)
    except RecursionError as error:
        raise SpecFileError(f"nests deeper than {MAX_NESTING} levels") from error
    except ValueError as error:
        raise SpecFileError(f"not valid JSON ({error})") from error
    check_bounds(data)
    return storable_data(data)


def load_yaml(path: Path, max_bytes: int = DEFAULT_MAX_SPEC_BYTES) -> Any:
    """The YAML (or JSON) value in ``path``, read with :class:`SpecLoader` and checked.

    Raises:
        SpecFileError: the file is unreadable, not YAML, or out of bounds.
    """
    text = read_text(path, max_bytes)
    loader: type[Any] = SpecLoader
    try:
        if _FastSpecLoader is not None:
            _check_yaml_nesting(text, _FastSpecLoader)
            loader = _FastSpecLoader
        data = yaml.load(text, Loader=loader)
    except RecursionError as error:
        raise SpecFileError(f"nests deeper than {MAX_NESTING} levels") from error
    except yaml.YAMLError as error:
        first = str(error).strip().splitlines()[0]
        raise SpecFileError(f"not valid YAML ({first})") from error
    check_bounds(data)
    return storable_data(data)


def storable_data(data: Any) -> Any:
    """``data`` with :func:`~aah.storable.storable_text` applied to every string, keys too.

    Containers YAML aliases share stay shared (each is visited once), so the
    walk costs time in proportion to the file, not to its expansion. Call it
    after :func:`check_bounds`: it assumes no cycle.
    """
    done: dict[int, Any] = {}

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            return storable_text(node)
        if not isinstance(node, dict | list):
            return node
        key = id(node)
        if key not in done:
            if isinstance(node, dict):
                done[key] = {walk(name): walk(value) for name, value in node.items()}
            else:
                done[key] = [walk(item) for item in node]
        return done[key]

    return walk(data)


def _check_yaml_nesting(text: str, loader: type[Any]) -> None:
    # Events come from the parser's own loop, which keeps its stack on the
    # heap, so this pass is safe at any depth and stops at the first level
    # past the bound.
    depth = 0
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, MappingStartEvent | SequenceStartEvent):
            depth += 1
            if depth > MAX_NESTING:
                raise SpecFileError(f"nests deeper than {MAX_NESTING} levels")
        elif isinstance(event, MappingEndEvent | SequenceEndEvent):
            depth -= 1


def check_bounds(data: Any) -> None:
    """Refuse data that nests too deep, holds a cycle, or expands too large.

    The walk visits each distinct container once (aliases share containers),
    so it costs time in proportion to the file, not to its expansion.

    Raises:
        SpecFileError: the data is out of bounds; the message says which.
    """
    measured: dict[int, tuple[int, int]] = {}
    open_now: set[int] = set()
    stack: list[tuple[Any, bool]] = [(data, False)]
    while stack:
        node, finished = stack.pop()
        if not isinstance(node, dict | list):
            continue
        children = list(node.values()) if isinstance(node, dict) else node
        key = id(node)
        if finished:
            open_now.discard(key)
            size, height = 1, 1
            for child in children:
                child_size, child_height = measured.get(id(child), (1, 0))
                size += child_size
                height = max(height, child_height + 1)
            if height > MAX_NESTING:
                raise SpecFileError(f"nests deeper than {MAX_NESTING} levels")
            if size > MAX_EXPANDED_NODES:
                raise SpecFileError(
                    f"expands past {MAX_EXPANDED_NODES:,} nodes through YAML aliases "
                    "(an alias bomb?): write the repeated parts out or use $ref"
                )
            measured[key] = (size, height)
            continue
        if key in measured:
            continue
        if key in open_now:
            raise SpecFileError("a YAML alias is used inside itself (a cycle JSON cannot hold)")
        open_now.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children if isinstance(child, dict | list))
