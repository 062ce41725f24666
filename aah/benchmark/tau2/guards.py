"""Arguments refused before τ²'s code sees them: those whose one C step would never end.

The fence stops a call that runs past its time bound by raising inside it,
which lands between Python steps; a single step of C code holds the
interpreter until it ends. τ²'s ``calculate`` tool (airline, retail) hands
its expression to ``eval`` after checking its characters, so
``9**9**9**9`` is one integer power that would run for ever (and fill
memory). These guards refuse such an argument with a line saying why,
before the call: the fence's :func:`~aah.benchmark.fence.argument_refusal`
(nesting, integers too long to print), and for ``calculate`` an expression
longer than :data:`MAX_EXPRESSION_CHARS`, or one that could make an integer
past :data:`MAX_INTEGER_BITS` on the way (sizes bounded from its syntax tree,
never computed: ``2**100000 * 2**100000 * ...`` is refused too), or that
raises to a power that is not a plain number.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from aah.benchmark.fence import argument_refusal

MAX_EXPRESSION_CHARS = 10_000
# The most bits an integer an expression makes on the way may have: one
# multiplication of two such takes milliseconds.
MAX_INTEGER_BITS = 1_000_000
_CALCULATE = "calculate"


def call_refusal(name: str, arguments: Mapping[str, Any]) -> str | None:
    """Why a call's arguments may not reach τ²'s code, or None when they may."""
    refused = argument_refusal(dict(arguments))
    if refused is not None:
        return f"not run: {refused}"
    expression = arguments.get("expression")
    if name == _CALCULATE and isinstance(expression, str):
        return expression_refusal(expression)
    return None


def expression_refusal(expression: str) -> str | None:
    """Why ``calculate`` may not evaluate ``expression``, or None when it may."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        return f"not run: the expression is longer than {MAX_EXPRESSION_CHARS:,} characters"
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # τ²'s own eval refuses it the same way, at once
    try:
        _bits(tree.body)
    except _TooLarge as exc:
        return f"not run: {exc}"
    return None


class _TooLarge(Exception):
    """An integer the expression makes could pass :data:`MAX_INTEGER_BITS`."""


def _bits(node: ast.expr) -> int:
    """An upper bound on the bits of the integer ``node`` makes (0 for a float).

    Raises:
        _TooLarge: some integer on the way could pass :data:`MAX_INTEGER_BITS`.
    """
    if isinstance(node, ast.Constant):
        return node.value.bit_length() if type(node.value) is int else 0
    if isinstance(node, ast.UnaryOp):
        return _bits(node.operand)
    if not isinstance(node, ast.BinOp):
        return 0  # nothing else passes τ²'s character check but a tuple
    left, right = _bits(node.left), _bits(node.right)
    if isinstance(node.op, ast.Pow):
        exponent = _number(node.right)
        if exponent is None:
            raise _TooLarge("a power in the expression is not to a plain number")
        bits = max(left, 1) * int(exponent) if isinstance(exponent, int) and exponent > 0 else 0
    elif isinstance(node.op, ast.Mult):
        bits = left + right
    elif isinstance(node.op, ast.Div):
        bits = 0  # a float
    else:
        bits = max(left, right) + 1
    if bits > MAX_INTEGER_BITS:
        raise _TooLarge(f"an integer in the expression could pass {MAX_INTEGER_BITS:,} bits")
    return bits


def _number(node: ast.expr) -> int | float | None:
    """The number a literal (or a signed literal) stands for, else None."""
    sign = 1
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd | ast.USub):
        sign = -sign if isinstance(node.op, ast.USub) else sign
        node = node.operand
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        value = node.value
        assert isinstance(value, int | float)
        return sign * value
    return None
