"""Model settings per role: fallbacks, reply limits, and credentials kept out of descriptions."""

from __future__ import annotations

import pytest

from aah.config import Settings
from aah.llm import ModelConfig, model_config


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "AAH_MODEL", "AAH_BASE_URL", "AAH_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def test_the_judge_falls_back_to_the_grader_then_the_agent() -> None:
    agent_only = Settings(model="a", base_url="http://agent/v1", api_key="ka")
    assert model_config("judge", agent_only).describe()["model"] == "a"
    grader = Settings(
        model="a", base_url="http://agent/v1", grader_model="g", grader_base_url="http://g/v1"
    )
    judge = model_config("judge", grader)
    assert (judge.model, judge.base_url, judge.role) == ("g", "http://g/v1", "judge")
    own = Settings(model="a", grader_model="g", judge_model="j", judge_api_key="kj")
    assert model_config("judge", own).model == "j"
    assert model_config("judge", own).api_key.get_secret_value() == "kj"


def test_judge_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AAH_MODEL", "agent-model")
    monkeypatch.setenv("AAH_JUDGE_MODEL", "judge-model")
    monkeypatch.setenv("AAH_JUDGE_MAX_TOKENS", "64")
    config = model_config("judge")
    assert (config.model, config.reply_tokens) == ("judge-model", 64)


@pytest.mark.parametrize(
    ("role", "tokens"), [("agent", 1024), ("human", 300), ("grader", 512), ("judge", 256)]
)
def test_each_role_has_a_reply_limit_that_fits_its_job(role: str, tokens: int) -> None:
    config = model_config(role, Settings(model="m"))  # type: ignore[arg-type]
    assert config.reply_tokens == tokens and config.describe()["max_tokens"] == tokens


def test_reply_limits_are_set_per_role(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AAH_MODEL", "m")
    monkeypatch.setenv("AAH_MAX_TOKENS", "4096")
    monkeypatch.setenv("AAH_AWARENESS_MAX_TOKENS", "128")
    monkeypatch.setenv("AAH_HUMAN_MAX_TOKENS", "200")
    monkeypatch.setenv("AAH_GRADER_MAX_TOKENS", "900")
    monkeypatch.setenv("AAH_MAX_REPLY_BYTES", "5000")
    agent = model_config("agent")
    assert agent.describe()["max_tokens"] == 4096
    assert agent.describe()["awareness_max_tokens"] == 128
    assert agent.describe()["max_reply_bytes"] == 5000
    assert model_config("human").reply_tokens == 200
    assert model_config("grader").reply_tokens == 900
    assert "awareness_max_tokens" not in model_config("grader").describe()


@pytest.mark.parametrize(
    ("url", "clean", "user", "password"),
    [
        ("http://alice:pw@host:8000/v1", "http://host:8000/v1", "alice", "pw"),
        ("https://bob:p%40ss%3Aw0rd@api.example/v1", "https://api.example/v1", "bob", "p@ss:w0rd"),
        ("http://token@host/v1", "http://host/v1", "token", None),
        ("http://:only-pw@host/v1", "http://host/v1", "", "only-pw"),
        ("http://host/v1", "http://host/v1", None, None),
    ],
)
def test_credentials_leave_the_base_url(
    url: str, clean: str, user: str | None, password: str | None
) -> None:
    config = model_config("grader", Settings(model="m", grader_base_url=url))
    assert config.base_url == clean and config.username == user
    assert (config.password.get_secret_value() if config.password else None) == password
    described = str(config.describe()) + repr(config) + str(config)
    assert password is None or password not in described


def test_a_config_built_directly_takes_its_roles_limit() -> None:
    config = ModelConfig(base_url=None, model="m", api_key="k", role="human")  # type: ignore[arg-type]
    assert config.reply_tokens == 300
    assert config.describe()["base_url"] == "https://api.openai.com/v1"
