"""Turning an endpoint spec and an agent's arguments into one HTTP request.

Rules, the same in every HTTP mode:

- Path values are percent-encoded as one segment (``/``, ``?`` and ``#``
  included) and a bare ``.`` or ``..`` is refused, so an argument can never
  change the path, the query or the host.
- Query values go in the query string (a list repeats the key), body values
  form one JSON object (or form fields, for a spec whose ``body_encoding`` is
  ``form``), header values become headers.
- ``None`` means "not given": the argument is left out.
- Declared defaults are not filled in; the server applies its own.
- An argument the spec does not declare, or a missing path argument, makes
  the call impossible: :class:`RequestError`, and no request is sent. So does
  a path value of ``.`` or ``..``.
- ``Host``, ``Content-Length``, the hop-by-hop headers and ``Proxy-*`` are
  never set from an argument, even when a spec declares them (the importer
  leaves them out; a registry built before that, or a project fix, could
  still hold one), and a header value cannot hold a line break, so no
  argument can redirect the request or smuggle another one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, NamedTuple
from urllib.parse import quote, urlencode, urlsplit

from aah.tools.spec import EndpointSpec, ParamLocation, header_is_sendable

_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")
_LINE_BREAKS = re.compile(r"[\r\n\x00]")


class RequestError(ValueError):
    """A call that cannot become a request; the message is shown to the agent."""


class HttpRequest(NamedTuple):
    """Everything needed to send one request (the URL holds no added query yet)."""

    method: str
    url: str
    params: list[tuple[str, str]]
    headers: dict[str, str]
    json_body: dict[str, Any] | None
    form_body: list[tuple[str, str]] | None = None


def build_request(spec: EndpointSpec, arguments: Mapping[str, Any]) -> HttpRequest:
    """Place each argument where its parameter says.

    Args:
        spec: The endpoint being called.
        arguments: Values by parameter name; ``None`` values are left out.

    Returns:
        The request to send.

    Raises:
        RequestError: An argument is unknown, a path argument is missing, or
            a header argument names a header only the HTTP layer may set.
    """
    given = {name: value for name, value in arguments.items() if value is not None}
    unknown = sorted(name for name in given if spec.parameter(name) is None)
    if unknown:
        known = ", ".join(p.name for p in spec.parameters) or "none"
        raise RequestError(
            f"unknown argument(s) {', '.join(unknown)} for {spec.qualified_name} (known: {known})"
        )
    params: list[tuple[str, str]] = []
    headers: dict[str, str] = {}
    body: dict[str, Any] = {}
    path_values: dict[str, str] = {}
    for parameter in spec.parameters:
        if parameter.name not in given:
            continue
        value = given[parameter.name]
        if parameter.location is ParamLocation.PATH:
            path_values[parameter.name] = path_segment(value)
        elif parameter.location is ParamLocation.QUERY:
            params.extend(query_pairs(parameter.name, value))
        elif parameter.location is ParamLocation.HEADER:
            headers[parameter.name] = header_value(parameter.name, value)
        else:
            body[parameter.name] = value
    url = fill_template(spec, path_values)
    if spec.body_encoding == "form" and body:
        form = [pair for name, value in body.items() for pair in query_pairs(name, value)]
        return HttpRequest(spec.method, url, params, headers, None, form)
    return HttpRequest(spec.method, url, params, headers, body or None)


def fill_template(spec: EndpointSpec, path_values: Mapping[str, str]) -> str:
    """The URL template with every ``{placeholder}`` replaced by an encoded value."""
    missing = [name for name in _PLACEHOLDER.findall(spec.url_template) if name not in path_values]
    if missing:
        raise RequestError(
            f"missing path argument(s) {', '.join(missing)} for {spec.qualified_name}"
        )
    return _PLACEHOLDER.sub(lambda match: path_values[match.group(1)], spec.url_template)


def path_segment(value: Any) -> str:
    """``value`` encoded so that it stays exactly one path segment.

    Raises:
        RequestError: The value is ``.`` or ``..``, which every URL resolver
            treats as a move within the path (requests even decodes ``%2E``).
    """
    text = scalar_text(value)
    if text in (".", ".."):
        raise RequestError(f"a path argument cannot be {text!r}")
    return quote(text, safe="")


def header_value(name: str, value: Any) -> str:
    """The text of a header argument, refused where no argument may set it.

    Raises:
        RequestError: ``name`` is the host, a length or a hop-by-hop header,
            or the value holds a line break.
    """
    if not header_is_sendable(name):
        raise RequestError(f"header {name!r} is set by the HTTP layer, never by a tool call")
    text = scalar_text(value)
    if _LINE_BREAKS.search(text):
        raise RequestError(f"header {name!r} cannot hold a line break")
    return text


def query_pairs(name: str, value: Any) -> list[tuple[str, str]]:
    """Query pairs for one argument: a list or tuple repeats the key."""
    if isinstance(value, list | tuple):
        return [(name, scalar_text(item)) for item in value]
    return [(name, scalar_text(value))]


def scalar_text(value: Any) -> str:
    """How a value is written in a URL or header: JSON spelling for non-strings."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list | tuple):
        return ",".join(scalar_text(item) for item in value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def full_url(request: HttpRequest) -> str:
    """The URL with the query parameters added, for results and logs."""
    if not request.params:
        return request.url
    joiner = "&" if urlsplit(request.url).query else "?"
    return f"{request.url}{joiner}{urlencode(request.params)}"


def same_host(url: str, host: str) -> bool:
    """Whether ``url`` is an http(s) URL on exactly ``host`` (``host[:port]``).

    A default port written out (``:443`` for https, ``:80`` for http) counts
    as absent, so ``http://api.example.org`` may upgrade to https.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return False
    return _bare_netloc(parts.netloc, parts.scheme) == _bare_netloc(host, parts.scheme)


def _bare_netloc(netloc: str, scheme: str) -> str:
    default = {"http": ":80", "https": ":443"}[scheme]
    netloc = netloc.lower()
    return netloc.removesuffix(default)
