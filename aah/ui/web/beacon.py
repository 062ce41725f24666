"""The page's last word: ``POST /aah/release`` lets go of a question as the page goes away.

A closed tab runs no more Gradio events, but a browser still sends a
beacon (``navigator.sendBeacon``) while it hides or unloads the page. The
beacon names the open question and carries the page's signed sign-in, so
that only the annotator who holds a claim can end it; anything else is
answered with one line and changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio

from aah.bounds import parse_json
from aah.ui.web.guard import ASGIApp, Receive, Scope, Send, plain_reply

RELEASE_PATH = "/aah/release"
# A token and a request id: a few hundred bytes.
MAX_BEACON_BYTES = 4_096

# (signed sign-in, request id) -> whether the sign-in holds; releases the claim.
Release = Callable[[str, str], bool]


def beacon_fields(body: bytes) -> tuple[str, str] | None:
    """The signed sign-in and the request id a beacon's JSON body names, or None."""
    try:
        data = parse_json(body.decode("utf-8"), "a release")
    except ValueError:  # not UTF-8, not JSON, or nested too deep
        return None
    if not isinstance(data, dict):
        return None
    token, request_id = data.get("token"), data.get("request_id")
    if not isinstance(token, str) or not isinstance(request_id, str):
        return None
    if not token or not request_id or len(request_id) > 200:
        return None
    return token, request_id


class ClaimBeacon:
    """ASGI middleware that answers ``POST /aah/release`` and passes everything else on.

    Args:
        app: The application behind it.
        release: Checks the signed sign-in and lets go of the claim.
    """

    def __init__(self, app: ASGIApp, release: Release) -> None:
        self.app = app
        self.release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer one ASGI connection."""
        if scope["type"] != "http" or str(scope.get("path", "")).rstrip("/") != RELEASE_PATH:
            await self.app(scope, receive, send)
            return
        if scope.get("method") != "POST":
            await plain_reply(send, 405, "send the release as a POST")
            return
        body = b""
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            body += bytes(message.get("body", b""))
            if len(body) > MAX_BEACON_BYTES:
                await plain_reply(send, 413, "a release names one question: the body is too long")
                return
            if not message.get("more_body", False):
                break
        fields = beacon_fields(body)
        if fields is None:
            await plain_reply(send, 400, 'send {"token": ..., "request_id": ...} as JSON')
            return
        if not await anyio.to_thread.run_sync(self.release, *fields):
            await plain_reply(send, 403, "that sign-in has expired: sign in again")
            return
        await plain_reply(send, 204, "")
