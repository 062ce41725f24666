"""τ²'s domains (airline, retail, telecom, mock) as read from a data directory, once.

A :class:`Tau2Domain` holds what every simulation of a domain shares: its
database (and telecom's user database, the user's phone) as checked JSON
bytes, the policy files τ²'s ``get_environment`` opens, the user simulator's
guidelines, the tools' OpenAI specs and the registry key τ²'s evaluator
builds environments by. Each environment gets databases of its own, made
from those bytes by τ²'s own data models (``model_validate_json``, the
fastest fresh copy: a deep copy of the models takes twice as long).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from aah.benchmark.tau2.files import (
    REFETCH,
    read_json,
    read_text,
    read_toml,
    tau2_source,
    validation_problem,
)
from aah.benchmark.tau2.loader import Tau2Code, find_tau2_wheel, tau2_code
from aah.errors import AahError

DomainName = Literal["airline", "retail", "telecom", "mock"]
DOMAINS: tuple[DomainName, ...] = ("airline", "retail", "telecom", "mock")
# What `--domain all` runs: the three domains of τ²'s leaderboard (mock is for tests).
ALL_DOMAINS = ("airline", "retail", "telecom")


def parse_domains(text: str) -> list[str]:
    """``--domain``: a domain, a comma list, or all (airline, retail, telecom).

    Raises:
        AahError: a name that is no τ² domain.
    """
    if text.strip() == "all":
        return list(ALL_DOMAINS)
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in DOMAINS]
    if unknown or not names:
        raise AahError(f"--domain {text!r}: use {', '.join(DOMAINS)}, a comma list of them, or all")
    return list(dict.fromkeys(names))


@dataclass(frozen=True)
class DomainLayout:
    """Where one domain's files are and which of τ²'s classes read them.

    Attributes:
        db: The agent-side database file.
        db_class: τ²'s model of it (module, class).
        tools_class: τ²'s agent toolkit (module, class).
        environment: τ²'s environment constructor (module, function): the
            one τ²'s registry names for the domain.
        policies: The files that constructor opens.
        user_db: The user-side database (telecom's phone), if any.
        user_db_class: τ²'s model of it.
        user_tools_class: τ²'s user toolkit, if any.
    """

    db: str
    db_class: tuple[str, str]
    tools_class: tuple[str, str]
    environment: tuple[str, str]
    policies: tuple[str, ...]
    user_db: str | None = None
    user_db_class: tuple[str, str] | None = None
    user_tools_class: tuple[str, str] | None = None


def _simple(name: str, db_class: str, tools_class: str) -> DomainLayout:
    module = f"tau2.domains.{name}"
    return DomainLayout(
        db="db.json",
        db_class=(f"{module}.data_model", db_class),
        tools_class=(f"{module}.tools", tools_class),
        environment=(f"{module}.environment", "get_environment"),
        policies=("policy.md",),
    )


_TELECOM = "tau2.domains.telecom"
LAYOUTS: Mapping[str, DomainLayout] = {
    "airline": _simple("airline", "FlightDB", "AirlineTools"),
    "retail": _simple("retail", "RetailDB", "RetailTools"),
    "mock": _simple("mock", "MockDB", "MockTools"),
    # τ²'s "telecom" domain is the manual policy (the workflow one is "telecom-workflow").
    "telecom": DomainLayout(
        db="db.toml",
        db_class=(f"{_TELECOM}.data_model", "TelecomDB"),
        tools_class=(f"{_TELECOM}.tools", "TelecomTools"),
        environment=(f"{_TELECOM}.environment", "get_environment_manual_policy"),
        policies=("main_policy.md", "tech_support_manual.md"),
        user_db="user_db.toml",
        user_db_class=(f"{_TELECOM}.user_data_model", "TelecomUserDB"),
        user_tools_class=(f"{_TELECOM}.user_tools", "TelecomUserTools"),
    ),
}
GUIDELINES = "user_simulator/simulation_guidelines.md"
GUIDELINES_WITH_TOOLS = "user_simulator/simulation_guidelines_tools.md"


class Tau2Domain:
    """One domain of one data directory, read and checked once (see the module).

    Use :func:`load_tau2_domain`. Attributes:
        name: The domain.
        folder: Its folder (``<data>/tau2/domains/<name>``).
        code: τ²'s code the domain runs on.
        policy: The agent's policy, as τ²'s environment gives it.
        guidelines: The user simulator's guidelines (the tools version when
            the user has tools).
        agent_tools: The agent's tools as OpenAI function specs (τ²'s own).
        user_tools: The user's tools likewise (telecom's phone; else empty).
        registry_key: The name τ²'s evaluator asks its registry for.
    """

    def __init__(self, name: DomainName, source: Path, code: Tau2Code) -> None:
        """Read and check the domain's files (see :func:`load_tau2_domain`)."""
        self.name = name
        self.code = code
        self.layout = LAYOUTS[name]
        self.folder = source / "domains" / name
        self.source = source
        self._db_json = self._database(self.layout.db, self.layout.db_class)
        self._user_db_json = (
            self._database(self.layout.user_db, self.layout.user_db_class)
            if self.layout.user_db is not None and self.layout.user_db_class is not None
            else None
        )
        self._served = {
            f"domains/{name}/{policy}": read_text(self.folder / policy)
            for policy in self.layout.policies
        }
        with_tools = self.layout.user_tools_class is not None
        self.guidelines = read_text(source / (GUIDELINES_WITH_TOOLS if with_tools else GUIDELINES))
        self.registry_key = code.register_environment(self.new_environment)
        sample = self.new_environment()
        self.policy: str = sample.get_policy()
        self.agent_tools = [tool.openai_schema for tool in sample.get_tools()]
        self.user_tools = (
            [tool.openai_schema for tool in sample.get_user_tools()]
            if sample.user_tools is not None
            else []
        )
        self.agent_tool_names = frozenset(spec["function"]["name"] for spec in self.agent_tools)
        self.user_tool_names = frozenset(spec["function"]["name"] for spec in self.user_tools)

    @property
    def has_user_tools(self) -> bool:
        """Whether the user acts on the world with tools of their own (telecom)."""
        return self.layout.user_tools_class is not None

    def new_environment(self, solo_mode: bool = False) -> Any:
        """A τ² environment of this domain with databases of its own (τ²'s ``get_environment``).

        The constructor τ²'s evaluator gets from its registry for
        :attr:`registry_key`.
        """
        module, function = self.layout.environment
        get_environment = self.code.attribute(module, function)
        arguments: dict[str, Any] = {"db": self._fresh(self.layout.db_class, self._db_json)}
        if self._user_db_json is not None and self.layout.user_db_class is not None:
            arguments["user_db"] = self._fresh(self.layout.user_db_class, self._user_db_json)
        with self.code.serving(self._served):
            return get_environment(solo_mode=solo_mode, **arguments)

    def _fresh(self, model: tuple[str, str], data: bytes) -> Any:
        return self.code.attribute(*model).model_validate_json(data)

    def _database(self, file: str | None, model: tuple[str, str] | None) -> bytes:
        assert file is not None and model is not None
        path = self.folder / file
        table = read_toml(path) if path.suffix == ".toml" else read_json(path)
        if not isinstance(table, dict):
            raise AahError(f"{path} is not a database (a JSON object or TOML table): {REFETCH}")
        try:
            data = json.dumps(table).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise AahError(f"{path} holds a value τ² does not read ({exc}): {REFETCH}") from None
        try:
            self._fresh(model, data)
        except ValidationError as exc:
            raise AahError(
                f"{path} is not a {self.name} database ({validation_problem(exc)}): {REFETCH}"
            ) from None
        return data


_LOCK = threading.Lock()
_DOMAINS: dict[tuple[Path, str, Path], Tau2Domain] = {}


def load_tau2_domain(
    name: str, data: Path, *, wheel: Path | None = None, code: Tau2Code | None = None
) -> Tau2Domain:
    """The domain ``name`` of the data directory ``data``, read once a process.

    Args:
        name: airline, retail, telecom or mock.
        data: A data directory (or its ``tau2`` folder).
        wheel: The τ² wheel (None: ``find_tau2_wheel(data)``: ``AAH_TAU2_WHEEL``,
            else the data directory's ``tau2`` folder...).
        code: τ²'s code, already loaded (else from ``wheel``).

    Raises:
        AahError: an unknown domain, no wheel, or a missing or damaged file.
    """
    if name not in LAYOUTS:
        raise AahError(f"unknown τ² domain {name!r}: use one of {', '.join(DOMAINS)}")
    source = tau2_source(data).resolve()
    if code is not None:
        loaded = code
    else:
        loaded = tau2_code(wheel if wheel is not None else find_tau2_wheel(data))
    key = (source, name, loaded.wheel)
    with _LOCK:
        found = _DOMAINS.get(key)
        if found is None:
            found = _DOMAINS[key] = Tau2Domain(name, source, loaded)  # type: ignore[arg-type]
    return found
