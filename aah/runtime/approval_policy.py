"""Approval policies: which tool calls a person must approve before they run.

A policy is a list of rules; a call needs approval when any rule matches it.
A rule matches when every condition it names holds: the call's tool name
matches one of its globs (``tools``), its HTTP method is one of ``methods``,
and its ``argument`` rule holds; ``all: true`` matches every call. What
happens when nobody decides in time is the ``on_timeout`` chain: each
``ask_again`` puts the call to a person once more with a new deadline, and the
chain ends in ``reject`` or ``approve``.

A policy comes from a small YAML file (``--approve FILE``) or from flags
(``--approve-methods``, ``--approve-tools``), and is checked as it is read:
every problem is one line that names the file, the rule and the fix.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from aah.bounds import NumberTooLong, OutOfBounds, check_number, check_seconds
from aah.errors import AahError
from aah.peer_read import NotARegularFile, PeerBound, PeerOutOfBounds, read_file
from aah.tools import EndpointSpec, HttpMethod

ArgumentOp = Literal["equals", "in", "above", "below", "matches", "present"]
TimeoutStep = Literal["ask_again", "reject", "approve"]
METHODS: tuple[str, ...] = get_args(HttpMethod)
# A policy is a handful of rules; a file far larger is not one (or is an accident).
MAX_POLICY_BYTES = 64 * 1024
MAX_RULES = 200
_MAX_GLOB_CHARS = 200
# Tool names are [a-zA-Z0-9_-]; a glob adds * ? and [...] classes (with ! and -).
_GLOB_CHARS = re.compile(r"^[A-Za-z0-9_*?\[\]!.-]+$")
_RULE_KEYS = ("tools", "methods", "argument", "all")
_POLICY_KEYS = ("rules", "deadline", "on_timeout")


class ArgumentRule(BaseModel):
    """A condition on one argument's value.

    Attributes:
        name: The argument.
        op: ``equals`` (the value is ``value``), ``in`` (one of the list
            ``value``), ``above`` / ``below`` (a number greater / less than
            ``value``), ``matches`` (text matching the glob ``value``) or
            ``present`` (the call gives the argument at all).
        value: What the value is compared with (unused by ``present``).
    """

    model_config = ConfigDict(frozen=True)

    name: str
    op: ArgumentOp
    value: Any = None

    def holds(self, arguments: Mapping[str, Any]) -> bool:
        """Whether ``arguments`` meet this condition (a missing argument meets none but none)."""
        if self.name not in arguments:
            return False
        given = arguments[self.name]
        if self.op == "present":
            return True
        if self.op == "equals":
            return bool(given == self.value)
        if self.op == "in":
            return any(given == value for value in self.value)
        if self.op == "matches":
            return isinstance(given, str) and fnmatch.fnmatchcase(given, str(self.value))
        number = _number(given)
        bound = _number(self.value)
        if number is None or bound is None:
            return False
        # int and float compare exactly in Python, with no conversion that could overflow.
        return number > bound if self.op == "above" else number < bound


def _number(value: Any) -> int | float | None:
    """``value`` as a number to compare (text that spells one too), or None when it is none.

    An int is compared as it is (Python compares int and float exactly, with
    no conversion that could overflow), so a model's 400-digit amount is
    above any bound. Text of more digits than aah reads is as large as it
    could be, with its sign: a rule meant to hold a large amount still holds it.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    if not isinstance(value, str):
        return None
    try:
        return check_number(value, "the argument", integer=False)
    except NumberTooLong:
        return -math.inf if value.strip().startswith("-") else math.inf
    except OutOfBounds:
        return None


class ApprovalRule(BaseModel):
    """One rule: the calls it matches need a person's approval.

    Attributes:
        tools: Globs on the qualified tool name (``booking__*``); empty: any tool.
        methods: HTTP methods; empty: any method.
        argument: A condition on one argument, or None.
        all: Match every call (the other conditions are then not allowed).
    """

    model_config = ConfigDict(frozen=True)

    tools: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    argument: ArgumentRule | None = None
    all: bool = False

    def matches(self, spec: EndpointSpec, arguments: Mapping[str, Any]) -> bool:
        """Whether the call of ``spec`` with ``arguments`` needs approval under this rule."""
        if self.all:
            return True
        if self.tools and not any(fnmatch.fnmatchcase(spec.qualified_name, g) for g in self.tools):
            return False
        if self.methods and spec.method not in self.methods:
            return False
        return self.argument is None or self.argument.holds(arguments)

    def describe(self) -> str:
        """The rule in a few words, for the person deciding and the log."""
        if self.all:
            return "every call"
        parts = []
        if self.tools:
            parts.append("tool " + " or ".join(self.tools))
        if self.methods:
            parts.append("method " + " or ".join(self.methods))
        if self.argument is not None:
            rule = self.argument
            value = "" if rule.op == "present" else f" {rule.value!r}"
            parts.append(f"argument {rule.name} {rule.op}{value}")
        return ", ".join(parts)


class ApprovalPolicy(BaseModel):
    """Which calls need approval, how long to wait, and what a timeout decides.

    Attributes:
        rules: A call needs approval when any rule matches it.
        deadline: Seconds a person has to decide (per ask); None waits forever.
        on_timeout: What each deadline brings, in order: ``ask_again`` asks
            once more, and the chain ends in ``reject`` or ``approve``.
    """

    model_config = ConfigDict(frozen=True)

    rules: tuple[ApprovalRule, ...] = ()
    deadline: float | None = None
    on_timeout: tuple[TimeoutStep, ...] = Field(default=("reject",))

    def rule_for(self, spec: EndpointSpec, arguments: Mapping[str, Any]) -> ApprovalRule | None:
        """The first rule that makes this call need approval, or None (it runs as it is)."""
        return next((rule for rule in self.rules if rule.matches(spec, arguments)), None)

    def fallback(self, ask: int) -> TimeoutStep:
        """What the deadline of the ``ask``-th ask (1-based) brings."""
        return self.on_timeout[min(ask, len(self.on_timeout)) - 1]

    def with_rules(self, rules: Sequence[ApprovalRule]) -> ApprovalPolicy:
        """This policy with ``rules`` added after its own."""
        return self.model_copy(update={"rules": (*self.rules, *rules)})


def load_policy(path: Path) -> ApprovalPolicy:
    """The policy in the YAML file ``path``.

    Raises:
        AahError: the file cannot be read, is not YAML, or is no valid policy
            (one line naming the problem and the fix).
    """
    where = f"--approve {path}"
    try:
        text = read_file(path, PeerBound(f"{where}: the file", MAX_POLICY_BYTES)).decode("utf-8")
    except PeerOutOfBounds:
        raise AahError(
            f"{where}: the file is more than a policy's {MAX_POLICY_BYTES:,} bytes: "
            "give a few rules, not a data file"
        ) from None
    except NotARegularFile:
        raise AahError(f"{where}: is not a regular file: give a YAML policy file") from None
    except FileNotFoundError:
        raise AahError(f"{where}: no such file: check the path") from None
    except IsADirectoryError:
        raise AahError(f"{where}: is a folder: give a YAML policy file") from None
    except UnicodeDecodeError:
        raise AahError(f"{where}: the file is not UTF-8 text: give a YAML policy file") from None
    except OSError as exc:
        raise AahError(f"{where}: cannot read the file ({exc.strerror}): check it") from None
    import yaml  # only a policy file needs it: tens of ms off every run's start-up

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise AahError(f"{where}: not valid YAML{at}: fix the file's syntax") from None
    return parse_policy(data, where)


def parse_policy(data: Any, where: str = "the approval policy") -> ApprovalPolicy:
    """The policy that ``data`` (read from YAML or JSON) describes.

    Raises:
        AahError: ``data`` is no valid policy; the message says what to change.
    """
    if data is None:
        raise AahError(f"{where}: the policy is empty: give at least one rule under 'rules:'")
    if not isinstance(data, dict):
        raise AahError(
            f"{where}: a policy is a mapping with 'rules:', not {_kind(data)}: "
            "see docs/operators/runtime.md"
        )
    _no_unknown_keys(data, _POLICY_KEYS, where, "policy")
    rules = data.get("rules")
    if not isinstance(rules, list) or not rules:
        raise AahError(f"{where}: 'rules' must be a non-empty list of rules, not {_kind(rules)}")
    if len(rules) > MAX_RULES:
        raise AahError(f"{where}: {len(rules):,} rules is more than {MAX_RULES}: merge them")
    parsed = tuple(_rule(rule, f"{where}: rule {i}") for i, rule in enumerate(rules, 1))
    return ApprovalPolicy(
        rules=parsed,
        deadline=_deadline(data.get("deadline"), where),
        on_timeout=_on_timeout(data.get("on_timeout", "reject"), where),
    )


def policy_from_flags(
    base: ApprovalPolicy | None, methods: str | None, tools: Sequence[str]
) -> ApprovalPolicy | None:
    """``base`` with the rules of ``--approve-methods`` and ``--approve-tools`` added.

    Args:
        base: The ``--approve`` file's policy, or None.
        methods: A comma list of HTTP methods, or None.
        tools: Globs on tool names (each may be a comma list).

    Returns:
        The policy, or None when nothing asks for approvals.

    Raises:
        AahError: a method or a glob is not valid.
    """
    rules: list[ApprovalRule] = []
    if methods is not None:
        names = [m.strip() for m in methods.split(",") if m.strip()]
        if not names:
            raise AahError(f"--approve-methods: give methods, e.g. {','.join(METHODS[1:])}")
        rules.append(ApprovalRule(methods=_methods(names, "--approve-methods")))
    globs = [g.strip() for value in tools for g in value.split(",") if g.strip()]
    if tools and not globs:
        raise AahError("--approve-tools: give a tool name or glob, e.g. 'booking__*'")
    if globs:
        rules.append(ApprovalRule(tools=_globs(globs, "--approve-tools")))
    if not rules:
        return base
    return (base or ApprovalPolicy()).with_rules(rules)


def policy_from_options(
    file: Path | None, methods: str | None, tools: Sequence[str]
) -> ApprovalPolicy | None:
    """The policy that ``--approve``, ``--approve-methods`` and ``--approve-tools`` give.

    Raises:
        AahError: the file or a flag is not valid (one line).
    """
    base = load_policy(file) if file is not None else None
    return policy_from_flags(base, methods, tools)


def _rule(data: Any, where: str) -> ApprovalRule:
    if not isinstance(data, dict):
        raise AahError(f"{where}: a rule is a mapping (tools, methods, argument, all), not "
                       f"{_kind(data)}")  # fmt: skip
    _no_unknown_keys(data, _RULE_KEYS, where, "rule")
    every = data.get("all", False)
    if not isinstance(every, bool):
        raise AahError(f"{where}: 'all' must be true or false, not {_kind(every)}")
    if every and len(data) > 1:
        raise AahError(f"{where}: 'all: true' matches every call: give it no other condition")
    rule = ApprovalRule(
        tools=_globs(_list(data.get("tools", []), f"{where}: 'tools'"), where),
        methods=_methods(_list(data.get("methods", []), f"{where}: 'methods'"), where),
        argument=_argument(data["argument"], where) if "argument" in data else None,
        all=every,
    )
    if not (rule.all or rule.tools or rule.methods or rule.argument):
        # A rule with no condition would match every call, which 'all: true' says plainly.
        raise AahError(
            f"{where}: the rule has no condition: give tools, methods, argument or all: true"
        )
    return rule


def _list(value: Any, where: str) -> list[Any]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        raise AahError(f"{where} must be a name or a list of names, not {_kind(value)}")
    return items


def _globs(values: Sequence[Any], where: str) -> tuple[str, ...]:
    globs = []
    for value in values:
        if not isinstance(value, str):
            raise AahError(f"{where}: a tool glob is text, not {_kind(value)}")
        if not value or len(value) > _MAX_GLOB_CHARS:
            raise AahError(f"{where}: a tool glob needs 1 to {_MAX_GLOB_CHARS} characters")
        if not _GLOB_CHARS.match(value) or not _balanced(value):
            raise AahError(
                f"{where}: {value!r} is not a tool glob: use letters, digits, _ - and "
                "the wildcards * ? [...], e.g. 'booking__*'"
            )
        globs.append(value)
    return tuple(globs)


def _balanced(glob: str) -> bool:
    # fnmatch reads an unclosed "[" as a literal, which no tool name holds:
    # a glob that cannot mean what its writer meant is refused.
    depth = 0
    for char in glob:
        if char == "[":
            if depth:
                return False
            depth = 1
        elif char == "]":
            if not depth:
                return False
            depth = 0
    return depth == 0 and "[]" not in glob


def _methods(values: Sequence[Any], where: str) -> tuple[str, ...]:
    methods = []
    for value in values:
        name = value.strip().upper() if isinstance(value, str) else None
        if name not in METHODS:
            raise AahError(f"{where}: unknown HTTP method {value!r}: use {', '.join(METHODS)}")
        methods.append(name)
    return tuple(methods)


def _argument(data: Any, where: str) -> ArgumentRule:
    ops = get_args(ArgumentOp)
    if not isinstance(data, dict):
        raise AahError(
            f"{where}: 'argument' is a mapping like {{name: amount, above: 100}}, not {_kind(data)}"
        )
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise AahError(f"{where}: 'argument' needs the argument's 'name', e.g. name: amount")
    given = [key for key in data if key != "name"]
    unknown = [key for key in given if key not in ops]
    if unknown or len(given) != 1:
        raise AahError(
            f"{where}: 'argument' needs exactly one test besides 'name': {', '.join(ops)}"
            + (f" (not {unknown[0]!r})" if unknown else "")
        )
    op = given[0]
    value = data[op]
    if op in ("above", "below") and (
        isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
    ):
        raise AahError(f"{where}: '{op}' needs a number, not {_kind(value)}")
    if op == "in" and (not isinstance(value, list) or not value):
        raise AahError(f"{where}: 'in' needs a non-empty list of values, not {_kind(value)}")
    if op == "matches" and (not isinstance(value, str) or not value):
        raise AahError(f"{where}: 'matches' needs a glob as text, e.g. '*@example.com'")
    if op == "present" and value is not True:
        raise AahError(f"{where}: write 'present: true' (a rule on an absent argument never runs)")
    if op == "equals" and isinstance(value, dict | list):
        raise AahError(f"{where}: 'equals' compares with one value; for a list use 'in'")
    return ArgumentRule(name=name, op=op, value=value)


def _deadline(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise AahError(f"{where}: 'deadline' is seconds (a number), not {_kind(value)}")
    return check_seconds(value, f"{where}: 'deadline'")


def _on_timeout(value: Any, where: str) -> tuple[TimeoutStep, ...]:
    steps = _list(value, f"{where}: 'on_timeout'")
    allowed = get_args(TimeoutStep)
    if not steps or any(step not in allowed for step in steps):
        raise AahError(
            f"{where}: 'on_timeout' is a list of ask_again steps ending in reject or approve, "
            f"e.g. [ask_again, reject]"
        )
    if steps[-1] == "ask_again" or any(step != "ask_again" for step in steps[:-1]):
        raise AahError(
            f"{where}: 'on_timeout' must be ask_again steps ending in reject or approve, "
            "e.g. [ask_again, reject]"
        )
    return tuple(steps)


def _no_unknown_keys(data: Mapping[Any, Any], known: Sequence[str], where: str, what: str) -> None:
    for key in data:
        if key not in known:
            raise AahError(f"{where}: unknown {what} key {str(key)!r}: use {', '.join(known)}")


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"{str(value).lower()}"
    if isinstance(value, str):
        return f"the text {value[:40]!r}"
    if isinstance(value, int | float):
        return f"the number {value}"
    return {"list": "a list", "dict": "a mapping"}.get(type(value).__name__, type(value).__name__)
