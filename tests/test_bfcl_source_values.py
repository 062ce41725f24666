"""Java and JavaScript items: values written as source text, read back as BFCL reads them.

The corpus of texts holds what the official ``bfcl-eval`` 2026.3.23 type
converters made of each (recorded once from them): the documented forms,
other spellings a model writes, and broken ones, which stay text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aah.benchmark.bfcl import BfclTask, Call, check_calls, load_bfcl, read_value
from aah.errors import AahError

# (language, text, declared type, element type, value as read)
READINGS: list[tuple[str, str, str, str | None, Any]] = [
    ('java', 'new ArrayList<>() {{ add(1); foo(2); add(3); }}', 'ArrayList', 'integer', [1, 3]),
    ('java', 'new ArrayList<>(Arrays.asList(1, 2L, "a", \'b\', 2.5f, 3.5, null, x))', 'ArrayList', None, [1, 2, 'a', "'b'", 2.5, 3.5, 'null', 'x']),
    ('java', 'new Object[]{1, 2L, "a", \'b\', 2.5f, 3.5, null, x}', 'Array', None, [1, 2, 'a', "'b'", 2.5, 3.5, 'null', 'x']),
    ('java', 'new String[]{"a", b}', 'Array', 'String', ['"a"', 'b']),
    ('java', 'new ArrayList<>(Arrays.asList("a", b, \'c\'))', 'ArrayList', 'String', ['a', '', 'c']),
    ('java', 'new ArrayList<>(Arrays.asList(1, 2, x))', 'ArrayList', 'integer', [1, 2, 'x']),
    ('java', 'new ArrayList<>(Arrays.asList(1L, 2))', 'ArrayList', 'long', [1, '2']),
    ('java', 'new HashMap<>() {{ put("k", new int[]{1}); }}', 'HashMap', None, {}),
    ('java', 'new ArrayList<>(Arrays.asList("a, b", "c"))', 'ArrayList', 'String', ['', '', 'c']),
    ('java', 'new String[]{"a, b", "c"}', 'Array', 'String', ['"a', 'b"', '"c"']),
    ('java', 'new Object[]{"a, b", "c"}', 'Array', None, ['"a', 'b"', 'c']),
    ('java', 'new HashMap<>() {{ put("k", "x, y"); put("j", "a;b"); }}', 'HashMap', None, {'k': 'x, y', 'j': 'a;b'}),
    ('java', 'new HashMap<>() {{ put("k", "v") ; }}', 'HashMap', None, {'k': 'v'}),
    ('java', 'new HashMap<>(){{put("k","v");}}', 'HashMap', None, {'k': 'v'}),
    ('java', 'new HashMap<>() {{ put( "k" , 5 ); }}', 'HashMap', None, {}),
    ('java', 'new int[]{1, 2,}', 'Array', 'integer', [1, 2]),
    ('java', 'new ArrayList<>(Arrays.asList())', 'ArrayList', 'integer', 'new ArrayList<>(Arrays.asList())'),
    ('java', 'new ArrayList<Integer>(Arrays.asList(1))', 'ArrayList', 'integer', [1]),
    ('java', 'new ArrayList<>() {{ add("a"); }}', 'ArrayList', 'String', ['a']),
    ('java', 'new ArrayList<>() {{ add("a"); }}', 'ArrayList', None, ['a']),
    ('java', 'new String[]{}', 'Array', 'String', []),
    ('java', 'new int[0]', 'Array', 'integer', 'new int[0]'),
    ('java', 'new int[]{1, 2}', 'Array', None, [1, 2]),
    ('java', '  new int[]{1}', 'Array', 'integer', [1]),
    ('java', '3.', 'double', None, '3.'),
    ('java', '.5', 'double', None, '.5'),
    ('java', '1e3', 'double', None, 1000.0),
    ('java', '5', 'double', None, 5.0),
    ('java', '5', 'float', None, '5'),
    ('java', '5F', 'float', None, 5.0),
    ('java', '5.0d', 'double', None, '5.0d'),
    ('java', '+5', 'integer', None, '+5'),
    ('java', '2147483648', 'integer', None, 2147483648),
    ('java', "'a'", 'char', None, "'a'"),
    ('java', 'TRUE', 'boolean', None, 'TRUE'),
    ('java', '5l', 'long', None, 5),
    ('java', 'new HashMap<String, Integer>() {{ put("a", 1); put("b", 2L); }}', 'HashMap', None, {'a': 1, 'b': 2}),
    ('java', 'new HashMap<>() {{ put("a", true); put("b", "t"); }}', 'HashMap', None, {'a': True, 'b': 't'}),
    ('java', 'new HashMap<>()', 'HashMap', None, {}),
    ('java', 'new HashMap<>() {}', 'HashMap', None, {}),
    ('java', 'new HashMap<>(Map.of("a", 1))', 'HashMap', None, 'new HashMap<>(Map.of("a", 1))'),
    ('java', "new ArrayList<>() {{ add('a'); add('b'); }}", 'ArrayList', 'char', ['a', 'b']),
    ('java', 'new long[]{1L, 2, 3L}', 'Array', 'long', [1, '2', 3]),
    ('java', 'new boolean[]{true, false}', 'Array', 'boolean', [True, False]),
    ('java', 'new double[]{1.5, 2}', 'Array', 'double', [1.5, 2.0]),
    ('java', 'new ArrayList<String>(Arrays.asList("x"))', 'ArrayList', 'String', ['x']),
    ('java', 'new ArrayList<>(Arrays.asList("x", "y"))', 'ArrayList', 'any', ['"x"', '"y"']),
    ('javascript', '[1, 2.5, "a", \'b\', true, null, x, undefined, 3n]', 'array', None, [1, 2.5, 'a', 'b', True, 'null', 'x', 'undefined', '3n']),
    ('javascript', '[1, , 2]', 'array', None, [1, '', 2]),
    ('javascript', '["a", b]', 'array', 'String', ['a', 'b']),
    ('javascript', '[{a: 1}]', 'array', 'dict', [{'a': 1}]),
    ('javascript', '[1, 2]', 'array', 'integer', [1, 2]),
    ('javascript', '[1.5, 2]', 'array', 'integer', ['1.5', 2]),
    ('javascript', '{"a": "x, y"}', 'dict', None, {'a': 'x, y'}),
    ('javascript', "'abc'", 'String', None, 'abc'),
    ('javascript', '"abc', 'String', None, '"abc'),
    ('javascript', '["a", 1, true]', 'array', 'String', ['a', '1', 'true']),
    ('javascript', '[1, "2"]', 'array', 'integer', [1, '"2"']),
    ('javascript', '[[1, 2], [3]]', 'array', 'array', [[1, 2], [3]]),
    ('javascript', '[[1, 2], [3]]', 'array', None, [[1, 2], [3]]),
    ('javascript', 'new Array(1, 2)', 'array', 'integer', [1, 2]),
    ('javascript', '{}', 'dict', None, {}),
    ('javascript', '[]', 'array', 'String', []),
    ('javascript', '[ ]', 'array', None, []),
    ('javascript', '{"a": "x" }', 'dict', None, {'a': 'x'}),
    ('javascript', '{"a":1, "b":\'y\'}', 'dict', None, {'a': 1, 'b': 'y'}),
    ('javascript', '{"a": null, "b": true}', 'dict', None, {'a': 'null', 'b': True}),
    ('javascript', '5.', 'float', None, '5.'),
    ('javascript', '.5', 'float', None, '.5'),
    ('javascript', '+5', 'integer', None, '+5'),
    ('javascript', '-0', 'integer', None, 0),
    ('javascript', 'TRUE', 'Boolean', None, 'TRUE'),
    ('javascript', "'a'", 'String', None, 'a'),
    ('javascript', '"a"', 'any', None, '"a"'),
    ('javascript', '[1.5, 2]', 'array', 'float', [1.5, 2.0]),
    ('javascript', '["a, b", "c"]', 'array', None, ['"a', 'b"', 'c']),
    ('javascript', '{a: [1, 2], b: "c"}', 'dict', None, {'a': [1, 2], 'b': 'c'}),
    ('javascript', 'new Array()', 'array', None, []),
    ('javascript', '10n', 'Bigint', None, 10),
    ('javascript', '5', 'float', None, 5.0),
    ('javascript', '1e3', 'float', None, '1e3'),
    ('javascript', '[true, false]', 'array', 'Boolean', [True, False]),
    ('javascript', "{'k': 'v'}", 'dict', None, {'k': 'v'}),
    ('javascript', '{k: v}', 'dict', None, {'k': 'v'}),
    ('javascript', '{"a": 1, "b": 2}', 'dict', None, {'a': 1, 'b': 2}),
    ('javascript', '{ "a" : 1 }', 'dict', None, {'a': 1}),
]  # fmt: skip


@pytest.mark.parametrize(("language", "text", "declared", "items", "value"), READINGS)
def test_source_text_is_read_as_bfcl_reads_it(
    language: str, text: str, declared: str, items: str | None, value: Any
) -> None:
    read = read_value(text, declared, items, language)
    assert read == value
    assert type(read) is type(value)


JAVA_ITEM = {
    "id": "simple_java_0",
    "question": [[{"role": "user", "content": "Update sort 5 of subject 42, ids 1 and 2."}]],
    "function": [
        {
            "name": "Controller.updateSort",
            "description": "Update the sort order.",
            "parameters": {
                "type": "dict",
                "properties": {
                    "id": {"type": "long", "description": "The subject."},
                    "sort": {"type": "integer", "description": "The order."},
                    "ids": {"type": "ArrayList", "items": {"type": "integer"}},
                    "params": {"type": "HashMap", "description": "Options."},
                    "name": {"type": "String"},
                },
                "required": ["id", "sort"],
            },
        }
    ],
}
JAVA_ANSWER = {
    "id": "simple_java_0",
    "ground_truth": [
        {
            "Controller.updateSort": {
                "id": [42],
                "sort": [5],
                "ids": [[1, 2], ""],
                "params": [{"limit": [50]}, ""],
                "name": ["", "Top"],
            }
        }
    ],
}
JS_ITEM = {
    "id": "simple_javascript_0",
    "question": [[{"role": "user", "content": "Rotate [1, 2] by 30."}]],
    "function": [
        {
            "name": "rotate",
            "description": "Rotate.",
            "parameters": {
                "type": "dict",
                "properties": {
                    "points": {"type": "array", "items": {"type": "float"}},
                    "angle": {"type": "float"},
                    "options": {"type": "dict", "properties": {"deg": {"type": "Boolean"}}},
                    "label": {"type": "String"},
                },
                "required": ["points", "angle"],
            },
        }
    ],
}
JS_ANSWER = {
    "id": "simple_javascript_0",
    "ground_truth": [
        {
            "rotate": {
                "points": [[1.0, 2.0]],
                "angle": [30.0],
                "options": [{"deg": [True]}, ""],
                "label": ["", "spin"],
            }
        }
    ],
}


def write_items(folder: Path, items: dict[str, tuple[dict[str, Any], dict[str, Any]]]) -> Path:
    (folder / "possible_answer").mkdir(parents=True)
    for category, (item, answer) in items.items():
        (folder / f"BFCL_v4_{category}.json").write_text(json.dumps(item) + "\n")
        (folder / "possible_answer" / f"BFCL_v4_{category}.json").write_text(
            json.dumps(answer) + "\n"
        )
    return folder


@pytest.fixture
def tasks(tmp_path: Path) -> dict[str, BfclTask]:
    folder = write_items(
        tmp_path,
        {"simple_java": (JAVA_ITEM, JAVA_ANSWER), "simple_javascript": (JS_ITEM, JS_ANSWER)},
    )
    loaded = load_bfcl(folder, ["simple_java", "simple_javascript"])
    return {task.category: task for task in loaded}


def test_java_and_javascript_functions_are_offered_as_source_text(
    tasks: dict[str, BfclTask],
) -> None:
    (tool,) = tasks["simple_java"].functions
    properties = tool.parameters["properties"]
    assert {p["type"] for p in properties.values()} == {"string"}
    assert "Java long" in properties["id"]["description"]
    assert "Java ArrayList of integer" in properties["ids"]["description"]
    assert tool.parameters["required"] == ["id", "sort"]
    assert tasks["simple_java"].declared_types == {
        "Controller.updateSort": {
            "id": ("long", None),
            "sort": ("integer", None),
            "ids": ("ArrayList", "integer"),
            "params": ("HashMap", None),
            "name": ("String", None),
        }
    }
    assert tasks["simple_javascript"].source_language == "javascript"


JAVA_CALLS = [
    ({"id": "42L", "sort": "5"}, True),
    ({"id": "42l", "sort": "5", "name": "top"}, True),
    ({"id": "42", "sort": "5"}, False),  # a long needs its L
    ({"id": 42, "sort": 5}, False),  # values are source text, not JSON numbers
    ({"id": "42L", "sort": "5", "ids": "new ArrayList<>(Arrays.asList(1, 2))"}, True),
    ({"id": "42L", "sort": "5", "ids": "new ArrayList<>() {{ add(1); add(2); }}"}, True),
    ({"id": "42L", "sort": "5", "ids": "new ArrayList<>(Arrays.asList(2, 1))"}, False),
    ({"id": "42L", "sort": "5", "ids": "[1, 2]"}, False),
    ({"id": "42L", "sort": "5", "params": 'new HashMap<>() {{ put("limit", 50); }}'}, True),
    ({"id": "42L", "sort": "5", "params": 'new HashMap<>(Map.of("limit", 50))'}, False),
    ({"id": "42L", "sort": "5", "name": '"Top"'}, False),  # a String is the text itself
    ({"id": "42L", "sort": "5.0"}, False),
]


@pytest.mark.parametrize(("arguments", "ok"), JAVA_CALLS)
def test_java_calls(tasks: dict[str, BfclTask], arguments: dict[str, Any], ok: bool) -> None:
    verdict = check_calls(tasks["simple_java"], [Call("Controller.updateSort", arguments)])
    assert verdict.ok is ok, verdict.reason


JS_CALLS = [
    ({"points": "[1.0, 2.0]", "angle": "30.0"}, True),
    ({"points": "new Array(1, 2)", "angle": "30"}, True),
    ({"points": " [1, 2] ", "angle": "30", "label": "'spin'"}, True),
    ({"points": "[2, 1]", "angle": "30"}, False),
    ({"points": "[1, 2]", "angle": "3e1"}, False),  # no exponent
    ({"points": [1.0, 2.0], "angle": 30.0}, False),
    ({"points": "[1, 2]", "angle": "30", "options": "{deg: true}"}, True),
    ({"points": "[1, 2]", "angle": "30", "options": "{'deg': false}"}, False),
]


@pytest.mark.parametrize(("arguments", "ok"), JS_CALLS)
def test_javascript_calls(tasks: dict[str, BfclTask], arguments: dict[str, Any], ok: bool) -> None:
    verdict = check_calls(tasks["simple_javascript"], [Call("rotate", arguments)])
    assert verdict.ok is ok, verdict.reason


def test_an_unknown_java_type_is_a_one_line_error(tmp_path: Path) -> None:
    item = json.loads(json.dumps(JAVA_ITEM))
    item["function"][0]["parameters"]["properties"]["id"]["type"] = "Widget"
    folder = write_items(tmp_path, {"simple_java": (item, JAVA_ANSWER)})
    with pytest.raises(AahError, match="unknown Java type 'Widget'") as error:
        load_bfcl(folder, ["simple_java"])
    assert "\n" not in str(error.value)


def test_multilingual_java_and_javascript_items_keep_their_category(tmp_path: Path) -> None:
    records = [
        {**JAVA_ITEM, "id": "java_0_vi", "subset": "simple", "test_category": "java"},
        {**JS_ITEM, "id": "simple_javascript_0_th", "subset": "simple", "test_category": "simple"},
    ]
    records[0]["ground_truth"] = JAVA_ANSWER["ground_truth"]
    records[1]["ground_truth"] = JS_ANSWER["ground_truth"]
    path = tmp_path / "bfcl_single_turn_vi.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n")
    loaded = load_bfcl(path, ["simple_java", "simple_javascript", "simple_python"])
    assert [(t.id, t.category) for t in loaded] == [
        ("java_0_vi", "simple_java"),
        ("simple_javascript_0_th", "simple_javascript"),
    ]
