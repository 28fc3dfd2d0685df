"""tpcds.report: the dpp overhead breakdown and filter cache counts, from synthetic runs."""
from __future__ import annotations

from typing import Any, Optional

import pytest

from tpcds.report import (
    dpp_breakdown,
    filter_cache,
    render_markdown,
    run_breakdown,
    summarize,
)

PhaseMap = dict[str, float]


def flt(hit: bool = False, outcome: str = "complete") -> dict[str, Any]:
    return {"filter_id": "f", "cache_hit": hit, "outcome": outcome, "build_seconds": 0.1}


def run(q: str, mode: str, total: float, *, rep: int = 0, listing: float = 0.5,
        phases: Optional[PhaseMap] = None, filters: Optional[list[dict[str, Any]]] = None,
        report: bool = True, ok: bool = True, kind: str = "path",
        readers: Optional[float] = None) -> dict[str, Any]:
    """A run record as ``Run.to_dict`` writes it; a dpp report only in mode dpp."""
    rep_dict = None
    if mode == "dpp" and report:
        rep_dict = {"phases": dict(phases or {}), "filters": list(filters or []), "tables": []}
    return {
        "query": q, "mode": mode, "kind": kind, "rep": rep, "ok": ok, "correct": True,
        "timed_out": False, "error": None, "mismatch": None,
        "total_s": total, "listing_s": listing, "execution_s": total - listing,
        "readers_s": readers,
        "metrics": {"fact_bytes_read": 100, "executor_cpu_ms": 1000.0} if ok else {},
        "dpp_report": rep_dict,
    }


def result(runs: list[dict[str, Any]], modes: tuple[str, ...] = ("spark", "dpp")
           ) -> dict[str, Any]:
    r: dict[str, Any] = {"modes": list(modes), "runs": runs, "config": {"repeat": 2}}
    r["summary"] = summarize(r)
    return r


P = {"analysis": 0.02, "build": 1.0, "wait": 0.8, "handoff": 0.3, "split_enumeration": 0.1,
     "total": 1.5}


def test_main_query_is_execution_when_dpp_ran_it_else_the_rest_of_the_elapsed() -> None:
    b = run_breakdown(run("q3", "dpp", 5.0, phases={**P, "execution": 2.5}))
    assert b is not None and b["main_s"] == 2.5
    # bench: dpp.sql took phases.total, the rest after opening (0.5 s) is the main query
    b = run_breakdown(run("q3", "dpp", 5.0, phases=P))
    assert b == pytest.approx({"open_s": 0.5, "readers_s": 0.0, "analysis_s": 0.02, "build_s": 1.0,
                               "wait_s": 0.8, "enum_s": 0.1, "handoff_s": 0.3, "blocked_s": 0.0,
                               "main_s": 3.0})
    # no total phase either: the elapsed minus the opening and the other components
    no_total = {k: v for k, v in P.items() if k != "total"}
    b = run_breakdown(run("q3", "dpp", 5.0, phases=no_total))
    assert b is not None and b["main_s"] == pytest.approx(5.0 - 0.5 - 2.22)


def test_with_the_hook_the_main_query_is_what_spark_did_not_wait_on_dpp_for() -> None:
    """The optimizer hook's build and loader run beside Spark's execution: the main query is
    the elapsed minus the opening and what Spark waited for — the rule (analysis,
    submission, a row filter's wait) and its listings' wait — not minus the build and the
    loader's wait, which overlap Spark's own work."""
    ph = {"analysis": 0.05, "submit": 0.01, "build": 1.0, "wait": 1.2,
          "split_enumeration": 0.1, "listing_wait": 0.2}
    b = run_breakdown(run("q3", "dpp", 5.0, phases=ph))
    assert b is not None
    assert b["blocked_s"] == pytest.approx(0.26)
    assert b["main_s"] == pytest.approx(5.0 - 0.5 - 0.26)
    assert b["build_s"] == 1.0 and b["wait_s"] == 1.2          # shown, not subtracted
    b = run_breakdown(run("q3", "dpp", 5.0, phases={**ph, "row_filter_wait": 0.3}))
    assert b is not None and b["blocked_s"] == pytest.approx(0.56)


def test_listing_catalog_tables_read_whole_counts_as_handoff() -> None:
    # q96 on catalog tables: no filter, store_sales listed whole by dpp in 1.2 s
    b = run_breakdown(run("q96", "dpp", 10.0, phases={"analysis": 0.1, "whole_listing": 1.2,
                                                      "total": 1.4}))
    assert b == pytest.approx({"open_s": 0.5, "readers_s": 0.0, "analysis_s": 0.1, "build_s": 0.0,
                               "wait_s": 0.0, "enum_s": 0.0, "handoff_s": 1.2, "blocked_s": 0.0,
                               "main_s": 8.1})
    # alongside a pruned table's handoff, and with no total phase to subtract
    b = run_breakdown(run("q9", "dpp", 10.0, phases={"handoff": 0.3, "whole_listing": 1.0}))
    assert b is not None and b["handoff_s"] == pytest.approx(1.3)
    assert b["main_s"] == pytest.approx(10.0 - 0.5 - 1.3)


def test_sparks_readers_are_part_of_the_opening_never_more() -> None:
    """``readers_s``: the part of the opening Spark's mode spends alike (the dimensions'
    readers); an old run without it counts 0, and it never exceeds the opening it is part of."""
    b = run_breakdown(run("q3", "dpp", 5.0, phases=P, readers=0.3))
    assert b is not None and b["readers_s"] == pytest.approx(0.3) and b["open_s"] == 0.5
    assert b["main_s"] == pytest.approx(3.0)            # the main query is not moved by it
    b = run_breakdown(run("q3", "dpp", 5.0, phases=P, readers=0.9))
    assert b is not None and b["readers_s"] == pytest.approx(0.5)


def test_missing_phases_count_zero_and_main_never_negative() -> None:
    b = run_breakdown(run("q3", "dpp", 2.0, phases={"analysis": 0.01}))
    assert b == pytest.approx({"open_s": 0.5, "readers_s": 0.0, "analysis_s": 0.01, "build_s": 0.0,
                               "wait_s": 0.0, "enum_s": 0.0, "handoff_s": 0.0, "blocked_s": 0.0,
                               "main_s": 1.49})
    b = run_breakdown(run("q3", "dpp", 1.0, phases={"total": 3.0}))
    assert b is not None and b["main_s"] == 0.0
    assert run_breakdown(run("q3", "dpp", 1.0, report=False)) is None
    assert run_breakdown(run("q3", "spark", 1.0)) is None


def test_filter_cache_counts_hits_built_and_skipped() -> None:
    r = run("q3", "dpp", 1.0, filters=[flt(hit=True), flt(), flt(outcome="timeout"),
                                       flt(outcome="skipped"), flt(hit=True, outcome="skipped")])
    assert filter_cache(r) == {"hits": 2, "built": 2, "skipped": 1, "filters": 5}
    assert filter_cache(run("q3", "dpp", 1.0, report=False))["filters"] == 0


def three_queries() -> dict[str, Any]:
    """q3: two repetitions (rep 1 hits the cache); q7: dpp without a report; q9: no spark."""
    return result([
        run("q3", "spark", 4.0, rep=0), run("q3", "spark", 6.0, rep=1),
        run("q3", "dpp", 5.0, rep=0, phases={**P, "build": 1.0}, filters=[flt(), flt()],
            readers=0.3),
        run("q3", "dpp", 3.0, rep=1, phases={**P, "build": 0.2, "total": 0.7},
            filters=[flt(hit=True), flt(hit=True)]),
        run("q7", "spark", 2.0), run("q7", "dpp", 2.2, report=False),
        run("q9", "dpp", 1.0, phases={"analysis": 0.05, "total": 0.05},
            filters=[flt(outcome="skipped")]),
        run("q9", "spark", 9.0, ok=False),
    ])


def test_medians_per_component_and_cache_counts_per_query() -> None:
    bd = dpp_breakdown(three_queries(), "all")["path"]
    q3 = bd["queries"]["q3"]
    assert q3["reports"] == 2
    assert q3["build_s"] == pytest.approx(0.6)                 # median of 1.0 and 0.2
    assert q3["main_s"] == pytest.approx((3.0 + 1.8) / 2)      # 5-0.5-1.5 and 3-0.5-0.7
    assert q3["dpp_s"] == 4.0 and q3["spark_s"] == 5.0
    assert q3["dpp_over_spark"] == pytest.approx(0.8)
    assert q3["filter_cache"] == {"hits": 2, "built": 2, "skipped": 0, "filters": 4, "runs": 2}
    assert [(r["rep"], r["hits"], r["built"]) for r in q3["filter_cache_runs"]] == [
        (0, 0, 2), (1, 2, 0)]
    q7 = bd["queries"]["q7"]
    assert q7["reports"] == 0 and q7["main_s"] is None and q7["analysis_s"] is None
    assert q7["dpp_s"] == 2.2 and q7["spark_s"] == 2.0
    assert q7["filter_cache"]["runs"] == 0
    q9 = bd["queries"]["q9"]
    assert q9["spark_s"] is None and q9["dpp_over_spark"] is None


def test_sums_over_queries_with_a_report_and_ratio_over_those_spark_ran() -> None:
    bd = dpp_breakdown(three_queries(), "all")["path"]
    s = bd["sums"]
    assert s["queries"] == 2 and s["queries_with_spark"] == 1          # q3, q9; q7 no report
    assert s["analysis_s"] == pytest.approx(0.02 + 0.05)
    assert s["main_s"] == pytest.approx(2.4 + 0.45)                     # q9: 1-0.5-0.05
    assert s["dpp_s"] == pytest.approx(4.0 + 1.0) and s["spark_s"] == 5.0
    assert s["dpp_over_spark"] == pytest.approx(0.8)                    # q3 only
    assert bd["filter_cache"] == {"hits": 2, "built": 2, "skipped": 1, "filters": 5, "runs": 3}


def test_the_headline_is_each_querys_cold_run_and_warm_runs_are_apart() -> None:
    """By default (the report's headline) only each query's first measured run per mode
    counts; the later repetitions are summed apart as ``warm``."""
    res = three_queries()
    q3 = dpp_breakdown(res)["path"]["queries"]["q3"]
    assert q3["reports"] == 1 and q3["build_s"] == 1.0
    assert q3["main_s"] == pytest.approx(3.0)                  # 5 - 0.5 - 1.5
    assert q3["dpp_s"] == 5.0 and q3["spark_s"] == 4.0 and q3["dpp_over_spark"] == 1.25
    assert q3["filter_cache"] == {"hits": 0, "built": 2, "skipped": 0, "filters": 2, "runs": 1}
    ks = res["summary"]["kinds"]["path"]
    assert ks["totals"]["spark"]["total_s"] == 6.0             # q3 4.0 + q7 2.0 (q9 failed)
    assert ks["totals"]["dpp"]["total_s"] == pytest.approx(8.2)
    warm = res["summary"]["warm"]["path"]
    assert warm["repeats"] == 1 and warm["queries"] == 1       # only q3 ran twice
    assert warm["totals"]["spark"]["total_s"] == 6.0 and warm["totals"]["dpp"]["total_s"] == 3.0
    assert warm["dpp_over_spark"]["total_s"] == 0.5
    md = render_markdown(res)
    assert "- **warm** (median of 1 later run(s) per query, not the headline): spark 6.0s, " \
           "dpp 3.0s; dpp / spark 0.50" in md
    # one run per query and mode: no warm runs, no warm line
    one = result([run("q3", "spark", 4.0), run("q3", "dpp", 5.0, phases=P)])
    assert "warm" not in one["summary"] and "- **warm** (" not in render_markdown(one)


def test_summary_in_results_json_holds_the_breakdown_and_the_run_total() -> None:
    res = three_queries()
    ks = res["summary"]["kinds"]["path"]
    assert set(ks["dpp_breakdown"]["queries"]) == {"q3", "q7", "q9"}
    assert res["summary"]["filter_cache"]["hits"] == 2
    assert "dpp_breakdown" not in summarize(
        {"modes": ["off", "spark"], "runs": [run("q3", "spark", 1.0)]})["kinds"]["path"]


def test_markdown_table_rows_sum_row_and_summary_lines() -> None:
    md = render_markdown(three_queries())
    assert "### dpp overhead breakdown" in md
    # the cold runs: q3's first repetition
    assert ("| q3 | 0.500 | 0.300 | 0.020 | 1.000 | 0.800 | 0.100 | 0.300 | 0.000 | 3.000 | 5.000 "
            "| 4.000 "
            "| 1.25 "
            "| 0 hit / 2 built |") in md
    assert "| q7 | - | - | - | - | - | - | - | - | - | 2.200 | 2.000 | 1.10 | - |" in md
    assert "| q9 | 0.500 | 0.000 | 0.050 | 0.000 | 0.000 | 0.000 | 0.000 | 0.000 | 0.450 | 1.000 " \
           "| - | - " \
           "| 0 hit / 0 built / 1 skipped |" in md
    assert "| **sum** (2) | 1.000 | 0.300 | 0.070 |" in md
    # dpp's elapsed over its main query: 6.00 / 3.45, and without Spark's readers 5.70 / 3.45
    assert "- **dpp overhead** (sums over the 2 queries with a dpp report): open 1.00s, " \
           "of which Spark's readers 0.30s, " \
           "analysis 0.07s, build 1.00s, loader wait 0.80s, split enumeration 0.10s, " \
           "handoff 0.30s, Spark waited 0.00s, main query 3.45s; " \
           "dpp elapsed 6.00s (1.74x the main query; without Spark's readers 1.65x), " \
           "spark 4.00s over 1 of them (dpp / spark 1.25)" in md
    assert "- **filter cache: 0 hits of 3 filters (2 built, 1 skipped) over 2 dpp run(s)**" in md


def test_no_dpp_mode_no_breakdown_and_two_kinds_get_a_run_total() -> None:
    assert "dpp overhead" not in render_markdown(
        result([run("q3", "spark", 1.0)], modes=("spark",)))
    md = render_markdown(result([
        run("q3", "dpp", 1.0, filters=[flt(hit=True)]),
        run("q3", "dpp", 1.0, filters=[flt()], kind="catalog")]))
    assert md.count("### dpp overhead breakdown") == 2
    assert "All table kinds: filter cache: 1 hits of 2 filters (1 built, 0 skipped) " \
           "over 2 dpp run(s)." in md


def test_reads_a_real_job_report_dict() -> None:
    """The keys read are the schema's: a JobReport as the bench stores it (``to_dict``)."""
    from dpp.runtime.report import JobReport

    rep = JobReport.start("select 1", "sql", {}, enabled=True)
    rep.phases.update(analysis=0.01, build=0.4, wait=0.3, handoff=0.1, total=0.6)
    rep.add_filter({"filter_id": "a", "cache_hit": True, "outcome": "complete"})
    rep.add_filter({"filter_id": "b", "outcome": "skipped"})
    rep.add_filter({"filter_id": "c", "outcome": "complete", "build_seconds": 0.4})
    r = run("q3", "dpp", 2.0)
    r["dpp_report"] = rep.to_dict()
    assert run_breakdown(r) == pytest.approx({"open_s": 0.5, "readers_s": 0.0,
                                              "analysis_s": 0.01, "build_s": 0.4,
                                              "wait_s": 0.3, "enum_s": 0.0, "handoff_s": 0.1,
                                              "blocked_s": 0.0, "main_s": 0.9})
    assert filter_cache(r) == {"hits": 1, "built": 1, "skipped": 1, "filters": 3}
