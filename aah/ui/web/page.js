() => {
  // The annotator's keys, focus, drafts and claims.
  // Queue tab:
  //   Ctrl+Enter (Cmd+Enter) sends, anywhere on the page.
  //   Esc declines, but never while a dropdown, a menu or a dialog has the
  //   focus (Esc closes those), and with an answer typed only when pressed a
  //   second time: the first press says what a second one would throw away.
  //   u undoes the latest decline or skip while Undo shows (outside text
  //   boxes, or in the answer box while it is empty).
  //   Alt+C shows what the agent was given (and pages through it), the
  //   focus staying in the answer box.
  //   1 / 2 rate yes / no, n skips (or opens the next): outside text boxes.
  // A tool call to approve (the approval form shows instead of the answer box):
  //   a approves; e opens the fields for an edit and Ctrl+Enter sends it;
  //   r (t) opens a reason box to reject (terminate the session), s a box for
  //   the result the agent reads instead, and Ctrl+Enter sends it. Each key is
  //   also a button of the form (a phone has no keys): a second press of the
  //   open decision's button sends it, and Later becomes Back; Esc goes back from a box to the choice (press it
  //   twice when something was typed: the second drops it) and, from the
  //   choice, puts the call aside for later (u undoes); n does the same.
  //   While a box is open, letters are only typing: no key decides but
  //   Ctrl+Enter, so a stray key never throws typed work away; an edit or a
  //   reason typed is kept like an answer's draft (a reload brings it back).
  // Grade tab: p / f label Pass / Fail, n shows the next answer.
  // A question that arrives while none is open opens by itself.
  // Whenever a question opens, focus lands in the answer box, with the
  // draft this browser kept for that question, if any, and the status line
  // and the question are scrolled into view; a sent question's draft is
  // dropped. As the page goes away, a beacon lets go of its open question.
  // Buttons are pressed with click(), so the server sees exactly what a
  // mouse would have done.
  const DRAFT = "aah-draft:";
  const DRAFT_DAYS = 2;
  const SAVED_SIGN_IN = "aah-sign-in";
  const CONFIRM_MS = 4000;
  const box = (id) => document.querySelector(`#${id} textarea, #${id} input`);
  const shown = (element) => element !== null && element.offsetParent !== null;
  const press = (id) => {
    const button = document.getElementById(id);
    if (shown(button) && !button.disabled) {
      button.click();
      return true;
    }
    return false;
  };
  const typingIn = (element) =>
    element !== null &&
    (element.tagName === "TEXTAREA" ||
      element.isContentEditable ||
      (element.tagName === "INPUT" && !["radio", "checkbox", "button"].includes(element.type)));
  // Esc belongs to these while they have the focus or show a list.
  const PICKERS = "[role=listbox], [role=combobox], [role=menu], [role=dialog], dialog, select, .wrap-inner";
  // Later (Esc) on a call or a form: the hidden button that skips it (u undoes).
  const later = () => {
    const button = document.getElementById("approval-later");
    if (button === null) return false;
    button.click();
    return true;
  };
  const inPicker = (element) => element !== null && element.closest && element.closest(PICKERS) !== null;
  const dialogOpen = () => Array.from(document.querySelectorAll("dialog[open], [role=dialog]")).some(shown);

  // The note a first Esc leaves under the answer box.
  let confirmUntil = 0;
  const confirmNote = (text) => {
    let note = document.getElementById("aah-confirm");
    const answerBlock = document.getElementById("answer-text");
    if (note === null && answerBlock !== null) {
      note = document.createElement("p");
      note.id = "aah-confirm";
      note.setAttribute("role", "alert");
      answerBlock.insertAdjacentElement("afterend", note);
    }
    if (note !== null) {
      note.textContent = text;
      note.hidden = !text;
    }
  };
  const disarm = () => {
    if (confirmUntil) {
      confirmUntil = 0;
      confirmNote("");
    }
  };

  // Alt+C: bring what the agent was given into view, then page through it.
  const showContext = () => {
    const context = document.getElementById("answer-context");
    if (!shown(context)) return false;
    const rect = context.getBoundingClientRect();
    const inView = rect.top >= 0 && rect.top < window.innerHeight - 40;
    if (!inView) {
      context.scrollIntoView({ block: "start" });
    } else if (context.scrollHeight > context.clientHeight + 2) {
      const atEnd = context.scrollTop + context.clientHeight >= context.scrollHeight - 2;
      context.scrollTop = atEnd ? 0 : context.scrollTop + context.clientHeight * 0.8;
    } else if (rect.bottom > window.innerHeight) {
      window.scrollBy(0, Math.min(rect.bottom - window.innerHeight + 8, rect.top));
    } else {
      const status = document.getElementById("answer-status-row");
      if (status !== null) status.scrollIntoView({ block: "start" });
    }
    return true;
  };

  // -- an MCP server's question (its form opens where a call's does) -------
  // A button of the form sends the person's result as JSON through the
  // approval channel (the server checks it against the form); Later skips.
  document.addEventListener("click", (event) => {
    const button = event.target && event.target.closest && event.target.closest("[data-elicit]");
    const form = document.getElementById("elicit-form");
    const choice = box("approval-choice");
    const decide = document.getElementById("approval-decide");
    if (!button || form === null || choice === null || decide === null) return;
    if (button.dataset.elicit === "later") {
      later();
      return;
    }
    const content = {};
    for (const el of form.querySelectorAll("[data-field]")) {
      if (el.type === "checkbox") content[el.dataset.field] = el.checked;
      else if (el.multiple) {
        const chosen = Array.from(el.selectedOptions).map((option) => option.value);
        if (chosen.length) content[el.dataset.field] = chosen;
      } else if (el.value !== "") content[el.dataset.field] = el.value;
    }
    const action = button.dataset.elicit;
    choice.value = JSON.stringify({ action: action, content: action === "accept" ? content : null });
    choice.dispatchEvent(new Event("input", { bubbles: true }));
    decide.click();
  });

  // Gradio redraws an HTML block by patching the elements it had: a box the person
  // typed into keeps its typed value under the next call's or form's markup. A new
  // one's controls are put back to what its markup says.
  const asMarkedUp = (root) => {
    for (const el of root.querySelectorAll("input, textarea, select")) {
      if (el.tagName === "SELECT") {
        for (const option of el.options) option.selected = option.defaultSelected;
      } else if (el.type === "checkbox" || el.type === "radio") {
        el.checked = el.defaultChecked;
      } else {
        el.value = el.defaultValue;
      }
      el.removeAttribute("aria-invalid");
    }
    for (const old of root.querySelectorAll(".aah-field-error")) old.remove();
  };

  // A refused edit or form names its field first: the line goes beside that field too
  // (its box marked and focused), where the person is looking. True when one was found.
  const FIELD_ERROR = "aah-field-error";
  const besideField = (root, selector, key, said) => {
    for (const old of root.querySelectorAll(`.${FIELD_ERROR}`)) old.remove();
    for (const marked of root.querySelectorAll("[aria-invalid]")) marked.removeAttribute("aria-invalid");
    const problem = said.replace(/^Refused, not sent:\s*/, "");
    let best = null;
    let length = 0;
    for (const field of root.querySelectorAll(selector)) {
      const name = field.dataset[key] || "";
      if (!name || !problem.startsWith(name) || /\w/.test(problem.charAt(name.length))) continue;
      if (name.length > length) {
        best = field;
        length = name.length;
      }
    }
    if (best === null) return false;
    const note = document.createElement("p");
    note.className = FIELD_ERROR;
    note.setAttribute("role", "alert");
    note.textContent = problem;
    best.appendChild(note);
    const control = best.querySelector("input, select, textarea");
    if (control !== null) {
      control.setAttribute("aria-invalid", "true");
      control.focus({ preventScroll: true });
    }
    best.scrollIntoView({ block: "nearest" });
    return true;
  };

  // An MCP server's form opens with its first field focused (URL mode: Done); a
  // refused result's line goes beside its field, or under the form.
  let elicitId = "";
  let elicitSeen = "";
  const followElicit = () => {
    const form = document.getElementById("elicit-form");
    const id = form !== null && shown(form) ? form.dataset.request || "" : "";
    const status = document.getElementById("answer-status");
    const said = status === null ? "" : status.textContent.trim();
    if (said !== elicitSeen) {
      elicitSeen = said;
      if (id && id === elicitId && said.startsWith("Refused")) {
        const note = document.getElementById("elicit-note");
        const placed = besideField(form, "#elicit-fields .aah-field[data-label]", "label", said);
        if (note !== null) {
          note.textContent = placed ? "" : said;
          note.hidden = placed;
        }
      }
    }
    if (id === elicitId) return;
    elicitId = id;
    if (!id) return;
    asMarkedUp(form);
    const first = form.querySelector("[data-field]") || document.getElementById("elicit-accept");
    if (first !== null) first.focus({ preventScroll: true });
    const top = document.getElementById("answer-status-row");
    if (top !== null) top.scrollIntoView({ block: "start" });
    form.dataset.aahOpened = id; // what a test waits for before it types
  };
  const elicitKey = (event) => {
    const active = document.activeElement;
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      const accept = document.getElementById("elicit-accept");
      if (accept !== null) accept.click();
      event.preventDefault();
    } else if (event.key === "Escape") {
      const field = active !== null && active.closest && active.closest("#elicit-fields") !== null;
      if (!field && (inPicker(active) || inPicker(event.target) || dialogOpen())) return;
      if (later()) event.preventDefault();
    } else if ((event.key === "u" || event.key === "U") && !typingIn(active) && !event.ctrlKey && !event.altKey) {
      if (press("queue-undo")) event.preventDefault();
    }
  };

  // -- the person's own tools (a τ² user's phone), under the answer box ---
  // A tool's button sends the call, with its form's values and the words
  // typed in the answer box (they come back with the call's result), and
  // presses Call; the server checks it and says in the status line what it
  // refused. A second press while one is on its way is ignored.
  let phoneSendingUntil = 0;
  let phoneStatusSeen = "";
  document.addEventListener("click", (event) => {
    const button = event.target && event.target.closest && event.target.closest("[data-phone-tool]");
    const phone = document.getElementById("phone");
    const sent = box("phone-call");
    const make = document.getElementById("phone-make");
    if (!button || phone === null || sent === null || make === null) return;
    if (Date.now() < phoneSendingUntil) return;
    const values = {};
    const form = button.closest("[data-phone-form]");
    for (const el of form === null ? [] : form.querySelectorAll("[data-field]")) {
      if (el.type === "checkbox") values[el.dataset.field] = el.checked;
      else if (el.multiple) {
        const chosen = Array.from(el.selectedOptions).map((option) => option.value);
        if (chosen.length) values[el.dataset.field] = chosen;
      } else if (el.value !== "") values[el.dataset.field] = el.value;
    }
    const answer = box("answer-text");
    sent.value = JSON.stringify({
      request: phone.dataset.request,
      tool: button.dataset.phoneTool,
      values: values,
      draft: answer === null ? "" : answer.value,
    });
    sent.dispatchEvent(new Event("input", { bubbles: true }));
    phoneSendingUntil = Date.now() + 1500;
    phoneStatusSeen = ""; // the line that answers this press is shown, even if it is the last one again
    const note = document.getElementById("phone-note");
    if (note !== null) {
      note.textContent = `Calling ${button.dataset.phoneTool}…`;
      note.hidden = false;
    }
    make.click();
  });
  // A refused press: the line saying why goes under the tools too (on a phone the
  // status line is out of view), and the buttons are live again.
  const followPhone = () => {
    const status = document.getElementById("answer-status");
    const said = status === null ? "" : status.textContent.trim();
    if (said === phoneStatusSeen) return;
    phoneStatusSeen = said;
    const note = document.getElementById("phone-note");
    if (note !== null && said.startsWith("Not called")) {
      note.textContent = said;
      note.hidden = false;
      phoneSendingUntil = 0;
    }
  };

  // -- approvals ---------------------------------------------------------
  let approvalMode = "choose"; // choose | edit | reject | terminate
  let approvalId = "";
  let approvalConfirm = "";
  let approvalConfirmUntil = 0;
  let sendingUntil = 0;
  const approvalCall = () => {
    const part = document.getElementById("approval-part");
    const call = document.getElementById("approval-call");
    return shown(part) && call !== null ? call : null;
  };
  const approvalFields = () =>
    Array.from(document.querySelectorAll("#approval-fields [data-arg]")).filter((el) =>
      ["INPUT", "SELECT", "TEXTAREA"].includes(el.tagName),
    );
  const reasonBox = () => document.getElementById("approval-reason");
  const approvalNote = (text) => {
    const note = document.getElementById("approval-note");
    if (note !== null) {
      note.textContent = text;
      note.hidden = !text;
    }
  };
  const edited = () => approvalFields().some((el) => el.value !== el.dataset.proposed);
  const typedReason = () => reasonBox() !== null && reasonBox().value.trim() !== "";
  const BUTTON_LABELS = {
    edit: ["Edit (e)", "Send edit (Ctrl+Enter)"],
    reject: ["Reject (r)", "Reject now (Ctrl+Enter)"],
    respond: ["Respond (s)", "Send result (Ctrl+Enter)"],
    terminate: ["Terminate (t)", "Terminate now (Ctrl+Enter)"],
  };
  const MODE_OF = { e: "edit", r: "reject", s: "respond", t: "terminate" };
  // The buttons say what a press does now: the open decision's one sends, Later goes back.
  const labelButtons = (mode) => {
    for (const [name, labels] of Object.entries(BUTTON_LABELS)) {
      const button = document.getElementById(`approval-${name}`);
      if (button !== null) {
        button.textContent = labels[mode === name ? 1 : 0];
        button.classList.toggle("aah-primary", mode === name);
        button.setAttribute("aria-pressed", mode === name ? "true" : "false");
      }
    }
    const approve = document.getElementById("approval-approve");
    if (approve !== null) approve.classList.toggle("aah-primary", mode === "choose");
    const back = document.getElementById("approval-back");
    if (back !== null) back.textContent = mode === "choose" ? "Later (Esc)" : "Back (Esc)";
  };
  const REASON_LABELS = {
    reject: "Why reject it (optional; the agent reads it). Reject now (Ctrl+Enter) sends it, Back (Esc) goes back",
    terminate: "Why end the session (optional). Terminate now (Ctrl+Enter) ends it, Back (Esc) goes back",
    respond: "The result the agent reads instead (the call does not run). Send result (Ctrl+Enter) sends it, Back (Esc) goes back",
  };
  const setApprovalMode = (mode) => {
    const call = approvalCall();
    if (call === null) return;
    approvalMode = mode;
    approvalConfirm = "";
    call.dataset.mode = mode;
    labelButtons(mode);
    for (const el of approvalFields()) el.disabled = mode !== "edit";
    const box = document.getElementById("approval-reason-box");
    if (box !== null) box.hidden = !(mode in REASON_LABELS);
    const label = document.getElementById("approval-reason-label");
    if (label !== null && mode in REASON_LABELS) label.textContent = REASON_LABELS[mode];
    if (mode === "edit") {
      const first = approvalFields()[0];
      approvalNote(first ? "Editing: Send edit (Ctrl+Enter) sends it, Back (Esc) goes back." : "This call has no arguments to edit.");
      if (first) {
        first.focus();
        if (first.setSelectionRange && first.tagName !== "SELECT") first.setSelectionRange(first.value.length, first.value.length);
      } else {
        approvalMode = "choose";
        call.dataset.mode = "choose";
        labelButtons("choose");
        call.focus();
      }
    } else if (mode in REASON_LABELS) {
      approvalNote("");
      reasonBox().focus();
    } else {
      approvalNote("");
      call.focus({ preventScroll: true });
    }
  };
  // Asks for ``key`` to be pressed again; true when this press is that second one.
  const confirmed = (key, text) => {
    if (approvalConfirm === key && Date.now() < approvalConfirmUntil) {
      approvalConfirm = "";
      return true;
    }
    approvalConfirm = key;
    approvalConfirmUntil = Date.now() + CONFIRM_MS;
    approvalNote(text);
    return false;
  };
  const sendDecision = (decision) => {
    const call = approvalCall();
    const choice = box("approval-choice");
    const decide = document.getElementById("approval-decide");
    if (call === null || choice === null || decide === null || Date.now() < sendingUntil) return;
    const fields = {};
    for (const el of approvalFields()) fields[el.dataset.arg] = el.value;
    const reason = decision === "reject" || decision === "terminate" ? reasonBox().value : "";
    const response = decision === "respond" ? reasonBox().value : "";
    if (decision === "respond" && !response.trim()) {
      approvalNote("Type the result the agent reads first (or Esc to go back).");
      return;
    }
    choice.value = JSON.stringify({ decision: decision, fields: decision === "edit" ? fields : null, reason: reason, response: response });
    choice.dispatchEvent(new Event("input", { bubbles: true }));
    sendingUntil = Date.now() + 1500;
    approvalNote("Sending…");
    decide.click();
  };
  // One key (or the button of the same name) on the open call; true when it was used.
  // What was typed into the open call, kept like an answer's draft (dropped once sent).
  const keepApprovalDraft = () => {
    const call = approvalCall();
    if (call === null || !approvalId) return;
    const fields = {};
    for (const el of approvalFields()) if (el.value !== el.dataset.proposed) fields[el.dataset.arg] = el.value;
    const typed = Object.keys(fields).length > 0 || typedReason();
    const reason = reasonBox() === null ? "" : reasonBox().value;
    saveDraft(approvalId, typed ? JSON.stringify({ mode: approvalMode, fields: fields, reason: reason }) : "");
  };
  for (const kind of ["input", "change"]) {
    document.addEventListener(kind, (event) => {
      if (event.target && event.target.closest && event.target.closest("#approval-call")) keepApprovalDraft();
    });
  }
  const approvalKey = (key) => {
    const call = approvalCall();
    if (call === null) return false;
    if (approvalMode !== "choose") {
      if (key === "send") {
        sendDecision(approvalMode);
        return true;
      }
      if (key === "escape") {
        const typed = approvalMode === "edit" ? edited() : typedReason();
        const what = approvalMode === "edit" ? "your edit" : approvalMode === "respond" ? "your result" : "your reason";
        if (typed && !confirmed("escape", `Press Esc again (or Back) to drop ${what} and go back to the choice.`)) return true;
        if (approvalMode === "edit") for (const el of approvalFields()) el.value = el.dataset.proposed;
        else reasonBox().value = "";
        setApprovalMode("choose");
        keepApprovalDraft();
        return true;
      }
      // The buttons: another mode keeps what was typed in this one.
      if (key === "e" || key === "r" || key === "s" || key === "t") {
        setApprovalMode({ e: "edit", r: "reject", s: "respond", t: "terminate" }[key]);
        return true;
      }
      if (key === "a") {
        approvalNote("Send or drop the open " + (approvalMode === "edit" ? "edit" : "reason") + " first (Ctrl+Enter or Esc).");
        return true;
      }
      return false;
    }
    if (key === "a") sendDecision("approve");
    else if (key === "e") setApprovalMode("edit");
    else if (key === "r") setApprovalMode("reject");
    else if (key === "s") setApprovalMode("respond");
    else if (key === "t") setApprovalMode("terminate");
    else if (key === "escape" || key === "n") later();
    else if (key === "send") approvalNote("Press a to approve, e to edit, r to reject or s to respond.");
    else return false;
    return true;
  };
  window.aahApprovalKey = approvalKey;
  // A button of the call's form: its key, but a press of the open decision's button sends it.
  document.addEventListener("click", (event) => {
    const button = event.target && event.target.closest && event.target.closest("[data-approval]");
    if (!button || approvalCall() === null) return;
    const key = button.dataset.approval;
    if (MODE_OF[key] !== undefined && MODE_OF[key] === approvalMode) approvalKey("send");
    else approvalKey(key);
  });
  // A call opens (or another replaces it): the choice, the focus on the call.
  let statusSeen = "";
  const followApproval = () => {
    const call = approvalCall();
    const id = call === null ? "" : call.dataset.request || "";
    const status = document.getElementById("answer-status");
    const said = status === null ? "" : status.textContent.trim();
    if (said !== statusSeen) {
      statusSeen = said;
      // A refused edit: the form stays as typed, the reason beside it, keys live again.
      if (call !== null && id === approvalId && said.startsWith("Refused")) {
        sendingUntil = 0;
        approvalNote(said);
        besideField(call, "#approval-fields .aah-field[data-arg]", "arg", said);
      }
    }
    if (id === approvalId) return;
    approvalId = id;
    sendingUntil = 0;
    if (call === null) return;
    asMarkedUp(call);
    for (const el of approvalFields()) el.dataset.proposed = el.value;
    // An edit or a reason this browser kept for the call (a reload) comes back, open.
    let kept = null;
    try {
      kept = JSON.parse(readDraft(id) || "null");
    } catch (error) {
      kept = null;
    }
    if (kept !== null && typeof kept === "object") {
      for (const el of approvalFields()) {
        const value = kept.fields && kept.fields[el.dataset.arg];
        if (typeof value === "string") el.value = value;
      }
      if (typeof kept.reason === "string" && reasonBox() !== null) reasonBox().value = kept.reason;
    }
    const mode = kept !== null && ["edit", "reject", "respond", "terminate"].includes(kept.mode) ? kept.mode : "choose";
    setApprovalMode(edited() ? "edit" : typedReason() ? mode : "choose");
    const top = document.getElementById("answer-status-row");
    if (top !== null) top.scrollIntoView({ block: "start" });
    call.dataset.aahOpened = id; // what a test waits for before it presses a key
  };

  document.addEventListener(
    "keydown",
    (event) => {
      const formOpen = shown(document.getElementById("answer-form"));
      if (formOpen && shown(document.getElementById("elicit-form"))) {
        elicitKey(event);
        return;
      }
      if (formOpen && approvalCall() !== null) {
        const active = document.activeElement;
        const ctrl = event.ctrlKey || event.metaKey;
        let key = "";
        if (event.key === "Enter" && ctrl) key = "send";
        else if (event.key === "Escape") {
          // A field's own list (an enum) is ours: a closed select takes no Esc.
          const field = active !== null && active.closest && active.closest("#approval-fields") !== null;
          if (!field && (inPicker(active) || inPicker(event.target) || dialogOpen())) return;
          key = "escape";
        } else if (ctrl || event.altKey) {
          if (event.altKey && event.code === "KeyC" && showContext()) event.preventDefault();
          return;
        } else if (typingIn(active) || (active !== null && active.tagName === "SELECT")) {
          return; // letters typed into a field or a box are text
        } else if ((event.key === "u" || event.key === "U") && press("queue-undo")) {
          event.preventDefault();
          return;
        } else {
          key = event.key.toLowerCase();
        }
        if (approvalKey(key)) event.preventDefault();
        return;
      }
      const active = document.activeElement;
      const answer = box("answer-text");
      if (event.key !== "Escape") disarm();
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        if (formOpen && press("answer-send")) event.preventDefault();
        return;
      }
      if (event.key === "Escape") {
        if (!formOpen || inPicker(active) || inPicker(event.target) || dialogOpen()) {
          disarm();
          return;
        }
        const typed = answer !== null && answer.value.trim() !== "";
        if (typed && Date.now() > confirmUntil) {
          confirmUntil = Date.now() + CONFIRM_MS;
          confirmNote("Press Esc again to decline and put your typed answer aside (u undoes it).");
          event.preventDefault();
          return;
        }
        disarm();
        if (press("answer-decline")) event.preventDefault();
        return;
      }
      if (event.altKey && event.code === "KeyC" && !event.ctrlKey && !event.metaKey) {
        if (formOpen && showContext()) event.preventDefault();
        return;
      }
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      const emptyAnswer = answer !== null && active === answer && answer.value === "";
      if ((event.key === "u" || event.key === "U") && (emptyAnswer || !typingIn(active))) {
        if (press("queue-undo")) {
          event.preventDefault();
          return;
        }
      }
      if (typingIn(active)) return;
      if (shown(document.getElementById("grade-pass"))) {
        const grading = { p: "grade-pass", f: "grade-fail", n: "grade-next" }[event.key.toLowerCase()];
        if (grading && press(grading)) event.preventDefault();
        return;
      }
      if ((event.key === "1" || event.key === "2") && formOpen) {
        const choices = document.querySelectorAll("#answer-rating input[type=radio]");
        const choice = choices[event.key === "1" ? 0 : 1];
        if (choice) {
          choice.click();
          event.preventDefault();
        }
      } else if (event.key === "n" || event.key === "N") {
        if (press(formOpen ? "queue-skip" : "queue-next")) event.preventDefault();
      }
    },
    true,
  );

  const saveDraft = (id, text) => {
    if (text) {
      localStorage.setItem(DRAFT + id, JSON.stringify({ text: text, at: Date.now() }));
    } else {
      localStorage.removeItem(DRAFT + id);
    }
  };
  const readDraft = (id) => {
    try {
      const kept = JSON.parse(localStorage.getItem(DRAFT + id) || "null");
      return kept && typeof kept.text === "string" ? kept.text : "";
    } catch (error) {
      return "";
    }
  };
  // Drafts of questions never sent (skipped, taken by others) go after a while.
  const forgetOldDrafts = () => {
    const oldest = Date.now() - DRAFT_DAYS * 86400 * 1000;
    for (const key of Object.keys(localStorage)) {
      if (!key.startsWith(DRAFT)) continue;
      try {
        if (!(JSON.parse(localStorage.getItem(key)).at > oldest)) localStorage.removeItem(key);
      } catch (error) {
        localStorage.removeItem(key);
      }
    }
  };
  forgetOldDrafts();

  document.addEventListener("input", (event) => {
    const answer = box("answer-text");
    const opened = box("answer-request-id");
    if (answer !== null && event.target === answer && opened !== null && opened.value) {
      saveDraft(opened.value, answer.value);
    }
  });

  // The page goes away (closed, reloaded, navigated off): let go of its
  // question now rather than when its heartbeat is missed. The beacon
  // carries the signed sign-in, so only its holder can release a claim.
  const release = () => {
    const opened = box("answer-request-id");
    const saved = localStorage.getItem(SAVED_SIGN_IN);
    if (opened === null || !opened.value || !saved || !navigator.sendBeacon) return;
    const body = JSON.stringify({ token: saved, request_id: opened.value });
    navigator.sendBeacon(new URL("aah/release", document.baseURI), new Blob([body], { type: "text/plain" }));
  };
  window.addEventListener("pagehide", release);

  // The sign-in name box has the focus on load (Gradio's autofocus can lose
  // it to its own rendering).
  let focusTries = 0;
  const focusName = setInterval(() => {
    focusTries += 1;
    const name = box("sign-in-name");
    if (shown(name) && (document.activeElement === null || document.activeElement === document.body)) {
      name.focus();
    }
    if (document.activeElement === name || focusTries > 50) clearInterval(focusName);
  }, 100);

  // A question that arrives while none is open opens by itself, as after a
  // Send, but only for someone at the page: the tab is visible and they used
  // it in the last two minutes. Nothing open while questions wait happens
  // only then: Send, Decline and Skip open the next one, and a skipped one
  // comes back when it is the last. The form must be seen hidden for two
  // seconds, since Gradio may redraw an open one; and Next never lets go of
  // an open question, so a press at the wrong moment costs nothing.
  const PRESENT_MS = 120 * 1000;
  const HIDDEN_LOOKS = 4;
  let lastActive = Date.now();
  for (const kind of ["keydown", "mousedown", "mousemove", "touchstart", "wheel"]) {
    document.addEventListener(kind, () => (lastActive = Date.now()), { capture: true, passive: true });
  }
  let lastOpenedByItself = 0;
  let hiddenLooks = 0;
  // How many questions wait for the signed-in annotator (0 when not signed in).
  const waitingForMe = () => {
    const summary = document.getElementById("queue-summary");
    // "3 approvals, 12 questions, 1 form wait for you…": every kind counts.
    const found = summary === null ? null : summary.textContent.trim().match(/^(\d[^;]*?) waits? for you/);
    if (found === null) return 0;
    return (found[1].match(/\d[\d,]*/g) || []).reduce((sum, n) => sum + Number(n.replace(/,/g, "")), 0);
  };
  setInterval(() => {
    hiddenLooks = shown(document.getElementById("answer-form")) ? 0 : hiddenLooks + 1;
    const present = document.visibilityState === "visible" && Date.now() - lastActive < PRESENT_MS;
    const now = Date.now();
    if (waitingForMe() > 0 && present && hiddenLooks >= HIDDEN_LOOKS && now - lastOpenedByItself > 3000) {
      if (press("queue-next")) lastOpenedByItself = now;
    }
  }, 500);

  // Gradio renders these boxes when it likes and fills them from the server:
  // watching their values is simpler and surer than hooking its events. A
  // change is looked for at every DOM change and, as a backstop, 10 times a
  // second.
  let openId = "";
  let openedAt = 0;
  let doneId = "";
  const RESTORE_MS = 1500;
  const follow = () => {
    followApproval();
    followElicit();
    followPhone();
    const done = box("answer-done");
    if (done !== null && done.value !== doneId) {
      doneId = done.value;
      if (doneId) localStorage.removeItem(DRAFT + doneId);
    }
    const opened = box("answer-request-id");
    const answer = box("answer-text");
    const id = opened === null ? "" : opened.value;
    if (!id) {
      openId = ""; // nothing open: the next question, even the same one, is new
      return;
    }
    if (answer === null || !shown(answer)) return;
    if (id && id === openId && !answer.value && Date.now() - openedAt < RESTORE_MS) {
      // Gradio may empty the box once more as it applies the rest of the
      // form: put the draft back while the question is just opened.
      const draft = readDraft(id);
      if (draft) {
        answer.value = draft;
        answer.dispatchEvent(new Event("input", { bubbles: true }));
      }
      return;
    }
    if (id === openId) return;
    openId = id;
    openedAt = Date.now();
    disarm();
    const draft = readDraft(id);
    if (draft && !answer.value) {
      answer.value = draft;
      answer.dispatchEvent(new Event("input", { bubbles: true }));
    } else if (!draft && answer.value) {
      // Words the server brought back (typed before a call of the person's own tool):
      // kept like a draft, so that a redraw that empties the box puts them back.
      saveDraft(id, answer.value);
    }
    phoneSendingUntil = 0;
    // After a Send the next question and the line saying what became of
    // the last one must be in view (on a phone the page had scrolled down).
    const top = document.getElementById("answer-status-row") || document.getElementById("answer-form");
    const question = document.getElementById("answer-question");
    const seen = (element) => {
      const rect = element.getBoundingClientRect();
      return rect.top >= 0 && rect.bottom <= window.innerHeight;
    };
    answer.focus({ preventScroll: true });
    if (top !== null && (!seen(top) || (question !== null && !seen(question)))) {
      top.scrollIntoView({ block: "start" });
    }
    answer.setSelectionRange(answer.value.length, answer.value.length);
    answer.dataset.aahOpened = id; // what a test waits for before it types
  };
  new MutationObserver(follow).observe(document.body, {
    subtree: true,
    childList: true,
    attributes: true,
    characterData: true,
  });
  setInterval(follow, 100);
}
