"""tpcds.report: the issue's three targets and the ran / not-run coverage, from runs."""
from __future__ import annotations

import pytest

from typing import Any, Optional

from tpcds.report import coverage, render_markdown, summarize


def run(q: str, mode: str, total: float, read: int, *, ok: bool = True,
        correct: Optional[bool] = True, timed_out: bool = False, rep: int = 0,
        pruned: int = 0) -> dict[str, Any]:
    return {
        "query": q, "mode": mode, "kind": "path", "rep": rep, "ok": ok, "correct": correct,
        "timed_out": timed_out, "error": None if ok else ("timed out after 9s" if timed_out
                                                          else "AnalysisException: bad"),
        "mismatch": None if correct is not False else "row 3 differs",
        "total_s": total if ok else None, "listing_s": total / 4 if ok else None,
        "execution_s": 3 * total / 4 if ok else None,
        "metrics": {"fact_bytes_read": read, "executor_cpu_ms": total * 100} if ok else {},
        "dpp_report": ({"tables": [{"pruned_dynamic": pruned}]} if mode == "dpp" else None),
    }


def result(runs: list[dict[str, Any]], untranslated: tuple[str, ...] = ()) -> dict[str, Any]:
    r = {"modes": ["off", "spark", "dpp"], "runs": runs, "config": {"repeat": 1},
         "untranslated_queries": list(untranslated)}
    r["summary"] = summarize(r)
    return r


def test_all_targets_met() -> None:
    res = result([
        run("q3", "off", 20, 200), run("q3", "spark", 8, 30), run("q3", "dpp", 6, 30, pruned=5),
        run("q96", "off", 15, 200), run("q96", "spark", 13, 200), run("q96", "dpp", 14, 200),
    ])
    tg = res["summary"]["kinds"]["path"]["targets"]
    assert tg["data_read_not_above_spark"] is True and tg["data_read_above_spark"] == []
    assert tg["pruning_queries"] == ["q3"]              # q96: nobody pruned anything
    assert (tg["pruning_elapsed_dpp_s"], tg["pruning_elapsed_spark_s"]) == (6, 8)
    assert tg["pruning_elapsed_below_spark"] is True
    assert tg["slower_than_spark"] == []                # 14 / 13 < 1.10
    md = render_markdown(res)
    assert md.count("**met**") == 3 and "**missed**" not in md


def test_each_missed_target_is_named_with_its_figures() -> None:
    res = result([
        run("q7", "off", 20, 200), run("q7", "spark", 5, 40), run("q7", "dpp", 9, 60, pruned=3),
        run("q9", "off", 10, 100), run("q9", "spark", 10, 100), run("q9", "dpp", 10.5, 100),
    ])
    tg = res["summary"]["kinds"]["path"]["targets"]
    assert tg["data_read_above_spark"] == [["q7", 60, 40]]
    assert tg["pruning_queries"] == ["q7"] and tg["pruning_elapsed_below_spark"] is False
    assert [s[0] for s in tg["slower_than_spark"]] == ["q7"]   # 9 / 5 = 1.8; q9 1.05 is within
    md = render_markdown(res)
    assert "**missed** on q7 (0.0 MB vs 0.0 MB)" in md
    assert "q7 (1.80x: 9.00s vs 5.00s)" in md


def test_no_query_that_prunes_is_not_a_missed_target() -> None:
    res = result([run("q22", "spark", 4, 0), run("q22", "dpp", 4.2, 0)])
    tg = res["summary"]["kinds"]["path"]["targets"]
    assert tg["pruning_queries"] == []
    md = render_markdown(res)
    assert "where pruning applies: n/a (no query here prunes)" in md
    assert "**missed**" not in md


def test_coverage_counts_ran_correct_wrong_and_not_run_with_reasons() -> None:
    runs = [
        run("q1", "off", 1, 1), run("q1", "spark", 1, 1), run("q1", "dpp", 1, 1),
        run("q2", "off", 1, 1), run("q2", "spark", 1, 1, correct=False), run("q2", "dpp", 1, 1),
        run("q4", "spark", 9, 0, ok=False, timed_out=True, rep=-1),
        run("q5", "off", 1, 1), run("q5", "spark", 1, 1), run("q5", "dpp", 1, 1, ok=False,
                                                                  correct=None),
    ]
    cov = coverage({"modes": ["off", "spark", "dpp"], "runs": runs,
                    "untranslated_queries": ["q8"]})["path"]
    assert cov["ran"] == ["q1", "q2"]
    assert cov["correct"] == ["q1"]
    assert cov["wrong"] == {"q2": "spark: row 3 differs"}
    assert cov["not_run"] == {"q4": "spark: timed out after 9s",
                              "q5": "dpp: AnalysisException: bad",
                              "q8": "Spark SQL translation failed"}


def test_statistics_as_set_against_statistics_off() -> None:
    """Mode ``dpp-nostats`` beside ``dpp``: the ratio of sums and every query past 5%."""
    r = {"modes": ["dpp", "dpp-nostats"], "config": {"repeat": 1}, "untranslated_queries": [],
         "runs": [run("q3", "dpp", 10.4, 100), run("q3", "dpp-nostats", 10.0, 100),
                  run("q37", "dpp", 4.0, 30), run("q37", "dpp-nostats", 8.0, 90),
                  run("q19", "dpp", 10.6, 50), run("q19", "dpp-nostats", 10.0, 50)]}
    r["summary"] = summarize(r)
    sc = r["summary"]["kinds"]["path"]["dpp_over_nostats"]
    assert sc["queries"] == 3 and abs(sc["elapsed"] - 25.0 / 28.0) < 1e-9
    assert abs(sc["fact_bytes_read"] - 180 / 240) < 1e-9
    assert [q for q, _ in sc["slower_than_5pct"]] == ["q19"]          # 1.06; q3 is 1.04
    assert "more than 5% slower: q19" in render_markdown(r)


def test_paired_ratios_cancel_a_drift_over_the_run() -> None:
    """Both modes get faster rep by rep (warm-up); the cold run (the headline) has dpp 13%
    slower, every later repetition has it faster: the paired ratio says so beside the
    headline, and the warm medians are reported apart from it."""
    runs = []
    for rep, (d, s) in enumerate([(3.5, 3.1), (1.26, 1.3), (1.2, 1.25)]):
        runs += [run("q9", "dpp", d, 10, rep=rep), run("q9", "spark", s, 10, rep=rep)]
    r = {"modes": ["spark", "dpp"], "config": {"repeat": 3}, "untranslated_queries": [],
         "runs": runs}
    r["summary"] = summarize(r)
    ks = r["summary"]["kinds"]["path"]
    tg = ks["targets"]
    assert [q for q, *_ in tg["slower_than_spark"]] == ["q9"]          # cold: 3.5 vs 3.1
    assert tg["slower_than_spark_paired"] == []          # median of 1.13, 0.97, 0.96
    assert ks["totals"]["dpp"]["total_s"] == 3.5 and ks["totals"]["spark"]["total_s"] == 3.1
    warm = r["summary"]["warm"]["path"]
    assert warm["repeats"] == 2
    assert warm["totals"]["dpp"]["total_s"] == pytest.approx(1.23)       # median of 1.26, 1.2
    assert warm["totals"]["spark"]["total_s"] == pytest.approx(1.275)
    md = render_markdown(r)
    assert "median of per-repetition ratios (modes back to back in each repetition): **met**" \
        in md
    assert "**Headline: the cold run**" in md
    assert "- **warm** (median of 2 later run(s) per query, not the headline): spark 1.3s, " \
           "dpp 1.2s; dpp / spark 0.96" in md
