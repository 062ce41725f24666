"""The few modules τ²'s code imports but aah never runs, each replaced by a minimal stand-in.

τ²'s domains, data models and evaluator import some of the wheel's heavy
dependencies at module level, for code paths aah does not take. Each
stand-in below serves only what those imports name; anything that would
really be used raises :class:`StandInUsed`, so a path that starts needing
the real package fails loudly instead of being quietly faked.

- ``loguru``: ``logger.debug/info/warning/error`` (tool calls log what they
  did; τ²'s evaluator logs a gold action that fails). The messages are
  dropped: the result text and the grade carry everything that matters.
- ``dotenv``: ``load_dotenv()``, which ``tau2.utils.utils`` calls at import
  to read a ``.env`` file into the environment. The stand-in reads nothing:
  aah's settings never come from τ²'s ``.env``.
- ``pandas``: ``pd.DataFrame``, named in the return annotation of
  ``Results.to_df`` (a results table aah does not build).
- ``deepdiff``: ``DeepDiff``, used by ``show_dict_diff`` (a debugging helper
  nothing on aah's path calls).
- ``toml``: ``load``/``dump`` for ``load_file``/``dump_file`` on ``.toml``
  paths. aah reads telecom's TOML databases itself (``tomllib``, through
  the bounded reader) and hands τ² the parsed values.
- ``tau2.utils.llm_utils``: ``generate``, which τ²'s NL-assertion evaluator
  calls to ask an LLM (through litellm). aah never runs that evaluator: NL
  assertions are judged by aah's own grader.
- ``tau2.registry``: the registry of agents, users and domains (its real
  module imports the LLM agent and user simulator). τ²'s evaluator asks it
  for one thing: ``registry.get_env_constructor(domain)``, the constructor
  of a fresh environment. The stand-in answers with the constructor aah
  registered for that key (:func:`register_environment`): τ²'s own domain
  ``get_environment`` with the data aah read.
"""

from __future__ import annotations

import threading
import types
from collections.abc import Callable
from typing import Any, NoReturn


class StandInUsed(RuntimeError):
    """τ²'s code reached a stand-in on a path aah was not meant to take."""


def _refuse(what: str) -> Callable[..., NoReturn]:
    def refuse(*args: Any, **kwargs: Any) -> NoReturn:
        raise StandInUsed(f"{what} is not available in aah (a stand-in of τ²'s dependency)")

    return refuse


class _SilentLogger:
    """loguru's ``logger``: every level accepted, every message dropped."""

    def __getattr__(self, name: str) -> Callable[..., None]:
        if name.startswith("_"):
            raise AttributeError(name)
        return _drop


def _drop(*args: Any, **kwargs: Any) -> None:
    return None


class _Refused:
    """A class name that exists for annotations and refuses to be built."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise StandInUsed(f"{type(self).__name__} is not available in aah")


def _module(name: str, **attributes: Any) -> types.ModuleType:
    module = types.ModuleType(name, f"aah's stand-in for {name} (see aah.benchmark.tau2.stand_ins)")
    module.__dict__.update(attributes)
    return module


class _EnvironmentRegistry:
    """``tau2.registry.registry``: the environment constructors aah registered, by key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._constructors: dict[str, Callable[..., Any]] = {}

    def register(self, key: str, constructor: Callable[..., Any]) -> None:
        with self._lock:
            self._constructors[key] = constructor

    def get_env_constructor(self, name: str) -> Callable[..., Any]:
        with self._lock:
            found = self._constructors.get(name)
        if found is None:
            raise KeyError(f"Domain {name} not found in registry")
        return found


def external_stand_ins() -> dict[str, types.ModuleType]:
    """The stand-ins of third-party modules, by the name τ²'s code imports."""
    return {
        "loguru": _module("loguru", logger=_SilentLogger()),
        "dotenv": _module("dotenv", load_dotenv=lambda *args, **kwargs: False),
        "pandas": _module("pandas", DataFrame=type("DataFrame", (_Refused,), {})),
        "deepdiff": _module("deepdiff", DeepDiff=type("DeepDiff", (_Refused,), {})),
        "toml": _module("toml", load=_refuse("toml.load"), dump=_refuse("toml.dump")),
    }


def tau2_stand_ins(registry: _EnvironmentRegistry) -> dict[str, dict[str, Any]]:
    """The stand-ins of τ²'s own modules: their attributes, by the module's name in ``tau2``."""
    return {
        "tau2.utils.llm_utils": {"generate": _refuse("τ²'s LLM call (generate)")},
        "tau2.registry": {"registry": registry},
    }


def new_registry() -> _EnvironmentRegistry:
    """An empty registry for one load of τ²'s code."""
    return _EnvironmentRegistry()
