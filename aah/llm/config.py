"""OpenAI-compatible chat models, one setting per role, with clear failures.

Every model aah talks to (the agent, the simulated human, the grader) is an
OpenAI-compatible chat endpoint: OpenAI itself, a vLLM server, a llama.cpp
server or Ollama. A role's own settings win; unset ones fall back to the
agent's (``AAH_BASE_URL``, ``AAH_MODEL``, ``AAH_API_KEY``, then
``OPENAI_API_KEY``).
"""

from __future__ import annotations

import os
from typing import Any, Literal

import openai
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, SecretStr

from aah.config import Settings, get_settings
from aah.errors import AahError

Role = Literal["agent", "human", "grader"]

# Local servers (vLLM, llama.cpp, Ollama) accept any key, but the client needs one.
_PLACEHOLDER_KEY = "not-needed"


class ModelConfig(BaseModel):
    """Where one role's model lives. The key is a secret: never logged or stored."""

    base_url: str | None
    model: str
    api_key: SecretStr
    timeout: float = 60.0
    retries: int = 3

    def describe(self) -> dict[str, str]:
        """A loggable description: no secret in it."""
        return {"model": self.model, "base_url": self.base_url or "https://api.openai.com/v1"}


def model_config(
    role: Role = "agent", settings: Settings | None = None, model: str | None = None
) -> ModelConfig:
    """The model settings for ``role``; ``model`` overrides the configured name.

    Raises:
        AahError: no model name is configured for the role.
    """
    s = settings or get_settings()
    own = _role_settings(s, role)
    name = model or own.get("model") or s.model
    if not name:
        prefix = "AAH_" if role == "agent" else f"AAH_{role.upper()}_"
        raise AahError(
            f"no model configured for the {role}: set {prefix}MODEL and AAH_BASE_URL "
            "(see README, 'Pointing aah at a model')"
        )
    key = own.get("api_key") or s.api_key or os.environ.get("OPENAI_API_KEY") or _PLACEHOLDER_KEY
    return ModelConfig(
        base_url=own.get("base_url") or s.base_url,
        model=name,
        api_key=SecretStr(key),
        timeout=s.llm_timeout,
        retries=s.llm_retries,
    )


def _role_settings(s: Settings, role: Role) -> dict[str, str | None]:
    if role == "human":
        return {"base_url": s.human_base_url, "model": s.human_model, "api_key": s.human_api_key}
    if role == "grader":
        return {"base_url": s.grader_base_url, "model": s.grader_model, "api_key": s.grader_api_key}
    return {}


def chat_model(
    config: ModelConfig,
    *,
    temperature: float | None = None,
    n: int | None = None,
    seed: int | None = None,
) -> ChatOpenAI:
    """A LangChain chat model on ``config``'s endpoint with native tool calling.

    The openai client retries 429, 5xx and connection errors with exponential
    backoff (``config.retries`` times) and gives up after ``config.timeout``.
    """
    kwargs: dict[str, Any] = {}
    if temperature is not None:
        kwargs["temperature"] = temperature
    if n is not None:
        kwargs["n"] = n
    if seed is not None:
        kwargs["seed"] = seed
    return ChatOpenAI(
        model=config.model,
        base_url=config.base_url,
        api_key=config.api_key,
        # An httpx Timeout (unhashable) makes langchain build a client for this
        # model instead of reusing a process-wide one bound to the first event
        # loop; each asyncio.run (each CLI call, each test) needs its own.
        timeout=openai.Timeout(config.timeout),
        max_retries=config.retries,
        **kwargs,
    )


def raw_client(config: ModelConfig) -> openai.AsyncOpenAI:
    """The plain async openai client, for calls LangChain does not model well (``n > 1``)."""
    return openai.AsyncOpenAI(
        base_url=config.base_url,
        api_key=config.api_key.get_secret_value(),
        timeout=config.timeout,
        max_retries=config.retries,
    )


def model_error(exc: BaseException, config: ModelConfig) -> AahError | None:
    """A one-line, actionable error for a failure to reach or use the model."""
    where = config.describe()["base_url"]
    if isinstance(exc, openai.APITimeoutError):
        return AahError(
            f"the model at {where} did not answer within {config.timeout:.0f} s: "
            "check the server or raise AAH_LLM_TIMEOUT"
        )
    if isinstance(exc, openai.APIConnectionError):
        return AahError(
            f"cannot reach the model endpoint {where}: start the server or fix AAH_BASE_URL"
        )
    if isinstance(exc, openai.NotFoundError):
        return AahError(
            f"model {config.model!r} not found at {where}: check AAH_MODEL "
            "(the server lists its models at /v1/models)"
        )
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return AahError(f"the model endpoint {where} refused the API key: set AAH_API_KEY")
    if isinstance(exc, openai.APIStatusError):
        return AahError(
            f"the model endpoint {where} failed with HTTP {exc.status_code} after "
            f"{config.retries} retries: try again later"
        )
    return None
