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

import heapq
from dataclasses import dataclass
from typing import Any, Optional

from dpp.core.domain import Domain

__all__ = ["MAX_IN_VALUES", "MAX_ROW_VALUES", "RowTerms", "domain_predicate", "row_set",
           "row_terms"]

# up to this many values an IN list is exact and cheap (Spark compares each in turn and pushes
# them into Parquet one by one); past it, ranges: an IN list of hundreds of values is a hash
# lookup per row, slower than the join it feeds (TPC-DS q22: 365 dates over 11.7M rows)
MAX_IN_VALUES = 10
# a filter whose rows meet a costly join below the one it stands for (``Prune.rows_pay``) is
# stated exactly up to this many values: Spark tests them as a hash set (``InSet``) per row,
# far cheaper than shuffling and joining the row
MAX_ROW_VALUES = 100_000
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
    if len(runs) > MAX_RANGES:
        # merging the closest two runs until MAX_RANGES remain keeps the MAX_RANGES - 1
        # widest gaps (of equal gaps, the later ones): found at once, not run by run (that
        # was quadratic: 4 s for TPC-DS q85's 9,548 addresses)
        gaps = [(pos(runs[i + 1][0]) - pos(runs[i][1]), i) for i in range(len(runs) - 1)]
        cuts = sorted(i for _gap, i in heapq.nlargest(MAX_RANGES - 1, gaps))
        merged, start = [], 0
        for i in cuts:
            merged.append([runs[start][0], runs[i][1]])
            start = i + 1
        merged.append([runs[start][0], runs[-1][1]])
        runs = merged
    return [(a, b) for a, b in runs]


def _range_text(quoted: str, lo: Any, hi: Any, type_name: str) -> str:
    if lo is None:
        return f"{quoted} <= {_sql_literal(hi, type_name)}"
    if hi is None:
        return f"{quoted} >= {_sql_literal(lo, type_name)}"
    if lo == hi:
        return f"{quoted} = {_sql_literal(lo, type_name)}"
    return (f"{quoted} BETWEEN {_sql_literal(lo, type_name)} AND "
            f"{_sql_literal(hi, type_name)}")


@dataclass(frozen=True)
class RowTerms:
    """What a data-column filter's values say about a row, in the column's own type: no row
    passes (``values == ()`` and no ranges), it is one of ``values``, or it lies in one of
    ``ranges`` (inclusive). Every front end renders these terms: a Spark Column on the
    SQL-text path, Catalyst expressions in the optimizer hook's rule."""

    type_name: str
    values: Optional[tuple[Any, ...]] = None
    # inclusive; None: that side unbounded (one side at most: a comparison's filter)
    ranges: tuple[tuple[Any, Any], ...] = ()
    # tested per row by Spark only, never pushed into the scan: a long set (a filter built
    # for the rows it removes) would cost Parquet's reader a test of every value against
    # every row group; the row groups get the domain's ranges as terms of their own
    per_row: bool = False

    def text(self, column: str) -> str:
        """The predicate's SQL text, as reports show it."""
        quoted = "`" + column.replace("`", "``") + "`"
        if self.values is not None:
            if not self.values:
                return "FALSE"
            lits = ", ".join(_sql_literal(v, self.type_name)
                             for v in self.values[:MAX_IN_VALUES])
            if len(self.values) > MAX_IN_VALUES:   # a report line, not the whole set
                lits += f", ... {len(self.values):,} values"
            return f"{quoted} IN ({lits})"
        texts = [_range_text(quoted, lo, hi, self.type_name) for lo, hi in self.ranges]
        return texts[0] if len(texts) == 1 else "(" + " OR ".join(texts) + ")"

    def to_wire(self) -> dict[str, Any]:
        """The terms as the hook's rule reads them: values as text in the column's type
        (a range's unbounded side: null)."""
        def txt(v: Any) -> Optional[str]:
            if v is None:
                return None
            return v.isoformat() if self.type_name == "date" else str(v)
        if self.values is not None:
            out: dict[str, Any] = {"type": self.type_name, "in": [txt(v) for v in self.values]}
            if self.per_row:
                out["perRow"] = True
            return out
        return {"type": self.type_name, "ranges": [[txt(a), txt(b)] for a, b in self.ranges]}


def row_set(domain: Domain) -> Optional[RowTerms]:
    """Every value of an exact ``domain`` too long for :func:`row_terms`' IN list (more than
    :data:`MAX_IN_VALUES`, at most :data:`MAX_ROW_VALUES`), as a set Spark tests per row and
    never pushes into the scan (``per_row``); None otherwise. For a filter built for the rows
    it removes: the ranges of ``row_terms`` serve the row groups, this the rows."""
    type_name = domain.type.simple_string()
    if type_name not in _TYPES or domain.value_set.everything or not domain.is_exact():
        return None
    values = domain.discrete_values()
    if values is None or not MAX_IN_VALUES < len(values) <= MAX_ROW_VALUES:
        return None
    return RowTerms(type_name, values=tuple(values), per_row=True)


def row_terms(domain: Domain) -> Optional[RowTerms]:
    """The terms every row ``domain`` may match passes (NULLs excluded): the values themselves
    when few, else runs of them (or the domain's bounds); None when the domain constrains
    nothing usable (all values, an unsupported type, an unbounded range)."""
    type_name = domain.type.simple_string()
    if type_name not in _TYPES or domain.value_set.everything:
        return None
    values = domain.discrete_values() if domain.is_exact() else None
    if values is not None and (not values or len(values) <= MAX_IN_VALUES):
        return RowTerms(type_name, values=tuple(values))
    runs = _runs(values, type_name) if values is not None else None
    if runs is None:
        bounds = domain.bounds()
        if bounds is None:
            return RowTerms(type_name, values=())
        if bounds[0] is None and bounds[1] is None:
            return None
        runs = [bounds]   # one side may be open: a comparison's (``Domain.compared``)
    return RowTerms(type_name, ranges=tuple(runs))


def domain_predicate(F: Any, column: str, domain: Domain
                     ) -> Optional[tuple[Any, str]]:
    """(Spark Column, its SQL text for the report) of :func:`row_terms`, or None."""
    terms = row_terms(domain)
    if terms is None:
        return None
    type_name = terms.type_name
    col = F.col("`" + column.replace("`", "``") + "`")

    def lit(v: Any) -> Any:
        return F.lit(v) if type_name in ("string", "date") else F.lit(int(v)).cast(type_name)

    if terms.values is not None:
        pred = col.isin(*[lit(v) for v in terms.values]) if terms.values else F.lit(False)
        return pred, terms.text(column)
    pred = None
    for lo, hi in terms.ranges:
        if lo is None:
            term = col <= lit(hi)
        elif hi is None:
            term = col >= lit(lo)
        else:
            term = col == lit(lo) if lo == hi else (col >= lit(lo)) & (col <= lit(hi))
        pred = term if pred is None else (pred | term)
    return pred, terms.text(column)
