"""OpenAI-compatible chat models, one setting per role.

Every model aah talks to (the agent, the simulated human, the grader, the
behaviour judge) is an OpenAI-compatible chat endpoint: OpenAI itself, a vLLM
server, a llama.cpp server or Ollama. A role's own settings win; unset ones
fall back: the judge to the grader's, then every role to the agent's
(``AAH_BASE_URL``, ``AAH_MODEL``, ``AAH_API_KEY``, then ``OPENAI_API_KEY``).

Each role also has its own ``max_tokens``, sized for its job, so that no
reply runs on until the timeout (a small server given no limit wrote 1,637
tokens for one awareness answer):

- agent turns 1,024 (``AAH_MAX_TOKENS``): a tool call or a final answer
  that summarises tool results;
- awareness 256 (``AAH_AWARENESS_MAX_TOKENS``): Yes/IDK/No and one reason;
- simulated human 300 (``AAH_HUMAN_MAX_TOKENS``): a user's short reply;
- grader votes 512 (``AAH_GRADER_MAX_TOKENS``): Pass/Fail and a short
  justification;
- behaviour judge 256 (``AAH_JUDGE_MAX_TOKENS``): one class name.

A reasoning model thinks inside these limits: raise them for one.
"""

from __future__ import annotations

import os
from typing import Any, Literal
from urllib.parse import unquote, urlsplit, urlunsplit

from pydantic import BaseModel, SecretStr, model_validator

from aah.config import Settings, get_settings
from aah.errors import AahError

Role = Literal["agent", "human", "grader", "judge"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MAX_TOKENS: dict[Role, int] = {"agent": 1024, "human": 300, "grader": 512, "judge": 256}
DEFAULT_AWARENESS_MAX_TOKENS = 256
DEFAULT_MAX_REPLY_BYTES = 1_000_000
# Where an unset role setting is read from next, in order.
_FALLBACK: dict[Role, tuple[Role, ...]] = {
    "agent": (),
    "human": ("agent",),
    "grader": ("agent",),
    "judge": ("grader", "agent"),
}

# Local servers (vLLM, llama.cpp, Ollama) accept any key, but a header needs one.
_PLACEHOLDER_KEY = "not-needed"


class ModelConfig(BaseModel):
    """Where one role's model lives, and the limits of its requests.

    The key and a password given in the base URL are secrets: never logged
    or stored. A base URL like ``http://user:pw@host/v1`` is kept without its
    credentials, which become basic auth (``username``/``password``).
    """

    base_url: str | None
    model: str
    api_key: SecretStr
    timeout: float = 60.0
    retries: int = 3
    retry_budget: float = 60.0
    role: Role = "agent"
    max_tokens: int | None = None
    awareness_max_tokens: int = DEFAULT_AWARENESS_MAX_TOKENS
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES
    username: str | None = None
    password: SecretStr | None = None
    max_connections: int | None = None

    @model_validator(mode="before")
    @classmethod
    def _credentials_out_of_the_url(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("base_url"), str):
            return data
        parts = urlsplit(data["base_url"])
        if "@" not in parts.netloc:
            return data
        userinfo, _, host = parts.netloc.rpartition("@")
        user, has_password, password = userinfo.partition(":")
        clean = urlunsplit(parts._replace(netloc=host))
        return {
            **data,
            "base_url": clean,
            "username": unquote(user),
            "password": SecretStr(unquote(password)) if has_password else None,
        }

    @model_validator(mode="after")
    def _role_max_tokens(self) -> ModelConfig:
        if self.max_tokens is None:
            self.max_tokens = DEFAULT_MAX_TOKENS[self.role]
        return self

    @property
    def reply_tokens(self) -> int:
        """The ``max_tokens`` sent with this role's requests."""
        return self.max_tokens or DEFAULT_MAX_TOKENS[self.role]

    def setting_name(self, field: str) -> str:
        """The environment variable that sets ``field`` (``BASE_URL``...) for this role."""
        return f"AAH_{field}" if self.role == "agent" else f"AAH_{self.role.upper()}_{field}"

    def describe(self) -> dict[str, Any]:
        """A loggable description for manifests and messages: no secret in it."""
        described: dict[str, Any] = {
            "role": self.role,
            "model": self.model,
            "base_url": self.base_url or DEFAULT_BASE_URL,
            "max_tokens": self.reply_tokens,
            "timeout": self.timeout,
            "retries": self.retries,
            "retry_budget": self.retry_budget,
            "max_reply_bytes": self.max_reply_bytes,
        }
        if self.role == "agent":
            described["awareness_max_tokens"] = self.awareness_max_tokens
        if self.max_connections is not None:
            described["max_connections"] = self.max_connections
        if self.username is not None or self.password is not None:
            described["auth"] = f"basic ({self.username or 'no user name'})"
        return described


def model_config(
    role: Role = "agent", settings: Settings | None = None, model: str | None = None
) -> ModelConfig:
    """The model settings for ``role``; ``model`` overrides the configured name.

    Raises:
        AahError: no model name is configured for the role.
    """
    s = settings or get_settings()
    chain = [_role_settings(s, r) for r in (role, *_FALLBACK[role])]

    def first(field: str) -> Any:
        return next((own[field] for own in chain if own.get(field)), None)

    name = model or first("model")
    if not name:
        # Every role falls back to the agent's model: AAH_MODEL is enough.
        own = "" if role == "agent" else f" (or AAH_{role.upper()}_MODEL for a {role} of its own)"
        raise AahError(
            f"no model configured for the {role}: set AAH_MODEL and AAH_BASE_URL{own} "
            "(see docs/operators/index.md, 'Settings per role')"
        )
    key = first("api_key") or os.environ.get("OPENAI_API_KEY") or _PLACEHOLDER_KEY
    return ModelConfig(
        base_url=first("base_url"),
        model=name,
        api_key=SecretStr(key),
        timeout=s.llm_timeout,
        retries=s.llm_retries,
        retry_budget=s.llm_retry_budget,
        role=role,
        max_tokens=_role_settings(s, role)["max_tokens"],
        awareness_max_tokens=s.awareness_max_tokens,
        max_reply_bytes=s.max_reply_bytes,
        max_connections=s.max_connections,
    )


def _role_settings(s: Settings, role: Role) -> dict[str, Any]:
    # A role's own settings are named AAH_<ROLE>_<FIELD>; the agent's are AAH_<FIELD>.
    prefix = "" if role == "agent" else f"{role}_"
    return {
        field: getattr(s, f"{prefix}{field}")
        for field in ("base_url", "model", "api_key", "max_tokens")
    }
