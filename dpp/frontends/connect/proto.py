"""Reading a Spark Connect client's plan: the protobuf tree (``spark.connect.Relation``)
walked relation by relation, its column references and join conditions as names, and
whether a relation gives the same rows when run again.

The client sees names, not Spark's resolved plan: this module only reads what the tree
says; :mod:`dpp.frontends.connect.typed` resolves the names into the typed plan the rules read.
"""
from __future__ import annotations

from typing import Any, Iterator, Optional

from dpp.analysis import rules as prune_rules

__all__ = ["SPARK_OPS", "all_relations", "relation_children", "node_nondeterminism", "window_calls",
           "deterministic_relation", "reference", "conjuncts", "equalities", "selective",
           "sql_filters"]

# relations that run code the plan does not show, or draw rows per run outside an operator
# of Spark's own name (sample_by: a filter on rand): recorded as the node's ``flagged`` fact
_RUNS_UNSEEN = frozenset({"sample_by", "map_partitions", "group_map", "co_group_map",
                          "common_inline_user_defined_table_function",
                          "common_inline_user_defined_data_source", "extension", "unknown"})
# Connect relations that pass their input through, by Spark's operator names (what the
# rules read: a limit or a sample is decided by its name, dpp.analysis.rules)
SPARK_OPS = {"filter": "Filter", "sort": "Sort", "hint": "ResolvedHint",
             "repartition": "Repartition", "repartition_by_expression": "RepartitionByExpression",
             "limit": "GlobalLimit", "offset": "Offset", "tail": "Tail", "sample": "Sample",
             "deduplicate": "Deduplicate", "subquery_alias": "SubqueryAlias"}


def _nested(msg: Any) -> Iterator[Any]:
    """The messages directly inside ``msg`` (singular, repeated and map values)."""
    for fd, value in msg.ListFields():
        if fd.message_type is None:
            continue
        values = [value] if hasattr(value, "DESCRIPTOR") else (
            list(value.values()) if hasattr(value, "values") else list(value))
        yield from (v for v in values if hasattr(v, "DESCRIPTOR"))


def _all_messages(msg: Any, into_relations: bool = True) -> Iterator[Any]:
    """``msg`` and every message inside it, depth first (not into nested Relations unless
    ``into_relations``)."""
    stack = [msg]
    while stack:
        m = stack.pop()
        yield m
        stack.extend(v for v in _nested(m) if into_relations
                     or v.DESCRIPTOR.full_name != "spark.connect.Relation")


def all_relations(msg: Any) -> Iterator[Any]:
    """Every Relation message in ``msg`` (a Relation, a Command, any message), depth first."""
    return (m for m in _all_messages(msg) if m.DESCRIPTOR.full_name == "spark.connect.Relation")


def relation_children(rel: Any) -> list[Any]:
    """The Relation messages directly under ``rel`` (through any message nesting)."""
    kind = rel.WhichOneof("rel_type")
    if kind is None:
        return []
    out: list[Any] = []
    stack = list(_nested(getattr(rel, kind)))
    while stack:
        m = stack.pop(0)
        if m.DESCRIPTOR.full_name == "spark.connect.Relation":
            out.append(m)
        else:
            stack[:0] = list(_nested(m))
    return out


# ====================================================================== determinism

def _sql_deterministic(text: str, query: bool) -> bool:
    """Whether SQL text (an expression, or a query when ``query``) is free of functions and
    clauses whose value is drawn per run. Text sqlglot cannot read is not."""
    import sqlglot
    from sqlglot import exp

    from dpp.analysis.functions import deterministic

    try:
        tree = (sqlglot.parse_one(text, read="spark") if query
                else sqlglot.parse_one(f"SELECT {text}", read="spark"))
    except Exception:
        return False
    if tree is None or not deterministic(tree, prune_rules.RERUN_FUNCTIONS):
        return False
    return not any(True for _ in tree.find_all(exp.Limit, exp.Offset, exp.TableSample))


def sql_filters(query: str) -> bool:
    """Whether SQL text (a ``spark.sql`` relation) keeps only some rows of what it reads: a
    ``WHERE``, ``HAVING`` or ``QUALIFY``. Text sqlglot cannot read does not."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(query, read="spark")
    except Exception:
        return False
    return tree is not None and any(True for _ in tree.find_all(exp.Where, exp.Having,
                                                                exp.Qualify))


def node_nondeterminism(rel: Any) -> Optional[str]:
    """Why the relation ``rel`` itself (its own expressions, not its inputs') may give other
    rows when run again: a sample or limit, a function drawn per run (by name, or inside SQL
    text: ``where("rand() < 0.5")``), a nondeterministic UDF; or None."""
    kind = rel.WhichOneof("rel_type")
    if kind in _RUNS_UNSEEN:
        return kind
    if kind == "sql" and not _sql_deterministic(rel.sql.query, query=True):
        return "sql"
    for m in _all_messages(rel, into_relations=False):
        if m.DESCRIPTOR.full_name != "spark.connect.Expression":
            continue
        et = m.WhichOneof("expr_type")
        if et == "expression_string" and not _sql_deterministic(
                m.expression_string.expression, query=False):
            return m.expression_string.expression
        if et in ("unresolved_function", "call_function"):
            fn = getattr(m, et).function_name.lower()
            if fn in prune_rules.RERUN_FUNCTIONS:
                return fn
        if et == "common_inline_user_defined_function" and (
                not m.common_inline_user_defined_function.deterministic):
            return m.common_inline_user_defined_function.function_name or "a UDF"
    return None


# window functions that are no aggregate (any other function over a window is one)
_WINDOW_ONLY = frozenset({"row_number", "rank", "dense_rank", "percent_rank", "cume_dist",
                          "ntile", "lag", "lead", "nth_value"})


def window_calls(rel: Any) -> list[prune_rules.WindowCall]:
    """The window functions of the relation ``rel`` itself (its own expressions, and windows
    in SQL text it holds), as :func:`dpp.analysis.rules.tie_order` takes them."""
    out: list[prune_rules.WindowCall] = []
    kind = rel.WhichOneof("rel_type")
    texts = [rel.sql.query] if kind == "sql" else []
    for m in _all_messages(rel, into_relations=False):
        if m.DESCRIPTOR.full_name != "spark.connect.Expression":
            continue
        et = m.WhichOneof("expr_type")
        if et == "expression_string":
            texts.append(f"SELECT {m.expression_string.expression}")
        elif et == "window":
            w = m.window
            fn = w.window_function
            ft = fn.WhichOneof("expr_type")
            name = (getattr(fn, ft).function_name
                    if ft in ("unresolved_function", "call_function") else str(ft))
            frame = w.frame_spec if w.HasField("frame_spec") else None
            rows = frame is not None and frame.frame_type == 1   # FRAME_TYPE_ROW
            whole = frame is not None and frame.lower.unbounded and frame.upper.unbounded
            out.append(prune_rules.WindowCall(
                function=name, aggregate=name.lower() not in _WINDOW_ONLY, rows_frame=rows,
                whole_frame=whole, ordered=len(w.order_spec) > 0))
    texts = [t for t in texts if "over" in t.lower()]
    if texts:
        import sqlglot
        from sqlglot import exp

        from dpp.analysis.functions import window_calls as text_calls

        for text in texts:
            try:
                tree = sqlglot.parse_one(text, read="spark")
            except Exception:
                continue   # unreadable text: _sql_deterministic already refuses it
            if tree is not None:
                out.extend(text_calls(tree.find_all(exp.Window)))
    return out


def dataframe_nondeterminism(df: Any) -> Optional[str]:
    """Why a Spark Connect DataFrame may give other rows when run again (its client-side plan
    read by :func:`deterministic_relation`), or None when it cannot."""
    plan = getattr(df, "_plan", None)
    session = getattr(df, "sparkSession", None)
    if plan is None or session is None:
        return "a DataFrame dpp cannot inspect"
    try:
        rel = plan.plan(session.client)
    except Exception as exc:  # noqa: BLE001 - an unreadable plan is not trusted
        return f"its plan could not be read ({type(exc).__name__})"
    return None if deterministic_relation(rel) else \
        "a sample, limit, or function drawn per run in its plan"


def deterministic_relation(rel: Any) -> bool:
    """Whether the plan ``rel`` gives the same rows when run again (a build side is run
    once more, on its own, for the filter): each relation's facts — Spark's name of its
    operator, what :func:`node_nondeterminism` found drawn per run, its window calls — and
    :func:`dpp.analysis.rules.build_side_unrepeatable` decides."""
    return prune_rules.build_side_unrepeatable(_facts(r) for r in all_relations(rel)) is None


def _facts(rel: Any) -> dict[str, Any]:
    kind = rel.WhichOneof("rel_type")
    return {"op": SPARK_OPS.get(kind, kind), "flagged": node_nondeterminism(rel),
            "windowCalls": [c.wire() for c in window_calls(rel)]}


# ====================================================================== names

def _name_parts(ident: str, strict: bool = False) -> Optional[list[str]]:
    """``a.b`` → ["a", "b"], with backquoted parts taken whole (```a.b``` is one name);
    None for text that is not a dotted name (``strict``: SQL text, where an unquoted space
    or operator makes an expression)."""
    parts: list[str] = []
    cur, i, n = "", 0, len(ident)
    quoted_part = False
    while i < n:
        ch = ident[i]
        if ch == "`":
            j = i + 1
            buf = ""
            while j < n:
                if ident[j] == "`":
                    if j + 1 < n and ident[j + 1] == "`":
                        buf += "`"
                        j += 2
                        continue
                    break
                buf += ident[j]
                j += 1
            else:
                return None
            cur += buf
            quoted_part = True
            i = j + 1
        elif ch == ".":
            if not cur and not quoted_part:
                return None
            parts.append(cur)
            cur, quoted_part = "", False
            i += 1
        elif strict and (ch.isspace() or ch in "()+-*/,<>=!'\""):
            return None
        else:
            cur += ch
            i += 1
    if not cur and not quoted_part:
        return None
    parts.append(cur)
    return parts


def reference(expr: Any) -> Optional[tuple[list[str], Optional[int]]]:
    """A column reference as (name parts, plan id): ``col("k")``, ``col("f.k")``,
    ``df["k"]``, ``expr("k")``; None for anything else."""
    et = expr.WhichOneof("expr_type")
    if et == "unresolved_attribute":
        ua = expr.unresolved_attribute
        parts = _name_parts(ua.unparsed_identifier)
        return None if parts is None else (parts, ua.plan_id if ua.HasField("plan_id")
                                           else None)
    if et == "expression_string":
        parts = _name_parts(expr.expression_string.expression.strip(), strict=True)
        return None if parts is None else (parts, None)
    return None


def conjuncts(cond: Any) -> list[Any]:
    if cond.WhichOneof("expr_type") == "unresolved_function":
        fn = cond.unresolved_function
        if fn.function_name.lower() == "and" and len(fn.arguments) == 2:
            return conjuncts(fn.arguments[0]) + conjuncts(fn.arguments[1])
    return [cond]


def equalities(cond: Any) -> list[tuple[Any, Any]]:
    """The ``a == b`` conjuncts of a join condition (the others only drop more rows)."""
    out = []
    for c in conjuncts(cond):
        if c.WhichOneof("expr_type") == "unresolved_function":
            fn = c.unresolved_function
            if fn.function_name == "==" and len(fn.arguments) == 2:
                out.append((fn.arguments[0], fn.arguments[1]))
    return out


def selective(cond: Any) -> bool:
    """Whether a filter's condition keeps fewer rows than ``IS NOT NULL`` checks."""
    return not all(c.WhichOneof("expr_type") == "unresolved_function"
                   and c.unresolved_function.function_name.lower() == "isnotnull"
                   for c in conjuncts(cond))
