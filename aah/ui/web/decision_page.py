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
Content-Security-Policy); it sends no referrer, is never cached and may not
be framed. It stands behind ``WebGuard``, so only the app's own host names
reach it.
"""

from __future__ import annotations

import html
import secrets
import threading
import time
import urllib.parse
import weakref
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import anyio
from starlette.middleware import Middleware

from aah.annotators import check_annotator_name
from aah.bounds import OutOfBounds, parse_json
from aah.desk import MAX_ANSWER_CHARS, DeskWorkflow, ElicitationRequest, OpenedRequest, Sent
from aah.store import HumanRequestRecord, SessionStore
from aah.ui.web.approval import MAX_REASON_CHARS, ProposedCall, call_html, read_decision
from aah.ui.web.auth import WebAuth
from aah.ui.web.decision_link import (
    DECIDE_PATH,
    MAX_TOKEN_CHARS,
    NOT_A_LINK,
    USED,
    DecisionLinks,
    LinkClaims,
    link_key,
)
from aah.ui.web.elicitation import field_html, read_elicitation
from aah.ui.web.format import clip
from aah.ui.web.guard import ASGIApp, Receive, Scope, Send

# A decision with an edit's fields: well under the app's own request cap.
MAX_FORM_BYTES = 256 * 1024
# The form's fields; any others are dropped.
_FORM_FIELDS = ("name", "payload", "opened")
_MAX_FIELDS = 8
# How far back the page's "opened at" is believed, for the time a decision took.
_MAX_OPEN_SECONDS = 3600.0
_STYLE = """
body { font: 18px/1.4 system-ui, sans-serif; margin: 0; padding: 12px; color: #111; }
main { max-width: 40em; margin: 0 auto; }
h1 { font-size: 1.2em; margin: 0.2em 0 0.4em; }
.meta { color: #555; font-size: 0.85em; margin: 0 0 0.6em; }
#decide-item { border: 1px solid #ccc; border-radius: 8px; padding: 0.5em 0.7em;
  overflow-wrap: anywhere; }
#decide-item .ask { white-space: pre-wrap; font-weight: 600; }
label { display: block; margin: 0.6em 0 0.2em; font-weight: 600; }
input[type=text], input[type=email], input[type=url], input[type=date], textarea, select {
  width: 100%; box-sizing: border-box; font: inherit; padding: 0.4em; border: 1px solid #999;
  border-radius: 6px; min-height: 2.6em; }
.aah-field { margin: 0.4em 0; }
.aah-about, .aah-type { color: #666; font-size: 0.85em; }
.aah-required { color: #a40; font-size: 0.85em; }
#approval-fields :disabled { background: #f4f4f4; color: #222; }
.buttons { display: flex; flex-wrap: wrap; gap: 0.5em; margin: 0.8em 0; }
.buttons button { flex: 1 1 8em; min-height: 3em; font: inherit; font-weight: 600;
  border-radius: 8px; border: 1px solid #777; background: #f2f2f2; }
.buttons button.go { background: #3f51b5; border-color: #3f51b5; color: #fff; }
#decide-problem { color: #a40; font-weight: 600; }
#decide-line { font-size: 1.1em; }
"""
_SCRIPT = """(() => {
  const main = document.getElementById("decide");
  const form = document.getElementById("decide-form");
  const payload = document.getElementById("decide-payload");
  const nameBox = document.getElementById("decide-name");
  if (!main || !form || !payload) return;
  if (nameBox && !nameBox.value) nameBox.value = localStorage.getItem("aah-link-name") || "";
  const value = (id) => { const el = document.getElementById(id); return el ? el.value : ""; };
  const gather = (act) => {
    const kind = main.dataset.kind;
    if (kind === "question") return { action: act, text: value("decide-answer") };
    if (kind === "approval") {
      const fields = {};
      for (const el of document.querySelectorAll("#approval-fields [data-arg]")) {
        if (["INPUT", "SELECT", "TEXTAREA"].includes(el.tagName)) fields[el.dataset.arg] = el.value;
      }
      return { decision: act, fields: fields, reason: value("decide-reason"),
               response: value("decide-response") };
    }
    const content = {};
    for (const el of document.querySelectorAll("#decide-item [data-field]")) {
      if (el.type === "checkbox") content[el.dataset.field] = el.checked;
      else if (el.multiple) {
        const chosen = Array.from(el.selectedOptions).map((option) => option.value);
        if (chosen.length) content[el.dataset.field] = chosen;
      } else if (el.value !== "") content[el.dataset.field] = el.value;
    }
    return { action: act, content: act === "accept" ? content : null };
  };
  let sending = false;
  document.addEventListener("click", (event) => {
    const target = event.target && event.target.closest ? event.target : null;
    const show = target && target.closest("[data-show]");
    if (show) {
      for (const panel of document.querySelectorAll(".decide-panel")) {
        panel.hidden = panel.id !== "panel-" + show.dataset.show;
      }
      const editing = show.dataset.show === "edit";
      for (const el of document.querySelectorAll("#approval-fields [data-arg]")) {
        if (["INPUT", "SELECT", "TEXTAREA"].includes(el.tagName)) el.disabled = !editing;
      }
      return;
    }
    const act = target && target.closest("[data-act]");
    if (!act || sending) return;
    payload.value = JSON.stringify(gather(act.dataset.act));
    if (nameBox) localStorage.setItem("aah-link-name", nameBox.value);
    sending = true;
    form.submit();
  });
})();"""
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


class PageReply(NamedTuple):
    """What the link's page answers: an HTTP status and a whole HTML page."""

    status: int
    body: str


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
        return PageReply(200, _item_page(request, claims, opened=now, now=now))

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
                return _line_page(410, USED)
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
        return _line_page(200, _outcome(action, sent, name))

    def _usable(self, token: str) -> tuple[LinkClaims, HumanRequestRecord] | PageReply:
        check = self.links.check(token)
        if check.claims is None:
            return _line_page(404 if check.problem == NOT_A_LINK else 410, check.problem)
        request = self.store.humans.get_human_request(check.claims.request_id)
        if request is None:
            return _line_page(410, "This item is gone from the queue: nothing is left to decide.")
        if request.status != "pending":
            who = f" by {request.answered_by}" if request.answered_by else ""
            return _line_page(410, f"This item was already decided{who}: nothing is left to do.")
        closed = self.store.humans.closed_reason(request.id)
        if closed is not None:
            return _line_page(410, f"This item no longer waits for a decision: {_lower(closed)}.")
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
        page = _item_page(
            request,
            claims,
            opened=self._opened_at(form),
            now=self._clock(),
            problem=why,
            name=form.get("name", ""),
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


# -- the HTML -------------------------------------------------------------------


def _line_page(status: int, line: str) -> PageReply:
    body = f'<p id="decide-line">{html.escape(line)}</p>'
    return PageReply(status, _document(body, nonce=None))


def _item_page(
    request: HumanRequestRecord,
    claims: LinkClaims,
    *,
    opened: float,
    now: float,
    problem: str = "",
    name: str = "",
) -> str:
    heading, item, controls = _item_parts(request)
    waited = max(0, int((now - _epoch(request.created)) // 60))
    whom = (
        f"Sent to {html.escape(claims.to)}"
        if claims.to
        else "Sent to a group: your name is stored with the decision"
    )
    name_box = (
        ""
        if claims.to
        else '<label for="decide-name">Your name</label>'
        f'<input type="text" id="decide-name" name="name" autocomplete="name" maxlength="64"'
        f' value="{html.escape(name, quote=True)}">'
    )
    shown = html.escape(_sentence(problem)) if problem else ""
    body = (
        f'<main id="decide" data-kind="{html.escape(request.kind, quote=True)}">'
        f"<h1>{heading}</h1>"
        f'<p class="meta">Waiting {waited} min · {whom} · this link decides once</p>'
        f'<div id="decide-item">{item}</div>'
        f'<p id="decide-problem" role="alert"{"" if problem else " hidden"}>{shown}</p>'
        '<form id="decide-form" method="post" autocomplete="off">'
        '<input type="hidden" name="payload" id="decide-payload">'
        f'<input type="hidden" name="opened" value="{opened:.3f}">'
        f"{name_box}{controls}</form></main>"
    )
    return _document(body, nonce=secrets.token_urlsafe(16))


def _item_parts(request: HumanRequestRecord) -> tuple[str, str, str]:
    """The heading, the item, and its controls."""
    if request.kind == "approval":
        panels = (
            '<div class="decide-panel" id="panel-edit" hidden><p>Change the fields above, then'
            ' send.</p><div class="buttons"><button type="button" class="go" data-act="edit"'
            ' id="decide-send-edit">Send edit</button></div></div>'
            '<div class="decide-panel" id="panel-reject" hidden>'
            '<label for="decide-reason">Why (optional; the agent reads it)</label>'
            f'<textarea id="decide-reason" rows="3" maxlength="{MAX_REASON_CHARS}"></textarea>'
            '<div class="buttons"><button type="button" class="go" data-act="reject"'
            ' id="decide-send-reject">Send rejection</button></div></div>'
            '<div class="decide-panel" id="panel-respond" hidden>'
            '<label for="decide-response">The result the agent reads (the call is not run)'
            f'</label><textarea id="decide-response" rows="3" maxlength="{MAX_ANSWER_CHARS}">'
            '</textarea><div class="buttons"><button type="button" class="go" data-act="respond"'
            ' id="decide-send-respond">Send result</button></div></div>'
            '<div class="decide-panel" id="panel-terminate" hidden><p>The agent\'s session ends'
            ' here.</p><div class="buttons"><button type="button" class="go"'
            ' data-act="terminate" id="decide-send-terminate">End the session</button></div>'
            "</div>"
        )
        buttons = (
            '<div class="buttons">'
            '<button type="button" class="go" data-act="approve" id="decide-approve">Approve'
            "</button>"
            '<button type="button" data-show="edit" id="decide-edit">Edit</button>'
            '<button type="button" data-show="reject" id="decide-reject">Reject</button>'
            '<button type="button" data-show="respond" id="decide-respond">Respond</button>'
            '<button type="button" data-show="terminate" id="decide-terminate">Terminate</button>'
            "</div>"
        )
        return "A call waits for your decision", call_html(request), buttons + panels
    if request.kind == "elicitation":
        form = ElicitationRequest.model_validate(request.context)
        parts = [
            f"<p><b>MCP server {html.escape(form.asker)} asks</b></p>",
            f'<p class="ask">{html.escape(form.message)}</p>',
        ]
        if form.mode == "url":
            url = html.escape(form.url or "", quote=True)
            parts.append(
                f'<p>Open this link yourself: <a href="{url}" target="_blank"'
                f' rel="noopener noreferrer">{url}</a></p>'
            )
        else:
            parts += [field_html(f, f"elicit-{n}") for n, f in enumerate(form.fields)]
        accept = "Done" if form.mode == "url" else "Accept"
        buttons = (
            '<div class="buttons">'
            f'<button type="button" class="go" data-act="accept" id="decide-accept">{accept}'
            "</button>"
            '<button type="button" data-act="decline" id="decide-decline">Decline</button>'
            '<button type="button" data-act="cancel" id="decide-cancel">Cancel</button></div>'
        )
        return "An MCP server asks you", "".join(parts), buttons
    query = request.context.get("query") if isinstance(request.context, dict) else None
    about = f'<p class="meta">The request: {html.escape(clip(query, 300))}</p>' if query else ""
    item = f'<p class="ask">{html.escape(request.question)}</p>{about}'
    controls = (
        '<label for="decide-answer">Your answer</label>'
        f'<textarea id="decide-answer" rows="4" maxlength="{MAX_ANSWER_CHARS}"></textarea>'
        '<div class="buttons"><button type="button" class="go" data-act="answer"'
        ' id="decide-send">Send</button><button type="button" data-act="decline"'
        ' id="decide-decline">Decline</button></div>'
    )
    return "An agent asks you", item, controls


def _document(body: str, *, nonce: str | None) -> str:
    script = f'<script nonce="{nonce}">{_SCRIPT}</script>' if nonce else ""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer"><title>aah: one item</title>'
        f"<style>{_STYLE}</style></head><body>{body}{script}</body></html>"
    )


def _epoch(moment: datetime) -> float:
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def _nonce_of(page: str) -> str | None:
    marker = '<script nonce="'
    start = page.find(marker)
    if start < 0:
        return None
    start += len(marker)
    return page[start : page.find('"', start)]


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
            await _reply(send, _line_page(404, "Links that decide are off on this server."))
        elif not token or len(token) > MAX_TOKEN_CHARS or "/" in token:
            await _reply(send, _line_page(404, NOT_A_LINK))
        elif method in ("GET", "HEAD"):
            await _reply(send, await anyio.to_thread.run_sync(self.desk.show, token))
        elif method != "POST":
            await _reply(send, _line_page(405, "Open the link, then press a button."))
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
        return _line_page(415, "Send the page's own form.")
    body = b""
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return _line_page(400, "The page's form did not arrive: press the button again.")
        body += bytes(message.get("body", b""))
        if len(body) > MAX_FORM_BYTES:
            return _line_page(413, "The form is too long: shorten what you typed.")
        if not message.get("more_body", False):
            break
    try:
        fields = urllib.parse.parse_qs(
            body.decode("utf-8"), keep_blank_values=True, max_num_fields=_MAX_FIELDS
        )
    except (UnicodeDecodeError, ValueError):
        return _line_page(400, "The form could not be read: open the link again.")
    return {key: values[0] for key, values in fields.items() if key in _FORM_FIELDS}


async def _reply(send: Send, page: PageReply) -> None:
    body = page.body.encode()
    nonce = _nonce_of(page.body)
    script = f"'nonce-{nonce}'" if nonce else "'none'"
    policy = (
        f"default-src 'none'; style-src 'unsafe-inline'; script-src {script}; "
        "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    )
    headers = [
        (b"content-type", b"text/html; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
        (b"referrer-policy", b"no-referrer"),
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
