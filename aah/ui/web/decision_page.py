"""The page a decision link opens: one item, decided by touch, stored through the desk workflow.

``GET /aah/decide/<token>`` shows the one item the token names (a question,
a call to approve, an MCP server's form) with a large button for each
decision, sized for a phone; it changes nothing, so a chat service that
previews the link does not use it up. ``POST`` to the same address stores
the decision through ``DeskWorkflow`` (claimed, checked and timed as on the
desk) under the name the link was sent to, or the name typed on the page
for a group's link, then marks the link used. A link that is used,
expired, changed or for an item already decided is answered with one
line. Nothing else is reachable from here: the item's id comes only from
the signed token, and no path, query or field names another.

The page is plain HTML with one small script (its nonce in the page's
Content-Security-Policy); it sends its address (the token) to no other site
(``Referrer-Policy: same-origin``: ``no-referrer`` would make the browser's
own form post say ``Origin: null``, which ``WebGuard`` refuses), is never
cached and may not be framed. It stands behind ``WebGuard``, so only the
app's own host names reach it.
"""

from __future__ import annotations

import threading
import time
import urllib.parse
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
from starlette.middleware import Middleware

from aah.annotators import check_annotator_name
from aah.bounds import OutOfBounds, parse_json
from aah.desk import MAX_ANSWER_CHARS, DeskWorkflow, OpenedRequest, Sent
from aah.store import HumanRequestRecord, SessionStore
from aah.ui.web.approval import ProposedCall, read_decision
from aah.ui.web.auth import WebAuth
from aah.ui.web.decision_html import PageReply, item_page, line_page, nonce_of
from aah.ui.web.decision_link import (
    DECIDE_PATH,
    MAX_TOKEN_CHARS,
    NOT_A_LINK,
    USED,
    DecisionLinks,
    LinkClaims,
    link_key,
)
from aah.ui.web.elicitation import read_elicitation
from aah.ui.web.format import clip
from aah.ui.web.guard import ASGIApp, Receive, Scope, Send

# A decision with an edit's fields: well under the app's own request cap.
MAX_FORM_BYTES = 256 * 1024
# The form's fields; any others are dropped.
_FORM_FIELDS = ("name", "payload", "opened")
_MAX_FIELDS = 8
# How far back the page's "opened at" is believed, for the time a decision took.
_MAX_OPEN_SECONDS = 3600.0
_DONE = {
    "answer": "Answer sent",
    "decline": "Declined",
    "approve": "Approved",
    "edit": "Edited and approved",
    "reject": "Rejected",
    "respond": "Answered in place of",
    "terminate": "Ended the session of",
    "accept": "Accepted",
    "cancel": "Cancelled",
}


class LinkDesk:
    """The decisions links make, through the desk's workflow.

    Args:
        store: The session store.
        workflow: The desk workflow of the app (claims, checks, timing).
        links: Checks and marks the links.
        clock: Epoch seconds, for the time a decision took.
    """

    def __init__(
        self,
        store: SessionStore,
        workflow: DeskWorkflow,
        links: DecisionLinks,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.workflow = workflow
        self.links = links
        self._clock = clock
        # One decision at a time per app: a link is checked and marked used together.
        self._lock = threading.Lock()

    def show(self, token: str) -> PageReply:
        """The page for ``token``'s item, or one line saying why there is none."""
        found = self._usable(token)
        if isinstance(found, PageReply):
            return found
        claims, request = found
        now = self._clock()
        return PageReply(200, item_page(request, claims, opened=now, now=now))

    def decide(self, token: str, form: Mapping[str, str]) -> PageReply:
        """Store the decision ``form`` carries for ``token``'s item; one line says what came."""
        found = self._usable(token)
        if isinstance(found, PageReply):
            return found
        claims, request = found
        name = claims.to
        typed = form.get("name", "")
        if name is None:
            try:
                name = check_annotator_name(typed)
            except ValueError as exc:
                return self._again(request, claims, form, str(exc))
        with self._lock:
            if self.links.is_used(claims):
                return line_page(410, USED)
            if not self.workflow.open(name, request.id):
                why = "someone else has this item open, or it is not assigned to you: try later"
                return self._again(request, claims, form, why)
            opened = OpenedRequest(request.id, self._opened_at(form), request.question)
            try:
                action, sent = self._store(name, opened, request, form.get("payload", ""))
            except (ValueError, LookupError) as exc:
                self.workflow.leave(name, request.id, release=True)
                return self._again(request, claims, form, str(exc))
            self.links.mark_used(claims)
        return line_page(200, _outcome(action, sent, name))

    def _usable(self, token: str) -> tuple[LinkClaims, HumanRequestRecord] | PageReply:
        check = self.links.check(token)
        if check.claims is None:
            return line_page(404 if check.problem == NOT_A_LINK else 410, check.problem)
        request = self.store.humans.get_human_request(check.claims.request_id)
        if request is None:
            return line_page(410, "This item is gone from the queue: nothing is left to decide.")
        if request.status != "pending":
            who = f" by {request.answered_by}" if request.answered_by else ""
            return line_page(410, f"This item was already decided{who}: nothing is left to do.")
        closed = self.store.humans.closed_reason(request.id)
        if closed is not None:
            return line_page(410, f"This item no longer waits for a decision: {_lower(closed)}.")
        return check.claims, request

    def _store(
        self, name: str, opened: OpenedRequest, request: HumanRequestRecord, payload: str
    ) -> tuple[str, Sent]:
        if request.kind == "approval":
            decision = read_decision(request, payload)
            sent = self.workflow.decide(
                name,
                opened,
                decision.decision,
                arguments=decision.arguments,
                reason=decision.reason,
                response=decision.response,
            )
            return decision.decision, sent
        if request.kind == "elicitation":
            result = read_elicitation(request, payload)
            return result.action, self.workflow.elicited(name, opened, result)
        try:
            data = parse_json(payload, "the answer", max_chars=4 * MAX_ANSWER_CHARS)
        except (OutOfBounds, ValueError):
            data = None
        if not isinstance(data, dict) or data.get("action") not in ("answer", "decline"):
            raise ValueError("press Send or Decline")
        text = data.get("text")
        text = text if isinstance(text, str) else ""
        declined = data["action"] == "decline"
        return str(data["action"]), self.workflow.answer(name, opened, text, declined=declined)

    def _again(
        self, request: HumanRequestRecord, claims: LinkClaims, form: Mapping[str, str], why: str
    ) -> PageReply:
        page = item_page(
            request,
            claims,
            opened=self._opened_at(form),
            now=self._clock(),
            problem=why,
            name=form.get("name", ""),
            sent=form.get("payload", ""),
        )
        return PageReply(400, page)

    def _opened_at(self, form: Mapping[str, str]) -> float:
        now = self._clock()
        try:
            opened = float(form.get("opened", ""))
        except ValueError:
            return now
        return opened if now - _MAX_OPEN_SECONDS <= opened <= now else now


def _outcome(action: str, sent: Sent, name: str) -> str:
    if sent.outcome == "closed":
        return f"Not used: {_lower(sent.closed or 'the item closed')}."
    if sent.outcome == "repeat":
        return f"{name} had already decided this item; the first decision stands."
    if sent.outcome != "settled":
        return "Someone decided this item first; yours is kept for agreement."
    what = _summary(sent.request)
    done = _DONE.get(action, "Sent")
    return f"{done}: {what}. Stored as {name}'s decision; you may close this page."


def _summary(request: HumanRequestRecord) -> str:
    if request.kind == "approval":
        return clip(ProposedCall.of(request).summary, 80)
    return f"“{clip(' '.join(request.question.split()), 80)}”"


def _lower(text: str) -> str:
    return (text[:1].lower() + text[1:]).rstrip(".")


# -- serving --------------------------------------------------------------------


class DecisionLinkPage:
    """ASGI middleware that answers ``/aah/decide/<token>`` and passes everything else on.

    Args:
        app: The application behind it.
        desk: Shows items and stores decisions; None: links are off on this app.
    """

    def __init__(self, app: ASGIApp, desk: LinkDesk | None) -> None:
        self.app = app
        self.desk = desk

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer one ASGI connection."""
        path = str(scope.get("path", ""))
        if scope["type"] != "http" or not (path + "/").startswith(DECIDE_PATH):
            await self.app(scope, receive, send)
            return
        token = path[len(DECIDE_PATH) :]
        method = scope.get("method")
        if self.desk is None:
            await _reply(send, line_page(404, "Links that decide are off on this server."))
        elif not token or len(token) > MAX_TOKEN_CHARS or "/" in token:
            await _reply(send, line_page(404, NOT_A_LINK))
        elif method in ("GET", "HEAD"):
            await _reply(send, await anyio.to_thread.run_sync(self.desk.show, token))
        elif method != "POST":
            await _reply(send, line_page(405, "Open the link, then press a button."))
        else:
            form = await _read_form(scope, receive)
            if isinstance(form, PageReply):
                await _reply(send, form)
            else:
                await _reply(send, await anyio.to_thread.run_sync(self.desk.decide, token, form))


async def _read_form(scope: Scope, receive: Receive) -> dict[str, str] | PageReply:
    headers = scope.get("headers", ())
    kinds = [bytes(v).decode("latin-1") for k, v in headers if bytes(k).lower() == b"content-type"]
    if len(kinds) != 1 or kinds[0].split(";")[0].strip().lower() != (
        "application/x-www-form-urlencoded"
    ):
        return line_page(415, "Send the page's own form.")
    body = b""
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return line_page(400, "The page's form did not arrive: press the button again.")
        body += bytes(message.get("body", b""))
        if len(body) > MAX_FORM_BYTES:
            return line_page(413, "The form is too long: shorten what you typed.")
        if not message.get("more_body", False):
            break
    try:
        fields = urllib.parse.parse_qs(
            body.decode("utf-8"), keep_blank_values=True, max_num_fields=_MAX_FIELDS
        )
    except (UnicodeDecodeError, ValueError):
        return line_page(400, "The form could not be read: open the link again.")
    return {key: values[0] for key, values in fields.items() if key in _FORM_FIELDS}


async def _reply(send: Send, page: PageReply) -> None:
    body = page.body.encode()
    nonce = nonce_of(page.body)
    script = f"'nonce-{nonce}'" if nonce else "'none'"
    policy = (
        f"default-src 'none'; style-src 'unsafe-inline'; script-src {script}; "
        "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    )
    headers = [
        (b"content-type", b"text/html; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
        (b"referrer-policy", b"same-origin"),
        (b"x-frame-options", b"DENY"),
        (b"x-content-type-options", b"nosniff"),
        (b"content-security-policy", policy.encode()),
    ]
    await send({"type": "http.response.start", "status": page.status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


# -- mounting on the app --------------------------------------------------------

_DESKS: weakref.WeakKeyDictionary[Any, LinkDesk | None] = weakref.WeakKeyDictionary()


def attach_decision_links(
    app: Any, db: Path, store: SessionStore, workflow: DeskWorkflow, auth: WebAuth
) -> None:
    """Give ``app`` (a Gradio Blocks) the page of decision links, for ``launch_app`` to serve."""
    key = link_key(db.parent, auth)
    _DESKS[app] = None if key is None else LinkDesk(store, workflow, DecisionLinks(key, store))


def decision_middleware(app: Any) -> list[Middleware]:
    """The middleware that serves ``app``'s decision links (none for an app not attached)."""
    if app not in _DESKS:
        return []
    return [Middleware(DecisionLinkPage, desk=_DESKS[app])]
