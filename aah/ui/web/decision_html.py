"""The HTML of the page a decision link opens: one item, a large button for each decision.

No logic here: ``decision_page`` decides what to show. Every text from the
item is escaped; the one script runs under the nonce the page's
Content-Security-Policy names.
"""

from __future__ import annotations

import html
import secrets
from datetime import UTC, datetime
from typing import NamedTuple

from aah.desk import MAX_ANSWER_CHARS, ElicitationRequest
from aah.store import HumanRequestRecord
from aah.ui.web.approval import MAX_REASON_CHARS, call_html
from aah.ui.web.decision_link import LinkClaims
from aah.ui.web.elicitation import field_html
from aah.ui.web.format import clip

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
/* The desk's own controls inside a call's form (its keys, its reason box) are not this page's. */
#decide-item button, #decide-item #approval-reason-box, #decide-item #approval-note {
  display: none !important; }
.buttons { display: flex; flex-wrap: wrap; gap: 0.5em; margin: 0.8em 0; }
.buttons button { flex: 1 1 8em; min-height: 3em; font: inherit; font-weight: 600;
  border-radius: 8px; border: 1px solid #777; background: #f2f2f2; }
.buttons button.go { background: #3f51b5; border-color: #3f51b5; color: #fff; }
.buttons button[aria-pressed=true] { background: #dfe3f6; border: 2px solid #3f51b5; }
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
  const controls = (selector) => Array.from(document.querySelectorAll(selector)).filter(
    (el) => ["INPUT", "SELECT", "TEXTAREA"].includes(el.tagName));
  const open = (name) => {
    for (const panel of document.querySelectorAll(".decide-panel")) {
      panel.hidden = panel.id !== "panel-" + name;
    }
    for (const el of controls("#approval-fields [data-arg]")) el.disabled = name !== "edit";
    for (const button of document.querySelectorAll("[data-show]")) {
      button.setAttribute("aria-pressed", String(button.dataset.show === name));
    }
  };
  // A refused try comes back with what was typed, and the decision's own box open.
  let last = null;
  try {
    last = main.dataset.sent ? JSON.parse(main.dataset.sent) : null;
  } catch (e) {
    last = null;
  }
  if (last !== null && typeof last === "object") {
    const put = (id, text) => {
      const el = document.getElementById(id);
      if (el !== null && typeof text === "string") el.value = text;
    };
    put("decide-answer", last.text);
    put("decide-reason", last.reason);
    put("decide-response", last.response);
    const fields = last.fields !== null && typeof last.fields === "object" ? last.fields : {};
    for (const el of controls("#approval-fields [data-arg]")) {
      if (typeof fields[el.dataset.arg] === "string") el.value = fields[el.dataset.arg];
    }
    const content = last.content !== null && typeof last.content === "object" ? last.content : {};
    for (const el of controls("#decide-item [data-field]")) {
      const given = content[el.dataset.field];
      if (given === undefined) continue;
      if (el.type === "checkbox") el.checked = given === true;
      else if (el.multiple && Array.isArray(given)) {
        for (const option of el.options) option.selected = given.includes(option.value);
      } else if (typeof given === "string") el.value = given;
    }
    if (typeof last.decision === "string" && last.decision !== "approve") open(last.decision);
  }
  let sending = false;
  document.addEventListener("click", (event) => {
    const target = event.target && event.target.closest ? event.target : null;
    const show = target && target.closest("[data-show]");
    if (show) {
      open(show.dataset.show);
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


class PageReply(NamedTuple):
    """What the link's page answers: an HTTP status and a whole HTML page."""

    status: int
    body: str


def line_page(status: int, line: str) -> PageReply:
    """A page that says one line (a refusal, or what was stored), with no script."""
    body = f'<p id="decide-line">{html.escape(line)}</p>'
    return PageReply(status, _document(body, nonce=None))


def item_page(
    request: HumanRequestRecord,
    claims: LinkClaims,
    *,
    opened: float,
    now: float,
    problem: str = "",
    name: str = "",
    sent: str = "",
) -> str:
    """The page for one item: what it asks, a name box for a group's link, its buttons.

    Args:
        request: The item.
        claims: The link's claims (whom it was sent to).
        opened: When the page was first shown (epoch seconds), sent back with the form.
        now: The time now (epoch seconds), for how long the item has waited.
        problem: Why the last try was refused, shown above the buttons.
        name: The name typed on the last try.
        sent: What the last try sent (the page's JSON), put back in the boxes.
    """
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
        f'<main id="decide" data-kind="{html.escape(request.kind, quote=True)}"'
        f' data-sent="{html.escape(sent, quote=True)}">'
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
        '<meta name="referrer" content="same-origin"><title>aah: one item</title>'
        f"<style>{_STYLE}</style></head><body>{body}{script}</body></html>"
    )


def _epoch(moment: datetime) -> float:
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def nonce_of(page: str) -> str | None:
    """The nonce of ``page``'s script, for its Content-Security-Policy; None: no script."""
    marker = '<script nonce="'
    start = page.find(marker)
    if start < 0:
        return None
    start += len(marker)
    return page[start : page.find('"', start)]
