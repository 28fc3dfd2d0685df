"""The 99 TPC-DS queries, taken from DuckDB's TPC-DS extension at run time, in Spark SQL.

The query texts are not copied into this repository: ``SELECT * FROM tpcds_queries()`` hands
them out in DuckDB's dialect, and sqlglot translates them (``read='duckdb', write='spark'``).
Where translation alone gives Spark SQL that means something else than DuckDB's query, a
rewrite rule in :data:`REWRITES` fixes it on the syntax tree (each rule says why).
:func:`check_queries` reports which queries Spark cannot run, with the reason.
"""
from __future__ import annotations

import functools
import logging
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Optional, Protocol, Sequence

import sqlglot
from sqlglot import exp

log = logging.getLogger(__name__)

Rule = Callable[[exp.Expression], exp.Expression]


@dataclass(frozen=True)
class Query:
    """One TPC-DS query: its number, DuckDB text and Spark text (None if translation failed)."""

    number: int
    duckdb_sql: str
    spark_sql: Optional[str]
    rewrites: tuple[str, ...] = ()
    error: Optional[str] = None      # why translation failed

    @property
    def name(self) -> str:
        return f"q{self.number}"

    @property
    def limit(self) -> Optional[int]:
        """The outermost LIMIT, used to compare results whose ties the limit cuts."""
        try:
            tree = sqlglot.parse_one(self.duckdb_sql, read="duckdb")
        except sqlglot.errors.ParseError:
            return None
        lim = tree.args.get("limit")
        if isinstance(lim, exp.Limit) and isinstance(lim.expression, exp.Literal):
            return int(lim.expression.this)
        return None

    def tables(self) -> list[str]:
        """Base tables the query reads (CTE names excluded), sorted."""
        return referenced_tables(self.duckdb_sql)


# ------------------------------------------------------------------------- rewrite rules

def _division_as_try_divide(tree: exp.Expression) -> exp.Expression:
    """``a / b`` → ``try_divide(a, b)``.

    DuckDB answers NULL for a division by zero; Spark 4 runs in ANSI mode by default and fails
    the query with DIVIDE_BY_ZERO instead. ``try_divide`` is Spark's NULL-on-zero division, so
    the answers agree. Opt-in (``--rewrite division_as_try_divide``): DuckDB's texts guard their
    divisions already, and no generated scale has been seen to need it.
    """
    def fix(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Div):
            return exp.Anonymous(this="try_divide", expressions=[node.this, node.expression])
        return node

    return tree.transform(fix)


#: Every rule known, by name; selectable with ``load_queries(rules=...)``.
RULES: dict[str, Rule] = {
    "division_as_try_divide": _division_as_try_divide,
}

#: Applied in order to every query's sqlglot tree (DuckDB dialect) before Spark SQL is made.
#: Empty on purpose: with sqlglot 30.30 all 99 translations run in Spark 4.3 and match DuckDB
#: on the generated data (checked at scale 0.01 with ``tpcds queries --execute``); DuckDB's
#: query texts already guard their divisions with ``CASE WHEN … = 0``. A rule goes here only
#: when a query is shown to need it, so the benchmark runs the standard texts.
REWRITES: tuple[tuple[str, Rule], ...] = ()


def translate(sql: str, rules: Sequence[tuple[str, Rule]] = REWRITES) -> tuple[str, tuple[str, ...]]:
    """DuckDB SQL → Spark SQL, with the rewrite rules that changed something."""
    trees = sqlglot.parse(sql, read="duckdb")
    trees = [t for t in trees if t is not None]
    if len(trees) != 1:
        raise ValueError(f"expected one statement, found {len(trees)}")
    tree = trees[0]
    applied = []
    for name, rule in rules:
        before = tree.sql(dialect="duckdb")
        tree = rule(tree.copy())
        if tree.sql(dialect="duckdb") != before:
            applied.append(name)
    return tree.sql(dialect="spark"), tuple(applied)


def referenced_tables(sql: str) -> list[str]:
    """Names of the base tables a query reads: every table reference that is not a CTE."""
    tree = sqlglot.parse_one(sql, read="duckdb")
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    names = {t.name.lower() for t in tree.find_all(exp.Table) if t.name}
    return sorted(n for n in names if n not in ctes)


@functools.lru_cache(maxsize=1)
def _raw_queries() -> tuple[tuple[int, str], ...]:
    from tpcds.generate import connect

    con = connect()
    try:
        rows = con.execute("SELECT query_nr, query FROM tpcds_queries() ORDER BY query_nr").fetchall()
    finally:
        con.close()
    return tuple((int(n), str(q)) for n, q in rows)


def load_queries(rules: Optional[Sequence[str]] = None) -> dict[str, Query]:
    """All 99 queries by name (``q1`` … ``q99``), translated; failures keep their reason.

    ``rules`` names extra rewrite rules of :data:`RULES` to apply after :data:`REWRITES`.
    """
    chosen = list(REWRITES)
    for r in rules or ():
        if r not in RULES:
            raise KeyError(f"unknown rewrite rule {r!r}: expected one of {', '.join(RULES)}")
        chosen.append((r, RULES[r]))
    out: dict[str, Query] = {}
    for n, text in _raw_queries():
        text = text.strip().rstrip(";").strip()
        try:
            spark_sql, applied = translate(text, chosen)
            out[f"q{n}"] = Query(n, text, spark_sql, applied)
        except Exception as e:  # sqlglot raises several types; each is a reason to report
            log.warning("q%d: translation failed: %s", n, e)
            out[f"q{n}"] = Query(n, text, None, (), f"translation: {_first_line(e)}")
    return out


def select_queries(spec: str | Iterable[str], queries: Optional[dict[str, Query]] = None
                   ) -> list[Query]:
    """``all`` or names like ``q3,q7`` (also ``3``) → the queries, in the order given."""
    queries = queries if queries is not None else load_queries()
    if isinstance(spec, str):
        if spec.strip().lower() == "all":
            return sorted(queries.values(), key=lambda q: q.number)
        spec = [s for s in re.split(r"[,\s]+", spec) if s]
    picked = []
    for s in spec:
        key = s.lower() if s.lower().startswith("q") else f"q{s}"
        if key not in queries:
            raise KeyError(f"unknown TPC-DS query {s!r}: expected q1 … q99 or 'all'")
        picked.append(queries[key])
    return picked


# ------------------------------------------------------------------------- what Spark runs

@dataclass
class QueryStatus:
    """Whether Spark can run a query, and why not."""

    name: str
    ok: bool
    stage: str                      # translation | analysis | execution | result | ok
    reason: Optional[str] = None
    rewrites: list[str] = field(default_factory=list)
    rows: Optional[int] = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Reference(Protocol):
    """The answers rows are checked against (:class:`tpcds.reference.DuckDBReference`); a
    protocol so that this module does not import the one that reads its queries."""

    def problem(self, query: "Query", got: Iterable[Sequence[Any]]) -> Optional[str]: ...


def check_queries(spark: Any, queries: Sequence[Query], *, execute: bool = False,
                  reference: Optional[Reference] = None) -> list[QueryStatus]:
    """Which queries Spark cannot run, and why.

    Needs the tables as views in ``spark`` already (:func:`tpcds.bench.open_path_tables`).
    ``EXPLAIN`` finds what analysis rejects; ``execute=True`` also runs each query (ANSI errors
    such as overflow show only then) and, given a :class:`tpcds.reference.DuckDBReference`,
    compares its rows with DuckDB's.
    """
    out = []
    for q in queries:
        if q.spark_sql is None:
            out.append(QueryStatus(q.name, False, "translation", q.error))
            continue
        st = QueryStatus(q.name, True, "ok", rewrites=list(q.rewrites))
        try:
            spark.sql("EXPLAIN " + q.spark_sql).collect()
            plan = spark.sql(q.spark_sql)._jdf.queryExecution().analyzed()  # raises on errors
            del plan
        except Exception as e:
            st.ok, st.stage, st.reason = False, "analysis", _first_line(e)
            out.append(st)
            continue
        if execute:
            try:
                rows = spark.sql(q.spark_sql).collect()
                st.rows = len(rows)
            except Exception as e:
                st.ok, st.stage, st.reason = False, "execution", _first_line(e)
                out.append(st)
                continue
            if reference is not None:
                problem = reference.problem(q, rows)
                if problem:
                    st.ok, st.stage, st.reason = False, "result", problem
        out.append(st)
    return out


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    line = text.splitlines()[0]
    return f"{type(e).__name__}: {line[:300]}"
