"""Non-deterministic build and probe sides never prune (optimizer hook, classic sessions).

A build side is run again in a clone of the session (another layout, fewer shuffle
partitions): whatever depends on evaluation order or layout — ``rand``, ``sample``, a limit,
an order-dependent window function — keeps other keys there than in the query's own join,
and pruning by them loses rows. On the probe side, pruning below ``rand`` or
``monotonically_increasing_id`` changes which rows or ids come out (they are seeded per task,
and fewer files make other tasks). Each case is checked against Spark with every pruning off
on the same data; the deterministic twin of each shape still prunes.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from tests.conftest import spark_conf

from tests.adversarial_support import (OFF, applied, catalog_table, dpp_rows, enabled, notes,
                                       spark_rows, write_calendar, write_fact)


@pytest.fixture(scope="module")
def env(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("determinism")
    fact = write_fact(root / "sales")
    cal = write_calendar(root / "cal")
    catalog_table(spark, "adv_det_sales", fact)
    with enabled(spark, root) as session:
        yield {"fact": str(fact), "cal": str(cal), "session": session}
    spark.sql("DROP TABLE IF EXISTS adv_det_sales")


def _fact(spark: Any, env: dict[str, Any], kind: str) -> Any:
    return spark.read.parquet(env["fact"]) if kind == "path" else spark.table("adv_det_sales")


def _cal(spark: Any, env: dict[str, Any]) -> Any:
    return spark.read.parquet(env["cal"])


# build sides: (nondeterministic, deterministic twin)
BUILDS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "rand_after_aggregate": (
        lambda cal: cal.groupBy("day").agg(F.max("wk").alias("wk")).where(F.rand(11) < 0.5),
        lambda cal: cal.groupBy("day").agg(F.max("wk").alias("wk")).where("wk <= 2")),
    "limit": (lambda cal: cal.where("wk <= 2").limit(3),
              lambda cal: cal.where("wk <= 2")),
    "sample": (lambda cal: cal.sample(0.5, 5),
               lambda cal: cal.where("day % 2 = 0")),
    "order_dependent_window": (
        lambda cal: cal.withColumn("rn", F.row_number().over(
            Window.partitionBy("wk").orderBy("wk"))).where("rn <= 2"),
        lambda cal: cal.withColumn("n", F.count("*").over(
            Window.partitionBy("wk"))).where("wk = 2")),
}


@pytest.mark.parametrize("kind", ["path", "catalog"])
@pytest.mark.parametrize("shape", sorted(BUILDS))
def test_nondeterministic_build_side_is_not_pruned_by(spark: Any, env: dict[str, Any],
                                                      shape: str, kind: str) -> None:
    nondet, det = BUILDS[shape]

    def run(build: Callable[[Any], Any]) -> Callable[[], Any]:
        return lambda: _fact(spark, env, kind).join(build(_cal(spark, env)), "day") \
            .select("id", "amount", "day")

    expected = spark_rows(spark, run(nondet))
    got, report = dpp_rows(spark, env["session"], run(nondet))
    assert got == expected
    assert not applied(report), f"pruned by a nondeterministic build side: {report.tables}"
    assert "not deterministic" in notes(report), report   # the refusal is reported
    # the deterministic twin of the same shape is pruned, with Spark's rows
    expected = spark_rows(spark, run(det))
    got, report = dpp_rows(spark, env["session"], run(det))
    assert got == expected and expected
    assert applied(report), f"{shape}: the deterministic build side was not pruned: {report}"


SQL_BUILDS = {
    "having_rand": ("SELECT f.id, f.amount, f.day FROM {fact} f JOIN (SELECT day FROM cal "
                    "GROUP BY day HAVING rand(3) < 0.5) c ON f.day = c.day"),
    "in_subquery_limit": ("SELECT id, amount, day FROM {fact} WHERE day IN "
                          "(SELECT day FROM cal WHERE wk <= 2 LIMIT 4)"),
    "in_subquery_ordered_limit": ("SELECT id, amount, day FROM {fact} WHERE day IN "
                                  "(SELECT day FROM cal WHERE wk <= 2 ORDER BY wk LIMIT 4)"),
}


@pytest.mark.parametrize("kind", ["path", "catalog"])
@pytest.mark.parametrize("shape", sorted(SQL_BUILDS))
def test_nondeterministic_sql_build_side_is_not_pruned_by(spark: Any, env: dict[str, Any],
                                                          shape: str, kind: str) -> None:
    _cal(spark, env).createOrReplaceTempView("cal")
    _fact(spark, env, kind).createOrReplaceTempView("adv_fact")
    query = SQL_BUILDS[shape].format(fact="adv_fact")
    expected = spark_rows(spark, lambda: spark.sql(query))
    got, report = dpp_rows(spark, env["session"], lambda: spark.sql(query))
    assert got == expected
    assert not applied(report), f"pruned by a nondeterministic build side: {report.tables}"


PROBES: dict[str, Callable[[Any], Any]] = {
    "rand_filter_below_join": lambda f: f.where(F.rand(5) < 0.5),
    "monotonic_id_below_join": lambda f: f.withColumn("rid", F.monotonically_increasing_id()),
    "rand_column_below_join": lambda f: f.withColumn("r", F.rand(7)),
}


@pytest.mark.parametrize("kind", ["path", "catalog"])
@pytest.mark.parametrize("shape", sorted(PROBES))
def test_nondeterministic_probe_side_is_not_pruned(spark: Any, env: dict[str, Any],
                                                   shape: str, kind: str) -> None:
    def run() -> Any:
        probe = PROBES[shape](_fact(spark, env, kind))
        return probe.join(_cal(spark, env).where("wk = 2"), "day")

    expected = spark_rows(spark, run)
    got, report = dpp_rows(spark, env["session"], run)
    assert got == expected and expected
    assert not applied(report), f"pruned below a nondeterministic operator: {report.tables}"
    assert "the fact is read below" in notes(report), report


@pytest.mark.parametrize("kind", ["path", "catalog"])
def test_sample_above_the_join_sees_sparks_rows(spark: Any, env: dict[str, Any],
                                                kind: str) -> None:
    """A sample over the join draws per task: pruning below it would move rows between
    tasks and draw others. (Spark's own dynamic pruning does prune below it, and then draws
    other rows than Spark without it: it is off in both runs, so this checks dpp alone.)"""
    def run() -> Any:
        return (_fact(spark, env, kind).join(_cal(spark, env).where("wk <= 2"), "day")
                .sample(0.3, 1))

    expected = spark_rows(spark, run)
    with spark_conf(spark, {k: v for k, v in OFF.items() if k != "spark.dpp.enabled"}):
        got, report = dpp_rows(spark, env["session"], run)
    assert got == expected and expected
    assert not applied(report)


@pytest.mark.parametrize("kind", ["path", "catalog"])
def test_ordered_limit_above_the_join_still_prunes(spark: Any, env: dict[str, Any],
                                                   kind: str) -> None:
    """ORDER BY ... LIMIT over a star join (every TPC-DS query's shape): the sort decides
    which rows the limit keeps, so the fact is pruned."""
    def run() -> Any:
        return (_fact(spark, env, kind).join(_cal(spark, env).where("wk = 2"), "day")
                .orderBy("id").limit(10).select("id", "amount", "day"))

    expected = spark_rows(spark, run, ordered=True)
    got, report = dpp_rows(spark, env["session"], run, ordered=True)
    assert got == expected and len(expected) == 10
    assert applied(report), report


@pytest.mark.parametrize("shape", sorted(BUILDS))
def test_dpp_join_refuses_a_nondeterministic_dimension(spark: Any, env: dict[str, Any],
                                                       shape: str) -> None:
    """``DppSession.join``: the dimension DataFrame is run once for its keys and once in the
    join; a nondeterministic one is not used to prune (its deterministic twin is)."""
    nondet, det = BUILDS[shape]
    session = env["session"]
    for build, prunes in ((nondet, False), (det, True)):
        dim = build(_cal(spark, env)).select("day", "wk")

        def run(dim: Any = dim) -> Any:
            return session.join("adv_det_sales", dim, [("day", "day")]) \
                .select("id", "amount", "wk")

        expected = spark_rows(spark, lambda: spark.table("adv_det_sales")
                              .join(dim, "day").select("id", "amount", "wk"))
        got, _ = dpp_rows(spark, session, run)
        report = session.last_report
        assert got == expected
        assert bool(applied(report)) == prunes, (shape, prunes, report)
        if not prunes:
            assert "not deterministic" in notes(report)


@pytest.mark.parametrize("kind", ["path", "catalog"])
def test_windows_above_the_join_still_prune(spark: Any, env: dict[str, Any], kind: str) -> None:
    """``rank()`` and a running sum over a ROWS frame above a star join (TPC-DS q47, q51's
    shape): the rows reaching the window are the same with pruning, so the fact is pruned."""
    def run() -> Any:
        joined = _fact(spark, env, kind).join(_cal(spark, env).where("wk = 2"), "day")
        w = Window.partitionBy("day").orderBy("id")
        return (joined.withColumn("r", F.rank().over(w))
                .withColumn("running", F.sum("amount").over(
                    w.rowsBetween(Window.unboundedPreceding, Window.currentRow)))
                .select("id", "day", "r", "running"))

    expected = spark_rows(spark, run)
    got, report = dpp_rows(spark, env["session"], run)
    assert got == expected and expected
    assert applied(report), report


SQL_PROBES = {
    "rand_filter": ("SELECT f.id, f.day FROM (SELECT * FROM adv_fact WHERE rand(5) < 0.5) f "
                    "JOIN cal c ON f.day = c.day WHERE c.wk = 2"),
    "monotonic_id": ("SELECT f.rid, f.day FROM (SELECT *, monotonically_increasing_id() AS rid "
                     "FROM adv_fact) f JOIN cal c ON f.day = c.day WHERE c.wk = 2"),
    "build_rand": ("SELECT f.id, f.day FROM adv_fact f JOIN (SELECT day FROM cal "
                   "WHERE rand(3) < 0.5) c ON f.day = c.day"),
    "build_limit": ("SELECT f.id, f.day FROM adv_fact f WHERE f.day IN "
                    "(SELECT day FROM cal WHERE wk <= 2 LIMIT 4)"),
}


@pytest.mark.parametrize("path", ["hook", "text"])
@pytest.mark.parametrize("shape", sorted(SQL_PROBES))
def test_sql_paths_agree_on_nondeterministic_sides(spark: Any, env: dict[str, Any],
                                                   shape: str, path: str) -> None:
    """Both ways a classic ``spark.sql`` query is pruned (the optimizer hook, and the SQL-text
    analysis of ``spark.dpp.sqlPath=text``) leave nondeterministic probe and build sides
    alone, on a catalog table."""
    _cal(spark, env).createOrReplaceTempView("cal")
    spark.table("adv_det_sales").createOrReplaceTempView("adv_fact")
    query = SQL_PROBES[shape].replace("adv_fact", "adv_det_sales")
    expected = spark_rows(spark, lambda: spark.sql(query))
    with spark_conf(spark, {"spark.dpp.sqlPath": path}):
        got, report = dpp_rows(spark, env["session"], lambda: spark.sql(query))
    assert got == expected and expected
    assert not applied(report), (path, report)


@pytest.mark.parametrize("kind", ["path", "catalog"])
def test_a_sample_of_a_sorted_join_is_not_pruned_below(spark: Any, env: dict[str, Any],
                                                      kind: str) -> None:
    """A sort decides which rows a limit keeps, never which a sample draws: a sample over a
    sorted star join draws per task from the rows it is given, so pruning the fact below it
    moves rows between tasks and draws others. Only a limit over a sort is ordered. (Spark's
    own dynamic pruning is off in both runs, as above.)"""
    def run() -> Any:
        return (_fact(spark, env, kind).join(_cal(spark, env).where("wk <= 2"), "day")
                .orderBy("id").sample(0.3, 1).select("id", "amount", "day"))

    expected = spark_rows(spark, run)
    with spark_conf(spark, {k: v for k, v in OFF.items() if k != "spark.dpp.enabled"}):
        got, report = dpp_rows(spark, env["session"], run)
    assert got == expected and expected
    assert not applied(report), f"pruned below a sample: {report.tables}"
