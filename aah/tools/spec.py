"""The one model every endpoint is normalized into, whatever its source."""

from __future__ import annotations

import hashlib
import re
from enum import StrEnum
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, Field

JsonType = Literal["string", "integer", "number", "boolean", "array", "object"]
HttpMethod = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
# How body parameters are sent: one JSON object, or HTML-form fields.
BodyEncoding = Literal["json", "form"]

# OpenAI function names allow [a-zA-Z0-9_-]{1,64}; qualified names must fit.
MAX_NAME_LENGTH = 64
NAME_SEPARATOR = "__"
_UNSAFE_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_-]+")
# Headers only the HTTP layer may decide: the host a request goes to, and the
# hop-by-hop headers that govern one connection (RFC 9110 section 7.6.1).
# An argument that set them could send the request to another virtual host
# or smuggle a second request.
_UNSENDABLE_HEADERS = frozenset(
    {
        "host",
        "connection",
        "keep-alive",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "content-length",
    }
)


class ParamLocation(StrEnum):
    """Where an argument goes in the HTTP request."""

    PATH = "path"
    QUERY = "query"
    BODY = "body"
    HEADER = "header"


class ParameterSpec(BaseModel):
    """One argument of an endpoint, typed with a JSON-schema type."""

    name: str
    type: JsonType = "string"
    required: bool = False
    default: Any = None
    description: str = ""
    location: ParamLocation = ParamLocation.QUERY
    items_type: JsonType | None = None
    enum: list[Any] | None = None
    # The parameter's whole JSON Schema where the fields above cannot carry it
    # (an object's properties, an array's item objects, at any depth), offered
    # to the model as is. Left out of dumps when absent, so the specs of
    # registries built before it hash as they did.
    json_schema: dict[str, Any] | None = Field(default=None, exclude_if=lambda v: v is None)
    # The name the source knows the parameter by, where it differs from the
    # name shown and offered (an MCP server's name holding control or
    # invisible characters): a call is sent with it. Left out when absent.
    source_name: str | None = Field(default=None, exclude_if=lambda v: v is None)


class ResponseSketch(BaseModel):
    """What a response looks like: a template, a JSON schema or an example."""

    kind: Literal["template", "schema", "example", "none"] = "none"
    content: Any = None
    status: int = 200
    media_type: str = "application/json"


# An HTTP call's result has a status; an MCP tool's result is ok or an error, no status.
ToolProtocol = Literal["http", "mcp"]


class EndpointSource(BaseModel):
    """Where a spec came from: the source kind, the file, and an id inside it."""

    kind: Literal["fail-talms", "openapi", "builtin", "mcp"]
    file: str = ""
    id: str = ""


class EndpointSpec(BaseModel):
    """One callable HTTP endpoint, ready to be wrapped as a tool."""

    tool: str
    category: str
    name: str
    qualified_name: str
    description: str = ""
    method: HttpMethod = "GET"
    url_template: str
    body_encoding: BodyEncoding = "json"
    parameters: list[ParameterSpec] = Field(default_factory=list)
    response: ResponseSketch = Field(default_factory=ResponseSketch)
    source: EndpointSource
    repairs: list[str] = Field(default_factory=list)

    @property
    def host(self) -> str:
        """The only host this endpoint may call (``netloc`` of its URL)."""
        return urlsplit(self.url_template).netloc

    @property
    def protocol(self) -> ToolProtocol:
        """How the tool is called: as an HTTP endpoint, or as a tool of an MCP server."""
        return "mcp" if self.source.kind == "mcp" else "http"

    @property
    def base_url(self) -> str:
        """Scheme and host of the URL, e.g. ``https://api.example.org``."""
        parts = urlsplit(self.url_template)
        return f"{parts.scheme}://{parts.netloc}"

    def parameter(self, name: str) -> ParameterSpec | None:
        """The parameter called ``name``, if the endpoint has one."""
        return next((p for p in self.parameters if p.name == name), None)

    @property
    def required_names(self) -> list[str]:
        """Names of the required parameters, in declaration order."""
        return [p.name for p in self.parameters if p.required]


class Rejection(BaseModel):
    """An entry of a source that could not become an endpoint, and why."""

    source: EndpointSource
    tool: str
    name: str
    reason: str


class ImportResult(BaseModel):
    """What an importer made of a source: endpoints plus documented rejects."""

    endpoints: list[EndpointSpec] = Field(default_factory=list)
    rejections: list[Rejection] = Field(default_factory=list)

    def extend(self, other: ImportResult) -> None:
        """Append another result's endpoints and rejections to this one."""
        self.endpoints.extend(other.endpoints)
        self.rejections.extend(other.rejections)


def safe_name(text: str) -> str:
    """``text`` reduced to the characters a function name may hold."""
    cleaned = _UNSAFE_NAME_CHARS.sub("_", text.strip()).strip("_")
    return cleaned or "unnamed"


def qualified_name(tool: str, endpoint: str) -> str:
    """``<tool>__<endpoint>``, made safe and kept within 64 characters.

    A name that would be too long is cut and given a short hash of the full
    name, so two long names never collide.
    """
    full = f"{safe_name(tool)}{NAME_SEPARATOR}{safe_name(endpoint)}"
    if len(full) <= MAX_NAME_LENGTH:
        return full
    digest = hashlib.sha1(full.encode()).hexdigest()[:8]
    return f"{full[: MAX_NAME_LENGTH - 9]}_{digest}"


def header_is_sendable(name: str) -> bool:
    """Whether a tool call may set the header ``name``.

    ``Host``, ``Content-Length``, the hop-by-hop headers and every
    ``Proxy-*`` header are the HTTP layer's alone.
    """
    lowered = name.strip().lower()
    return lowered not in _UNSENDABLE_HEADERS and not lowered.startswith("proxy-")
