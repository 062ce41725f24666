"""Local ``$ref`` resolution for OpenAPI 3 and Swagger 2 documents.

Only references inside the same document (``#/components/...``,
``#/definitions/...``) are followed: the importer reads one file and never
fetches another.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

# Dict levels kept when a schema is inlined for a response sketch; a schema
# level is about two dict levels (``properties`` -> name -> schema).
DEFAULT_INLINE_DEPTH = 12
# Nodes one inlined schema may hold. References can fan out (ten ``allOf``
# members naming a schema with ten more...), so depth alone does not bound
# the copy; the real specs' largest inlined schema holds about 400.
DEFAULT_INLINE_NODES = 20_000


class RefError(ValueError):
    """A ``$ref`` that cannot be followed: not local, dangling or circular."""


def resolve_pointer(document: Any, ref: str) -> Any:
    """The node a local JSON pointer (``#/a/b``) names in ``document``.

    Raises:
        RefError: the reference is not local or names nothing.
    """
    if not ref.startswith("#"):
        raise RefError(f"$ref {_shown(ref)} points outside the document")
    node = document
    for raw_token in ref[1:].split("/")[1:]:
        token = unquote(raw_token).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            raise RefError(f"$ref {_shown(ref)} points at nothing")
    return node


def _shown(ref: str) -> str:
    # A reference is the file's text: keep a rejection line short.
    return repr(ref if len(ref) <= 120 else ref[:117] + "...")


def deref(document: Any, node: Any) -> Any:
    """``node`` itself, or what its ``$ref`` chain ends at.

    Raises:
        RefError: a reference in the chain cannot be followed or loops.
    """
    seen: set[str] = set()
    while isinstance(node, dict) and isinstance(node.get("$ref"), str):
        ref = node["$ref"]
        if ref in seen:
            raise RefError(f"$ref {_shown(ref)} refers back to itself")
        seen.add(ref)
        node = resolve_pointer(document, ref)
    return node


def inline(
    document: Any,
    node: Any,
    max_depth: int = DEFAULT_INLINE_DEPTH,
    max_nodes: int = DEFAULT_INLINE_NODES,
) -> Any:
    """A copy of ``node`` with every ``$ref`` replaced by what it names.

    A reference back into its own chain (a recursive schema) and anything
    deeper than ``max_depth`` dict levels is cut to a short placeholder, so
    the result is always finite and small enough to show.

    Raises:
        RefError: the copy would hold more than ``max_nodes`` nodes.
    """
    return _Inliner(document, max_nodes).copy(node, max_depth, ())


class _Inliner:
    """One inlining pass, counting the nodes it has made."""

    def __init__(self, document: Any, max_nodes: int) -> None:
        self.document = document
        self.left = max_nodes
        self.max_nodes = max_nodes

    def copy(self, node: Any, depth: int, trail: tuple[str, ...]) -> Any:
        self.left -= 1
        if self.left < 0:
            raise RefError(
                f"a schema expands past {self.max_nodes:,} nodes through $ref "
                "(references that fan out)"
            )
        if isinstance(node, list):
            return [self.copy(item, depth, trail) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            if ref in trail:
                return {"description": f"(recursive: {ref})"}
            try:
                target = resolve_pointer(self.document, ref)
            except RefError as error:
                return {"description": f"(unresolved: {error})"}
            return self.copy(target, depth, (*trail, ref))
        if depth <= 0:
            # Keep what describes this level (type, format, description).
            return {key: value for key, value in node.items() if not isinstance(value, dict | list)}
        return {key: self.copy(value, depth - 1, trail) for key, value in node.items()}
