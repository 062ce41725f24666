"""The oracle's answer to an MCP server's form: fields filled from the task's hidden facts.

A field is filled from the first hidden fact that names it (its name or
title, ``_`` and ``-`` read as spaces): an enum by the option the fact
names, a number by the first number in it, a yes/no by whether the fact
says no, text by what follows "is", ":" or "=" after the name (else the
whole fact). Every value is checked as a person's would be. The form is
accepted when every required field is filled and at least one is; else it
is declined. A link is always declined: the oracle opens nothing.
"""

from __future__ import annotations

import re

from aah.benchmark.failtalms.fact_fit import TaskFacts
from aah.desk import (
    ContentInvalid,
    ElicitationField,
    ElicitationRequest,
    ElicitationResult,
    FieldValue,
    check_value,
)

ORACLE = "oracle"
# ASCII digits, as a person types them (\d would take any script's).
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")
_SAYS_NO = re.compile(r"\b(no|not|without|never|don't|doesn't|does not|do not)\b", re.I)
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?")


def oracle_elicitation(request: ElicitationRequest, facts: TaskFacts) -> ElicitationResult:
    """The oracle's result for ``request``, from ``facts.hidden_facts``."""
    if request.mode == "url":
        return _declined("the oracle opens no links")
    content: dict[str, FieldValue] = {}
    for field in request.fields:
        value = _value_from_facts(field, facts.hidden_facts)
        if value is not None:
            content[field.name] = value
    missing = [f.label for f in request.fields if f.required and f.name not in content]
    if missing:
        return _declined(f"no hidden fact gives {missing[0]}")
    if not content:
        return _declined("no hidden fact names a field of the form")
    return ElicitationResult(action="accept", content=content, answered_by=ORACLE)


def _declined(why: str) -> ElicitationResult:
    return ElicitationResult(action="decline", answered_by=ORACLE, why=why)


def _value_from_facts(field: ElicitationField, facts: list[str]) -> FieldValue | None:
    names = {_words(n) for n in (field.name, field.title) if n.strip()}
    for fact in facts:
        text = _words(fact)
        named = next((n for n in names if re.search(rf"\b{re.escape(n)}\b", text)), None)
        if named is None:
            continue
        found = _value_in(field, fact, named)
        if found is None:
            continue
        try:
            return check_value(field, found)
        except ContentInvalid:
            continue
    return None


def _value_in(field: ElicitationField, fact: str, named: str) -> FieldValue | None:
    if field.kind == "enum":
        said = _words(fact)
        chosen = [
            option
            for option in field.options
            if re.search(rf"\b{re.escape(_words(option))}\b", said)
            or re.search(rf"\b{re.escape(_words(field.option_title(option)))}\b", said)
        ]
        if not chosen:
            return None
        return chosen if field.multiple else chosen[0]
    if field.kind in ("number", "integer"):
        number = _NUMBER.search(fact)
        return number[0] if number else None
    if field.kind == "boolean":
        return not _SAYS_NO.search(fact)
    if field.format == "email":
        email = _EMAIL.search(fact)
        return email[0] if email else None
    if field.format in ("date", "date-time"):
        when = _DATE.search(fact)
        return when[0] if when else None
    spelled = r"[\s_\-]+".join(re.escape(word) for word in named.split())
    after = re.search(rf"\b{spelled}\b\s*(?:is|:|=)\s*(.+)", fact, re.I)
    return after[1].strip().rstrip(".;,") if after else fact.strip()


def _words(text: str) -> str:
    return " ".join(re.sub(r"[_\-]+", " ", text.lower()).split())
