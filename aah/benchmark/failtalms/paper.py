"""The Fail-TaLMs paper's published tables, and computed figures set beside them.

``aah report --compare paper`` reads the paper's Tables 1–2 from a JSON file
(``PAPER_TABLES``, shipped with aah, or another with ``--paper-table``) and,
for each reported cell whose model is in it, shows the computed figure with
its Wilson interval, the published one, their difference and whether the
published value lies inside the computed interval.

File format (values as the paper prints them; null where it prints none)::

    {"source": str,            # the paper, its tables, and where the values were read
     "url": str,               # optional
     "unit": "percent" | "fraction",   # optional, default "percent"
     "rows": [{"model": str, "setting": str, "aah": bool, "table": str,
               "pass_rate": float | null, "awareness": float | null,
               "unexpected": float | null, "skip": float | null,
               "interaction": float | null}],
     "aliases": {str: str}}    # optional: another spelling of a model -> the row's model

``unit`` says how the values are printed: "percent" (0 to 100, to one
decimal) or "fraction" (0 to 1, to two decimals, as the Fail-TaLMs paper
prints them). A published value counts as inside the computed interval when
it lies within half a printed step of it, since the paper's own figure was
rounded to that step. Other top-level keys (a status, rows the report does not
compare) are kept for readers and ignored here.

``setting`` is any spelling ``canonical_setting`` knows ("Original",
"Under-specified", "perfect" ...). A run's model matches a row's when both
read the same with case, punctuation and a provider prefix ("openai/") left
out, directly or through ``aliases`` (the shipped file maps the folder names
of the paper's published outputs, so an imported ``published:gpt_4o_auto_eval``
run meets GPT-4o); ``--as`` names the paper's model for runs whose model is
spelled otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from aah.benchmark.failtalms.settings import SETTINGS, canonical_setting
from aah.errors import AahError
from aah.scoring import CellMetrics, Proportion

PAPER_TABLES = Path(__file__).resolve().parent / "paper_tables.json"
# The paper's metrics, as CellMetrics names them, in its column order.
PAPER_METRICS = ("pass_rate", "awareness", "unexpected", "skip", "interaction")
# Per unit: the largest value, and half the step the values are printed to (as a fraction).
UNITS = {"percent": (100.0, 0.0005), "fraction": (1.0, 0.005)}


class PaperRow(NamedTuple):
    """One row of the paper's tables: a model in a setting, with or without Aah.

    Attributes:
        values: The published fraction (0 to 1) per metric of ``PAPER_METRICS``;
            None where not printed.
    """

    model: str
    setting: str
    aah: bool
    table: str
    values: dict[str, float | None]


class PaperTables(NamedTuple):
    """The published rows and where they come from.

    Attributes:
        rounding: Half the step the values are printed to, as a fraction.
    """

    source: str
    url: str
    rows: list[PaperRow]
    rounding: float = UNITS["percent"][1]
    # ``model_key`` of another spelling -> the row's model (read only).
    aliases: Mapping[str, str] = MappingProxyType({})


class Comparison(NamedTuple):
    """A computed figure beside the published one.

    Attributes:
        computed: The run's figure with its Wilson interval (fractions).
        published: The paper's value, as a fraction.
        difference: computed - published, in percentage points; None without a value.
        inside: Whether the published value lies inside the computed interval.
    """

    run: str | None
    model: str
    setting: str
    aah: bool
    metric: str
    table: str
    computed: Proportion
    published: float
    difference: float | None
    inside: bool | None


def model_key(name: str) -> str:
    """``openai/GPT-4o-2024`` -> ``gpt4o2024``: what two spellings of a model share."""
    return "".join(ch for ch in name.rsplit("/", 1)[-1].lower() if ch.isalnum())


def load_paper_tables(path: Path | None = None) -> PaperTables:
    """The published tables from ``path`` (default ``PAPER_TABLES``).

    Raises:
        AahError: The file cannot be read, is not the format above, or holds no rows.
    """
    path = path or PAPER_TABLES
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AahError(f"cannot read the paper's tables {path} ({exc.strerror})") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AahError(f"{path} is not JSON ({exc}): fix it or pass another --paper-table") from exc
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        raise AahError(
            f"{path} needs an object with a 'rows' list: see aah.benchmark.failtalms.paper"
        )
    unit = data.get("unit", "percent")
    if unit not in UNITS:
        raise AahError(f'{path}: unknown unit {unit!r}: use "percent" or "fraction"')
    largest, rounding = UNITS[unit]
    rows = [
        _row(path, number, row, unit, largest) for number, row in enumerate(data["rows"], start=1)
    ]
    if not rows:
        raise AahError(
            f"{path} holds none of the paper's values yet ({data.get('status', 'no rows')}): "
            "pass --paper-table FILE with the paper's Tables 1-2 in the format of "
            "aah.benchmark.failtalms.paper"
        )
    aliases = _aliases(path, data.get("aliases", {}), {row.model for row in rows})
    return PaperTables(
        str(data.get("source", "")), str(data.get("url", "")), rows, rounding, aliases
    )


def _aliases(path: Path, aliases: Any, models: set[str]) -> dict[str, str]:
    if not isinstance(aliases, dict):
        raise AahError(f"{path}: 'aliases' must map other spellings to the rows' models")
    keyed: dict[str, str] = {}
    for spelling, model in aliases.items():
        if model not in models:
            raise AahError(f"{path}: alias {spelling!r} names no model of the rows ({model!r})")
        keyed[model_key(spelling)] = model
    return keyed


def _row(path: Path, number: int, row: Any, unit: str, largest: float) -> PaperRow:
    where = f"{path} row {number}"
    if not isinstance(row, dict):
        raise AahError(f"{where} is not an object: fix that row")
    model, setting, aah = row.get("model"), row.get("setting"), row.get("aah")
    if not isinstance(model, str) or not model.strip():
        raise AahError(f"{where} needs a 'model' name: fix that row")
    if not isinstance(setting, str) or canonical_setting(setting) not in SETTINGS:
        raise AahError(f"{where}: unknown setting {setting!r}: use Original, Underspecified, ...")
    if not isinstance(aah, bool):
        raise AahError(f"{where} needs 'aah': true or false: fix that row")
    values: dict[str, float | None] = {}
    for metric in PAPER_METRICS:
        value = row.get(metric)
        if value is not None and (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not 0 <= value <= largest
        ):
            raise AahError(f"{where}: {metric} must be a {unit} from 0 to {largest:g} or null")
        values[metric] = None if value is None else float(value) / largest
    return PaperRow(model, str(canonical_setting(setting)), aah, str(row.get("table", "")), values)


def parse_model_map(entries: Sequence[str], runs: Sequence[str]) -> dict[str, str]:
    """``--as`` values as the paper's model per run: ``MODEL`` (every run) or ``RUN=MODEL``.

    Raises:
        AahError: An entry names no run of the report, or is empty.
    """
    mapped: dict[str, str] = {}
    for entry in entries:
        run, sep, model = entry.partition("=")
        if not sep:
            mapped.update({name: entry.strip() for name in runs})
            continue
        if run not in runs:
            raise AahError(f"--as {entry!r}: no run {run!r} in this report: use RUN=MODEL")
        if not model.strip():
            raise AahError(f"--as {entry!r}: name the paper's model after '='")
        mapped[run] = model.strip()
    if any(not model for model in mapped.values()):
        raise AahError("--as needs the paper's model name, e.g. --as gpt-4o")
    return mapped


def compare_with_paper(
    cells: Sequence[CellMetrics], tables: PaperTables, model_of: Mapping[str, str]
) -> list[Comparison]:
    """Each reported figure that the paper also reports, beside it.

    Args:
        cells: The report's cells.
        tables: The published rows.
        model_of: The paper's model per run (``--as``); other runs use their own model.
    """
    published = {(model_key(r.model), r.setting, r.aah): r for r in tables.rows}
    compared: list[Comparison] = []
    for cell in cells:
        model = model_of.get(cell.run or "") or cell.model
        if model is None or cell.aah is None or cell.setting is None:
            continue
        model = tables.aliases.get(model_key(model), model)
        row = published.get((model_key(model), cell.setting, cell.aah))
        if row is None:
            continue
        for metric in PAPER_METRICS:
            computed = getattr(cell, metric)
            value = row.values[metric]
            if computed is None or value is None:
                continue
            compared.append(_compare(cell, row, metric, computed, value, tables.rounding))
    return compared


def _compare(
    cell: CellMetrics,
    row: PaperRow,
    metric: str,
    computed: Proportion,
    published: float,
    rounding: float,
) -> Comparison:
    if computed.value is None or computed.low is None or computed.high is None:
        difference, inside = None, None
    else:
        difference = 100 * (computed.value - published)
        inside = computed.low - rounding <= published <= computed.high + rounding
    return Comparison(
        cell.run, row.model, row.setting, row.aah, metric, row.table, computed, published,
        difference, inside,
    )  # fmt: skip


def unmatched_runs(
    cells: Sequence[CellMetrics], compared: Sequence[Comparison], model_of: Mapping[str, str]
) -> list[str]:
    """Runs of the report with no figure to compare, with their model (for a note)."""
    matched = {c.run for c in compared}
    runs: dict[str, str] = {}
    for cell in cells:
        if cell.run is not None and cell.run not in matched:
            runs[cell.run] = model_of.get(cell.run) or cell.model or "unknown model"
    return [f"{run} ({model})" for run, model in runs.items()]


def comparison_to_json(comparison: Comparison) -> dict[str, Any]:
    """One comparison as JSON; the computed figure as ``{"k", "n", "value", "low", "high"}``."""
    data = comparison._asdict()
    data["computed"] = comparison.computed._asdict()
    return data
