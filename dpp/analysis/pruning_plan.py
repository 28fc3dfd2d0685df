"""The pruning plan of a query given as SQL text: what the analysis needs of a table, and what
it answers for each table reference (read whole and why, or the static and dynamic filters
that decide which partitions it reads). :mod:`dpp.frontends.sql.planner` fills it in; the session and the
decision read it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional

from dpp.core.domain import DataType, TupleDomain
from dpp.core.refusals import Refusal

if TYPE_CHECKING:   # the plan is read on the hook's road too, which never loads sqlglot
    from sqlglot import exp

__all__ = ["ColumnInfo", "TableInfo", "Resolver", "DynamicFilterSpec", "TableRefPlan",
           "PruningPlan", "KEY_ALIAS", "REF", "short", "first_line"]

REF = "dpp_ref"          # meta of a table reference in the parsed query: its ref_id
KEY_ALIAS = "dpp_key"    # the one column a build query selects


@dataclass(frozen=True)
class ColumnInfo:
    name: str
    type: Optional[DataType]


@dataclass(frozen=True)
class TableInfo:
    """What the analyzer needs of a table: its columns (types where known) and, for tables
    that can be pruned, the partition columns (empty for dimensions)."""

    name: str
    columns: dict[str, Optional[DataType]]
    partition_columns: tuple[str, ...]
    # a table dpp reads itself although it has no partition column (registered, or a catalog
    # table dpp can list): probed too, its joins on data columns filter files and row groups
    data_only: bool = False
    # an unpartitioned table's size as Spark estimates it (None: not measured):
    # dpp.analysis.rules.is_fact decides whether it is a fact
    size_bytes: Optional[int] = None


Resolver = Callable[[str], Optional[TableInfo]]


@dataclass
class DynamicFilterSpec:
    filter_id: str
    probe_column: str
    build_query: str
    build_column: str
    build_tables: tuple[str, ...]
    reason_kind: str                  # "inner" | "semi" | "outer_non_preserved"
    build_type: Optional[DataType] = None
    origin: Optional[str] = None      # the path of a condition placed from an outer query


@dataclass
class TableRefPlan:
    ref_id: str
    table: str
    alias: Optional[str]
    pruning: bool
    reason: Optional[Refusal]
    static: TupleDomain
    dynamic: list[DynamicFilterSpec] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # a table with no partition column (TableInfo.data_only): a reference only when a join
    # gives it a dynamic filter; its static predicates are Spark's alone
    data_only: bool = False
    # the notes that refuse a key, typed (their words are in ``notes``, in order)
    refusals: list[Refusal] = field(default_factory=list)

    def refuse(self, refusal: Refusal) -> None:
        """A key of this reference not used: noted (once) in words, and kept typed."""
        if refusal.words() not in self.notes:
            self.notes.append(refusal.words())
        if refusal not in self.refusals:
            self.refusals.append(refusal)


@dataclass
class PruningPlan:
    sql: str
    refs: list[TableRefPlan]
    parse_error: Optional[str] = None
    notes: list[str] = field(default_factory=list)
    _tree: Any = field(default=None, repr=False)

    def tables(self) -> dict[str, list[TableRefPlan]]:
        out: dict[str, list[TableRefPlan]] = {}
        for r in self.refs:
            out.setdefault(r.table, []).append(r)
        return out

    def explain(self) -> str:
        lines = ["== dpp pruning plan =="]
        if self.parse_error:
            lines.append(f"not analysed, runs unpruned: {self.parse_error}")
            return "\n".join(lines)
        if not self.refs:
            lines.append("no partitioned table in the query: nothing to prune")
        for r in self.refs:
            name = r.table + (f" AS {r.alias}" if r.alias and r.alias != r.table else "")
            if not r.pruning:
                lines.append(f"[{r.ref_id}] {name}: NOT pruned — {r.reason}")
            else:
                lines.append(f"[{r.ref_id}] {name}: pruned")
            if not r.static.is_all():
                lines.append(f"    static: {r.static.describe()}")
            for f in r.dynamic:
                lines.append(f"    dynamic {f.filter_id} ({f.reason_kind}): {r.table}.{f.probe_column}"
                             f" IN values of {f.build_column}")
                lines.append(f"        build side: {f.build_query}")
                if f.origin:
                    lines.append(f"        {f.origin}")
            for n in r.notes:
                lines.append(f"    note: {n}")
        for n in self.notes:
            lines.append(f"note: {n}")
        return "\n".join(lines)


def short(c: exp.Expression, width: int = 90) -> str:
    """A conjunct as a note quotes it: notes are read in a report, so a long one is cut."""
    text = c.sql(dialect="spark")
    return text if len(text) <= width else text[:width - 1] + "…"


def first_line(exc: Exception) -> str:
    """Why sqlglot refused something, short enough for a note."""
    return str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
