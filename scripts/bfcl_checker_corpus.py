"""Build a corpus of BFCL model outputs and record the official checker's verdict on each.

Usage (the official checker lives in a throwaway venv, never in aah's)::

    python -m venv /tmp/bfcl-venv
    /tmp/bfcl-venv/bin/pip install --no-deps bfcl-eval==2026.3.23
    /tmp/bfcl-venv/bin/python scripts/bfcl_checker_corpus.py DATA_DIR OUT.jsonl

``DATA_DIR`` holds BFCL v4's files (``BFCL_v4_*.json`` and ``possible_answer/``).
For up to ``--per-category`` items of each AST category, the script writes
outputs of many kinds (right with and without the optional arguments, wrong
types, an int for a float, a bool for an int, missing or extra arguments,
string variants in case and punctuation, wrong values, reordered parallel
calls and lists, a dropped or repeated call, a dotted name written with
underscores, a nested key left out) and the official ``ast_checker``'s
verdict. Java and JavaScript items (half as many again) get their values as
source text in the language (``42L``, ``new int[]{1, 2}``,
``new HashMap<>() {{ put("k", v); }}``, ``[1, 2]``, ``{"k": 1}``) and
outputs of their own kinds: native JSON values, missing or wrong suffixes,
quoted strings, spaces around values, other collection spellings, variables,
empty and reordered collections, commas inside strings, dropped or extra
keys. One JSON object a line: ``id``, ``category``, ``kind``, ``calls``
(``[{name: arguments}]``) and ``official`` (true/false). Only ids and model
outputs are written: the items stay in the data directory.

The module that imports every model handler (``constants.model_config``) is
replaced by a stand-in before the checker loads: the checker only asks it
whether a model writes dots as underscores, and these outputs keep the dots.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import sys
import types
from pathlib import Path
from typing import Any

AST_CATEGORIES = (
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
)
# Java and JavaScript items: their values are source text in the language.
CODE_CATEGORIES = {"simple_java": "JAVA", "simple_javascript": "JAVASCRIPT"}
STAND_IN_MODEL = "aah-corpus"


def official_checker() -> Any:
    """The official ``ast_checker``, with the model-config module stood in for."""
    stand_in = types.ModuleType("bfcl_eval.constants.model_config")
    stand_in.MODEL_CONFIG_MAPPING = {  # type: ignore[attr-defined]
        STAND_IN_MODEL.replace("_", "/"): types.SimpleNamespace(underscore_to_dot=False)
    }
    sys.modules["bfcl_eval.constants.model_config"] = stand_in
    from bfcl_eval.constants.enums import Language
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker

    def check(functions: Any, calls: Any, answer: Any, category: str) -> bool:
        language = Language[CODE_CATEGORIES.get(category, "PYTHON")]
        try:
            result = ast_checker(functions, calls, answer, language, category, STAND_IN_MODEL)
        except Exception:  # the official checker crashing on an output is a "fail"
            return False
        return bool(result["valid"])

    return check


def right_call(answer: dict[str, Any], full: bool) -> dict[str, Any]:
    """One call from a possible answer: the first acceptable value of each argument."""
    name, arguments = next(iter(answer.items()))
    call = {}
    for key, values in arguments.items():
        given = [v for v in values if v != ""]
        if not given or (not full and "" in values):
            continue
        call[key] = _first_dicts(given[0])
    return {name: call}


def _first_dicts(value: Any) -> Any:
    # A nested object's acceptable values are lists per key too: take the first.
    if isinstance(value, dict):
        return {
            k: _first_dicts(next((x for x in v if x != ""), v[0])) if isinstance(v, list) else v
            for k, v in value.items()
            if not (isinstance(v, list) and v and all(x == "" for x in v))
        }
    if isinstance(value, list):
        return [_first_dicts(v) for v in value]
    return value


def variants(
    item: dict[str, Any], answer: list[Any], rng: random.Random
) -> list[tuple[str, list[Any]]]:
    """Model outputs of many kinds for one item."""
    full = [right_call(a, True) for a in answer]
    minimal = [right_call(a, False) for a in answer]
    found: list[tuple[str, list[Any]]] = [("right_full", full), ("right_minimal", minimal)]
    required = {f["name"]: set(f["parameters"].get("required", [])) for f in item["function"]}
    types_of = {
        f["name"]: {k: v.get("type") for k, v in f["parameters"].get("properties", {}).items()}
        for f in item["function"]
    }

    def mutate(kind: str, change: Any) -> None:
        calls = copy.deepcopy(full)
        index = rng.randrange(len(calls))
        name, args = next(iter(calls[index].items()))
        if change(name, args) is not False:
            found.append((kind, calls))

    def wrong_type(name: str, args: dict[str, Any]) -> bool:
        for key, value in args.items():
            if isinstance(value, bool):
                args[key] = str(value).lower()
                return True
            if isinstance(value, (int, float)):
                args[key] = str(value)
                return True
            if isinstance(value, str):
                args[key] = 7
                return True
        return False

    def int_for_float(name: str, args: dict[str, Any]) -> bool:
        for key, value in args.items():
            if types_of[name].get(key) == "float" and isinstance(value, float):
                if value.is_integer():
                    args[key] = int(value)
                    return True
        for key, value in args.items():
            if isinstance(value, int) and not isinstance(value, bool):
                args[key] = float(value)
                return True
        return False

    def bool_for_int(name: str, args: dict[str, Any]) -> bool:
        for key, value in args.items():
            if isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
                args[key] = bool(value)
                return True
        return False

    def missing_required(name: str, args: dict[str, Any]) -> bool:
        for key in list(args):
            if key in required.get(name, set()):
                del args[key]
                return True
        return False

    def missing_any(name: str, args: dict[str, Any]) -> bool:
        if not args:
            return False
        del args[rng.choice(sorted(args))]
        return True

    def extra_argument(name: str, args: dict[str, Any]) -> None:
        args["unexpected_flag"] = True

    def extra_schema_argument(name: str, args: dict[str, Any]) -> bool:
        unused = [k for k in types_of[name] if k not in args]
        if not unused:
            return False
        args[unused[0]] = "something"
        return True

    def string_variant(name: str, args: dict[str, Any]) -> bool:
        for key, value in args.items():
            if isinstance(value, str) and value:
                args[key] = rng.choice(
                    [value.upper(), value.replace(" ", "_"), f" {value}.", value.replace(" ", "-")]
                )
                return True
        return False

    def quote_variant(name: str, args: dict[str, Any]) -> bool:
        for key, value in args.items():
            if isinstance(value, str) and "'" in value:
                args[key] = value.replace("'", '"')
                return True
            if isinstance(value, str) and '"' in value:
                args[key] = value.replace('"', "'")
                return True
        return False

    def wrong_value(name: str, args: dict[str, Any]) -> bool:
        for key, value in args.items():
            if isinstance(value, str):
                args[key] = value + " zzz"
                return True
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                args[key] = value + 1
                return True
        return False

    def list_reordered(name: str, args: dict[str, Any]) -> bool:
        for key, value in args.items():
            if isinstance(value, list) and len(value) > 1 and value != value[::-1]:
                args[key] = value[::-1]
                return True
        return False

    def list_as_string(name: str, args: dict[str, Any]) -> bool:
        for key, value in args.items():
            if isinstance(value, list):
                args[key] = json.dumps(value)
                return True
        return False

    def nested_key_dropped(name: str, args: dict[str, Any]) -> bool:
        for value in args.values():
            if isinstance(value, dict) and value:
                del value[sorted(value)[0]]
                return True
            if isinstance(value, list) and value and isinstance(value[0], dict) and value[0]:
                del value[0][sorted(value[0])[0]]
                return True
        return False

    def nested_string_variant(name: str, args: dict[str, Any]) -> bool:
        for value in args.values():
            inner = value if isinstance(value, dict) else None
            if isinstance(value, list) and value and isinstance(value[0], dict):
                inner = value[0]
            for key, text in (inner or {}).items():
                if isinstance(text, str) and text:
                    inner[key] = text.upper() + "."  # type: ignore[index]
                    return True
        return False

    found += strict_variants(item, full, answer)
    for kind, change in [
        ("wrong_type", wrong_type),
        ("int_for_float", int_for_float),
        ("bool_for_int", bool_for_int),
        ("missing_required", missing_required),
        ("missing_any", missing_any),
        ("extra_argument", extra_argument),
        ("extra_schema_argument", extra_schema_argument),
        ("string_variant", string_variant),
        ("quote_variant", quote_variant),
        ("wrong_value", wrong_value),
        ("list_reordered", list_reordered),
        ("list_as_string", list_as_string),
        ("nested_key_dropped", nested_key_dropped),
        ("nested_string_variant", nested_string_variant),
    ]:
        mutate(kind, change)
    if len(full) > 1:
        found.append(("parallel_reversed", full[::-1]))
        partial = copy.deepcopy(full[::-1])
        name, args = next(iter(partial[0].items()))
        for key, value in args.items():
            if isinstance(value, str):
                args[key] = value.upper()
                found.append(("parallel_partial_case", partial))
                break
        found.append(("parallel_shuffled_minimal", rng.sample(minimal, len(minimal))))
        found.append(("call_dropped", full[:-1]))
    found.append(("call_repeated", full + full[:1]))
    found.append(("no_call", []))
    dotted = [c for c in full if "." in next(iter(c))]
    if dotted:
        found.append(
            (
                "dotted_as_underscore",
                [{k.replace(".", "_"): v for k, v in c.items()} for c in full],
            )
        )
    other = [
        f["name"] for f in item["function"] if f["name"] not in {next(iter(a)) for a in answer}
    ]
    if other:
        calls = copy.deepcopy(full)
        name, args = next(iter(calls[0].items()))
        calls[0] = {other[0]: args}
        found.append(("wrong_function", calls))
    return found


# Kinds where aah keeps its own reading against BFCL's (docs/researchers/bfcl.md),
# with the official verdict that aah does not follow: a row of such a kind with
# that verdict is "documented" and left out of the agreement figure.
DOCUMENTED = {
    # A number for a boolean (or a boolean for a number) inside an object or a
    # list: Python's ``0 == False`` lets BFCL pass it; a boolean is no number.
    "nested_bool_as_int": True,
    "list_bool_as_int": True,
    "nested_int_as_bool": True,
    "list_dict_bool_as_int": True,
    "list_dict_int_as_bool": True,
    # A JavaScript object with a trailing comma is a right object literal;
    # BFCL's pattern reads the last value with the comma in it.
    "dict_trailing_comma": False,
    # A Java or JavaScript collection followed by other text (``;``, a
    # suffix) is no value; BFCL's patterns find the collection at the start
    # of the text (or anywhere in it) and ignore the rest.
    **{f"{kind}_semicolon": True for kind in ("Array", "ArrayList", "HashMap", "array", "dict")},
    **{f"{kind}_suffixed": True for kind in ("Array", "ArrayList", "HashMap", "array", "dict")},
}
TUPLE = "__tuple__"
TUPLE_TYPE = '"type": "tuple"'


def encoded(value: Any) -> Any:
    """A value as the corpus writes it: a tuple (prompt mode) as ``{"__tuple__": [...]}``."""
    if isinstance(value, tuple):
        return {TUPLE: [encoded(v) for v in value]}
    if isinstance(value, list):
        return [encoded(v) for v in value]
    if isinstance(value, dict):
        return {k: encoded(v) for k, v in value.items()}
    return value


def decoded(value: Any) -> Any:
    """The inverse of ``encoded``."""
    if isinstance(value, dict):
        if set(value) == {TUPLE}:
            return tuple(decoded(v) for v in value[TUPLE])
        return {k: decoded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decoded(v) for v in value]
    return value


def strict_variants(
    item: dict[str, Any], full: list[Any], answer: list[Any]
) -> list[tuple[str, list[Any]]]:
    """Outputs that probe BFCL's exact rules: explicit ``""``, nested numbers, tuples, unicode.

    Each kind is made on the first call where it applies (calls in answer order).
    """
    props = {f["name"]: f["parameters"].get("properties", {}) for f in item["function"]}
    found: list[tuple[str, list[Any]]] = []
    made: set[str] = set()

    def emit(kind: str, index: int, key: str, value: Any) -> None:
        if kind in made:
            return
        made.add(kind)
        calls = copy.deepcopy(full)
        name = next(iter(calls[index]))
        calls[index][name][key] = value
        found.append((kind, calls))

    for index, call in enumerate(full):
        name, args = next(iter(call.items()))
        expected = answer[index][name]
        for key, options in expected.items():
            schema = props.get(name, {}).get(key, {})
            kind = schema.get("type", "any")
            items = (schema.get("items") or {}).get("type")
            given = [o for o in options if o != ""]
            optional = "" in options
            if optional and not given:
                emit("explicit_empty_only", index, key, "")
                emit("none_for_omitted_only", index, key, None)
                continue
            if key not in args:
                continue
            value = args[key]
            if optional:
                label = "dontcare" if isinstance(given[0], str) and kind != "string" else kind
                emit(f"explicit_empty_{label}", index, key, "")
                if None not in options:
                    emit("none_for_optional", index, key, None)
                if isinstance(value, list):
                    emit("empty_list_optional", index, key, [])
            if None in options:
                emit("none_where_allowed", index, key, None)
            if isinstance(value, list) and value:
                emit(f"tuple_for_{kind}", index, key, tuple(value))
                if items == "float" and all(isinstance(v, float) for v in value):
                    whole = all(v.is_integer() for v in value)
                    label = "optional" if optional else "required"
                    if whole:
                        emit(f"int_in_float_list_{label}", index, key, [int(v) for v in value])
                    emit(f"float_list_rounded_{label}", index, key, [float(int(v)) for v in value])
                if all(isinstance(v, bool) for v in value):
                    emit("list_bool_as_int", index, key, [int(v) for v in value])
                if all(isinstance(v, str) for v in value):
                    emit("list_upper", index, key, [v.upper() for v in value])
                    emit("list_nbsp", index, key, [v.replace(" ", "\u00a0") for v in value])
                if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
                    emit(f"list_int_as_float_{kind}", index, key, [float(v) for v in value])
                if all(isinstance(v, list) for v in value):
                    emit("tuple_in_list", index, key, [tuple(v) for v in value])
                if all(isinstance(v, dict) for v in value):
                    first, *rest = value
                    emit_nested(emit, index, key, first, rest, given[0][0], "list_dict")
            if isinstance(value, dict):
                emit_nested(emit, index, key, value, None, given[0], "nested")
            if isinstance(value, str) and value:
                emit("string_nbsp", index, key, value.replace(" ", "\u00a0"))
                emit("string_tab", index, key, value.replace(" ", "\t"))
                emit("string_newline", index, key, value + "\n")
                emit("string_curly_quote", index, key, value.replace("'", "\u2019"))
                emit("string_en_dash", index, key, value.replace("-", "\u2013"))
                emit("string_accented", index, key, value.replace("e", "\u00e9", 1))
                emit("string_casefold", index, key, value.swapcase())
                emit(f"bool_for_{kind}", index, key, True)
            if isinstance(value, bool):
                emit("int_for_boolean", index, key, int(value))
                emit("string_for_boolean", index, key, str(value))
            elif isinstance(value, float):
                emit("string_for_float", index, key, str(value))
            elif isinstance(value, int):
                emit("string_for_integer", index, key, str(value))
                emit("bool_for_integer", index, key, bool(value))
    return found


def emit_nested(
    emit: Any, index: int, key: str, value: dict[str, Any], rest: Any, options: Any, where: str
) -> None:
    """Changes inside an object (or the first object of a list of them)."""

    def put(kind: str, inner: dict[str, Any]) -> None:
        emit(f"{where}_{kind}", index, key, inner if rest is None else [inner, *rest])

    put("extra_key", {**value, "zz_extra": 1})
    if isinstance(options, dict):
        for inner_key, inner_options in options.items():
            if isinstance(inner_options, list) and "" in inner_options:
                put("explicit_empty", {**value, inner_key: ""})
                put("none_for_optional", {**value, inner_key: None})
    for inner_key, inner in value.items():
        if isinstance(inner, bool):
            put("bool_as_int", {**value, inner_key: int(inner)})
            put("bool_as_string", {**value, inner_key: str(inner).lower()})
        elif isinstance(inner, float):
            if inner.is_integer():
                put("float_as_int", {**value, inner_key: int(inner)})
            put("float_as_string", {**value, inner_key: str(inner)})
        elif isinstance(inner, int):
            put("int_as_float", {**value, inner_key: float(inner)})
            if inner in (0, 1):
                put("int_as_bool", {**value, inner_key: bool(inner)})
        elif isinstance(inner, str) and inner:
            put("string_upper", {**value, inner_key: inner.upper()})
            put("string_nbsp", {**value, inner_key: inner.replace(" ", "\u00a0")})
        elif isinstance(inner, list) and inner:
            put("list_tuple", {**value, inner_key: tuple(inner)})
            if all(isinstance(v, str) for v in inner):
                put("list_upper", {**value, inner_key: [v.upper() for v in inner]})
            if all(isinstance(v, float) and v.is_integer() for v in inner):
                put("list_float_as_int", {**value, inner_key: [int(v) for v in inner]})
        elif isinstance(inner, dict) and inner:
            put("dict_extra_key", {**value, inner_key: {**inner, "zz": 1}})


# Java's element type words for ``new T[]{...}`` literals.
JAVA_ELEMENT = {"integer": "int", "long": "long", "String": "String", "boolean": "boolean"}


def java_literal(value: Any, items: str | None = None) -> str:
    """A value as a Java literal inside a collection."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, int) and items == "long":
        return f"{value}L"
    return str(value)


def java_text(value: Any, kind: str, items: str | None = None) -> str:
    """A possible answer's value written as Java source text for a parameter of ``kind``."""
    if isinstance(value, str) and kind not in ("String", "any", "char"):
        return value  # a variable's name
    if kind == "boolean":
        return "true" if value else "false"
    if kind == "long":
        return f"{int(value)}L"
    if kind == "float":
        return f"{float(value)}f"
    if kind == "double":
        return str(float(value))
    if kind == "Array":
        element = JAVA_ELEMENT.get(items or "", "Object")
        return f"new {element}[]{{{', '.join(java_literal(v, items) for v in value)}}}"
    if kind == "ArrayList":
        return f"new ArrayList<>(Arrays.asList({', '.join(java_literal(v, items) for v in value)}))"
    if kind == "HashMap":
        puts = "".join(f"put({json.dumps(k)}, {java_literal(v)}); " for k, v in value.items())
        return f"new HashMap<String, Object>() {{{{ {puts}}}}}"
    if isinstance(value, str):
        return value
    return java_literal(value, items)


def js_literal(value: Any) -> str:
    """A value as a JavaScript literal inside a collection."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "[" + ", ".join(js_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {js_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, str):
        return json.dumps(value)
    return str(value)


def js_text(value: Any, kind: str, items: str | None = None) -> str:
    """A possible answer's value written as JavaScript source text for a parameter of ``kind``."""
    if isinstance(value, str) and kind not in ("String", "any"):
        return value  # a variable's name
    if kind == "float":
        return str(float(value))
    if kind == "Bigint":
        return f"{int(value)}n"
    if isinstance(value, str):
        return value
    return js_literal(value)


def code_variants(
    item: dict[str, Any], answer: list[Any], category: str, rng: random.Random
) -> list[tuple[str, list[Any]]]:
    """Model outputs of many kinds for one Java or JavaScript item: values as source text."""
    java = category == "simple_java"
    write = java_text if java else js_text
    (function,) = item["function"]
    props = function["parameters"].get("properties", {})
    required = set(function["parameters"].get("required", []))
    kinds = {k: (v.get("type"), (v.get("items") or {}).get("type")) for k, v in props.items()}
    raw = right_call(answer[0], True)
    name, values = next(iter(raw.items()))
    minimal = next(iter(right_call(answer[0], False).values()))

    def text(key: str, value: Any) -> str:
        kind, items = kinds.get(key, ("any", None))
        return write(value, kind, items)

    full = {key: text(key, value) for key, value in values.items()}
    found: list[tuple[str, list[Any]]] = [
        ("right_full", [{name: full}]),
        ("right_minimal", [{name: {k: text(k, v) for k, v in minimal.items()}}]),
        ("native_values", [{name: values}]),
        ("no_call", []),
        ("call_repeated", [{name: full}, {name: full}]),
    ]

    def changed(kind: str, key: str, new: Any) -> None:
        if kind not in made:  # one output of a kind per item: the parameters are shuffled
            made.add(kind)
            found.append((kind, [{name: {**full, key: new}}]))

    made: set[str] = set()
    for key, value in rng.sample(sorted(values.items()), len(values)):
        kind, items = kinds.get(key, ("any", None))
        given = full[key]
        changed(f"{kind}_padded", key, f"  {given} ")
        changed(f"{kind}_null", key, "null")
        changed(f"{kind}_json_null", key, None)
        if kind in ("String", "any", "char") and isinstance(value, str) and value:
            changed(f"{kind}_upper", key, given.upper())
            changed(f"{kind}_punctuated", key, f" {given}.")
            changed(f"{kind}_quoted", key, json.dumps(given))
            changed(f"{kind}_wrong", key, given + " zzz")
        if isinstance(value, bool):
            changed("boolean_capitalised", key, given.capitalize())
            changed("boolean_flipped", key, "false" if value else "true")
            changed("boolean_native", key, value)
        elif isinstance(value, (int, float)):
            changed(f"{kind}_negative", key, write(-value, kind, items))
            changed(f"{kind}_with_d", key, f"{value}d")
            changed(f"{kind}_with_n", key, f"{int(value)}n")
            changed(f"{kind}_exponent", key, f"{float(value):e}")
            changed(f"{kind}_native", key, value)
            changed(f"{kind}_plain", key, str(value))
            changed(f"{kind}_wrong", key, write(value + 1, kind, items))
            changed(f"{kind}_as_int", key, str(int(value)))
            changed(f"{kind}_as_float", key, str(float(value)))
            changed(f"{kind}_with_f", key, f"{value}f")
            changed(f"{kind}_with_L", key, f"{int(value)}L")
        elif isinstance(value, list):
            changed(f"{kind}_reversed", key, write(value[::-1], kind, items))
            changed(f"{kind}_variable", key, "someVariable")
            changed(f"{kind}_native", key, value)
            if java:
                adds = "".join(f"add({java_literal(v, items)}); " for v in value)
                changed(f"{kind}_add_style", key, f"new ArrayList<>() {{{{ {adds}}}}}")
                element = JAVA_ELEMENT.get(items or "", "Object")
                inner = ", ".join(java_literal(v, items) for v in value)
                changed(f"{kind}_array_spaced", key, f"new {element}[] {{ {inner} }}")
                changed(f"{kind}_as_list_of", key, f"List.of({inner})")
                changed(f"{kind}_typed_list", key, given.replace("<>", "<Object>"))
                changed(f"{kind}_boxed", key, given.replace("new int[]", "new Integer[]"))
                changed(f"{kind}_as_list", key, f"Arrays.asList({inner})")
                changed(f"{kind}_braces_only", key, f"{{{inner}}}")
                changed(f"{kind}_no_spaces", key, given.replace(", ", ","))
                changed(f"{kind}_empty", key, write([], kind, items))
                longs = ", ".join(f"{v}L" if isinstance(v, int) else java_literal(v) for v in value)
                changed(f"{kind}_long_items", key, f"new long[]{{{longs}}}")
                single = ", ".join(
                    f"'{v}'" if isinstance(v, str) else java_literal(v) for v in value
                )
                changed(f"{kind}_single_quotes", key, f"new ArrayList<>(Arrays.asList({single}))")
            else:
                inner = ", ".join(js_literal(v) for v in value)
                changed(f"{kind}_new_array", key, f"new Array({inner})")
                changed(f"{kind}_single_quotes", key, given.replace('"', "'"))
                changed(f"{kind}_no_spaces", key, given.replace(", ", ","))
                changed(f"{kind}_nested", key, f"[{given}]")
                bare = ", ".join(v if isinstance(v, str) else js_literal(v) for v in value)
                changed(f"{kind}_bare_items", key, f"[{bare}]")
                changed(f"{kind}_empty", key, "[]")
                changed(f"{kind}_empty_new", key, "new Array()")
                changed(
                    f"{kind}_of_objects",
                    key,
                    "[" + ", ".join(f'{{"v": {js_literal(v)}}}' for v in value) + "]",
                )
                changed(f"{kind}_trailing_comma", key, given[:-1] + ", ]")
            if value and all(isinstance(v, str) for v in value):
                commas = [f"{v}, x" for v in value]
                changed(f"{kind}_comma_inside", key, write(commas, kind, items))
                changed(f"{kind}_upper_items", key, write([v.upper() for v in value], kind, items))
        elif isinstance(value, dict):
            changed(f"{kind}_variable", key, "someVariable")
            changed(f"{kind}_native", key, value)
            if value:
                first = sorted(value)[0]
                dropped = {k: v for k, v in value.items() if k != first}
                changed(f"{kind}_key_dropped", key, write(dropped, kind, items))
                upper = {k: v.upper() if isinstance(v, str) else v for k, v in value.items()}
                changed(f"{kind}_upper_values", key, write(upper, kind, items))
            if java:
                changed(f"{kind}_extra_key", key, write({**value, "zz": 1}, kind, items))
                changed(f"{kind}_empty", key, "new HashMap<>()")
                changed(f"{kind}_typed", key, given.replace("<String, Object>", "<>"))
                changed(
                    f"{kind}_single_quoted_keys",
                    key,
                    given.replace('put("', "put('").replace('", ', "', "),
                )
                changed(f"{kind}_map_interface", key, given.replace("new HashMap", "new Map"))
                pairs = ", ".join(f"{json.dumps(k)}, {java_literal(v)}" for k, v in value.items())
                changed(f"{kind}_map_of", key, f"new HashMap<>(Map.of({pairs}))")
                changed(f"{kind}_tight", key, given.replace("{{ ", "{{").replace("; }}", ";}}"))
            else:
                changed(f"{kind}_single_quotes", key, given.replace('"', "'"))
                bare = ", ".join(f"{k}: {js_literal(v)}" for k, v in value.items())
                changed(f"{kind}_bare_keys", key, "{" + bare + "}")
                loose = ", ".join(
                    f"{json.dumps(k)}: {v if isinstance(v, str) else js_literal(v)}"
                    for k, v in value.items()
                )
                changed(f"{kind}_bare_values", key, "{" + loose + "}")
                changed(f"{kind}_extra_key", key, write({**value, "zz": 1}, kind, items))
                changed(f"{kind}_empty", key, "{}")
                changed(
                    f"{kind}_nested_object", key, write({**value, "inner": {"a": 1}}, kind, items)
                )
                changed(
                    f"{kind}_single_quoted_keys",
                    key,
                    "{" + ", ".join(f"'{k}': {js_literal(v)}" for k, v in value.items()) + "}",
                )
        elif isinstance(value, str):
            changed(f"{kind}_variable_upper", key, value.upper())
            changed(f"{kind}_variable_other", key, value + "2")
            changed(f"{kind}_variable_quoted", key, json.dumps(value))
    for key, options in answer[0][name].items():
        kind, items = kinds.get(key, ("any", None))
        if "" in options:
            given = [o for o in options if o != ""]
            label = "dontcare" if given and isinstance(given[0], str) else kind
            changed(f"{label}_explicit_empty", key, "")
            changed(f"{label}_explicit_quoted_empty", key, '""')
    for key, given in full.items():
        kind, items = kinds.get(key, ("any", None))
        value = values[key]
        if kind == "dict" and given.startswith("{") and len(given) > 2:
            changed("dict_trailing_comma", key, given[:-1].rstrip() + ",}")
        if kind in ("Array", "ArrayList", "HashMap", "array", "dict") and given[-1:] in "}])":
            changed(f"{kind}_semicolon", key, given + ";")
            changed(f"{kind}_suffixed", key, given + "L")
        if kind in ("array", "Array", "ArrayList") and isinstance(value, list) and value:
            if all(isinstance(v, float) and v.is_integer() for v in value):
                changed(f"{kind}_floats_as_ints", key, write([int(v) for v in value], kind, items))
            if all(isinstance(v, str) for v in value):
                changed(f"{kind}_nbsp_items", key, given.replace(" ", "\u00a0"))
        if kind in ("String", "any") and isinstance(value, str) and " " in value:
            changed(f"{kind}_nbsp", key, given.replace(" ", "\u00a0"))
            changed(f"{kind}_tab", key, given.replace(" ", "\t"))
    for key in full:
        if key in required:
            found.append(
                ("missing_required", [{name: {k: v for k, v in full.items() if k != key}}])
            )
            break
    found.append(("extra_argument", [{name: {**full, "unexpected_flag": "true"}}]))
    unused = [k for k in props if k not in full]
    if unused:
        found.append(("extra_schema_argument", [{name: {**full, unused[0]: "something"}}]))
    if full:
        dropped = rng.choice(sorted(full))
        found.append(("missing_any", [{name: {k: v for k, v in full.items() if k != dropped}}]))
    return found


def random_outputs(
    item: dict[str, Any], answer: list[Any], category: str, rng: random.Random
) -> list[tuple[str, list[Any]]]:
    """Out-of-sample outputs: a right answer (any acceptable values) changed at random places.

    Independent of ``variants``: each output picks, for every argument, any
    acceptable value or leaves an optional one out, then makes 0-3 random
    changes anywhere in the values (types, case, spacing, ``""``, ``None``,
    tuples, dropped or added keys and items).
    """
    code = category in CODE_CATEGORIES
    found: list[tuple[str, list[Any]]] = []
    for _ in range(3):
        calls = []
        for call in answer:
            name, arguments = next(iter(call.items()))
            args = {}
            for key, options in arguments.items():
                if not isinstance(options, list) or not options:
                    continue
                choice = rng.choice(options)
                if choice == "" and rng.random() < 0.8:
                    continue  # left out (or, now and then, written as "")
                args[key] = _first_dicts(copy.deepcopy(choice))
            calls.append({name: args})
        if code:
            (function,) = item["function"]
            props = function["parameters"].get("properties", {})
            write = java_text if category == "simple_java" else js_text
            for args in (next(iter(c.values())) for c in calls):
                for key in args:
                    schema = props.get(key, {})
                    kind, items = schema.get("type", "any"), (schema.get("items") or {}).get("type")
                    try:
                        args[key] = write(args[key], kind, items) if args[key] != "" else ""
                    except (TypeError, ValueError, AttributeError):
                        args[key] = str(args[key])
        changes = rng.choice([0, 1, 1, 2, 3])
        kinds = []
        for _ in range(changes):
            if not calls:
                break
            call = rng.choice(calls)
            name, args = next(iter(call.items()))
            kinds.append(_random_change(args, rng, code))
        if rng.random() < 0.1 and len(calls) > 1:
            rng.shuffle(calls)
        found.append(("random:" + ("+".join(kinds) or "right"), calls))
    return found


def _random_change(args: dict[str, Any], rng: random.Random, code: bool) -> str:
    """One random change somewhere in ``args``; returns what it did."""
    if not args or rng.random() < 0.1:
        change = rng.choice(["drop", "add"])
        if change == "drop" and args:
            del args[rng.choice(sorted(args))]
            return "drop_argument"
        args[rng.choice(["extra", "unit", "format"])] = rng.choice(["", "x", 1, True, None])
        return "add_argument"
    key = rng.choice(sorted(args))
    holder: Any = args
    where = key
    # Walk down into objects and lists now and then.
    while isinstance(holder[where], (dict, list)) and holder[where] and rng.random() < 0.6:
        inner = holder[where]
        holder, where = (
            inner,
            rng.choice(sorted(inner) if isinstance(inner, dict) else range(len(inner))),
        )
    value = holder[where]
    if code and isinstance(value, str):
        options = [
            "",
            '""',
            value.upper(),
            value.lower(),
            f" {value} ",
            value + ";",
            value + ",",
            value.replace('"', "'"),
            value.replace(", ", ","),
            value.rstrip("Lfn"),
            value + "L",
            value + "f",
            value[:-1] + ",}" if value.endswith("}") else value + "}",
            value.replace(" ", "\u00a0"),
            "null",
            "true",
            "1",
        ]
    elif isinstance(value, bool):
        options = [int(value), str(value), str(value).lower(), not value, "", None]
    elif isinstance(value, int):
        options = [float(value), str(value), value + 1, bool(value % 2), "", None, -value]
    elif isinstance(value, float):
        options = [int(value), str(value), value + 0.5, round(value), "", None]
    elif isinstance(value, str):
        options = [
            value.upper(),
            value.swapcase(),
            f" {value}. ",
            value.replace(" ", "_"),
            "",
            None,
            value.replace(" ", "\u00a0"),
            value + " x",
            value.replace(" ", "\t"),
            "None",
            value.replace("'", '"'),
            5,
        ]
    elif isinstance(value, list):
        options = [
            tuple(value),
            value[::-1],
            value[1:],
            [],
            "",
            None,
            [str(v) if not isinstance(v, str) else v.upper() for v in value],
        ]
    elif isinstance(value, dict):
        dropped = dict(list(value.items())[1:])
        options = [dropped, {**value, "zz": 1}, "", None, {}, json.dumps(value)]
    else:
        options = ["", "None", 0, False]
    new = rng.choice(options)
    holder[where] = new
    return f"{type(value).__name__}->{type(new).__name__}"


def compare(path: Path, data: Path) -> None:
    """Print aah's agreement with the official verdicts in ``path`` (run with aah importable)."""
    from collections import Counter

    from aah.benchmark.bfcl import AST_CATEGORIES, Call, bfcl_source, check_calls, load_bfcl

    tasks = {t.id: t for t in load_bfcl(bfcl_source(data), AST_CATEGORIES)}
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    differ: Counter[str] = Counter()
    documented = 0
    agree = 0
    for record in records:
        calls = [Call(n, a) for c in decoded(record["calls"]) for n, a in c.items()]
        ok = check_calls(tasks[record["id"]], calls).ok
        if record.get("documented"):
            documented += 1
        if ok == record["official"]:
            agree += 1
        elif not record.get("documented"):
            differ[f"{record['kind']} official={record['official']}"] += 1
    total = len(records)
    print(f"{agree}/{total} agree ({100 * agree / total:.2f}%)")
    kept = total - documented
    agreed_kept = kept - sum(differ.values())
    print(
        f"{agreed_kept}/{kept} agree outside the {documented} documented rows "
        f"({100 * agreed_kept / kept:.2f}%)"
    )
    for kind, count in differ.most_common(40):
        print(f"  {count:4} {kind}")


def main() -> None:
    """Write the corpus with the official verdicts (or compare aah's checker with them)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--per-category", type=int, default=40)
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument(
        "--random", action="store_true", help="write the out-of-sample set of random changes"
    )
    parser.add_argument(
        "--compare", action="store_true", help="compare aah's checker with the verdicts in OUT"
    )
    options = parser.parse_args()
    if options.compare:
        compare(options.out, options.data)
        return
    check = official_checker()
    rng = random.Random(options.seed)
    lines = []
    for category in (*AST_CATEGORIES, *CODE_CATEGORIES):
        items = [
            json.loads(line)
            for line in (options.data / f"BFCL_v4_{category}.json").read_text().splitlines()
        ]
        answers = {
            json.loads(line)["id"]: json.loads(line)["ground_truth"]
            for line in (options.data / "possible_answer" / f"BFCL_v4_{category}.json")
            .read_text()
            .splitlines()
        }
        # More Java and JavaScript items: their types vary from item to item.
        count = (
            options.per_category * 3 // 2 if category in CODE_CATEGORIES else options.per_category
        )
        chosen = rng.sample(items, min(count, len(items)))
        # Every item with a tuple parameter: the only ones a tuple is right for.
        chosen += [i for i in items if i not in chosen and TUPLE_TYPE in json.dumps(i)]
        for item in sorted(chosen, key=lambda i: i["id"]):
            answer = answers[item["id"]]
            if options.random:
                made = random_outputs(item, answer, category, rng)
            elif category in CODE_CATEGORIES:
                made = code_variants(item, answer, category, rng)
            else:
                made = variants(item, answer, rng)
            for kind, calls in made:
                verdict = check(item["function"], calls, answer, category)
                record: dict[str, Any] = {
                    "id": item["id"],
                    "category": category,
                    "kind": kind,
                    "calls": encoded(calls),
                    "official": verdict,
                }
                if DOCUMENTED.get(kind) is verdict:
                    record["documented"] = True
                lines.append(json.dumps(record, ensure_ascii=False))
    options.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(lines)} outputs written to {options.out}")


if __name__ == "__main__":
    main()
