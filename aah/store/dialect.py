"""Where SQLite's SQL and PostgreSQL's differ, said once: the store's SQL is written for SQLite.

Every statement of the store is written once, in SQLite's dialect, with two
kinds of marks where the engines part ways:

- JSON fields: ``JSON_TEXT(col, key)``, ``JSON_INT``, ``JSON_REAL``,
  ``JSON_BOOL`` and ``JSON_RAW`` (the value's JSON text) read one field of
  a JSON text column; SQLite's ``json_extract`` gives each of these (its
  result is typed already), PostgreSQL's ``->>``/``->`` on ``jsonb`` needs
  a cast per type.
- placeholders (``?`` and ``:name``), SQLite's planner hints (``INDEXED BY``),
  ``CROSS JOIN ... ON`` (a join SQLite keeps in order) and ``temp.`` tables,
  which ``postgres_sql`` rewrites for psycopg and PostgreSQL.

``render(sql, engine)`` gives the statement an engine runs; each result is
cached, so the rewrite costs a dictionary look-up per statement. A
``PgDatabase`` renders what it runs; SQLite code that uses the JSON marks
renders them with ``for_connection``.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Literal

Engine = Literal["sqlite", "postgresql"]

_JSON_MARK = re.compile(r"JSON_(TEXT|INT|REAL|BOOL|RAW)\(\s*([\w.]+)\s*,\s*(\w+)\s*\)")
# Single-quoted literals (with '' inside) are left as they are; so are the
# $$-quoted bodies of PostgreSQL functions.
_LITERAL = re.compile(r"('(?:[^']|'')*'|\$\$.*?\$\$)", re.S)
_NAMED = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")
_INDEXED_BY = re.compile(r"\s+INDEXED BY \w+", re.I)

_PG_CAST = {
    "TEXT": "({col}::jsonb ->> '{key}')",
    "INT": "(({col}::jsonb ->> '{key}')::bigint)",
    "REAL": "(({col}::jsonb ->> '{key}')::double precision)",
    "BOOL": "(({col}::jsonb ->> '{key}')::boolean)",
    "RAW": "(({col}::jsonb -> '{key}')::text)",
}


def _json_sqlite(match: re.Match[str]) -> str:
    return f"json_extract({match.group(2)}, '$.{match.group(3)}')"


def _json_postgres(match: re.Match[str]) -> str:
    kind, col, key = match.groups()
    return _PG_CAST[kind].format(col=col, key=key)


@lru_cache(maxsize=1024)
def render(sql: str, engine: Engine) -> str:
    """``sql`` (SQLite's dialect, with the marks above) as ``engine`` runs it."""
    if engine == "sqlite":
        return _JSON_MARK.sub(_json_sqlite, sql)
    return postgres_sql(_JSON_MARK.sub(_json_postgres, sql))


def for_connection(db: Any, sql: str) -> str:
    """``sql`` for ``db``: its JSON marks rendered for SQLite; as is for a ``PgDatabase``.

    A ``PgDatabase`` renders every statement it runs itself.
    """
    if getattr(db, "engine", "sqlite") == "postgresql":
        return sql
    return render(sql, "sqlite")


def postgres_sql(sql: str) -> str:
    """SQLite's ``sql`` with psycopg's placeholders and PostgreSQL's spellings.

    ``?`` becomes ``%s``, ``:name`` becomes ``%(name)s`` (a ``::`` cast is
    left alone), a literal ``%`` is doubled, and outside string literals
    ``INDEXED BY`` goes, ``CROSS JOIN`` becomes ``JOIN`` and ``temp.``
    becomes ``pg_temp.``.
    """
    parts = _LITERAL.split(sql)
    for index in range(0, len(parts), 2):  # the even parts are outside literals
        code = parts[index].replace("%", "%%")
        code = _INDEXED_BY.sub("", code)
        code = re.sub(r"\bCROSS JOIN\b", "JOIN", code, flags=re.I)
        code = re.sub(r"\btemp\.", "pg_temp.", code)
        code = _NAMED.sub(r"%(\1)s", code)
        parts[index] = code.replace("?", "%s")
    for index in range(1, len(parts), 2):
        parts[index] = parts[index].replace("%", "%%")
    return "".join(parts)
