import json
from pathlib import Path
from typing import Any

import pytest
from http_server import make_spec
from runtime_support import awareness_rule, call, fake_config, runtime_on

from aah.benchmark.failtalms.fact_fit import TaskFacts, asks_for_tool_job, fitting_facts
from aah.benchmark.failtalms.humans import (
    CANNOT_HELP,
    JOKE,
    OracleHuman,
    SimulatedHuman,
    make_batch_human,
    simulated_human_prompt,
    simulated_human_prompt_version,
)
from aah.benchmark.failtalms.leak_check import ANSWER, EXTRA_FACT, PASTED_REQUEST, leak_flags
from aah.errors import AahError
from aah.events import HumanAnswerEvent, ModelCallEvent
from aah.runtime.humans import IDK_REPLY, HumanRequest, QueueHuman
from aah.runtime.session import SessionRequest, run_session
from aah.store.sessions import SessionStore
from aah.testing.fake_llm import FakeLLMServer
from aah.tools.spec import ParameterSpec

pytestmark = pytest.mark.usefixtures("allow_private_tool_hosts")

CRYPTO_QUERY = (
    "Find the top markets and exchanges for a specific cryptocurrency and also list all "
    "decentralized exchanges supported on a blockchain network."
)
TABLE = TaskFacts(
    query="Book a table for a few people somewhere on a day that suits me.",
    original_query="Book a table for 4 people in Lisbon on 12 May.",
    hidden_facts=["4", "Lisbon", "12 May"],
    setting="underspecified",
)


def _benchmark(shared_data: Path, setting: str) -> list[dict[str, Any]]:
    path = shared_data / "fail-talms" / "benchmark" / setting / f"all_{setting}_queries.json"
    data: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _query(shared_data: Path, setting: str, *must_contain: str) -> str:
    return next(
        str(item["query"])
        for item in _benchmark(shared_data, setting)
        if all(text in item["query"] for text in must_contain)
    )


@pytest.fixture(
    params=[["Ethereum", "the Binance Smart Chain network"], ["Ethereum", "Binance Smart Chain"]]
)
def crypto(shared_data: Path, request: pytest.FixtureRequest) -> TaskFacts:
    """The real under-specified pair, with hand-made facts or the ones derivation finds."""
    query = _query(shared_data, "Underspecified", CRYPTO_QUERY)
    original = _query(shared_data, "Original", "for Ethereum", "Binance Smart Chain network")
    return TaskFacts(
        query=query, original_query=original, hidden_facts=request.param, setting="underspecified"
    )


# -- the oracle -------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Where would you like to eat?", "Lisbon"),
        ("Which city?", "Lisbon"),
        ("When should I book it?", "12 May"),
        ("For what date?", "12 May"),
        ("How many people will come?", "4"),
        ("Could you specify the missing details?", "4; Lisbon; 12 May"),
    ],
)
def test_oracle_matches_question_cues_to_fact_kinds(question: str, expected: str) -> None:
    assert OracleHuman(TABLE).reply_to(question) == expected


def test_oracle_on_the_real_crypto_pair(crypto: TaskFacts) -> None:
    oracle = OracleHuman(crypto)
    network = crypto.hidden_facts[1]
    coin = oracle.reply_to("Which cryptocurrency?")
    assert "Ethereum" in coin and "Binance" not in coin
    assert oracle.reply_to("Which coin do you mean?") == "Ethereum"
    chain = oracle.reply_to("Which blockchain network?")
    assert "Binance Smart Chain" in chain and "Ethereum" not in chain
    assert oracle.reply_to("Can you give me more details?") == f"Ethereum; {network}"
    assert oracle.reply_to("Which cryptocurrency and which network do you mean?") == (
        f"Ethereum; {network}"
    )
    assert oracle.reply_to("Can you look up the current price for me?") == CANNOT_HELP


async def test_oracle_is_a_human_channel(crypto: TaskFacts) -> None:
    request = HumanRequest(request_id="r1", session_id="s1", question="Which cryptocurrency?")
    reply = await OracleHuman(crypto).ask(request)
    assert reply.answer == "Ethereum" and reply.answered_by == "oracle"
    assert not reply.declined and reply.flags == []


def test_oracle_knows_nothing_more_in_a_perfect_task(shared_data: Path) -> None:
    query = _query(shared_data, "Original", "for Ethereum", "Binance Smart Chain network")
    oracle = OracleHuman(TaskFacts(query=query, setting="perfect"))
    assert oracle.reply_to("Which cryptocurrency do you mean?") == IDK_REPLY
    assert oracle.reply_to("Can you give me more details?") == IDK_REPLY


@pytest.mark.parametrize(
    "question",
    [
        "Can you tell me the current price of Ethereum?",
        "Could you calculate the 24h change for me?",
        "Do you know the coin ID of Ethereum?",
        "Could you look it up on CoinGecko?",
    ],
)
def test_oracle_declines_a_tools_job_in_a_nonreplaceable_task(question: str) -> None:
    facts = TaskFacts(query=CRYPTO_QUERY, setting="nonreplaceable", unavailable=["coinlore__x"])
    assert asks_for_tool_job(question)
    assert OracleHuman(facts).reply_to(question) == CANNOT_HELP


def test_oracle_does_only_knowledge_free_jobs_in_a_replaceable_task() -> None:
    oracle = OracleHuman(TaskFacts(query="Convert 12 km to miles.", setting="replaceable"))
    assert oracle.reply_to("Could you calculate 12 times 0.621 for me?") == "7.452"
    assert oracle.reply_to("Can you compute 7/2?") == "3.5"
    assert oracle.reply_to("Could you calculate 1234 x 5678?") == "7006652"
    assert oracle.reply_to("Could you calculate the days since 2024-05-01?") == CANNOT_HELP
    assert oracle.reply_to("Can you tell me a joke?") == JOKE
    assert oracle.reply_to("Can you look up the exchange rate for me?") == CANNOT_HELP
    assert oracle.reply_to("Which unit do you want?") == IDK_REPLY


def test_a_question_about_the_users_wish_is_answered_even_with_a_lookup_verb(
    crypto: TaskFacts,
) -> None:
    question = "Which cryptocurrency do you want me to look up?"
    assert asks_for_tool_job(question)
    assert OracleHuman(crypto).reply_to(question) == "Ethereum"


def test_fit_is_not_specific_for_a_vague_question(crypto: TaskFacts) -> None:
    assert fitting_facts("Anything else?", crypto) == (crypto.hidden_facts, False)
    assert fitting_facts("Which network?", crypto) == ([crypto.hidden_facts[1]], True)


# -- the leak check ---------------------------------------------------------


def test_leak_check_flags_each_kind_of_leak(crypto: TaskFacts) -> None:
    assert leak_flags("Which cryptocurrency?", "Ethereum, please.", crypto) == []
    extra = leak_flags("Which cryptocurrency?", "Ethereum, on Binance Smart Chain.", crypto)
    assert extra == [EXTRA_FACT]
    pasted = leak_flags("Which cryptocurrency?", crypto.original, crypto)
    assert EXTRA_FACT in pasted and PASTED_REQUEST in pasted
    price = leak_flags("Which cryptocurrency?", "Ethereum; it trades at 3,245.10 USD.", crypto)
    assert price == [ANSWER]


def test_leak_check_lets_vague_questions_and_easy_jobs_through(crypto: TaskFacts) -> None:
    both = "Ethereum, and the Binance Smart Chain network."
    assert leak_flags("Can you give me more details?", both, crypto) == []
    replaceable = TaskFacts(query="Convert 12 km to miles.", setting="replaceable")
    assert leak_flags("Could you calculate 12 times 0.621?", "7.452", replaceable) == []
    nonreplaceable = replaceable.model_copy(update={"setting": "nonreplaceable"})
    assert leak_flags("Could you calculate 12 times 0.621?", "7.452", nonreplaceable) == [ANSWER]


def test_a_fact_the_agent_already_has_is_no_leak(crypto: TaskFacts) -> None:
    question = "Is Binance Smart Chain the network, and which cryptocurrency?"
    assert leak_flags(question, "Ethereum on Binance Smart Chain.", crypto) == []


# -- the simulated human ------------------------------------------------------


def test_simulated_prompt_is_versioned_and_fits_the_setting(crypto: TaskFacts) -> None:
    assert simulated_human_prompt_version() == "simulated-human/1"
    prompt = simulated_human_prompt(crypto)
    assert crypto.original in prompt and crypto.query in prompt
    assert "- Ethereum" in prompt and "{" not in prompt
    replaceable = TaskFacts(
        query="Q",
        setting="replaceable",
        unavailable=["calc__add"],
        unavailable_descriptions=["Adds two numbers."],
    )
    assert "- calc__add: Adds two numbers." in simulated_human_prompt(replaceable)
    assert "do it yourself" in simulated_human_prompt(replaceable)


async def test_simulated_human_answers_from_the_model(crypto: TaskFacts, tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    session = store.open_session(crypto.query)
    script = {
        "rules": [
            {"when": {"last_message_contains": "cryptocurrency"}, "reply": "Ethereum."},
            {"when": {"last_message_contains": "restate"}, "reply": crypto.original},
            {
                "when": {"last_message_contains": "coin"},
                "reply": "Ethereum on Binance Smart Chain.",
            },
        ]
    }
    with FakeLLMServer(script) as llm:
        human = SimulatedHuman(crypto, fake_config(llm), store=store)
        questions = ["Which cryptocurrency?", "Please restate your request.", "Which coin?"]
        replies = [
            await human.ask(HumanRequest(request_id=f"r{i}", session_id=session.id, question=q))
            for i, q in enumerate(questions)
        ]
        sent = llm.requests
    assert sent[0]["messages"][0]["role"] == "system"
    assert crypto.original in sent[0]["messages"][0]["content"]
    assert sent[0]["messages"][1]["content"] == "Which cryptocurrency?"
    assert sent[0]["temperature"] == 0.0
    assert replies[0].answer == "Ethereum." and replies[0].answered_by == "simulated"
    assert replies[0].flags == [] and replies[0].seconds > 0
    assert PASTED_REQUEST in replies[1].flags
    assert replies[2].flags == [EXTRA_FACT]
    logged = [e for e in store.events(session.id) if isinstance(e, ModelCallEvent)]
    assert [e.purpose for e in logged] == ["human"] * 3
    assert logged[0].prompt_tokens and logged[0].completion_tokens
    assert human.calls[0].text == "Ethereum."
    store.close()


async def test_simulated_human_model_down_is_one_clear_line(crypto: TaskFacts) -> None:
    from http_server import closed_port
    from pydantic import SecretStr

    from aah.llm.config import ModelConfig

    config = ModelConfig(
        base_url=f"http://127.0.0.1:{closed_port()}/v1",
        model="m",
        api_key=SecretStr("x"),
        timeout=2,
        retries=0,
    )
    human = SimulatedHuman(crypto, config)
    with pytest.raises(AahError, match="^simulated human: cannot reach the model endpoint"):
        await human.ask(HumanRequest(request_id="r", session_id="s", question="Which coin?"))


def test_make_batch_human_builds_each_kind(crypto: TaskFacts, tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    with FakeLLMServer(["Ethereum."]) as llm:
        assert isinstance(make_batch_human("oracle", crypto, store), OracleHuman)
        simulated = make_batch_human("simulated", crypto, store, fake_config(llm))
        assert isinstance(simulated, SimulatedHuman) and simulated.store is store
    queue = make_batch_human("queue", crypto, store, deadline_seconds=5)
    assert isinstance(queue, QueueHuman) and queue.deadline_seconds == 5
    with pytest.raises(
        AahError, match="^unknown human 'nobody': use one of oracle, simulated, queue$"
    ):
        make_batch_human("nobody", crypto, store)
    store.close()


# -- a whole session --------------------------------------------------------


async def test_session_with_the_oracle_gets_the_hidden_fact(
    crypto: TaskFacts, tmp_path: Path
) -> None:
    coin_id = ParameterSpec(name="coin_id", required=True, description="The coin's ID.")
    spec = make_spec("https://api.example.org/markets", name="markets", params=[coin_id])
    script = {
        "rules": [
            awareness_rule("IDK: the cryptocurrency is not named."),
            {"when": {"last_tool_name": "local__markets"}, "reply": "Top Ethereum markets: ..."},
            {
                "when": {"last_tool_name": "ask_human", "last_message_contains": "Ethereum"},
                "reply": call("local__markets", coin_id="ethereum"),
            },
            {"when": {"has_tools": True}, "reply": call("ask_human", question="Which coin?")},
        ]
    }
    with FakeLLMServer(script) as llm:
        async with runtime_on(llm, tmp_path / "s.db", human=OracleHuman(crypto)) as rt:
            request = SessionRequest(crypto.query, [spec], setting="underspecified")
            outcome = await run_session(request, rt)
            events = rt.store.events(outcome.session_id)
    answer = next(e for e in events if isinstance(e, HumanAnswerEvent))
    assert answer.answered_by == "oracle" and answer.answer == "Ethereum"
    assert outcome.status == "finished"
    assert outcome.final_answer == "Top Ethereum markets: ..."
