"""``aah tui``: run a task live, answer the agent, break its tools, watch it cope.

The app is a thin face over the session driver. The agent runs in a worker
on the app's event loop and reports every stored event back as a message.
Its questions go through the store's queue (``QueueHuman``), exactly as a
batch run's do, so this app answers its own session's questions and those of
runs in other processes the same way: opening a question claims it under the
annotator's name (renewed while it stays open, let go when it is put aside),
so a web annotator is not offered it meanwhile. Tools answer through a
``LiveFaultExecutor`` whose broken tools the user changes while the agent works.
"""

from __future__ import annotations

import asyncio
import importlib
import math
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from textual import on, work
from textual.app import App, ComposeResult, ScreenStackError, UnknownModeError
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.reactive import reactive
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Footer, Header, Input
from textual.widgets._toast import ToastRack  # the screens' toasts (_show_toasts)

from aah.annotators import annotator_key, check_annotator_name
from aah.benchmark import load_demo_tasks
from aah.desk import (
    SYSTEM_CLOCK,
    Clock,
    Decision,
    DeskWorkflow,
    ElicitationResult,
    OpenedRequest,
    Sent,
)
from aah.errors import AahError
from aah.events import ErrorEvent, HumanQuestionEvent
from aah.store import DEFAULT_LEASE_S, HumanRequestRecord, RequestKind, SessionStore, StoreFileError
from aah.tools.http import LiveFaultExecutor, live_fault_executor
from aah.ui.counts import kinds_text, only_questions
from aah.ui.guidelines import guidelines_markdown
from aah.ui.tui.approval_screen import ApproveCallScreen
from aah.ui.tui.elicitation_screen import ElicitationScreen
from aah.ui.tui.screens import (
    HELP_KEY,
    AskHumanScreen,
    PendingQuestionsScreen,
    queue_place,
    taken_by,
)
from aah.ui.tui.setup import SetupPanel
from aah.ui.tui.tasks import FREE_TEXT_TOOLS, ScriptedModel, TuiTask, configured_model
from aah.ui.tui.user_tools_screen import ToolPress
from aah.ui.tui.widgets import (
    SessionDone,
    SessionEvent,
    SessionStats,
    StatsLine,
    StatsPanel,
    Timeline,
)

if TYPE_CHECKING:
    from aah.events import Event
    from aah.llm import ModelConfig
    from aah.tools.registry import Registry

# Who answers are signed as when nobody says (``aah tui --annotator``).
FALLBACK_ANNOTATOR = "tui"
QUESTION_POLL_SECONDS = 0.1
# An open question's claim is renewed this often, well within its lease.
CLAIM_RENEW_SECONDS = 60.0
# While the store keeps failing, its one-line notice comes back this often.
STORE_NOTICE_SECONDS = 10.0
# How long a first q mid-session waits for the second that confirms quitting.
QUIT_CONFIRM_S = 5.0
# The waiting-questions list shows at most this many (the oldest).
PENDING_LIST_LIMIT = 500
# How long a call of the person's own tool waits for the question that shows its result.
FOLLOW_UP_WAIT_S = 15.0
# A notice with less time than this left when a screen shows its toasts is
# dropped rather than shown (see AahApp._show_toasts).
TOAST_FLOOR_S = 0.25
CALL_PENDING = (
    "Your call is sent; its result comes with the conversation's next question (p lists it),"
    " your words with it."
)
# The modules a session needs take seconds to import; the app loads them off
# the event loop so the screen never freezes.
_RUNTIME_MODULES = ("aah.runtime.environment", "aah.runtime.session", "aah.runtime.humans")
# Actions that make no sense while a dialog is open over the main screen.
_MAIN_SCREEN_ACTIONS = {"start", "break_tool", "fix_all", "pending", "toggle_aah", "pick"}
_MAIN_SCREEN_ACTIONS |= {"toggle_setup"}
# Below this many columns the three panels do not fit side by side with a
# timeline of 40 columns (the side panels take 68): the timeline takes the
# full width and the setup opens in its place (t).
NARROW_BELOW = 110
# Below this many rows the dialogs drop their spacing.
SHORT_BELOW = 30
# Number keys pick the demo tasks, in the order the demo runs them.
_DEMO_KEYS = min(9, len(load_demo_tasks()))


def default_annotator() -> str:
    """The name answers go under when none is given: the login name, else ``tui``.

    The login name as ``check_annotator_name`` spells it; one it refuses
    (``root`` is fine, an odd or reserved one is not) gives ``tui``.
    """
    login = os.environ.get("USER") or os.environ.get("USERNAME") or FALLBACK_ANNOTATOR
    try:
        return check_annotator_name(login)
    except ValueError:
        return FALLBACK_ANNOTATOR


def _import_runtime() -> None:
    for name in _RUNTIME_MODULES:
        importlib.import_module(name)


class AahApp(App[None]):
    """Run tasks live against a model, answer the agent, and break its tools.

    Args:
        registry: The tool registry the tasks' endpoints come from.
        db: The session database, shared with other processes.
        data: The data directory for benchmark tasks (discovered when None).
        task_id: A demo task to select and start at once.
        annotator: The name this app's answers are stored under (default: $USER).
    """

    CSS_PATH = "app.tcss"
    TITLE = "aah — Ask-and-Help"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW_BELOW, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (SHORT_BELOW, "-tall")]
    # Labels are short so the footer stays whole at 60 columns.
    BINDINGS = [
        Binding("1", "pick(1)", "Task", key_display=f"1-{_DEMO_KEYS}"),
        *(Binding(str(n), f"pick({n})", show=False) for n in range(2, _DEMO_KEYS + 1)),
        Binding("s", "start", "Start"),
        Binding("b", "break_tool", "Break"),
        Binding("x", "fix_all", "Fix"),
        Binding("p", "pending", "Queue"),
        Binding("a", "toggle_aah", "Ask-Help"),
        Binding("t", "toggle_setup", "Setup"),
        Binding("q", "quit", "Quit"),
        HELP_KEY,
    ]

    running: reactive[bool] = reactive(False)
    stats: reactive[SessionStats] = reactive(SessionStats)

    def __init__(
        self,
        registry: Registry,
        db: Path,
        data: Path | None = None,
        task_id: str | None = None,
        annotator: str | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        super().__init__()
        self.annotator = annotator_key(annotator or "") or default_annotator()
        self.registry = registry
        self.db = db
        self.data = data
        self.initial_task = task_id
        self.configured = configured_model()
        self.scripted = ScriptedModel()
        self.store = SessionStore(db, clock=clock)
        # The desk's one workflow (as the web page's): claims, renewals, answers.
        self.workflow = DeskWorkflow(self.store, lease_seconds=DEFAULT_LEASE_S, undo_seconds=0)
        self.faults: LiveFaultExecutor = live_fault_executor("mock")
        self.session_id: str | None = None
        self._preview: TuiTask | None = None
        self._opened: set[str] = set()  # questions already shown once
        self._own_questions: list[str] = []  # this session's requests, from its events
        self._claimed: dict[str, OpenedRequest] = {}  # requests this app holds a claim on
        self._store_notice_at = -math.inf  # when the store's failure was last told
        # Working through the queue (opened from the list): each answer opens the next.
        self._queue_mode = False
        self._started = 0.0
        # What was typed into questions put aside (Esc), shown again when they reopen.
        self._drafts: dict[str, str] = {}
        self._quit_asked = -math.inf  # when quitting mid-session was last asked for

    def compose(self) -> ComposeResult:
        """Setup on the left, the timeline in the middle, the numbers on the right."""
        models = [("scripted demo model", "scripted")]
        if self.configured is not None:
            where = self.configured.describe()["base_url"]
            models.insert(0, (f"{self.configured.model} at {where}", "configured"))
        yield Header(icon="◆")
        with Horizontal(id="body"):
            yield SetupPanel(self.registry, self.data, models, id="setup")
            with Vertical(id="main"):
                yield StatsLine(id="stats-line").data_bind(AahApp.stats)
                yield Timeline(id="timeline")
            yield StatsPanel(id="stats").data_bind(AahApp.stats)
        yield Footer(compact=True, show_command_palette=False)

    @property
    def setup(self) -> SetupPanel:
        """The left column."""
        return self.query_one(SetupPanel)

    @property
    def timeline(self) -> Timeline:
        """The session's steps."""
        return self.query_one(Timeline)

    def on_mount(self) -> None:
        """Load what takes time off the loop, start the clocks, pick the first task."""
        self.sub_title = f"sessions in {self.db}"
        self._warm_up()
        self.set_interval(QUESTION_POLL_SECONDS, self._check_questions)
        self.set_interval(0.5, self._tick)
        self.set_interval(CLAIM_RENEW_SECONDS, self._renew_claim)
        self.timeline.add_note(
            f"Press 1-{_DEMO_KEYS} to choose a demo task, then s to start it.",
            "Break a tool with b while the agent works; p opens the questions waiting anywhere.",
        )
        if self.initial_task is not None:
            self.setup.select_demo(self.initial_task)
            self.call_after_refresh(self.action_start)

    # -- notices (toasts) -----------------------------------------------------

    def _refresh_notifications(self) -> None:
        """Show the live notices on the screen in front, once the app comes to it."""
        self.call_later(self._show_toasts)

    def _show_toasts(self) -> None:
        """Build the front screen's toasts, leaving out any notice about to end.

        Textual builds a toast for each live notice the front screen shows
        none of (at every screen change), with a one-shot timer for the time
        the notice has left. A timer of almost no time never fires (the toast
        stays for good) and one below zero spins the event loop for ever, the
        app frozen (Textual 8.2, ``Timer._run``: a first tick already past is
        skipped). A notice with under ``TOAST_FLOOR_S`` left is dropped here.
        """
        for notice in list(self._notifications):
            if notice.time_left < TOAST_FLOOR_S:
                self._unnotify(notice, refresh=False)
        try:
            rack = self.screen.get_child_by_type(ToastRack)
        except (ScreenStackError, UnknownModeError, NoMatches):
            return  # no screen yet (or none now: the app closes), or one without toasts
        rack.show(self._notifications)

    def on_unmount(self) -> None:
        """Close a session cut short, let go of claims, stop the scripted model, close files."""
        if self.running and self.session_id is not None:
            self.workers.cancel_group(self, "session")
            with suppress(StoreFileError):
                self._abandon(self.session_id)
        with suppress(StoreFileError):  # closing: the claims lapse with their lease
            for request_id in list(self._claimed):
                self.workflow.leave(self.annotator, request_id, release=True)
        self.scripted.close()
        self.faults.close()
        self.store.close()

    # -- the session ----------------------------------------------------------

    @work(thread=True, group="setup")
    def _warm_up(self) -> None:
        _import_runtime()

    @work(exclusive=True, group="session", exit_on_error=False)
    async def run_agent(self, task: TuiTask, aah: bool, model: ModelConfig) -> None:
        """Run one session to its end; its events come back as messages."""
        try:
            await asyncio.to_thread(_import_runtime)
            from aah.runtime import (
                QueueHuman,
                SessionRequest,
                ToolFinder,
                open_runtime,
                run_session,
            )

            finder = ToolFinder(self.registry, FREE_TEXT_TOOLS) if task.discover else None
            request = SessionRequest(
                query=task.query,
                specs=task.specs,
                aah=aah,
                awareness=task.awareness,
                task_id=task.task_id,
                setting=task.setting,
                context=task.context,
                executor=self.faults,
                finder=finder,
            )
            human = QueueHuman(self.store, poll_seconds=QUESTION_POLL_SECONDS)
            async with open_runtime(
                db=self.db, model=model, human=human, listeners=[self._listen]
            ) as runtime:
                outcome = await run_session(request, runtime)
            self.post_message(SessionDone(outcome.status, outcome.error))
        except AahError as exc:
            self.post_message(SessionDone("error", str(exc)))
        except Exception as exc:  # the app must survive anything one session does
            self.post_message(SessionDone("error", f"{type(exc).__name__}: {exc}"))

    @contextmanager
    def _store_trouble(self, doing: str) -> Iterator[None]:
        """Ride out a store that fails for a while (a server restarting, a full disk).

        What the block does is left undone; the person reads one line, at
        most every ``STORE_NOTICE_SECONDS`` while it lasts, and the app goes
        on (the timers try again on their next tick). Safe on worker threads.
        """
        try:
            yield
        except StoreFileError as exc:
            now = time.monotonic()
            if now - self._store_notice_at < STORE_NOTICE_SECONDS:
                return
            self._store_notice_at = now
            message = f"Could not {doing}: {exc}"
            if threading.get_ident() == self._thread_id:
                self.notify(message, severity="error", timeout=STORE_NOTICE_SECONDS)
            else:
                self.call_from_thread(
                    self.notify, message, severity="error", timeout=STORE_NOTICE_SECONDS
                )

    async def action_quit(self) -> None:
        """Quit; while a session runs (it then ends in error), only when asked twice."""
        now = time.monotonic()
        if self.running and now - self._quit_asked > QUIT_CONFIRM_S:
            self._quit_asked = now
            self.notify(
                "A session is running: quitting now ends it in error. "
                "Press q (or ctrl+q) again to quit.",
                severity="warning",
                timeout=QUIT_CONFIRM_S,
            )
            return
        self.exit()

    def _abandon(self, session_id: str) -> None:
        """Record that the app closed mid-session, so no one answers a dead question."""
        self.store.humans.expire_session_requests(session_id)
        message = "the terminal app was closed while the session ran"
        self.store.append_event(ErrorEvent(session_id=session_id, message=message, where="tui"))
        self.store.finish_session(session_id, "error")

    def _listen(self, event: Event) -> None:
        self.post_message(SessionEvent(event))

    def on_session_event(self, message: SessionEvent) -> None:
        """Show one step of the session and count it."""
        if self.session_id is None:
            self.session_id = message.event.session_id
            self.stats = replace(self.stats, session=self.session_id[:12])
        if isinstance(message.event, HumanQuestionEvent):
            self._own_questions.append(message.event.request_id)
        self.timeline.add_event(message.event)
        self.stats = self.stats.after(message.event)

    def on_session_done(self, message: SessionDone) -> None:
        """The session ended: unlock the setup and say how it went."""
        self._tick()
        self.running = False
        self.stats = replace(self.stats, status=message.status)
        if message.status == "skipped":
            self.timeline.add_note("⏭ skipped: the agent declined before acting", tone="warn")
        if message.error:
            self.timeline.add_note("✗ the session failed", message.error, "fail")
            self.notify(message.error, severity="error")

    def watch_running(self, running: bool) -> None:
        """Lock the setup while a session runs."""
        self.setup.freeze(running)

    # -- the chosen task ------------------------------------------------------

    def on_setup_panel_choice_changed(self) -> None:
        """Work out the chosen task now, so its tools can be broken before it starts."""
        self._refresh_preview()

    def _refresh_preview(self) -> None:
        try:
            self._preview, problem = self.setup.chosen_task(), ""
        except AahError as exc:
            self._preview, problem = None, str(exc)
        self.setup.show_task(self._preview, problem, list(self.faults.faults))

    def _show_faults(self) -> None:
        broken = self.faults.faults
        self.setup.show_faults(broken)
        self.refresh_bindings()  # Fix is offered while a tool is broken
        self.stats = replace(self.stats, broken_tools=len(broken))

    def _model(self, task: TuiTask) -> tuple[ModelConfig, str]:
        if self.setup.model_choice == "configured" and self.configured is not None:
            return self.configured, self.configured.model
        return self.scripted.config_for(task.script), "scripted demo"

    @on(Input.Submitted, "#free-query")
    def on_free_query_submitted(self) -> None:
        """Enter in the request box starts it."""
        self.action_start()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Start, break or fix, by button."""
        actions = {"start": self.action_start, "break": self.action_break_tool}
        actions["fix"] = self.action_fix_all
        action = actions.get(event.button.id or "")
        if action is not None:
            action()

    # -- actions (key bindings) -----------------------------------------------

    @property
    def narrow(self) -> bool:
        """Whether the screen is too narrow for the three panels side by side."""
        return self.size.width < NARROW_BELOW

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keep the main screen's keys for the main screen, not its dialogs.

        On a narrow screen the footer has room for the keys that act on what is
        in sight only: the setup key and Ask-and-Help (whose switch is in the
        setup) come and go with the setup, and Fix shows once a tool is broken.
        """
        if action in _MAIN_SCREEN_ACTIONS and isinstance(self.screen, ModalScreen):
            return False
        setup_in_sight = not self.narrow or self.screen_stack[0].has_class("-setup-open")
        if action == "toggle_setup":
            return self.narrow
        if action == "toggle_aah":  # the switch it flips is in the setup
            return setup_in_sight
        if action in ("break_tool", "fix_all") and self.narrow and setup_in_sight:
            return False  # the setup's own Break and Fix buttons are in sight
        if action == "fix_all":
            return bool(self.faults.faults)
        return True

    def on_resize(self) -> None:
        """Offer the keys that fit the new width (the setup key comes and goes)."""
        self.call_after_refresh(self.refresh_bindings)
        if not self.narrow:
            self.screen_stack[0].remove_class("-setup-open")

    def action_pick(self, number: int) -> None:
        """Choose demo task ``number`` (1 is the first), ready for s."""
        tasks = load_demo_tasks()
        if self.running:
            self.notify("A session is running: wait for it to end.", severity="warning")
            return
        if not 1 <= number <= len(tasks):
            self.notify(f"There are {len(tasks)} demo tasks: press 1-{len(tasks)}.")
            return
        self.setup.select_demo(tasks[number - 1].id)
        self.notify(f"{number}: {tasks[number - 1].title}. Press s to start.", timeout=4)

    def action_help(self) -> None:
        """Show the keys of what has focus, with what each does, or hide them again.

        The panel sits beside the screen: a typed answer keeps its text and focus.
        """
        if self.screen.query("HelpPanel"):
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()

    def action_toggle_setup(self) -> None:
        """On a narrow screen, show the setup in the timeline's place, or the timeline again."""
        main = self.screen_stack[0]
        main.toggle_class("-setup-open")
        if main.has_class("-setup-open"):
            self.setup.focus_first()
        else:
            self.timeline.focus()
        self.refresh_bindings()

    def action_start(self) -> None:
        """Start the chosen task."""
        if self.running:
            self.notify("A session is running: wait for it to end.", severity="warning")
            return
        self._refresh_preview()
        task = self._preview
        if task is None:
            self.notify("Choose a task, or type a request, first.", severity="warning")
            return
        for name, kind in task.faults.items():
            self.faults.break_tool(name, kind)
        aah, (model, label) = self.setup.aah, self._model(task)
        ask = "on" if aah else "off"
        body = f"user: {task.query}\ntools: {task.tools_line} · Ask-and-Help {ask}"
        self.screen_stack[0].remove_class("-setup-open")  # a narrow screen shows the run
        self.refresh_bindings()
        self.timeline.follow()
        # What was said before the start ("press s to start") is done with, and
        # would cover the session's first lines. Later in the app's queue than
        # a pick's notice that is still on its way.
        self.call_later(self.clear_notifications)
        self.timeline.add_note(f"▶ {task.title}", body, "header")
        self.stats = SessionStats(status="running", model=label)
        self._show_faults()
        self.session_id = None
        self._own_questions = []
        self._started = time.monotonic()
        self.running = True
        self.run_agent(task, aah, model)

    def action_break_tool(self) -> None:
        """Break the chosen tool the chosen way, from its next call on."""
        tool, kind = self.setup.fault_choice()
        if tool is None:
            self.notify("Choose a task first: its tools can then be broken.", severity="warning")
            return
        self.faults.break_tool(tool, kind)
        self._show_faults()
        self.timeline.add_note(f"⚡ {tool} broken ({kind})", tone="warn")

    def action_fix_all(self) -> None:
        """Let every tool work again."""
        self.faults.fix_all()
        self._show_faults()
        self.timeline.add_note("⚡ every tool works again", tone="warn")

    def action_toggle_aah(self) -> None:
        """Offer the ask_human tool, or not, to the next session."""
        self.setup.toggle_aah()

    def action_pending(self) -> None:
        """List what waits for a person, from any session, in the queue's order."""
        listing = None
        with self._store_trouble("list the waiting questions"):
            listing = self.store.humans.queue_listing(limit=PENDING_LIST_LIMIT)
        if listing is None:
            return
        if not listing.total:
            self.notify("No question is waiting for a person.")
            return
        screen = PendingQuestionsScreen(
            listing.entries, listing.total, self.annotator, listing.by_kind
        )
        self.push_screen(screen, callback=self._open_chosen)

    def _open_chosen(self, request_id: str | None) -> None:
        if request_id is not None:
            self._claim_and_ask(request_id, queue=True)

    # -- questions --------------------------------------------------------------

    def _check_questions(self) -> None:
        """Open this session's new question as soon as the store has it."""
        waiting = self.running and self.stats.status == "waiting"
        top = self._top_screen()
        if not waiting or top is None or isinstance(top, ModalScreen):
            return
        with self._store_trouble("look for the session's questions"):
            for request_id in self._own_questions:
                if request_id in self._opened:
                    continue
                request = self.store.humans.get_human_request(request_id)
                if request is not None and request.status == "pending":
                    self._opened.add(request_id)
                    self._claim_and_ask(request_id)
                    return

    @work(thread=True, group="claims")
    def _claim_and_ask(self, request_id: str, queue: bool = False) -> None:
        # A claim is a write, which may wait on another process's lock.
        with self._store_trouble("open the question"):
            if self.workflow.open(self.annotator, request_id):
                request = self.store.humans.get_human_request(request_id)
                if request is not None:
                    self.call_from_thread(self._ask, request, queue)
                    return
            self.call_from_thread(self.notify, self._refusal(request_id), severity="warning")
        # Not opened: this session's own question is looked for again.
        self._opened.discard(request_id)

    def _refusal(self, request_id: str) -> str:
        """Why this annotator cannot take the question, in one line."""
        try:
            closed = self.store.humans.closed_reason(request_id)
        except KeyError:
            return "That question is gone: press p for the ones waiting now."
        if closed is not None:
            return f"{closed[0].upper()}{closed[1:]}."
        entry = self.store.humans.queue_entry(request_id)
        holders = taken_by(entry, self.annotator) if entry is not None else ()
        if holders:
            return f"Taken by {', '.join(holders)}: press p later, or answer another question."
        return "This question needs no more answers."

    def _ask(self, request: HumanRequestRecord, queue: bool = False, draft: str = "") -> None:
        self._queue_mode = queue
        self._opened.add(request.id)
        if request.id not in self._claimed:  # reopened to send again: the first opening counts
            self._claimed[request.id] = self.workflow.opened(self.annotator, request)
        own = request.session_id == self.session_id
        where = "" if own else self._place(request)
        if request.kind == "approval":
            # A tool call to decide on: its own dialog, the same claim and queue.
            decide = ApproveCallScreen(request, where=where, decided_by=self.annotator)
            self.push_screen(decide, callback=partial(self._decided, request, decide))
            return
        if request.kind == "elicitation":
            # An MCP server's form or link: its own dialog, the same claim and queue.
            elicit = ElicitationScreen(request, where=where)
            self.push_screen(elicit, callback=partial(self._elicited, request, elicit))
            return
        screen = AskHumanScreen(
            request,
            where=where,
            draft=draft or self._drafts.pop(request.id, ""),
            guidelines=guidelines_markdown(self.store.team.guidelines_for(request.id)),
        )
        self.push_screen(screen, callback=partial(self._answered, request, screen))

    def _place(self, request: HumanRequestRecord) -> str:
        """Which setting and task a question comes from, as the queue list names them."""
        session = None
        with self._store_trouble("read the question's session"):
            session = self.store.get_session(request.session_id)
        setting, task = (session.setting, session.task_id) if session else (None, None)
        asker = request.context.get("asker") if request.kind == "elicitation" else None
        return queue_place(
            setting, task, request.session_id, asker if isinstance(asker, str) else ""
        )

    def on_ask_human_screen_put_aside(self, message: AskHumanScreen.PutAside) -> None:
        """A question closed unanswered is free for other annotators again."""
        self._queue_mode = False  # "later" also means: no more questions now
        self._claimed.pop(message.request_id, None)
        self._release(message.request_id)
        if message.draft.strip():
            self._drafts[message.request_id] = message.draft
            self.notify("Your answer so far is kept: press p to go back to it.")

    @work(thread=True, group="claims")
    def _release(self, request_id: str) -> None:
        with self._store_trouble("put the question back"):  # else its claim lapses
            self.workflow.leave(self.annotator, request_id, release=True)

    def _renew_claim(self) -> None:
        """Keep the open question's claim alive while the person is at it."""
        top = self._top_screen()
        if isinstance(top, AskHumanScreen | ApproveCallScreen | ElicitationScreen):
            self._renew(top.request.id)

    def _top_screen(self) -> Screen[object] | None:
        """The screen on top, or None while the app starts or closes (timers still tick then)."""
        stack = self.screen_stack
        return stack[-1] if stack else None

    @work(thread=True, group="claims")
    def _renew(self, request_id: str) -> None:
        with self._store_trouble("keep the open question"):
            self.workflow.beat(self.annotator, request_id)

    def _answered(
        self, request: HumanRequestRecord, screen: AskHumanScreen, answer: str | ToolPress | None
    ) -> None:
        if isinstance(answer, ToolPress):
            self._write_press(request, answer)
            return
        self._write_answer(request, answer)

    @work(thread=True, group="answers")
    def _write_press(self, request: HumanRequestRecord, press: ToolPress) -> None:
        """A call of one of the person's own tools, then the question that shows its result.

        Off the event loop: the write, then the wait for the asker to make
        the call and ask again (``DeskWorkflow.follow_up``). Whatever goes
        wrong, the typed words are not lost: the question opens again holding
        them, or they come back with the next one.
        """
        try:
            sent = self.workflow.called(
                self.annotator, self._opening(request), press.tool, press.values, press.draft
            )
        except (StoreFileError, ValueError) as exc:  # the desk's ContentInvalid among them
            self.call_from_thread(self.notify, _sentence(f"Not called: {exc}"), severity="error")
            self.call_from_thread(self._ask, request, self._queue_mode, press.draft)
            return
        except LookupError as exc:
            self.call_from_thread(self.notify, _sentence(f"Not called: {exc}"), severity="error")
            return
        self._claimed.pop(request.id, None)
        if sent.outcome != "settled":
            message = _not_used(sent, "call", "Someone else answered this question first.")
            self.call_from_thread(self.notify, message, severity="warning")
            return
        following = None
        with self._store_trouble("open the call's result"):
            following = self.workflow.follow_up(self.annotator, wait_seconds=FOLLOW_UP_WAIT_S)
        if following is None:
            self.call_from_thread(self.notify, CALL_PENDING)
            return
        self.call_from_thread(self._ask, following, self._queue_mode)

    def _elicited(
        self,
        request: HumanRequestRecord,
        screen: ElicitationScreen,
        result: ElicitationResult | None,
    ) -> None:
        if result is not None:
            self._write_elicitation(request, result)

    def _decided(
        self, request: HumanRequestRecord, screen: ApproveCallScreen, choice: Decision | None
    ) -> None:
        if choice is not None:
            self._write_decision(request, choice)

    def _opening(self, request: HumanRequestRecord) -> OpenedRequest:
        return self._claimed.get(request.id) or self.workflow.opened(self.annotator, request)

    @work(thread=True, group="answers")
    def _write_decision(self, request: HumanRequestRecord, choice: Decision) -> None:
        # A write off the event loop; the claim ends with it.
        try:
            sent = self.workflow.decide(
                self.annotator,
                self._opening(request),
                choice.decision,
                arguments=choice.arguments,
                reason=choice.reason,
                response=choice.response,
            )
        except StoreFileError as exc:
            # The decision is not lost: the call's dialog opens again to send it once more.
            self.call_from_thread(self.notify, f"Not stored: {exc}", severity="error")
            self.call_from_thread(self._ask, request, self._queue_mode)
            return
        except (LookupError, ValueError) as exc:
            self.call_from_thread(self.notify, _sentence(f"Not sent: {exc}"), severity="error")
            sent = None
        self._claimed.pop(request.id, None)
        if sent is not None and sent.outcome != "settled":
            message = _not_used(sent, "decision", "Someone else decided on this call first.")
            self.call_from_thread(self.notify, message, severity="warning")
        if self._queue_mode:
            self._ask_next()

    @work(thread=True, group="answers")
    def _write_elicitation(self, request: HumanRequestRecord, result: ElicitationResult) -> None:
        # A write off the event loop; the claim ends with it.
        try:
            sent = self.workflow.elicited(self.annotator, self._opening(request), result)
        except StoreFileError as exc:
            # Nothing is lost: the server's dialog opens again to send it once more.
            self.call_from_thread(self.notify, f"Not stored: {exc}", severity="error")
            self.call_from_thread(self._ask, request, self._queue_mode)
            return
        except LookupError as exc:
            self.call_from_thread(self.notify, _sentence(f"Not sent: {exc}"), severity="error")
            sent = None
        self._claimed.pop(request.id, None)
        if sent is not None and sent.outcome != "settled":
            message = _not_used(sent, "answer", "Someone else answered this question first.")
            self.call_from_thread(self.notify, message, severity="warning")
        if self._queue_mode:
            self._ask_next()

    @work(thread=True, group="answers")
    def _write_answer(self, request: HumanRequestRecord, answer: str | None) -> None:
        # A write may wait on another process's lock: never on the event loop.
        # Answering also ends this annotator's claim.
        try:
            sent = self.workflow.answer(
                self.annotator, self._opening(request), answer or "", declined=answer is None
            )
        except StoreFileError as exc:
            # The typed answer is not lost: the question opens again holding it.
            self.call_from_thread(self.notify, f"Not stored: {exc}", severity="error")
            self.call_from_thread(self._ask, request, self._queue_mode, answer or "")
            return
        except ValueError as exc:  # too long: the question opens again holding it
            self.call_from_thread(self.notify, _sentence(f"Not sent: {exc}"), severity="error")
            self.call_from_thread(self._ask, request, self._queue_mode, answer or "")
            return
        except LookupError as exc:
            self.call_from_thread(self.notify, _sentence(f"Not sent: {exc}"), severity="error")
            sent = None
        self._claimed.pop(request.id, None)
        if sent is not None and sent.outcome != "settled":
            message = _not_used(sent, "answer", "Someone else answered this question first.")
            self.call_from_thread(self.notify, message, severity="warning")
        elif sent is not None and request.session_id != self.session_id:
            self.call_from_thread(self.notify, f"Answer sent to {self._place(request)}.")
        if self._queue_mode:
            self._ask_next()

    def _ask_next(self) -> None:
        """In queue mode, claim and open the next waiting question (on a worker thread)."""
        following = None
        with self._store_trouble("open the next question"):
            following = self.workflow.next_for(self.annotator).request
        if following is not None:
            self.call_from_thread(self._ask, following, True)
            return
        self._queue_mode = False
        self.call_from_thread(self.notify, "No more questions are waiting: the queue is done.")

    def _tick(self) -> None:
        """Advance the clock and count the questions other sessions are waiting on."""
        elsewhere, kinds = self.stats.waiting_elsewhere, self.stats.elsewhere_kinds
        with self._store_trouble("count the waiting questions"):
            by_kind = Counter(self.store.humans.queue_listing(limit=0).by_kind)
            if self.running:
                by_kind -= self._own_waiting()
            elsewhere = by_kind.total()
            kinds = "" if only_questions(by_kind) else kinds_text(by_kind)
        elapsed = time.monotonic() - self._started if self.running else self.stats.elapsed
        self.stats = replace(
            self.stats, waiting_elsewhere=elsewhere, elsewhere_kinds=kinds, elapsed=elapsed
        )

    def _own_waiting(self) -> Counter[RequestKind]:
        """How many of this (running) session's requests wait in the queue, by kind."""
        own = (
            self.store.humans.get_human_request(request_id) for request_id in self._own_questions
        )
        return Counter(
            request.kind for request in own if request is not None and request.status == "pending"
        )


def _not_used(sent: Sent, what: str, first: str) -> str:
    """Why a reply that settled nothing was not used, in one line."""
    if sent.outcome == "closed" and sent.closed:
        return f"{sent.closed[0].upper()}{sent.closed[1:]}: your {what} was not used."
    if sent.outcome == "repeat":
        return f"You already sent your {what}; your first {what} stands."
    return first


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if text.endswith((".", "!", "?")) else f"{text}."
