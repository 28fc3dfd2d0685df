"""A data-column filter's values as a predicate on the pruned relation, for Parquet's row groups.

The split loader tests each kept file's footer against a dynamic filter on a data column and
skips the files it rules out. Inside a kept file the same test is worth making per row group,
and Spark's Parquet reader already makes it for any predicate pushed into the scan: so the
handoff adds ``col IN (values)`` for a few values, else ``col BETWEEN a AND b OR ...`` over
the runs of consecutive values (at most :data:`MAX_RANGES`, the closest merged), or the
domain's bounds for a range or bloom domain, to the relation it hands Spark. A row outside the filter's values cannot
match the join, which is why skipping its file was sound; filtering the row is sound for the
same reason. Only types whose Spark literals are unambiguous are used (integers, dates,
strings): a timestamp or decimal literal's meaning depends on session settings and casts.
"""
from __future__ import annotations

from typing import Any, Optional

from dpp.core.domain import Domain

__all__ = ["MAX_IN_VALUES", "domain_predicate"]

# up to this many values an IN list is exact and cheap (Spark compares each in turn and pushes
# them into Parquet one by one); past it, ranges: an IN list of hundreds of values is a hash
# lookup per row, slower than the join it feeds (TPC-DS q22: 365 dates over 11.7M rows)
MAX_IN_VALUES = 10
# ranges kept apart; past this the closest ones are merged (a superset: still sound)
MAX_RANGES = 8
_TYPES = {"tinyint", "smallint", "int", "bigint", "date", "string"}
_STEP = {"date": lambda v: v.toordinal()}


def _sql_literal(v: Any, type_name: str) -> str:
    if type_name == "string":
        return "'" + str(v).replace("\\", "\\\\").replace("'", "\\'") + "'"
    if type_name == "date":
        return f"DATE '{v.isoformat()}'"
    return str(int(v))


def _runs(values: list[Any], type_name: str) -> Optional[list[tuple[Any, Any]]]:
    """Sorted integer or date values as runs of consecutive values, the closest runs merged
    until at most MAX_RANGES remain; None for types without a successor (strings)."""
    if type_name == "string":
        return None
    pos = _STEP.get(type_name, int)
    runs: list[list[Any]] = []
    for v in sorted(values, key=pos):
        if runs and pos(v) - pos(runs[-1][1]) <= 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    while len(runs) > MAX_RANGES:
        gaps = [pos(runs[i + 1][0]) - pos(runs[i][1]) for i in range(len(runs) - 1)]
        i = gaps.index(min(gaps))
        runs[i:i + 2] = [[runs[i][0], runs[i + 1][1]]]
    return [(a, b) for a, b in runs]


def domain_predicate(F: Any, column: str, domain: Domain
                     ) -> Optional[tuple[Any, str]]:
    """(Spark Column, its SQL text for the report) that every row ``domain`` may match on
    ``column`` passes, NULLs excluded: the values themselves when few, else ranges of them
    (or the domain's bounds); None when the domain constrains nothing usable (all values, an
    unsupported type, an unbounded range)."""
    type_name = domain.type.simple_string()
    if type_name not in _TYPES or domain.value_set.everything:
        return None
    quoted = "`" + column.replace("`", "``") + "`"
    col = F.col(quoted)

    def lit(v: Any) -> Any:
        return F.lit(v) if type_name in ("string", "date") else F.lit(int(v)).cast(type_name)

    values = domain.discrete_values() if domain.is_exact() else None
    if values is not None and not values:
        return F.lit(False), "FALSE"
    if values is not None and len(values) <= MAX_IN_VALUES:
        text = f"{quoted} IN ({', '.join(_sql_literal(v, type_name) for v in values)})"
        return col.isin(*[lit(v) for v in values]), text
    runs = _runs(values, type_name) if values is not None else None
    if runs is None:
        bounds = domain.bounds()
        if bounds is None:
            return F.lit(False), "FALSE"
        if bounds[0] is None or bounds[1] is None:
            return None
        runs = [bounds]
    pred, texts = None, []
    for lo, hi in runs:
        if lo == hi:
            term, text = col == lit(lo), f"{quoted} = {_sql_literal(lo, type_name)}"
        else:
            term = (col >= lit(lo)) & (col <= lit(hi))
            text = (f"{quoted} BETWEEN {_sql_literal(lo, type_name)} AND "
                    f"{_sql_literal(hi, type_name)}")
        pred = term if pred is None else (pred | term)
        texts.append(text)
    return pred, " OR ".join(texts) if len(texts) == 1 else "(" + " OR ".join(texts) + ")"
