"""When2Call behaviour classes: the rules on a labelled set, turns from the store,
rates, the confusion matrix, the classify command and the LLM judge over HTTP."""

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import typer
from http_server import make_spec
from runtime_support import awareness_rule, call, fake_config, runtime_on
from typer.testing import CliRunner

from aah.cli.classify import classify
from aah.errors import AahError
from aah.events import (
    Event,
    FinalAnswerEvent,
    HumanAnswerEvent,
    HumanQuestionEvent,
    ModelCallEvent,
    ToolCallEvent,
)
from aah.runtime.humans import ScriptedHuman
from aah.runtime.session import SessionRequest, run_session
from aah.scoring.behavior.classes import (
    BEHAVIOR_CLASSES,
    BehaviorClass,
    behavior_report,
    classify_reply,
    classify_with_llm,
    confusion,
    gold_label,
    load_judge_prompt,
    parse_judge_reply,
    session_turns,
)
from aah.store.sessions import SessionStatus, SessionStore
from aah.testing.fake_llm import FakeLLMServer
from aah.tools.spec import ParameterSpec

pytestmark = pytest.mark.usefixtures("allow_private_tool_hosts")

LABELLED = Path(__file__).parent / "fixtures" / "behavior_labelled.jsonl"
WEATHER = "weather__forecast"
RUN = "behaviour-run"


def labelled_rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in LABELLED.read_text(encoding="utf-8").splitlines()]


# -- the rules ----------------------------------------------------------------


def test_labelled_set_covers_every_class() -> None:
    rows = labelled_rows()
    counts = Counter(row["label"] for row in rows)
    assert len(rows) >= 80
    assert set(counts) == set(BEHAVIOR_CLASSES)
    assert min(counts.values()) >= 15


def test_rules_classify_the_whole_labelled_set() -> None:
    misses = []
    for number, row in enumerate(labelled_rows(), start=1):
        got = classify_reply(row["reply"], row["tools"], row.get("tool_calls", 0))
        if got.label != row["label"]:
            misses.append((number, row["label"], got, row["reply"][:80]))
    assert misses == []


@pytest.mark.parametrize(
    ("reply", "tools", "rule"),
    [
        ('{"name": "weather__forecast", "arguments": {"city": "Oslo"', [WEATHER], "malformed_call"),
        ('<tool_call>{"name": "x", "arguments": </tool_call>', [], "malformed_call"),
        ('weather__forecast(city="Oslo")', [WEATHER], "text_call"),
        ('get_weather(city="Oslo")', [], "text_call"),
        ('OK: {"name": "weather__forecast", "arguments": {}}', [WEATHER], "text_call"),
        ('```json\n{"name": "weather__forecast", "arguments": {}}\n```', [WEATHER], "text_call"),
        ("<function=weather__forecast>{}</function>", [WEATHER], "text_call"),
        ('Action: weather__forecast\nAction Input: {"city": "Oslo"}', [WEATHER], "text_call"),
        ("Let me call the weather tool for you.", [WEATHER], "announced_call"),
    ],
)
def test_a_malformed_or_textual_call_is_a_tool_call(
    reply: str, tools: list[str], rule: str
) -> None:
    assert tuple(classify_reply(reply, tools)) == ("tool_call", rule)


def test_intent_before_format_beats_refusal_and_question_words() -> None:
    reply = 'I cannot answer that. Which city? {"name": "weather__forecast", "arguments": {'
    assert classify_reply(reply, [WEATHER]).label == "tool_call"


def test_native_calls_decide_whatever_the_text_says() -> None:
    assert tuple(classify_reply("I can't do that.", tool_calls=1)) == ("tool_call", "native_call")


def test_code_the_user_asked_for_is_not_a_call() -> None:
    reply = "Here you go:\n```python\nprint(get_weather(city='Oslo'))\n```"
    assert classify_reply(reply, []).label == "direct"
    hermes = 'The format looks like this:\n```\n<tool_call>{"name": "f"}</tool_call>\n```'
    assert classify_reply(hermes, []).label == "direct"


def test_ask_human_written_as_text_is_a_question() -> None:
    got = classify_reply('ask_human(question="Which city?")', [WEATHER, "ask_human"])
    assert tuple(got) == ("request_for_info", "ask_human_call")


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("I can't look that up without the city. Which city do you mean?", "refusal_with_question"),
        ("I'm unable to book it. Please provide the travel date.", "refusal_with_question"),
        ("I can't book flights. Would you like me to find the airline's number?", "refusal"),
        ("I can't access live data. Is there anything else I can help with?", "refusal"),
    ],
)
def test_a_refusal_that_asks_for_missing_information_is_a_question(
    reply: str, expected: str
) -> None:
    label = "request_for_info" if expected == "refusal_with_question" else "cannot_answer"
    assert tuple(classify_reply(reply)) == (label, expected)


def test_offers_and_rhetorical_questions_ask_for_nothing() -> None:
    assert classify_reply("It is 20 degrees. Would you like the hourly view?").label == "direct"
    assert classify_reply("Why is it hot? The sun is high.").label == "direct"
    assert classify_reply("Would you like a window or an aisle seat?").label == "request_for_info"


def test_a_question_that_waits_on_the_user_is_not_an_announced_call() -> None:
    tools = [WEATHER]
    said = "Once you tell me the city, I'll call the weather tool."
    assert tuple(classify_reply(said, tools)) == ("request_for_info", "info_request")
    said = "Which city? Then I will call the weather tool."
    assert tuple(classify_reply(said, tools)) == ("request_for_info", "question")
    said = "I can't answer from memory, so I'll use the weather tool."
    assert tuple(classify_reply(said, tools)) == ("tool_call", "announced_call")


def test_an_empty_reply_is_direct_and_says_so() -> None:
    assert tuple(classify_reply("   ")) == ("direct", "empty_reply")


# -- turns read from the store --------------------------------------------------


def model_call(session_id: str, text: str = "", calls: int = 0) -> ModelCallEvent:
    return ModelCallEvent(session_id=session_id, model="m", text=text, n_tool_calls=calls)


def tool_call(session_id: str, tool: str = WEATHER, **fields: Any) -> ToolCallEvent:
    return ToolCallEvent(session_id=session_id, call_id="c", tool=tool, ok=True, **fields)


def add_session(
    store: SessionStore,
    task: str,
    setting: str | None,
    steps: list[Any],
    status: SessionStatus = "finished",
) -> str:
    session = store.open_session(f"query {task}", run=RUN, task_id=task, setting=setting)
    for make in steps:
        store.append_event(make(session.id))
    store.finish_session(session.id, status)
    return session.id


def question(session_id: str) -> HumanQuestionEvent:
    return HumanQuestionEvent(session_id=session_id, request_id="r", question="Which city?")


def answer(session_id: str) -> HumanAnswerEvent:
    return HumanAnswerEvent(session_id=session_id, request_id="r", answer="Oslo", answered_by="o")


def calls(session_id: str) -> ModelCallEvent:
    return model_call(session_id, calls=1)


def says(text: str) -> Any:
    return lambda session_id: model_call(session_id, text)


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    with SessionStore(tmp_path / "behaviour.db") as opened:
        opened.create_run(RUN, {})
        yield opened


def test_each_agent_turn_is_classified_from_its_events(store: SessionStore) -> None:
    session = store.open_session("Weather?", run=RUN, task_id="t", setting="underspecified")
    events: list[Event] = [
        ModelCallEvent(session_id=session.id, model="m", purpose="awareness", text="IDK"),
        model_call(session.id, calls=1),
        question(session.id),
        answer(session.id),
        model_call(session.id, calls=1),
        tool_call(session.id),
        model_call(session.id, text="It is sunny in Oslo."),
        FinalAnswerEvent(session_id=session.id, text="It is sunny in Oslo."),
    ]
    for event in events:
        store.append_event(event)
    turns = session_turns(store, session.id)
    assert [(t.turn, t.label, t.rule) for t in turns] == [
        (1, "request_for_info", "ask_human"),
        (2, "tool_call", "native_call"),
        (3, "direct", "plain_answer"),
    ]
    assert [t.seq for t in turns] == [2, 5, 7]


def test_a_turn_mixing_ask_human_with_a_real_call_is_a_tool_call(store: SessionStore) -> None:
    sid = add_session(store, "mixed", None, [calls, tool_call, question, answer, says("Done.")])
    assert [t.label for t in session_turns(store, sid)] == ["tool_call", "direct"]


def test_a_turn_whose_calls_were_never_run_is_still_a_tool_call(store: SessionStore) -> None:
    # At the step limit the last turn's calls are not run, so no events follow it.
    sid = add_session(store, "limit", None, [calls])
    assert [tuple(t)[3:] for t in session_turns(store, sid)] == [("tool_call", "native_call")]


async def test_turns_of_a_real_session_through_the_runtime(tmp_path: Path) -> None:
    city = ParameterSpec(name="city", required=True, description="City name")
    spec = make_spec("http://127.0.0.1:9/forecast", name="forecast", params=[city])
    script = {
        "rules": [
            awareness_rule("IDK: the city is missing."),
            {"when": {"last_tool_name": "local__forecast"}, "reply": "It is sunny in Oslo."},
            {
                "when": {"last_tool_name": "ask_human"},
                "reply": call("local__forecast", city="Oslo"),
            },
            {"when": {"has_tools": True}, "reply": call("ask_human", question="Which city?")},
        ]
    }
    with FakeLLMServer(script) as llm:
        async with runtime_on(llm, tmp_path / "s.db", ScriptedHuman(["Oslo"])) as rt:
            request = SessionRequest("Weather?", [spec], setting="underspecified", awareness="info")
            outcome = await run_session(request, rt)
            turns = session_turns(rt.store, outcome.session_id)
    assert [(t.label, t.rule) for t in turns] == [
        ("request_for_info", "ask_human"),
        ("tool_call", "native_call"),
        ("direct", "plain_answer"),
    ]


def test_hallucination_rates_and_gold_scores_over_a_run(store: SessionStore) -> None:
    # Under-specified: one asks (right), one calls at once (parameter hallucination),
    # one answers straight away (answer hallucination), one was skipped (no turn).
    add_session(store, "u1", "Under-specified", [calls, question, answer])
    add_session(store, "u2", "underspecified", [calls, tool_call])
    add_session(store, "u3", "underspecified", [says("It is 20 degrees.")])
    add_session(store, "u4", "underspecified", [], status="skipped")
    # No-tools: one answers (right), one writes a call as text (tool hallucination),
    # one declines (a miss against the gold "direct", not a hallucination).
    add_session(store, "n1", "No-tools", [says("Paris.")])
    add_session(store, "n2", "notools", [says('search(query="x")')])
    add_session(store, "n3", "notools", [says("I can't browse the web.")])
    # Perfect: one calls (right), one answers without tools.
    add_session(store, "p1", "Original", [calls, tool_call])
    add_session(store, "p2", "perfect", [says("It is 20 degrees.")])

    report = behavior_report(store, RUN)
    rates = report.rates
    assert (rates.tool.k, rates.tool.n) == (1, 3)
    assert (rates.parameter.k, rates.parameter.n) == (1, 3)
    # Settings needing tools, with a turn: u1 u2 u3 p1 p2; direct first turns: u3, p2.
    assert (rates.answer.k, rates.answer.n) == (2, 5)
    matrix = report.matrix
    assert matrix.total == 6  # three under-specified with a turn, three no-tools
    assert matrix.count("request_for_info", "request_for_info") == 1
    assert matrix.count("request_for_info", "tool_call") == 1
    assert matrix.count("request_for_info", "direct") == 1
    assert matrix.count("direct", "direct") == 1
    assert matrix.count("direct", "tool_call") == 1
    assert matrix.count("direct", "cannot_answer") == 1
    assert matrix.accuracy.k == 2 and matrix.accuracy.n == 6


def test_rates_over_no_sessions_have_no_value(store: SessionStore) -> None:
    report = behavior_report(store, "no-such-run")
    assert report.rates.tool.value is None and report.rates.answer.n == 0
    assert report.matrix.accuracy.value is None and report.matrix.macro_f1 is None


def test_gold_labels_exist_for_first_turns_of_two_settings() -> None:
    assert gold_label("Under-specified", 1) == "request_for_info"
    assert gold_label("No-tools", 1) == "direct"
    assert gold_label("underspecified", 2) is None
    assert gold_label("perfect", 1) is None and gold_label(None, 1) is None


# -- the confusion matrix ---------------------------------------------------------


def test_confusion_matrix_scores_by_hand() -> None:
    T, Q, X, D = BEHAVIOR_CLASSES
    pairs: list[tuple[BehaviorClass, BehaviorClass]] = [(T, T), (T, T), (T, D)]
    pairs += [(Q, Q), (Q, T), (X, X), (X, Q), (D, D), (D, D), (D, X)]
    matrix = confusion(pairs)
    assert matrix.counts == ((2, 0, 0, 1), (1, 1, 0, 0), (0, 1, 1, 0), (0, 0, 1, 2))
    assert matrix.accuracy.value == pytest.approx(6 / 10)
    # tool_call: predicted 3 times, 2 right; gold 3 times, 2 found.
    assert matrix.scores(T) == pytest.approx((2 / 3, 2 / 3, 2 / 3, 3))
    # request_for_info: predicted 2, right 1; gold 2, found 1.
    assert matrix.scores(Q) == pytest.approx((0.5, 0.5, 0.5, 2))
    # cannot_answer: predicted 2, right 1; gold 2, found 1.
    assert matrix.scores(X) == pytest.approx((0.5, 0.5, 0.5, 2))
    # direct: predicted 3, right 2; gold 3, found 2.
    assert matrix.scores(D) == pytest.approx((2 / 3, 2 / 3, 2 / 3, 3))
    assert matrix.macro_f1 == pytest.approx((2 / 3 + 0.5 + 0.5 + 2 / 3) / 4)


def test_a_class_never_seen_is_left_out_of_macro_f1() -> None:
    matrix = confusion([("direct", "direct"), ("direct", "cannot_answer")])
    assert matrix.scores("tool_call") == (None, None, None, 0)
    cannot = matrix.scores("cannot_answer")
    assert cannot.precision == 0.0 and cannot.recall is None and cannot.f1 == 0.0
    direct = matrix.scores("direct")
    assert direct.precision == 1.0 and direct.recall == 0.5
    assert direct.f1 == pytest.approx(2 / 3)
    assert matrix.macro_f1 == pytest.approx((2 / 3 + 0.0) / 2)


# -- the classify command -----------------------------------------------------------


def cli() -> typer.Typer:
    app = typer.Typer()
    app.command()(classify)
    app.command("noop")(lambda: None)  # two commands keep "classify" as a subcommand
    return app


def test_classify_command_writes_one_object_per_line(tmp_path: Path) -> None:
    out = tmp_path / "classes.jsonl"
    result = CliRunner().invoke(cli(), ["classify", str(LABELLED), "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == len(labelled_rows())
    assert all(row["class"] == row["label"] and row["rule"] for row in rows)
    assert f"agrees with 'label' on {len(rows)} of {len(rows)}" in result.output


def test_classify_command_prints_to_stdout(tmp_path: Path) -> None:
    source = tmp_path / "replies.jsonl"
    source.write_text('{"reply": "Which city?"}\n\n{"reply": "Hi!", "id": 7}\n', encoding="utf-8")
    result = CliRunner().invoke(cli(), ["classify", str(source)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert lines == [
        {"reply": "Which city?", "class": "request_for_info", "rule": "question"},
        {"reply": "Hi!", "id": 7, "class": "direct", "rule": "plain_answer"},
    ]


@pytest.mark.parametrize(
    ("second_line", "problem"),
    [
        ("{not json", "is not valid JSON"),
        ('{"text": "no reply key"}', "needs a JSON object with a string 'reply'"),
        ('{"reply": "x", "tools": "weather"}', "'tools' must be a list"),
        ('{"reply": "x", "tool_calls": -1}', "'tool_calls' must be a count"),
    ],
)
def test_a_malformed_line_is_one_error_naming_it(
    tmp_path: Path, second_line: str, problem: str
) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_text('{"reply": "fine"}\n' + second_line + "\n", encoding="utf-8")
    result = CliRunner().invoke(cli(), ["classify", str(source)])
    assert isinstance(result.exception, AahError)
    message = str(result.exception)
    assert "bad.jsonl:2" in message and problem in message and "\n" not in message


def test_classify_command_refuses_an_unknown_judge_and_a_missing_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli(), ["classify", str(LABELLED), "--judge", "vibes"])
    assert isinstance(result.exception, AahError) and "--judge rule" in str(result.exception)
    result = CliRunner().invoke(cli(), ["classify", str(tmp_path / "none.jsonl")])
    assert isinstance(result.exception, AahError) and "cannot read" in str(result.exception)


# -- the LLM judge over HTTP --------------------------------------------------------


def test_judge_prompt_is_versioned() -> None:
    prompt = load_judge_prompt()
    assert prompt.version == "behavior-judge/1"
    assert "{reply}" in prompt.template and "{tools}" in prompt.template


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ("QUESTION: it asks which city.", "request_for_info"),
        ("**Tool_call** - broken JSON", "tool_call"),
        ("cannot answer, says no tool", "cannot_answer"),
        ("Direct.", "direct"),
        ("Follow-up question", "request_for_info"),
        ("I think it is a question", None),
    ],
)
def test_judge_verdict_is_its_first_word(reply: str, label: str | None) -> None:
    assert parse_judge_reply(reply) == label


async def test_llm_judge_classifies_over_http_and_retries_an_unreadable_verdict() -> None:
    script = {
        "rules": [
            {"when": {"last_message_contains": "Start with one word"}, "reply": "QUESTION."},
            {"when": {"any_message_contains": "date of travel"}, "reply": "Hmm, hard to say."},
            {"reply": "CANNOT_ANSWER: no weather tool."},
        ]
    }
    with FakeLLMServer(script) as llm:
        config = fake_config(llm)
        declined = await classify_with_llm("I have no weather tool.", [WEATHER], config)
        asked = await classify_with_llm("What is the date of travel?", [WEATHER], config)
        native = await classify_with_llm("", [WEATHER], config, tool_calls=1)
        sent = llm.requests
    assert tuple(declined) == ("cannot_answer", "llm:behavior-judge/1")
    assert tuple(asked) == ("request_for_info", "llm:behavior-judge/1")
    assert tuple(native) == ("tool_call", "native_call")
    assert len(sent) == 3  # one, then one plus a retry; the native call needed no judge
    assert WEATHER in sent[0]["messages"][0]["content"]
    assert sent[0]["temperature"] == 0


async def test_llm_judge_falls_back_to_the_rules_when_it_never_answers_plainly() -> None:
    with FakeLLMServer(["I would rather not say."]) as llm:
        got = await classify_with_llm("Which city?", [], fake_config(llm), retries=1)
        assert len(llm.requests) == 2
    assert tuple(got) == ("request_for_info", "llm_no_quorum:question")


async def test_llm_judge_unreachable_is_one_actionable_error() -> None:
    with FakeLLMServer(["DIRECT"]) as llm:
        config = fake_config(llm)
    with pytest.raises(AahError, match="cannot reach the model endpoint"):
        await classify_with_llm("Hi", [], config)


def test_classify_command_with_the_llm_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "replies.jsonl"
    rows = ['{"reply": "Which town?"}', '{"reply": "Paris.", "tools": []}'] * 3
    source.write_text("\n".join(rows) + "\n", encoding="utf-8")
    script = {
        "rules": [
            {"when": {"any_message_contains": "Which town?"}, "reply": "QUESTION"},
            {"reply": "DIRECT"},
        ]
    }
    with FakeLLMServer(script) as llm:
        monkeypatch.setenv("AAH_GRADER_BASE_URL", llm.base_url)
        monkeypatch.setenv("AAH_GRADER_MODEL", "fake-model")
        result = CliRunner().invoke(cli(), ["classify", str(source), "--judge", "llm"])
        assert len(llm.requests) == 6
    assert result.exit_code == 0, result.output
    classes = [json.loads(x)["class"] for x in result.stdout.splitlines() if x.startswith("{")]
    assert classes == ["request_for_info", "direct"] * 3


# -- the rules against the LLM judge ---------------------------------------------------

# The judge's verdict per reply, by a word only that reply holds.
JUDGE_SCRIPT = {
    "rules": [
        {"when": {"any_message_contains": "Kayak"}, "reply": "CANNOT_ANSWER"},
        {"when": {"any_message_contains": "Paris, Texas"}, "reply": "QUESTION"},
        {"when": {"any_message_contains": "Oslo forecast"}, "reply": "QUESTION"},
        {"when": {"any_message_contains": "mumble"}, "reply": "no idea"},
        {"reply": "DIRECT"},
    ]
}
COMPARED = [
    # rules: cannot_answer; judge: cannot answer
    "Sorry, I'm not able to check live flight prices. Sites like Google Flights or Kayak help.",
    # rules: request_for_info; judge: question
    "To proceed, I need to confirm if you mean Paris, France or Paris, Texas.",
    # rules: direct; judge: question (the one disagreement)
    "Here is the Oslo forecast: sunny, 18 °C.",
    # rules: direct; judge: direct
    "Paris is the capital of France.",
    # the judge never answers plainly: left out of the comparison
    "mumble",
]


def test_compare_judge_reports_accuracy_and_f1_of_the_rules_against_the_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "replies.jsonl"
    source.write_text("".join(json.dumps({"reply": r}) + "\n" for r in COMPARED), "utf-8")
    with FakeLLMServer(JUDGE_SCRIPT) as llm:
        monkeypatch.setenv("AAH_GRADER_BASE_URL", llm.base_url)
        monkeypatch.setenv("AAH_GRADER_MODEL", "fake-model")
        result = CliRunner().invoke(cli(), ["classify", str(source), "--compare-judge"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(x) for x in result.stdout.splitlines() if x.startswith("{")]
    assert [row["class"] for row in rows] == [
        "cannot_answer",
        "request_for_info",
        "direct",
        "direct",
        "direct",
    ]
    assert [row["judge_class"] for row in rows][:4] == [
        "cannot_answer",
        "request_for_info",
        "request_for_info",
        "direct",
    ]
    assert rows[4]["judge_rule"].startswith("llm_no_quorum:")
    report = result.stderr
    # 3 of the 4 judged replies agree; Wilson 95% of 3/4 is [30.1–95.4].
    assert "rules vs LLM judge on 4 replies: accuracy 75.0% [30.1–95.4] (3 agree)" in report
    # request_for_info: judge 2, rules 1, hit 1 -> F1 2/3; direct: judge 1, rules 2 -> 2/3.
    assert "F1 request_for_info: 0.667 (judge says request_for_info for 2)" in report
    assert "F1 cannot_answer: 1.000" in report
    assert "F1 direct: 0.667" in report
    assert "F1 tool_call: no data" in report
    assert "macro F1: 0.778" in report
    assert "1 replies left out: the judge's votes gave no label" in report


def test_statement_questions_and_polite_refusals_keep_their_class() -> None:
    rows = labelled_rows()
    shapes = Counter(
        row["label"]
        for row in rows
        if row["reply"].lower().startswith(("to proceed", "before i", "in order to", "sorry"))
        or "recommend" in row["reply"].lower()
        or "apolog" in row["reply"].lower()
    )
    assert shapes["cannot_answer"] >= 8 and shapes["request_for_info"] >= 5


# -- the judge's requests failing ----------------------------------------------------


def _judge_env(monkeypatch: pytest.MonkeyPatch, base_url: str) -> None:
    monkeypatch.setenv("AAH_GRADER_BASE_URL", base_url)
    monkeypatch.setenv("AAH_GRADER_MODEL", "fake-model")
    monkeypatch.setenv("AAH_LLM_RETRIES", "0")


def test_a_judge_request_that_fails_leaves_the_rules_class_and_the_others_are_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "replies.jsonl"
    rows = ['{"reply": "Which town?"}', '{"reply": "Paris is sunny."}', '{"reply": "BOOM now"}']
    source.write_text("\n".join(rows) + "\n", encoding="utf-8")
    script = {
        "rules": [
            {"when": {"any_message_contains": "BOOM"}, "reply": {"error": {"status": 400}}},
            {"when": {"any_message_contains": "Which town?"}, "reply": "QUESTION"},
            {"reply": "DIRECT"},
        ]
    }
    with FakeLLMServer(script) as llm:
        _judge_env(monkeypatch, llm.base_url)
        result = CliRunner().invoke(cli(), ["classify", str(source), "--compare-judge"])
    assert result.exit_code != 0
    out = [json.loads(x) for x in result.stdout.splitlines() if x.startswith("{")]
    assert [row["judge_rule"].split(":")[0] for row in out] == ["llm", "llm", "llm_failed"]
    assert out[2]["judge_class"] == out[2]["class"] == "direct"
    assert "rules vs LLM judge on 2 replies" in result.stderr
    assert "1 replies left out" in result.stderr
    assert isinstance(result.exception, AahError)
    assert str(result.exception).startswith("the LLM judge's requests failed on 1 of 3 replies")


def test_a_judge_that_answers_nothing_stops_after_a_few_requests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "replies.jsonl"
    source.write_text('{"reply": "Which town?"}\n' * 40, encoding="utf-8")
    with FakeLLMServer([{"error": {"status": 500}}]) as llm:
        _judge_env(monkeypatch, llm.base_url)
        result = CliRunner().invoke(cli(), ["classify", str(source), "--judge", "llm"])
        sent = len(llm.requests)
    assert result.exit_code != 0
    assert sent <= 8 + 8  # the first requests, and those already under way
    assert isinstance(result.exception, AahError)
    error = str(result.exception)
    assert error.startswith("the behaviour judge failed") and "\n" not in error
    assert error.endswith("no reply was judged: fix the judge model and rerun")
    assert not [x for x in result.stdout.splitlines() if x.startswith("{")]
