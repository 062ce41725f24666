"""Approval policies: what they match, and one-line errors for every bad policy file or flag."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from http_server import make_spec

from aah.errors import AahError
from aah.runtime import ApprovalPolicy, load_policy, parse_policy, policy_from_flags
from aah.tools import ParameterSpec

GOOD = """
# calls a person must approve
rules:
  - methods: [POST, PUT, PATCH, DELETE]
  - tools: ["booking__*", "payments__refund"]
  - tools: "payments__*"
    argument: {name: amount, above: 100}
deadline: 300
on_timeout: [ask_again, reject]
"""


def _spec(name: str, method: str = "GET") -> object:
    amount = ParameterSpec(name="amount", type="number")
    spec = make_spec("http://example.com/x", method=method, name=name, params=[amount])
    return spec.model_copy(update={"tool": name.split("__")[0], "qualified_name": name})


def test_a_good_policy_file_reads_and_matches(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(GOOD, encoding="utf-8")
    policy = load_policy(path)
    assert policy.deadline == 300.0 and policy.on_timeout == ("ask_again", "reject")
    assert [policy.fallback(n) for n in (1, 2, 3)] == ["ask_again", "reject", "reject"]
    cases = [
        ("weather__forecast", "GET", {}, False),
        ("weather__forecast", "POST", {}, True),
        ("booking__hotel", "GET", {}, True),
        ("payments__charge", "GET", {"amount": 250}, True),
        ("payments__charge", "GET", {"amount": "250"}, True),
        ("payments__charge", "GET", {"amount": 50}, False),
        ("payments__charge", "GET", {}, False),
        ("payments__refund", "GET", {}, True),
    ]
    for name, method, arguments, needs in cases:
        rule = policy.rule_for(_spec(name, method), arguments)  # type: ignore[arg-type]
        assert (rule is not None) == needs, (name, method, arguments)


@pytest.mark.parametrize(
    ("argument", "value", "matches"),
    [
        ({"name": "to", "equals": "boss"}, "boss", True),
        ({"name": "to", "equals": "boss"}, "bob", False),
        ({"name": "to", "in": ["a", "b"]}, "b", True),
        ({"name": "to", "matches": "*@corp.com"}, "x@corp.com", True),
        ({"name": "to", "matches": "*@corp.com"}, 5, False),
        ({"name": "to", "below": 0}, -1, True),
        ({"name": "to", "below": 0}, True, False),  # a boolean is no number
        ({"name": "to", "present": True}, None, True),
        # A model's amount of more digits than a float holds is still above the bound.
        ({"name": "to", "above": 100}, 10**400, True),
        ({"name": "to", "below": 100}, 10**400, False),
        ({"name": "to", "above": 100}, "9" * 400, True),
        ({"name": "to", "below": 0}, "-" + "9" * 5000, True),
        ({"name": "to", "above": 1.5}, "2", True),
        ({"name": "to", "above": 1.5}, "lots", False),
    ],
)
def test_argument_rules(argument: dict[str, object], value: object, matches: bool) -> None:
    policy = parse_policy({"rules": [{"argument": argument}]})
    rule = policy.rule_for(_spec("mail__send"), {"to": value})  # type: ignore[arg-type]
    assert (rule is not None) == matches


def test_all_matches_every_call() -> None:
    policy = parse_policy({"rules": [{"all": True}]})
    assert policy.rule_for(_spec("a__b"), {}) is not None  # type: ignore[arg-type]
    assert policy.on_timeout == ("reject",)  # nobody deciding never runs a call


# Every bad policy file: (file content, a piece of the one-line error).
BAD_FILES = {
    "empty": ("", "the policy is empty"),
    "only-comment": ("# nothing\n", "the policy is empty"),
    "not-yaml": ("rules: [unclosed\n", "not valid YAML"),
    "tabs-yaml": ("rules:\n\t- all: true\n", "not valid YAML"),
    "a-list": ("- all: true\n", "a policy is a mapping"),
    "a-string": ("approve everything\n", "a policy is a mapping"),
    "unknown-top-key": ("rules: [{all: true}]\ntimeout: 5\n", "unknown policy key 'timeout'"),
    "no-rules": ("deadline: 5\n", "'rules' must be a non-empty list"),
    "empty-rules": ("rules: []\n", "'rules' must be a non-empty list"),
    "rules-a-mapping": ("rules: {all: true}\n", "'rules' must be a non-empty list"),
    "rule-a-string": ("rules: [POST]\n", "rule 1: a rule is a mapping"),
    "unknown-rule-key": ("rules: [{tool: 'a__*'}]\n", "unknown rule key 'tool'"),
    "empty-rule": ("rules: [{}]\n", "the rule has no condition"),
    "empty-tools": ("rules: [{tools: []}]\n", "the rule has no condition"),
    "all-false": ("rules: [{all: false}]\n", "the rule has no condition"),
    "all-not-bool": ("rules: [{all: 'yes'}]\n", "'all' must be true or false"),
    "all-plus-more": ("rules: [{all: true, methods: [GET]}]\n", "give it no other condition"),
    "bad-method": ("rules: [{methods: [FETCH]}]\n", "unknown HTTP method 'FETCH'"),
    "method-number": ("rules: [{methods: [1]}]\n", "unknown HTTP method 1"),
    "methods-mapping": ("rules: [{methods: {a: 1}}]\n", "must be a name or a list"),
    "glob-unclosed": ("rules: [{tools: ['booking__[ab']}]\n", "is not a tool glob"),
    "glob-space": ("rules: [{tools: ['booking *']}]\n", "is not a tool glob"),
    "glob-slash": ("rules: [{tools: ['a/b']}]\n", "is not a tool glob"),
    "glob-empty": ("rules: [{tools: ['']}]\n", "a tool glob needs 1 to"),
    "glob-empty-class": ("rules: [{tools: ['a[]']}]\n", "is not a tool glob"),
    "glob-number": ("rules: [{tools: [12]}]\n", "a tool glob is text"),
    "glob-too-long": ("rules: [{tools: ['" + "a" * 201 + "']}]\n", "a tool glob needs 1 to"),
    "argument-string": ("rules: [{argument: amount}]\n", "'argument' is a mapping"),
    "argument-no-name": ("rules: [{argument: {above: 3}}]\n", "needs the argument's 'name'"),
    "argument-no-op": ("rules: [{argument: {name: x}}]\n", "exactly one test"),
    "argument-two-ops": ("rules: [{argument: {name: x, above: 1, below: 5}}]\n", "exactly one"),
    "argument-bad-op": ("rules: [{argument: {name: x, greater: 1}}]\n", "(not 'greater')"),
    "above-text": ("rules: [{argument: {name: x, above: ten}}]\n", "'above' needs a number"),
    "above-bool": ("rules: [{argument: {name: x, above: true}}]\n", "'above' needs a number"),
    "above-nan": ("rules: [{argument: {name: x, above: .nan}}]\n", "'above' needs a number"),
    "in-not-list": ("rules: [{argument: {name: x, in: 3}}]\n", "'in' needs a non-empty list"),
    "matches-number": ("rules: [{argument: {name: x, matches: 3}}]\n", "'matches' needs a glob"),
    "present-false": ("rules: [{argument: {name: x, present: false}}]\n", "present: true"),
    "equals-list": ("rules: [{argument: {name: x, equals: [1]}}]\n", "for a list use 'in'"),
    "deadline-text": ("rules: [{all: true}]\ndeadline: soon\n", "'deadline' is seconds"),
    "deadline-negative": ("rules: [{all: true}]\ndeadline: -5\n", "above 0 and at most"),
    "deadline-inf": ("rules: [{all: true}]\ndeadline: .inf\n", "above 0 and at most"),
    "timeout-unknown": ("rules: [{all: true}]\non_timeout: maybe\n", "'on_timeout'"),
    "timeout-ends-asking": ("rules: [{all: true}]\non_timeout: [ask_again]\n", "must be"),
    "timeout-empty": ("rules: [{all: true}]\non_timeout: []\n", "'on_timeout'"),
    "timeout-middle-reject": (
        "rules: [{all: true}]\non_timeout: [reject, ask_again, approve]\n",
        "'on_timeout' must be",
    ),
    "too-many-rules": ("rules:\n" + "  - all: true\n" * 201, "more than 200"),
    "huge": ("rules: [{all: true}]\n" + "#" * 70_000 + "\n", "more than a policy's"),
    "not-utf8": (b"rules: [{tools: ['\xff']}]\n", "not UTF-8"),
}


@pytest.mark.parametrize("content, expected", list(BAD_FILES.values()), ids=list(BAD_FILES))
def test_a_bad_policy_file_is_one_line_naming_the_file(
    tmp_path: Path, content: str | bytes, expected: str
) -> None:
    path = tmp_path / "policy.yaml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(AahError) as caught:
        load_policy(path)
    message = str(caught.value)
    assert expected in message, message
    assert message.startswith(f"--approve {path}: ") and "\n" not in message


@pytest.mark.parametrize("where", ["missing", "folder"])
def test_an_unreadable_policy_path_is_one_line(tmp_path: Path, where: str) -> None:
    path = tmp_path / "nope.yaml" if where == "missing" else tmp_path
    with pytest.raises(AahError, match=r"^--approve .*: (no such file|is a folder)"):
        load_policy(path)


BAD_FLAGS = {
    "methods-unknown": ("GET,FETCH", [], "--approve-methods: unknown HTTP method 'FETCH'"),
    "methods-empty": (",", [], "--approve-methods: give methods"),
    "tools-bad-glob": (None, ["booking *"], "--approve-tools: 'booking *' is not a tool glob"),
    "tools-empty": (None, [" , "], "--approve-tools: give a tool name or glob"),
}


@pytest.mark.parametrize("methods, tools, expected", list(BAD_FLAGS.values()), ids=list(BAD_FLAGS))
def test_bad_flags_are_one_line(methods: str | None, tools: list[str], expected: str) -> None:
    with pytest.raises(AahError) as caught:
        policy_from_flags(None, methods, tools)
    assert str(caught.value).startswith(expected), str(caught.value)


def test_flags_add_rules_to_the_file_and_are_case_blind() -> None:
    base = parse_policy({"rules": [{"tools": ["a__*"]}], "deadline": 5})
    policy = policy_from_flags(base, "post, delete", ["b__x,c__*"])
    assert policy is not None and policy.deadline == 5
    assert [(r.tools, r.methods) for r in policy.rules] == [
        (("a__*",), ()),
        ((), ("POST", "DELETE")),
        (("b__x", "c__*"), ()),
    ]
    assert policy_from_flags(None, None, []) is None
    assert ApprovalPolicy.model_validate(policy.model_dump(mode="json")) == policy  # recipe


def test_the_cli_refuses_a_bad_policy_in_one_line_with_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("rules: [{methods: [FETCH]}]\n", encoding="utf-8")
    for command in (
        ["run", "hello", "--approve", str(path)],
        ["bench", "run", "--run", "r", "--approve", str(path), "--db", str(tmp_path / "s.db")],
        ["run", "hello", "--approve-tools", "booking *"],
        ["bench", "run", "--run", "r", "--benchmark", "bfcl", "--approve-methods", "POST"],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "aah", *command], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: --approve"), done.stderr
