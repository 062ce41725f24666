"""The metadata at the head of a GGUF model file, read without loading the model.

A GGUF file starts with a table of typed key/value pairs (the chat template,
the context length the model was trained for, its name) before the tensors.
Reading it here takes a fraction of a second and needs no llama.cpp, so
``aah serve llamacpp`` can choose a chat format before starting the server,
and the choice can be tested with a small hand-written file.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import IO, Any, NamedTuple

from aah.errors import AahError

MAGIC = b"GGUF"
CHAT_TEMPLATE_KEY = "tokenizer.chat_template"

# GGUF value types: (struct format, size) for the fixed-size ones.
_FIXED: dict[int, tuple[str, int]] = {
    0: ("<B", 1),
    1: ("<b", 1),
    2: ("<H", 2),
    3: ("<h", 2),
    4: ("<I", 4),
    5: ("<i", 4),
    6: ("<f", 4),
    7: ("<?", 1),
    10: ("<Q", 8),
    11: ("<q", 8),
    12: ("<d", 8),
}
_STRING = 8
_ARRAY = 9
# Arrays (the vocabulary: tens of thousands of strings) are skipped, not kept.
_SKIPPED = object()


class GgufInfo(NamedTuple):
    """What aah reads from a GGUF header."""

    name: str | None
    architecture: str | None
    chat_template: str | None
    context_length: int | None


def read_gguf_info(path: Path) -> GgufInfo:
    """The name, chat template and trained context length in ``path``'s header.

    Raises:
        AahError: the file cannot be read or is not a GGUF model.
    """
    metadata = read_gguf_metadata(path)
    architecture = metadata.get("general.architecture")
    arch = architecture if isinstance(architecture, str) else None
    context = metadata.get(f"{arch}.context_length") if arch else None
    template = metadata.get(CHAT_TEMPLATE_KEY)
    name = metadata.get("general.name")
    return GgufInfo(
        name=name if isinstance(name, str) else None,
        architecture=arch,
        chat_template=template if isinstance(template, str) and template.strip() else None,
        context_length=context if isinstance(context, int) else None,
    )


def read_gguf_metadata(path: Path) -> dict[str, Any]:
    """Every scalar and string key of ``path``'s header (arrays are left out).

    Raises:
        AahError: the file cannot be read or is not a GGUF model.
    """
    try:
        with path.open("rb") as stream:
            return _read_header(stream, path)
    except OSError as exc:
        raise AahError(f"cannot read model file {path}: {exc.strerror}") from exc
    except (struct.error, UnicodeDecodeError, _Truncated) as exc:
        raise AahError(f"{path} is not a readable GGUF model file ({exc}): pass a .gguf") from exc


class _Truncated(Exception):
    """The header ends before its own table says it does."""


def _read_header(stream: IO[bytes], path: Path) -> dict[str, Any]:
    if stream.read(4) != MAGIC:
        raise AahError(f"{path} is not a GGUF model file (no GGUF magic): pass a .gguf")
    version = _unpack(stream, "<I", 4)
    if version < 2:
        raise AahError(f"{path} is GGUF version {version}; convert it to GGUF v2 or later")
    _unpack(stream, "<Q", 8)  # tensor count
    count = _unpack(stream, "<Q", 8)
    metadata: dict[str, Any] = {}
    for _ in range(count):
        key = _string(stream)
        value = _value(stream, _unpack(stream, "<I", 4))
        if value is not _SKIPPED:
            metadata[key] = value
    return metadata


def _value(stream: IO[bytes], kind: int) -> Any:
    if kind in _FIXED:
        return _unpack(stream, *_FIXED[kind])
    if kind == _STRING:
        return _string(stream)
    if kind == _ARRAY:
        item_kind = _unpack(stream, "<I", 4)
        length = _unpack(stream, "<Q", 8)
        if item_kind in _FIXED:
            stream.seek(_FIXED[item_kind][1] * length, 1)
        else:
            for _ in range(length):
                _value(stream, item_kind)
        return _SKIPPED
    raise _Truncated(f"unknown value type {kind}")


def _string(stream: IO[bytes]) -> str:
    length = _unpack(stream, "<Q", 8)
    raw = stream.read(length)
    if len(raw) != length:
        raise _Truncated("the header ends inside a string")
    return raw.decode("utf-8")


def _unpack(stream: IO[bytes], layout: str, size: int) -> Any:
    raw = stream.read(size)
    if len(raw) != size:
        raise _Truncated("the header ends early")
    return struct.unpack(layout, raw)[0]
