"""A case's query as SQL text or as DataFrame calls, over given relation names (the fact's
name differs between the oracle and dpp for a declared table: dpp reads the declaration, the
oracle ``spark.read.parquet`` of the same folder)."""
from __future__ import annotations

from typing import Any, Callable

from tests.fuzz.model import CATALOG_TYPES, REVERSED, Case

NUMERIC = ("int", "bigint", "smallint", "decimal", "double")
# extras over the fact's columns (its first partition column, its ids)
FACT_COLUMN_EXTRAS = ("agg", "window", "outer_not_null", "outer_is_null", "compare_fact",
                      "compare_fact_rev")


def compare_condition(extra: str, t: str, g: str) -> str:
    """The comparison of the query's rows ``t`` with the second reference ``g`` to the fact:
    an equi-key on the ids (a few matches each) and the data columns compared."""
    cmp = f"{g}.x < {t}.x" if extra == "compare_fact" else f"{t}.x <= {g}.x"
    return f"{t}.id % 3 = {g}.id % 3 AND {cmp}"


def key_pairs(case: Case) -> list[tuple[str, str, str]]:
    """(fact side, operator, dimension side) terms of the join condition, over aliases ``f``
    and ``d``: equalities, and for the comparison keys ``<``, ``<=``, ``>``, ``>=``."""
    q, cols = case.query, case.fact.cols
    name = (lambda c: c.name.lower()) if q.lower_names else (lambda c: c.name)
    p0, kind = f"f.`{name(cols[0])}`", cols[0].kind
    dk = case.dim.key_type
    if q.key == "plus0" and kind in NUMERIC and dk in NUMERIC:
        return [(f"{p0} + 0", "=", "d.k + 0")]
    if q.key == "cast_str":
        return [(f"CAST({p0} AS STRING)", "=", "d.ks")]
    if q.key == "cast_dim":
        return [(p0, "=", f"CAST(d.ks AS {CATALOG_TYPES[kind]})")]
    if q.key == "func":
        if kind == "string":
            return [(f"lower({p0})", "=", "lower(d.ks)")]
        if kind in ("date", "timestamp"):
            return [(f"to_date({p0})", "=", "to_date(d.k)")]
        if kind in NUMERIC:
            return [(f"abs({p0})", "=", "abs(d.k)")]
    if q.key == "collate":
        return [(f"CAST({p0} AS STRING) COLLATE UTF8_LCASE", "=", "d.ks")]
    if q.key == "two_level" and len(cols) > 1:
        return [(p0, "=", "d.k"), (f"f.`{name(cols[1])}`", "=", "d.k2")]
    if q.key == "data_col":
        return [("f.x", "=", "d.a")]
    if q.key in ("lt", "le"):
        return [(p0, "<" if q.key == "lt" else "<=", "d.k")]
    if q.key == "gt":
        return [(p0, ">", "d.k")]
    if q.key == "ge":   # the dimension's operand first
        return [("d.k", ">=", p0)]
    if q.key == "range":
        return [(p0, ">=", "d.k"), ("f.x", "<=", "d.a")]
    if q.key == "eq_lt":
        return [(p0, "=", "d.k"), ("f.x", "<", "d.a + 2")]
    if q.key == "lt_data":
        return [("f.x", "<", "d.a")]
    return [(p0, "=", "d.k")]


def condition(case: Case) -> str:
    """The join condition's SQL."""
    return " AND ".join(f"{a} {op} {b}" for a, op, b in key_pairs(case))


def dim_source(case: Case, dim: str) -> str:
    """The build side's rows: the dimension view under the case's filter."""
    filt = {"lt": "WHERE a < 5", "in": "WHERE a IN (1, 3, 8)", "none": "",
            "empty": "WHERE a < 0", "rand": "WHERE rand(7) < 0.7"}
    df = case.query.dim_filter
    if df in filt:
        return f"SELECT * FROM {dim} {filt[df]}".strip()
    if df == "limit":
        return f"SELECT * FROM {dim} LIMIT 3"
    if df == "order_limit":
        return f"SELECT * FROM {dim} ORDER BY a, ks, k2 LIMIT 3"
    # window_tie: which row of a group is first depends on the order of ties
    return (f"SELECT k, ks, k2, a FROM (SELECT *, row_number() OVER (PARTITION BY a ORDER BY a)"
            f" AS rn FROM {dim}) WHERE rn = 1")


def sql_text(case: Case, fact: str, dim: str) -> str:
    """The whole query as SQL (a ``write`` extra is run by :func:`run_sql`)."""
    q = case.query
    pairs = key_pairs(case)
    cond = condition(case)
    fact_src = f"(SELECT * FROM {fact} WHERE rand(3) < 0.8)" if q.extra == "fact_rand" else fact
    if q.extra == "derived_fact":
        fact_src = f"(SELECT DISTINCT * FROM {fact})"
    if q.extra == "shuffled_fact":   # ids are unique: every fact row once
        fact_src = (f"(SELECT g.* FROM {fact} g JOIN (SELECT id AS sid FROM {fact}) h "
                    f"ON g.id = h.sid)")
    if q.extra == "union_limit":    # ids are unique: the 7 rows kept are the same every run
        fact_src = f"(SELECT * FROM {fact} UNION ALL SELECT * FROM {fact} ORDER BY id LIMIT 7)"
    src = "dd" if q.extra == "cte" else f"({dim_source(case, dim)})"
    s = q.shape
    # a neighbour: the build side unfiltered, the filter on another row set joined to it
    neighbour = q.extra == "neighbour" and s in ("inner", "left", "right", "full", "comma")
    if neighbour:
        src = f"(SELECT * FROM {dim})"
    fcols = "f.*"
    jcols = "f.*, d.a AS da, d.ks AS dks"
    if s in ("in", "not_in") and len(pairs) == 1 and pairs[0][1] == "=":
        neg = "NOT " if s == "not_in" else ""
        base = (f"SELECT {fcols} FROM {fact_src} f WHERE {pairs[0][0]} {neg}IN "
                f"(SELECT {pairs[0][2]} FROM {src} d)")
    elif s in ("exists", "not_exists", "in", "not_in"):
        neg = "NOT " if s.startswith("not") else ""
        base = (f"SELECT {fcols} FROM {fact_src} f WHERE {neg}EXISTS "
                f"(SELECT 1 FROM {src} d WHERE {cond})")
    elif s == "semi":
        base = f"SELECT {fcols} FROM {fact_src} f LEFT SEMI JOIN {src} d ON {cond}"
    elif s == "anti":
        base = f"SELECT {fcols} FROM {fact_src} f LEFT ANTI JOIN {src} d ON {cond}"
    elif s in REVERSED:
        how = "SEMI" if s == "semi_rev" else "ANTI"
        base = f"SELECT d.* FROM {src} d LEFT {how} JOIN {fact_src} f ON {cond}"
    elif s == "comma":
        near = f", ({dim_source(case, dim)}) e" if neighbour else ""
        base = (f"SELECT {jcols} FROM {fact_src} f, {src} d{near} WHERE {cond}"
                + (" AND d.a = e.a" if neighbour else ""))
    else:
        how = {"inner": "JOIN", "left": "LEFT JOIN", "right": "RIGHT JOIN",
               "full": "FULL JOIN"}[s]
        base = f"SELECT {jcols} FROM {fact_src} f {how} {src} d ON {cond}"
        if neighbour:
            base += f" JOIN ({dim_source(case, dim)}) e ON d.a = e.a"
    if q.extra == "cte":
        base = f"WITH dd AS ({dim_source(case, dim)}) {base}"
    c0 = case.fact.cols[0].name
    c0 = c0.lower() if q.lower_names else c0
    if s in REVERSED and q.extra in FACT_COLUMN_EXTRAS:
        return base     # no fact column comes out to group, order or test
    if q.extra == "agg":
        return f"SELECT `{c0}`, count(*) AS n, sum(id) AS s FROM ({base}) t GROUP BY `{c0}`"
    if q.extra in ("compare_fact", "compare_fact_rev"):
        return (f"SELECT t.*, g.id AS gid FROM ({base}) t JOIN {fact} g "
                f"ON {compare_condition(q.extra, 't', 'g')}")
    if q.extra in ("outer_not_null", "outer_is_null"):
        test = "IS NOT NULL" if q.extra == "outer_not_null" else "IS NULL"
        return f"SELECT * FROM ({base}) t WHERE t.`{c0}` {test}"
    if q.extra == "window":
        return (f"SELECT t.*, count(*) OVER (PARTITION BY `{c0}`) AS wn, "
                f"sum(id) OVER (PARTITION BY `{c0}`) AS ws FROM ({base}) t")
    if q.extra == "order_limit":
        return (f"SELECT * FROM (SELECT t.*, to_json(struct(t.*)) AS o FROM ({base}) t) u "
                f"ORDER BY o LIMIT 5")
    if q.extra == "limit_count":
        return f"SELECT count(*) AS n FROM (SELECT * FROM ({base}) t LIMIT 4) u"
    if q.extra == "sample":
        return f"SELECT * FROM ({base}) TABLESAMPLE (50 PERCENT) REPEATABLE (3) u"
    if q.extra == "order_sample":   # a sort decides which rows a limit keeps, not a sample
        return (f"SELECT * FROM (SELECT t.*, to_json(struct(t.*)) AS o FROM ({base}) t "
                f"ORDER BY o) TABLESAMPLE (50 PERCENT) REPEATABLE (3) u")
    if q.extra == "union":
        return f"({base}) UNION ({base})"
    if q.extra == "union_all":
        return f"({base}) UNION ALL ({base})"
    if q.extra == "distinct":
        return f"SELECT DISTINCT * FROM ({base}) t"
    return base


def dataframe(case: Case, spark: Any, fact: str, dim: str) -> Any:
    """The query as DataFrame calls (the same shapes; SQL snippets for the expressions)."""
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    q = case.query
    f = spark.table(fact)
    if q.extra == "fact_rand":
        f = f.where(F.rand(3) < 0.8)
    f = f.alias("f")
    d = spark.table(dim)
    df_ = q.dim_filter
    if df_ == "lt":
        d = d.where("a < 5")
    elif df_ == "in":
        d = d.where(F.col("a").isin(1, 3, 8))
    elif df_ == "empty":
        d = d.where("a < 0")
    elif df_ == "rand":
        d = d.where(F.rand(7) < 0.7)
    elif df_ == "limit":
        d = d.limit(3)
    elif df_ == "order_limit":
        d = d.orderBy("a", "ks", "k2").limit(3)
    elif df_ == "window_tie":
        w = Window.partitionBy("a").orderBy("a")
        d = d.withColumn("rn", F.row_number().over(w)).where("rn = 1").drop("rn")
    d = d.alias("d")
    cond = F.expr(condition(case))
    s = q.shape
    how = {"inner": "inner", "comma": "inner", "in": "left_semi", "exists": "left_semi",
           "semi": "left_semi", "left": "left", "right": "right", "full": "full",
           "anti": "left_anti", "not_in": "left_anti", "not_exists": "left_anti",
           "semi_rev": "left_semi", "anti_rev": "left_anti"}[s]
    out = d.join(f, cond, how) if s in REVERSED else f.join(d, cond, how)
    if how not in ("left_semi", "left_anti"):
        out = out.select("f.*", F.col("d.a").alias("da"), F.col("d.ks").alias("dks"))
    c0 = case.fact.cols[0].name
    c0 = c0.lower() if q.lower_names else c0
    if s in REVERSED and q.extra in FACT_COLUMN_EXTRAS:
        return out
    if q.extra in ("compare_fact", "compare_fact_rev"):
        g = spark.table(fact).alias("g")
        return (out.alias("t").join(g, F.expr(compare_condition(q.extra, "t", "g")))
                .select("t.*", F.col("g.id").alias("gid")))
    if q.extra == "agg":
        return out.groupBy(c0).agg(F.count("*").alias("n"), F.sum("id").alias("s"))
    if q.extra == "window":
        w = Window.partitionBy(c0)
        return (out.withColumn("wn", F.count("*").over(w))
                .withColumn("ws", F.sum("id").over(w)))
    if q.extra == "order_limit":
        return out.orderBy(F.to_json(F.struct(*[F.col(c) for c in out.columns]))).limit(5)
    if q.extra == "limit_count":
        return out.limit(4).groupBy().count()
    if q.extra == "sample":
        return out.sample(0.5, 3)
    if q.extra == "order_sample":
        return out.orderBy(F.to_json(F.struct(*[F.col(c) for c in out.columns]))).sample(0.5, 3)
    if q.extra in ("union", "union_all"):
        both = out.union(out)
        return both.distinct() if q.extra == "union" else both
    if q.extra == "distinct":
        return out.distinct()
    return out


def builder(case: Case, spark: Any, fact: str, dim: str, out_dir: str) -> Callable[[], Any]:
    """What one run collects: the query's DataFrame (made now), or for a ``write`` extra its
    rows written as Parquet by Spark and read back."""
    if case.query.api == "df":
        frame = dataframe(case, spark, fact, dim)
    else:
        frame = spark.sql(sql_text(case, fact, dim))
    if case.query.extra != "write":
        return frame.collect

    def written() -> Any:
        frame.write.mode("overwrite").parquet(out_dir)
        return spark.read.parquet(out_dir).collect()
    return written
