"""The PostgreSQL drill: runners and answerers in separate processes and folders, one server.

Three ``aah bench run`` runners (each its own run, folder and copy of the
registry; nothing shared but the database's URL) park sessions whose first
step asks "Which city?"; two ``aah web`` processes (each its own folder)
serve the queue, and annotators on threads answer through their pages'
HTTP API as a browser would; where tmux is installed, a person at ``aah
tui`` in a real terminal answers from the same queue. Midway one runner is
killed with SIGKILL and started again, and PostgreSQL itself is restarted
(every connection cut): a runner whose run stops on that is run again, as
its error line says. At the end every question was answered exactly once
and every session ended exactly once, with one question, one answer and
one final answer in its log.

``AAH_DRILL_QUESTIONS`` (default 60: under two minutes on two busy cores)
and ``AAH_DRILL_ANNOTATORS`` (per answering process, default 2) scale it;
perf/postgres_drill.py runs the full figures (2,000 questions, 20 annotators).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
from postgres_cluster import PostgresServer, raw_rows
from runtime_support import ASK_FIRST_SCRIPT

from aah.benchmark.failtalms.dataset import load_tasks
from aah.db_url import parse_location
from aah.events import FinalAnswerEvent, HumanAnswerEvent, HumanQuestionEvent
from aah.store import SessionStore
from aah.testing.fake_llm import FakeLLMServer

pytest.importorskip("gradio", reason="the web page needs the ui extra: pip install 'aah[ui]'")

RUNNERS = 3
ANSWERERS = 2

# An answering process: annotators on threads, each a browser's worth of HTTP
# calls to one ``aah web`` process (gradio_client, the page's own API): sign
# in, which opens the oldest question; Send stores the answer and opens the
# next; with none open, ask for the next now and then, as the page's timer does.
ANSWERER = """
import json, sys, threading, time
from gradio_client import Client

url, names = sys.argv[1], sys.argv[2].split(",")
stop = threading.Event()
sent, lock = [], threading.Lock()
QUESTION = {"sign_in": 3 + 6, "send_answer": 2 + 6, "next_request": 1 + 6}

def wait_for_stop():
    sys.stdin.read()
    stop.set()

def annotator(name):
    api, opened = None, False
    while not stop.is_set():
        try:
            if api is None:
                api = Client(url, verbose=False)
                opened = bool(api.predict(name, "", api_name="/sign_in")[QUESTION["sign_in"]])
            elif opened:
                reply = api.predict("Lisbon", None, api_name="/send_answer")
                with lock:
                    sent.append(name)
                opened = bool(reply[QUESTION["send_answer"]])
            else:
                time.sleep(0.1)
                opened = bool(api.predict(api_name="/next_request")[QUESTION["next_request"]])
        except Exception:
            time.sleep(0.2)  # the server restarts: a person would try again

threading.Thread(target=wait_for_stop, daemon=True).start()
threads = [threading.Thread(target=annotator, args=(n,)) for n in names]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps(sent), flush=True)
"""


TMUX = shutil.which("tmux")
TUI_ANNOTATOR = "terminal-ann"


class TerminalAnnotator:
    """A person at ``aah tui`` in a real terminal (tmux), answering from the queue.

    Each round: ``p`` opens the waiting questions, ``End`` and Enter take the
    newest (the web annotators take the oldest first), the answer is typed
    and sent with Enter; the app then opens the next question itself, which
    is answered the same way. A round that does not go as a person would see
    it (the question was taken meanwhile, the server restarted) is tried again.
    """

    def __init__(self, env: dict[str, str], folder: Path, db: Path) -> None:
        self.socket = f"aah-drill-{folder.name}-{os.getpid()}"
        self.db = db
        # What the app needs of the environment, not all of it: tmux takes
        # the command as one line.
        wanted = ("AAH_", "PG", "PATH", "HOME", "PYTHONPATH", "LANG", "LC_")
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items() if k.startswith(wanted))
        command = (
            f"cd {shlex.quote(str(folder))} && env {exports} TERM=xterm-256color "
            f"{shlex.quote(sys.executable)} -m aah tui --annotator {TUI_ANNOTATOR}"
        )
        self._tmux("-f", os.devnull, "new-session", "-d", "-x", "120", "-y", "40", command)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._answer, daemon=True)

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=10
        )
        return done.stdout

    def _shows(self, text: str, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not self.stop.is_set():
            if text in self._tmux("capture-pane", "-p"):
                return True
            time.sleep(0.2)
        return False

    def answered(self) -> int:
        rows = raw_rows(
            self.db, "SELECT count(*) FROM human_answers WHERE annotator = ?", (TUI_ANNOTATOR,)
        )
        return int(rows[0][0])

    def _answer(self) -> None:
        self._shows("q Quit", 60)
        while not self.stop.is_set():
            try:
                before = self.answered()
            except Exception:  # the server restarts
                time.sleep(0.5)
                continue
            # After an answer the app opens the next question by itself (and
            # after a failed send, the same one again, the answer still typed).
            if "Decline" not in self._tmux("capture-pane", "-p"):
                self._tmux("send-keys", "p")
                if not self._shows("Waiting for a person:", 10):
                    time.sleep(0.5)  # "No question is waiting": look again soon
                    continue
                self._tmux("send-keys", "End")
                self._tmux("send-keys", "Enter")
                if not self._shows("Decline", 10):
                    self._tmux("send-keys", "Escape")  # taken meanwhile: the list is left
                    continue
            self._tmux("send-keys", "C-u")  # whatever the box holds
            self._tmux("send-keys", "-l", "Lisbon")
            self._tmux("send-keys", "Enter")
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not self.stop.is_set():
                try:
                    if self.answered() > before:
                        break
                except Exception:
                    pass
                time.sleep(0.2)

    def close(self) -> str:
        """Stop answering and close the app; what its screen showed last."""
        self.stop.set()
        self.thread.join(timeout=30)
        shown = self._tmux("capture-pane", "-p")
        self._tmux("kill-server")
        return shown


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serving(url: str, process: subprocess.Popen[str], timeout: float = 120) -> None:
    """Wait until the web process at ``url`` answers."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, "aah web exited before serving"
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"aah web did not serve {url} in {timeout:.0f} s")


def _folder(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir()
    return folder


def test_runners_and_answerers_on_one_server_survive_a_kill_and_a_server_restart(
    postgres_server: PostgresServer,
    postgres_url: str,
    shared_data: Path,
    shared_registry: Path,
    tmp_path: Path,
) -> None:
    questions = int(os.environ.get("AAH_DRILL_QUESTIONS", "60"))
    annotators = int(os.environ.get("AAH_DRILL_ANNOTATORS", "2"))
    started = time.monotonic()
    tasks = [task.id for task in load_tasks(shared_data)][:questions]
    assert len(tasks) == questions
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    env |= {
        "AAH_DATA_DIR": str(shared_data),
        "AAH_MODEL": "fake-model",
        "AAH_DB": postgres_url,
        "AAH_LLM_RETRIES": "0",
        "COLUMNS": "200",
    }
    db = parse_location(postgres_url)
    SessionStore(db).close()  # the tables, before several processes race to make them
    with FakeLLMServer(ASK_FIRST_SCRIPT) as llm:
        env["AAH_BASE_URL"] = llm.base_url
        commands: list[tuple[list[str], dict[str, str], Path]] = []
        for index in range(RUNNERS):
            folder = _folder(tmp_path, f"runner-{index}")
            shutil.copy(shared_registry, folder / "registry.db")
            command = [sys.executable, "-m", "aah", "bench", "run", "--run", f"drill-{index}"]
            command += ["--no-probe", "--human", "queue", "--concurrency", "8"]
            for task_id in tasks[index::RUNNERS]:
                command += ["--ids", task_id]
            commands.append((command, env | {"AAH_REGISTRY": str(folder / "registry.db")}, folder))

        starts = Counter[int]()

        def start(index: int) -> subprocess.Popen[str]:
            command, runner_env, folder = commands[index]
            starts[index] += 1
            # A file, not a pipe nobody reads while it runs (its progress fills one).
            with open(folder / f"stderr-{starts[index]}.txt", "w") as stderr:
                return subprocess.Popen(
                    command, cwd=folder, env=runner_env, stdout=subprocess.DEVNULL, stderr=stderr
                )

        def stderr_of(index: int) -> str:
            return (commands[index][2] / f"stderr-{starts[index]}.txt").read_text()

        pages = []
        for a in range(ANSWERERS):
            url = f"http://127.0.0.1:{_free_port()}/"
            folder = _folder(tmp_path, f"web-{a}")
            with open(folder / "stderr.txt", "w") as stderr:
                web = subprocess.Popen(
                    [sys.executable, "-m", "aah", "web", "--port", url.rsplit(":", 1)[1][:-1]],
                    cwd=folder,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=stderr,
                    text=True,
                )
            pages.append((url, web))
        for url, web in pages:
            _serving(url, web)
        terminal, by_terminal = None, 0
        if TMUX is not None:
            folder = _folder(tmp_path, "terminal")
            shutil.copy(shared_registry, folder / "registry.db")
            terminal_env = env | {"AAH_REGISTRY": str(folder / "registry.db")}
            terminal = TerminalAnnotator(terminal_env, folder, db)
            terminal.thread.start()
        runners = [start(index) for index in range(RUNNERS)]
        if terminal is not None:
            # The person at the terminal starts first: the pages' annotators,
            # quicker by far, would otherwise leave no question for them.
            head_start = time.monotonic() + 120
            while terminal.answered() < 1 and time.monotonic() < head_start:
                time.sleep(0.2)
        answerers = [
            subprocess.Popen(
                [sys.executable, "-c", ANSWERER, url]
                + [",".join(f"ann-{a}-{n}" for n in range(annotators))],
                cwd=_folder(tmp_path, f"annotators-{a}"),
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for a, (url, _) in enumerate(pages)
        ]
        answered = lambda: raw_rows(db, "SELECT count(*) FROM human_answers")[0][0]  # noqa: E731
        limit = 240 + questions / 5
        deadline = time.monotonic() + limit
        killed = restarted = False
        reruns = Counter[int]()  # runs stopped by the restart
        while True:
            if time.monotonic() >= deadline:
                open_requests = raw_rows(
                    db, "SELECT id, status FROM human_requests WHERE status != 'answered'"
                )
                claims = raw_rows(db, "SELECT * FROM claims")
                shown = terminal.close() if terminal is not None else ""
                raise AssertionError(
                    f"the drill did not finish in {limit:.0f} s: {len(open_requests)} open "
                    f"({open_requests[:5]}), claims {claims[:5]}, runners "
                    f"{[r.poll() for r in runners]}; the terminal showed:\n{shown}"
                )
            done = answered()
            if not killed and done >= questions // 4:
                runners[0].send_signal(signal.SIGKILL)
                runners[0].wait(timeout=30)
                runners[0], killed = start(0), True
            if killed and not restarted and done >= questions // 2:
                postgres_server.restart()
                restarted = True
            for index, runner in enumerate(runners):
                code = runner.poll()
                if code not in (None, 0):
                    # The server went away under it: it says to run it again.
                    error = stderr_of(index)
                    assert code == 2 and "error:" in error, (code, error)
                    # One line, the last: no warning of psycopg's about the lost connection.
                    assert "error ignored" not in error, error
                    assert error.strip().splitlines()[-1].startswith("error:"), error
                    reruns[index] += 1
                    assert reruns[index] <= 3, error
                    runners[index] = start(index)
            if restarted and all(runner.poll() == 0 for runner in runners):
                break
            time.sleep(0.2)
        ran = time.monotonic() - started
        sends = []
        for answerer in answerers:
            out, err = answerer.communicate("", timeout=60)
            assert answerer.returncode == 0, err
            sends += json.loads(out.strip().splitlines()[-1])
        for _, web in pages:
            web.terminate()
            web.wait(timeout=30)
        if terminal is not None:
            shown = terminal.close()
            # The person at the terminal answered some, side by side with the pages.
            by_terminal = terminal.answered()
            assert by_terminal >= 1, f"the terminal app answered none:\n{shown}"

    assert len(set(sends)) > 1, "the questions did not spread over the annotators"
    with SessionStore(db) as store:
        requests = raw_rows(db, "SELECT id, status FROM human_requests")
        per_request = Counter(r for (r,) in raw_rows(db, "SELECT request_id FROM human_answers"))
        assert len(requests) == questions
        assert {status for _, status in requests} == {"answered"}
        assert set(per_request.values()) == {1}, "a question was answered twice"
        sessions = [s for i in range(RUNNERS) for s in store.list_sessions(run=f"drill-{i}")]
        assert sorted(s.task_id for s in sessions) == sorted(tasks)
        for session in sessions:
            assert session.status == "finished", session
            kinds = Counter(type(e) for e in store.events(session.id))
            ends = (kinds[HumanQuestionEvent], kinds[HumanAnswerEvent], kinds[FinalAnswerEvent])
            assert ends == (1, 1, 1), (session.id, kinds)
    print(
        f"drill: {questions} questions, {RUNNERS} runners ({dict(reruns)} rerun after the "
        f"restart), {ANSWERERS} x {annotators} annotators and {by_terminal} answers from the "
        f"terminal app: {ran:.1f} s, "
        f"{questions / ran:.1f} questions/s"
    )
