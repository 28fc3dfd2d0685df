"""The benchmark report: a summary, a Markdown table in the Trino benchmark's format, a chart.

The headline is the **cold** run: per query and mode the first measured run (``rep`` 0), which
the bench starts with dpp's learned state forgotten (cached filters, footers, verdicts), as a
new job meets it. With ``--repeat N`` the later runs are **warm** (the same JVM, page cache
and whatever dpp may cache): their median per query and mode is reported beside, labelled.
"Data read" is the bytes of fact-table files the scans read (``filesSize``),
the figure partition pruning changes; CPU is executor CPU time from Spark's status store.
With mode ``dpp`` the report also splits dpp's elapsed into its overhead (analysis, build,
loader wait, handoff) and the main query, next to spark's, and counts filter cache hits, so a
slow dpp query shows where its time went.
"""
from __future__ import annotations

import logging
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any, Optional

log = logging.getLogger(__name__)

#: columns aggregated per query and mode: (key in the summary, how to read it from a run)
COLUMNS: dict[str, Any] = {
    "total_s": lambda r: r["total_s"],
    "listing_s": lambda r: r["listing_s"],
    "execution_s": lambda r: r["execution_s"],
    "cpu_s": lambda r: r["metrics"].get("executor_cpu_ms", 0.0) / 1000.0,
    "fact_bytes_read": lambda r: r["metrics"].get("fact_bytes_read", 0),
    "fact_files_read": lambda r: r["metrics"].get("fact_files_read", 0),
    "fact_files_listed": lambda r: r["metrics"].get("fact_files_listed", 0),
    "fact_partitions_read": lambda r: r["metrics"].get("fact_partitions_read", 0),
    "input_bytes": lambda r: r["metrics"].get("input_bytes", 0),
    # what the query's own jobs read (no dpp build side): row groups skipped show here
    "query_input_bytes": lambda r: r["metrics"].get("query_input_bytes",
                                                    r["metrics"].get("input_bytes", 0)),
}

BUCKETS = ((">50%", 0.5, 1.01), ("30-50%", 0.3, 0.5), ("10-30%", 0.1, 0.3))


#: which measured runs a figure is made of: the headline ``cold`` runs, the ``warm`` ones
RUN_SETS = ("cold", "warm", "all")


def measured_runs(result: dict[str, Any], which: str = "cold") -> list[dict[str, Any]]:
    """``cold``: each query's first measured run per mode (rep 0); ``warm``: the later
    repetitions; ``all``: both. Unmeasured runs (rep < 0, kept when they timed out) are in
    none. Results written before cold runs were told apart hold rep 0 all the same."""
    if which not in RUN_SETS:
        raise ValueError(f"unknown run set {which!r}: expected one of {', '.join(RUN_SETS)}")
    lo, hi = {"cold": (0, 0), "warm": (1, None), "all": (0, None)}[which]
    return [r for r in result["runs"]
            if r.get("rep", 0) >= lo and (hi is None or r.get("rep", 0) <= hi)]


def aggregate(result: dict[str, Any], which: str = "cold"
              ) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """kind → query → mode → column → median over the successful measured runs of
    ``which`` (:func:`measured_runs`; one run each for the cold headline)."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in measured_runs(result, which):
        if r["ok"] and r.get("metrics"):
            groups[(r["kind"], r["query"], r["mode"])].append(r)
    out: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    for (kind, q, mode), runs in groups.items():
        cols = {c: float(statistics.median(f(r) for r in runs)) for c, f in COLUMNS.items()}
        cols["runs"] = len(runs)
        out.setdefault(kind, {}).setdefault(q, {})[mode] = cols
    return out


def _reduction(new: float, base: float) -> Optional[float]:
    return None if base <= 0 else 1.0 - new / base


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    """Improvement buckets, average CPU and data-read reductions against ``off``, the
    dpp/spark ratio of every column (ratio of the sums over queries both modes ran), and with
    mode ``dpp`` the overhead breakdown and filter cache counts (:func:`dpp_breakdown`)."""
    agg = aggregate(result)
    modes = result.get("modes", [])
    breakdown = dpp_breakdown(result) if "dpp" in modes else {}
    summary: dict[str, Any] = {
        "failures": sum(1 for r in result["runs"] if _failed(r)),
        "mismatches": sum(1 for r in result["runs"] if r.get("correct") is False),
        # --no-check: runs whose rows differ from the baseline mode's (see coverage)
        "disagreements": sum(1 for r in result["runs"] if r.get("agrees") is False),
        "errors": sum(1 for r in result["runs"] if not r["ok"]),
        "kinds": {},
    }
    for kind, per_q in agg.items():
        ks: dict[str, Any] = {"queries": len(per_q), "against_off": {}, "totals": {}}
        for mode in modes:
            ks["totals"][mode] = _totals(per_q, mode)
        if "off" in modes:
            for mode in modes:
                if mode == "off":
                    continue
                pairs = [(v[mode], v["off"]) for v in per_q.values() if mode in v and "off" in v]
                buckets = {name: 0 for name, _, _ in BUCKETS}
                for new, base in pairs:
                    red = _reduction(new["total_s"], base["total_s"])
                    for name, lo, hi in BUCKETS:
                        if red is not None and lo <= red < hi:
                            buckets[name] += 1
                cpu = [x for x in (_reduction(n["cpu_s"], b["cpu_s"]) for n, b in pairs)
                       if x is not None]
                data = [x for x in (_reduction(n["fact_bytes_read"], b["fact_bytes_read"])
                                    for n, b in pairs) if x is not None]
                ela = [x for x in (_reduction(n["total_s"], b["total_s"]) for n, b in pairs)
                       if x is not None]
                ks["against_off"][mode] = {
                    "queries": len(pairs),
                    "improved": buckets,
                    "avg_elapsed_reduction": _mean(ela),
                    "avg_cpu_reduction": _mean(cpu),
                    "avg_data_read_reduction": _mean(data),
                }
        if "dpp" in modes and "spark" in modes:
            ks["dpp_over_spark"] = _ratio_of_sums(per_q, "dpp", "spark")
            ks["targets"] = targets(per_q, _dpp_pruned(result, kind),
                                    paired_ratios(result, kind, "dpp", "spark"))
        if "dpp" in modes and "dpp-nostats" in modes:
            ks["dpp_over_nostats"] = stats_comparison(
                per_q, paired_ratios(result, kind, "dpp", "dpp-nostats"))
        if kind in breakdown:
            ks["dpp_breakdown"] = breakdown[kind]
        summary["kinds"][kind] = ks
    warm = warm_summary(result)
    if warm:
        summary["warm"] = warm
    summary["coverage"] = coverage(result)
    if breakdown:
        # the run's total over every measured run, warm ones included: their hits show here
        summary["filter_cache"] = _no_cache()
        for bd in dpp_breakdown(result, "all").values():
            _add_counts(summary["filter_cache"], bd["filter_cache"])
    return summary


def warm_summary(result: dict[str, Any]) -> dict[str, Any]:
    """kind → the warm runs' figures (``--repeat`` above 1): ``repeats`` (later runs per
    query and mode), ``totals`` (per mode, each column's per-query medians summed) and
    ``dpp_over_spark`` (ratio of those sums over the queries both ran); empty without any."""
    out: dict[str, Any] = {}
    modes = result.get("modes", [])
    for kind, per_q in aggregate(result, "warm").items():
        runs = [int(m["runs"]) for v in per_q.values() for m in v.values()]
        ks: dict[str, Any] = {"queries": len(per_q), "repeats": max(runs, default=0),
                              "totals": {m: _totals(per_q, m) for m in modes
                                         if any(m in v for v in per_q.values())}}
        if "dpp" in modes and "spark" in modes:
            ks["dpp_over_spark"] = _ratio_of_sums(per_q, "dpp", "spark")
        out[kind] = ks
    return out


def _totals(per_q: dict[str, dict[str, dict[str, float]]], mode: str) -> dict[str, float]:
    """Each column's per-query figures of ``mode`` summed over the queries it ran."""
    return {c: sum(v[mode][c] for v in per_q.values() if mode in v) for c in COLUMNS}


def _ratio_of_sums(per_q: dict[str, dict[str, dict[str, float]]], a: str, b: str
                   ) -> dict[str, Optional[float]]:
    """Per column, ``a``'s sum over ``b``'s over the queries both ran (None where ``b``'s
    is 0)."""
    both = [v for v in per_q.values() if a in v and b in v]
    return {c: (sum(v[a][c] for v in both) / s if (s := sum(v[b][c] for v in both)) else None)
            for c in COLUMNS}


#: "auto must not make any query more than 5% slower than statistics pruning off"
STATS_SLOWER_LIMIT = 1.05


def stats_comparison(per_q: dict[str, dict[str, dict[str, float]]],
                     paired: Optional[dict[str, float]] = None) -> dict[str, Any]:
    """``dpp`` (statistics pruning as configured: ``auto`` by default) against ``dpp-nostats``
    (off): the ratio of summed elapsed and fact bytes, and every query past 5% slower, by the
    ratio of medians and by the median of per-repetition ratios (:func:`paired_ratios`)."""
    both = {q: v for q, v in per_q.items() if "dpp" in v and "dpp-nostats" in v}
    dpp_s = sum(v["dpp"]["total_s"] for v in both.values())
    off_s = sum(v["dpp-nostats"]["total_s"] for v in both.values())
    dpp_b = sum(v["dpp"]["fact_bytes_read"] for v in both.values())
    off_b = sum(v["dpp-nostats"]["fact_bytes_read"] for v in both.values())
    ratios = sorted(([q, v["dpp"]["total_s"] / v["dpp-nostats"]["total_s"]]
                     for q, v in both.items() if v["dpp-nostats"]["total_s"] > 0),
                    key=lambda x: -x[1])
    return {"queries": len(both), "elapsed": dpp_s / off_s if off_s else None,
            "fact_bytes_read": dpp_b / off_b if off_b else None,
            "slowest": ratios[:5],
            "slower_than_5pct": [r for r in ratios if r[1] > STATS_SLOWER_LIMIT],
            "paired_slowest": sorted(([q, x] for q, x in (paired or {}).items() if q in both),
                                     key=lambda x: -x[1])[:5],
            "paired_slower_than_5pct": sorted(
                ([q, x] for q, x in (paired or {}).items()
                 if q in both and x > STATS_SLOWER_LIMIT), key=lambda x: -x[1])}


def _dpp_pruned(result: dict[str, Any], kind: str) -> set[str]:
    """Queries whose ``dpp`` report shows partitions or files skipped by a dynamic filter."""
    out = set()
    for r in result["runs"]:
        rep = r.get("dpp_report") or {}
        if r["kind"] == kind and r["mode"] == "dpp" and any(
                t.get("pruned_dynamic", 0) > 0 or t.get("files_pruned_stats", 0) > 0
                or t.get("files_pruned_buckets", 0) > 0
                for t in rep.get("tables", [])):
            out.add(r["query"])
    return out


#: "no query more than 10% slower than spark": the per-query elapsed limit of dpp/spark
SLOWER_LIMIT = 1.10


def paired_ratios(result: dict[str, Any], kind: str, a: str, b: str,
                  which: str = "all") -> dict[str, float]:
    """Per query, the median over repetitions of ``a``'s elapsed / ``b``'s elapsed *in the
    same repetition*. The modes of a repetition run back to back (order rotating), so a drift
    over the run (JIT warm-up, page cache, a busy neighbour) cancels in each ratio, where the
    ratio of two medians taken over different moments need not."""
    by: dict[tuple[str, int], dict[str, float]] = defaultdict(dict)
    for r in measured_runs(result, which):
        if r["kind"] == kind and r["ok"] and r.get("total_s"):
            by[(r["query"], r["rep"])][r["mode"]] = r["total_s"]
    ratios: dict[str, list[float]] = defaultdict(list)
    for (q, _), t in by.items():
        if a in t and b in t and t[b] > 0:
            ratios[q].append(t[a] / t[b])
    return {q: float(statistics.median(v)) for q, v in ratios.items()}


def targets(per_q: dict[str, dict[str, dict[str, float]]], dpp_pruned: set[str],
            paired: Optional[dict[str, float]] = None) -> dict[str, Any]:
    """The three targets of the benchmark issue, measured: dpp reads no more fact data than
    spark on any query; dpp's total elapsed is below spark's over the queries where any pruning
    applies (dpp's report shows dynamic pruning, or spark read less fact data than off); no
    query is more than 10% slower than spark."""
    both = {q: v for q, v in per_q.items() if "dpp" in v and "spark" in v}
    more_data = sorted(
        ([q, v["dpp"]["fact_bytes_read"], v["spark"]["fact_bytes_read"]]
         for q, v in both.items() if v["dpp"]["fact_bytes_read"] > v["spark"]["fact_bytes_read"]),
        key=lambda x: int(x[0][1:]))
    pruned = sorted((q for q, v in both.items()
                     if q in dpp_pruned or ("off" in v and v["spark"]["fact_bytes_read"]
                                            < v["off"]["fact_bytes_read"])),
                    key=lambda n: int(n[1:]))
    dpp_s = sum(both[q]["dpp"]["total_s"] for q in pruned)
    spark_s = sum(both[q]["spark"]["total_s"] for q in pruned)
    slower = sorted(([q, v["dpp"]["total_s"] / v["spark"]["total_s"], v["dpp"]["total_s"],
                      v["spark"]["total_s"]]
                     for q, v in both.items()
                     if v["spark"]["total_s"] > 0
                     and v["dpp"]["total_s"] > SLOWER_LIMIT * v["spark"]["total_s"]),
                    key=lambda x: -x[1])
    return {
        "queries_compared": len(both),
        "data_read_not_above_spark": not more_data,
        "data_read_above_spark": more_data,
        "pruning_queries": pruned,
        "pruning_elapsed_dpp_s": dpp_s,
        "pruning_elapsed_spark_s": spark_s,
        "pruning_elapsed_below_spark": bool(pruned) and dpp_s < spark_s,
        "slower_than_spark_limit": SLOWER_LIMIT,
        "slower_than_spark": slower,
        # the same judged by the median of per-repetition ratios (see paired_ratios)
        "slower_than_spark_paired": sorted(([q, x] for q, x in (paired or {}).items()
                                            if q in both and x > SLOWER_LIMIT),
                                           key=lambda x: -x[1]),
    }


def _failed(r: dict[str, Any]) -> bool:
    """An error, rows unlike DuckDB's, or (``--no-check``) rows unlike the baseline mode's."""
    return not r["ok"] or r.get("correct") is False or r.get("agrees") is False


def coverage(result: dict[str, Any]) -> dict[str, Any]:
    """Per table kind: which queries ran in every mode with DuckDB's answer, and which did not
    (with the reason), so "how many ran" and "all that ran were right" come from the runs.

    ``checked`` says whether DuckDB's answers were computed. Without them (``--no-check``)
    ``correct`` stays empty — nothing was checked, which is not the same as wrong — and
    ``agree`` lists the queries whose every measured run gave the baseline mode's rows
    (``disagree``: differing, with why; ``unjudged``: answers cut at a LIMIT that differ only
    where ties may)."""
    out: dict[str, Any] = {}
    modes = result.get("modes", [])
    checked = result.get("config", {}).get("check", True) is not False
    by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in result["runs"]:
        by[(r["kind"], r["query"])].append(r)
    for (kind, q), runs in by.items():
        k = out.setdefault(kind, {"ran": [], "correct": [], "not_run": {}, "wrong": {},
                                  "checked": checked, "agree": [], "disagree": {},
                                  "unjudged": {}})
        measured = [r for r in runs if r["rep"] >= 0]
        cut = [r for r in runs if r.get("timed_out")]
        err = [r for r in runs if not r["ok"] and not r.get("timed_out")]
        if cut:
            k["not_run"][q] = "; ".join(f"{r['mode']}: {r['error']}" for r in cut)
        elif err:
            k["not_run"][q] = "; ".join(f"{r['mode']}: {r['error']}" for r in err)
        elif {r["mode"] for r in measured} >= set(modes):
            k["ran"].append(q)
            wrong = [r for r in measured if r.get("correct") is False]
            if wrong:
                k["wrong"][q] = "; ".join(f"{r['mode']}: {r['mismatch']}" for r in wrong)
            elif all(r.get("correct") is True for r in measured):
                k["correct"].append(q)
            if not checked:
                apart = [r for r in measured if r.get("agrees") is False]
                open_ = [r for r in measured if r.get("agrees") is None and r.get("disagreement")]
                if apart:
                    k["disagree"][q] = "; ".join(f"{r['mode']}: {r['disagreement']}"
                                                 for r in apart)
                elif open_:
                    k["unjudged"][q] = "; ".join(f"{r['mode']}: {r['disagreement']}"
                                                 for r in open_)
                elif all(r.get("agrees") is True for r in measured):
                    k["agree"].append(q)
    for k in out.values():
        for key in ("ran", "correct", "agree"):
            k[key].sort(key=lambda n: int(n[1:]))
    for q in result.get("untranslated_queries", []):
        for k in out.values():
            k["not_run"][q] = "Spark SQL translation failed"
    return out


# ------------------------------------------------------------------------- dpp overhead

#: What a ``dpp`` run's elapsed time goes to, in the order a query goes through it: (key in
#: the breakdown, column title). ``open`` is the bench's listing phase (``register_table`` and
#: the dimension views), kept so the breakdown explains the same elapsed the main table shows;
#: ``Spark's readers`` is the part of it Spark's mode spends alike (the dimensions' readers,
#: a catalog table's refresh: ``Run.readers_s``), the rest of it is dpp's.
BREAKDOWN: tuple[tuple[str, str], ...] = (
    ("open_s", "open"), ("readers_s", "of which Spark's readers"), ("analysis_s", "analysis"),
    ("build_s", "build"),
    ("wait_s", "loader wait"), ("enum_s", "split enumeration"), ("handoff_s", "handoff"),
    ("blocked_s", "Spark waited"), ("main_s", "main query"))
#: the optimizer hook's phases Spark's execution waits for: the rule (in the optimizer) and
#: the scans' listings (the rest of dpp's work runs beside Spark's)
_HOOK_BLOCKING = ("analysis", "submit", "row_filter_wait", "listing_wait")
#: breakdown key -> the phase of the dpp report it is read from
_PHASE_OF = {"analysis_s": "analysis", "build_s": "build", "wait_s": "wait",
             "enum_s": "split_enumeration", "handoff_s": "handoff"}


def run_breakdown(run: dict[str, Any]) -> Optional[dict[str, float]]:
    """One ``dpp`` run's elapsed split by component; None when the run kept no dpp report.

    A phase the report lacks counts 0: the session only records the phases it went through
    (no build phase when no filter was started); ``handoff`` adds ``whole_listing`` (catalog
    tables read whole, listed and handed over by dpp); ``split enumeration`` is the loader's
    work besides waiting (metastore, listing, footers). Build and loader wait overlap (the loader
    waits while the build sides run), so the components need not add up to the elapsed.
    The main query is the report's ``execution`` phase when dpp ran the query itself
    (``dpp.collect``); the bench collects ``dpp.sql``'s DataFrame, so otherwise it is the
    elapsed minus the opening and dpp's own time before the query (the report's ``total``
    phase, or the sum of the other components when that is missing too). With the optimizer
    hook, dpp's build and loader run beside Spark's execution (Spark broadcasts, scans other
    tables meanwhile): what Spark waited for is the rule's time in the optimizer (analysis,
    submission) and its listings' wait on dpp's answers (the ``listing_wait`` phase, the
    ``Spark waited`` column), and the main query is the elapsed minus the opening and that.
    """
    rep = run.get("dpp_report")
    if not rep:
        return None
    ph: dict[str, float] = rep.get("phases") or {}
    out = {k: float(ph.get(p) or 0.0) for k, p in _PHASE_OF.items()}
    # catalog tables read whole: listed by dpp and handed over (alongside the builds, or alone)
    out["handoff_s"] += float(ph.get("whole_listing") or 0.0)
    out["open_s"] = float(run.get("listing_s") or 0.0)
    out["readers_s"] = min(out["open_s"], float(run.get("readers_s") or 0.0))
    elapsed = float(run.get("total_s") or 0.0)
    hooked = ph.get("listing_wait") is not None
    out["blocked_s"] = (sum(float(ph.get(k) or 0.0) for k in _HOOK_BLOCKING) if hooked
                        else 0.0)
    if ph.get("execution") is not None:
        out["main_s"] = float(ph["execution"])
    elif hooked:
        out["main_s"] = max(0.0, elapsed - out["open_s"] - out["blocked_s"])
    else:
        before = ph.get("total")
        if before is None:
            before = sum(out[k] for k in _PHASE_OF)
        out["main_s"] = max(0.0, elapsed - out["open_s"] - float(before))
    return out


def filter_cache(run: dict[str, Any]) -> dict[str, int]:
    """A dpp run's filters by how their domain came: ``hits`` (filter cache), ``skipped``
    (known not to prune, not built), ``built`` (a build side ran or was tried: every other
    filter), and ``filters``, all of them."""
    fs = (run.get("dpp_report") or {}).get("filters") or []
    hits = sum(1 for f in fs if f.get("cache_hit"))
    skipped = sum(1 for f in fs if not f.get("cache_hit") and f.get("outcome") == "skipped")
    return {"hits": hits, "built": len(fs) - hits - skipped, "skipped": skipped,
            "filters": len(fs)}


def _add_counts(into: dict[str, int], more: dict[str, int]) -> None:
    for k, v in more.items():
        into[k] = into.get(k, 0) + v


def _no_cache() -> dict[str, int]:
    return {"hits": 0, "built": 0, "skipped": 0, "filters": 0, "runs": 0}


def dpp_breakdown(result: dict[str, Any], which: str = "cold") -> dict[str, dict[str, Any]]:
    """kind → ``queries`` (per dpp query: median of each component over the runs with a dpp
    report, None without one; dpp and spark elapsed as in the main table, their ratio; the
    filter cache counts summed over the runs, and per run), ``sums`` (over the queries with
    a report) and ``filter_cache`` (the kind's total).

    Made of the ``which`` runs (the cold headline by default, as the main table). Medians are
    taken per component, like the main table's columns, so a slow repetition does not move
    them; the sums are sums of those medians, like the main table's totals.
    """
    agg = aggregate(result, which)
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in measured_runs(result, which):
        if r["mode"] == "dpp" and r["ok"] and r.get("metrics"):
            groups[(r["kind"], r["query"])].append(r)
    out: dict[str, dict[str, Any]] = {}
    for kind, per_q in agg.items():
        rows: dict[str, dict[str, Any]] = {}
        total = _no_cache()
        for q, v in per_q.items():
            if "dpp" not in v:
                continue
            runs = groups[(kind, q)]
            parts = [b for b in map(run_breakdown, runs) if b is not None]
            row: dict[str, Any] = {
                k: (float(statistics.median(b[k] for b in parts)) if parts else None)
                for k, _ in BREAKDOWN}
            dpp_s = v["dpp"]["total_s"]
            spark_s = v["spark"]["total_s"] if "spark" in v else None
            cache = _no_cache()
            per_run = []
            for r in runs:
                if r.get("dpp_report"):
                    c = filter_cache(r)
                    per_run.append({"rep": r["rep"], **c})
                    _add_counts(cache, {**c, "runs": 1})
            _add_counts(total, cache)
            row.update(reports=len(parts), dpp_s=dpp_s, spark_s=spark_s,
                       dpp_over_spark=dpp_s / spark_s if spark_s else None,
                       filter_cache=cache, filter_cache_runs=per_run)
            rows[q] = row
        have = [r for r in rows.values() if r["reports"]]
        paired = [r for r in have if r["spark_s"] is not None]
        dpp_paired = sum(r["dpp_s"] for r in paired)
        spark_sum = sum(r["spark_s"] for r in paired)
        sums: dict[str, Any] = {k: sum(r[k] for r in have) for k, _ in BREAKDOWN}
        sums.update(queries=len(have), dpp_s=sum(r["dpp_s"] for r in have),
                    queries_with_spark=len(paired), spark_s=spark_sum,
                    dpp_over_spark=dpp_paired / spark_sum if spark_sum else None)
        out[kind] = {"queries": rows, "sums": sums, "filter_cache": total}
    return out


def _cache_cell(c: dict[str, int]) -> str:
    if not c["runs"]:
        return "-"
    s = f"{c['hits']} hit / {c['built']} built"
    return s + (f" / {c['skipped']} skipped" if c["skipped"] else "")


def _cache_line(c: dict[str, int]) -> str:
    """``filter cache: H hits of N filters (B built, S skipped) over R dpp runs``."""
    return (f"filter cache: {c['hits']} hits of {c['filters']} filters ({c['built']} built, "
            f"{c['skipped']} skipped) over {c['runs']} dpp run(s)")


def _secs(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:.3f}"


def render_breakdown(bd: dict[str, Any]) -> list[str]:
    """Markdown lines of one kind's dpp overhead table (one row per dpp query, a sum row)."""
    rows = bd["queries"]
    if not rows:
        return []
    head = (["Query"] + [f"{title} (s)" for _, title in BREAKDOWN]
            + ["dpp elapsed (s)", "spark elapsed (s)", "dpp / spark",
               "filters (all runs)"])
    lines = ["### dpp overhead breakdown", "",
             ("Median per query over the repetitions; build and loader wait overlap (the "
              "loader waits while the build sides run); split enumeration = the loader's own "
              "work besides waiting (partition names and objects from the metastore, listing "
              "the kept folders, footers), summed over the tables it loads at once (once per "
              "group of references sharing one load); handoff includes listing the catalog "
              "tables a query reads whole (`spark.dpp.listWholeCatalogTables`); Spark waited "
              "= what of it Spark's execution waited for with the optimizer hook (its rule, "
              "its scans' listings; the rest runs beside Spark's execution); main query = "
              "the rest of the elapsed after opening the tables and what Spark waited for "
              "(without the hook: dpp's planning); of the opening, Spark's readers = what "
              "Spark's mode spends alike (each dimension's `spark.read.parquet`, a catalog "
              "table's refresh). `-`: no dpp report."), "",
             "| " + " | ".join(head) + " |",
             "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]

    def ratio(x: Optional[float]) -> str:
        return "-" if x is None else f"{x:.2f}"

    for q in sorted(rows, key=lambda n: int(n[1:])):
        r = rows[q]
        lines.append("| " + " | ".join(
            [q] + [_secs(r[k]) for k, _ in BREAKDOWN]
            + [_secs(r["dpp_s"]), _secs(r["spark_s"]), ratio(r["dpp_over_spark"]),
               _cache_cell(r["filter_cache"])]) + " |")
    s = bd["sums"]
    lines.append("| " + " | ".join(
        [f"**sum** ({s['queries']})"] + [_secs(s[k]) for k, _ in BREAKDOWN]
        + [_secs(s["dpp_s"]), _secs(s["spark_s"]) if s["queries_with_spark"] else "-",
           ratio(s["dpp_over_spark"]), _cache_cell(bd["filter_cache"])]) + " |")
    return lines + [""]


def breakdown_summary(bd: dict[str, Any]) -> list[str]:
    """The two summary bullets of one kind: the components' sums and the filter cache total."""
    s = bd["sums"]
    if not bd["queries"]:
        return []
    ratio = "-" if s["dpp_over_spark"] is None else f"{s['dpp_over_spark']:.2f}"
    return [f"- **dpp overhead** (sums over the {s['queries']} queries with a dpp report): "
            + ", ".join(f"{title} {s[k]:.2f}s" for k, title in BREAKDOWN)
            + f"; dpp elapsed {s['dpp_s']:.2f}s"
            + (f" ({s['dpp_s'] / s['main_s']:.2f}x the main query; without Spark's readers "
               f"{(s['dpp_s'] - s['readers_s']) / s['main_s']:.2f}x)" if s["main_s"] else "")
            + (f", spark {s['spark_s']:.2f}s over {s['queries_with_spark']} of them "
               f"(dpp / spark {ratio})" if s["queries_with_spark"] else ""),
            f"- **{_cache_line(bd['filter_cache'])}**"]


def _mean(xs: list[float]) -> Optional[float]:
    return sum(xs) / len(xs) if xs else None


def _pct(x: Optional[float]) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _mb(b: float) -> str:
    return f"{b / 1e6:.1f} MB"


# ------------------------------------------------------------------------- storage requests

#: latencies of the object-store projection (DESIGN: a LIST is a network round trip)
PROJECTION_LIST_MS = 20.0
PROJECTION_HEAD_MS = 5.0


def storage_table(result: dict[str, Any], kind: str) -> dict[str, dict[str, dict[str, Any]]]:
    """query -> mode -> medians over the measured runs of LIST, HEAD, metastore partitions
    fetched and names listed, measured elapsed, and elapsed projected at object-store latency
    (measured + LIST x 20 ms + HEAD x 5 ms, one after another: arithmetic on counted calls)."""
    import statistics

    by: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in result["runs"]:
        if r["kind"] == kind and r["ok"] and r.get("storage") and r.get("total_s") is not None:
            by.setdefault((r["query"], r["mode"]), []).append(r)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for (q, m), runs in by.items():
        def med(key: str) -> Optional[float]:
            xs = [r["storage"][key] for r in runs if r["storage"].get(key) is not None]
            return statistics.median(xs) if xs else None
        lst, head = med("list") or 0.0, med("head") or 0.0
        total = statistics.median(r["total_s"] for r in runs)
        out.setdefault(q, {})[m] = {
            "list": lst, "head": head, "metastore_fetched": med("metastore_fetched"),
            "metastore_names": med("metastore_names"), "measured_s": total,
            "projected_s": total + (lst * PROJECTION_LIST_MS + head * PROJECTION_HEAD_MS) / 1000}
    return out


def render_file_pruning(result: dict[str, Any], kind: str) -> list[str]:
    """Per dpp query, what statistics and buckets did (issue 15), from its last dpp run: files
    pruned by statistics, footers read and the time spent on them, whether ``auto`` stopped
    early, buckets kept. Empty when no dpp run read a footer or met a bucketed table."""
    last: dict[str, dict[str, Any]] = {}
    for r in result["runs"]:
        if r["kind"] == kind and r["mode"] == "dpp" and r.get("dpp_report"):
            last[r["query"]] = r["dpp_report"]
    rows = []
    for q in sorted(last, key=lambda n: int(n[1:])):
        ts = last[q].get("tables", [])
        footers = sum(t.get("footers_read", 0) for t in ts)
        buckets = [t for t in ts if t.get("buckets_total") is not None]
        if not footers and not buckets:
            continue
        notes = "; ".join(sorted({t["stats_note"] for t in ts if t.get("stats_note")}))
        rows.append("| " + " | ".join([
            q, str(sum(t.get("files_pruned_stats", 0) for t in ts)), str(footers),
            f"{sum(t.get('stats_seconds', 0.0) for t in ts):.3f}",
            ", ".join(f"{t['buckets_kept']}/{t['buckets_total']}" for t in buckets) or "-",
            str(sum(t.get("files_pruned_buckets", 0) for t in ts)), notes or "-"]) + " |")
    if not rows:
        return []
    return ["### files pruned by statistics and buckets (dpp, last run)", "",
            "| Query | files pruned by statistics | footers read | footer time (s) | "
            "buckets kept / total | files pruned by buckets | note |",
            "|---|---:|---:|---:|---:|---:|---|"] + rows + [""]


def render_storage(result: dict[str, Any], kind: str) -> list[str]:
    """Markdown: storage requests per query and mode, and the projected elapsed."""
    table = storage_table(result, kind)
    if not table:
        return []
    modes = [m for m in result.get("modes", []) if any(m in v for v in table.values())]
    lines = ["### Storage requests and object-store projection", "",
             f"LIST = folders listed, HEAD = path statuses (getFileStatus), counted by the "
             f"filesystem for Spark's reader and by dpp's lister; metastore = partition objects "
             f"fetched (names listed). **Projected** = measured + LIST x "
             f"{PROJECTION_LIST_MS:g} ms + HEAD x {PROJECTION_HEAD_MS:g} ms, made one after "
             f"another: a projection from counted calls, not a measurement.", ""]
    head = ["Query"]
    for m in modes:
        head += [f"{m} LIST", f"{m} HEAD", f"{m} metastore", f"{m} measured s",
                 f"{m} projected s"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|")
    sums = {m: {"list": 0.0, "head": 0.0, "measured_s": 0.0, "projected_s": 0.0}
            for m in modes}
    for q in sorted(table, key=lambda n: int(n[1:])):
        row = [q]
        for m in modes:
            v = table[q].get(m)
            if v is None:
                row += ["-"] * 5
                continue
            ms = "-" if v["metastore_fetched"] is None else (
                f"{v['metastore_fetched']:.0f}" + (f" ({v['metastore_names']:.0f})"
                                                   if v["metastore_names"] else ""))
            row += [f"{v['list']:.0f}", f"{v['head']:.0f}", ms, f"{v['measured_s']:.2f}",
                    f"{v['projected_s']:.2f}"]
            for k in sums[m]:
                sums[m][k] += v[k]
        lines.append("| " + " | ".join(row) + " |")
    row = ["**sum**"]
    for m in modes:
        row += [f"{sums[m]['list']:.0f}", f"{sums[m]['head']:.0f}", "",
                f"{sums[m]['measured_s']:.2f}", f"{sums[m]['projected_s']:.2f}"]
    lines.append("| " + " | ".join(row) + " |")
    if "spark" in sums and "dpp" in sums and sums["spark"]["projected_s"] > 0:
        lines += ["", f"- **dpp / spark**: measured {sums['dpp']['measured_s'] / max(sums['spark']['measured_s'], 1e-9):.2f}, "
                      f"projected at object-store latency "
                      f"{sums['dpp']['projected_s'] / sums['spark']['projected_s']:.2f}"]
    lines.append("")
    return lines


def _input_source(result: dict[str, Any]) -> str:
    """Where the query input figures come from: the bench's counting filesystem (every byte
    read through it, vectored reads included) or Spark's task metric, which misses the bytes
    a vectored Parquet read fetches on other threads."""
    runs = [r for r in result.get("runs", []) if r.get("metrics")]
    if runs and all(r["metrics"].get("input_counted") for r in runs):
        return (", counted by the bench's filesystem at each read (Spark's own input metric "
                "misses what Parquet's vectored reads fetch on other threads)")
    return (", from Spark's task input metric (it misses what Parquet's vectored reads "
            "fetch on other threads: compare modes with care)")


def render_markdown(result: dict[str, Any]) -> str:
    """report.md: per table kind, the Trino-style table (query; elapsed, CPU, data read per
    mode), then the summary, the targets and, with mode ``dpp``, the overhead breakdown."""
    agg = aggregate(result)
    summary = result.get("summary") or summarize(result)
    modes = result.get("modes", [])
    # from the runs, not the stored summary: results.json files written before it lack it
    breakdown = dpp_breakdown(result) if "dpp" in modes else {}
    data = result.get("data", {})
    env = result.get("environment", {})
    lines = [
        "# TPC-DS benchmark: dynamic partition pruning",
        "",
        f"Scale factor {data.get('sf')}, generator {data.get('generator')}; Spark "
        f"{env.get('spark')} on {env.get('cpus')} CPUs; modes {', '.join(modes)}. "
        + _runs_line(result),
        "",
        "Elapsed = opening the tables (listing) + running the query; CPU = executor CPU time; "
        "data read = bytes of fact-table files scanned; query input = bytes the query's own "
        "tasks read (every table, only the columns and row groups read; dpp's build sides "
        "left out)" + _input_source(result) + ".",
        "",
    ]
    if len(breakdown) > 1:   # one line per kind below; the whole run's total here
        total = _no_cache()
        for bd in breakdown.values():
            _add_counts(total, bd["filter_cache"])
        lines += [f"All table kinds: {_cache_line(total)}.", ""]
    if result.get("unavailable_modes"):
        for m, why in result["unavailable_modes"].items():
            lines.append(f"- mode `{m}` unavailable: {why}")
        lines.append("")
    bad = [r for r in result["runs"] if _failed(r)]
    if bad:
        lines += ["## FAILURES", ""]
        for r in bad:
            why = r.get("error") or r.get("mismatch") or r.get("disagreement")
            lines.append(f"- **{r['query']} / {r['mode']} / {r['kind']}**: {why}")
        lines.append("")
    for kind, per_q in agg.items():
        lines += [f"## {kind} tables", ""]
        head = ["Query"]
        head += [f"{m} elapsed (s)" for m in modes]
        head += [f"{m} listing / exec (s)" for m in modes]
        head += [f"{m} CPU (s)" for m in modes]
        head += [f"{m} data read" for m in modes]
        head += [f"{m} query input" for m in modes]
        head += [f"{m} files read / listed" for m in modes]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|")
        for q in sorted(per_q, key=lambda n: int(n[1:])):
            v = per_q[q]
            row = [q]
            row += [f"{v[m]['total_s']:.2f}" if m in v else "-" for m in modes]
            row += [f"{v[m]['listing_s']:.2f} / {v[m]['execution_s']:.2f}" if m in v else "-"
                    for m in modes]
            row += [f"{v[m]['cpu_s']:.2f}" if m in v else "-" for m in modes]
            row += [_mb(v[m]["fact_bytes_read"]) if m in v else "-" for m in modes]
            row += [_mb(v[m]["query_input_bytes"]) if m in v else "-" for m in modes]
            row += [f"{int(v[m]['fact_files_read'])} / {int(v[m]['fact_files_listed'])}"
                    if m in v else "-" for m in modes]
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
        ks = summary["kinds"].get(kind, {})
        tot = ks.get("totals", {})
        for m in modes:
            if m in tot:
                t = tot[m]
                lines.append(f"- **{m} total**: {t['total_s']:.1f}s elapsed ({t['listing_s']:.1f}s "
                             f"listing + {t['execution_s']:.1f}s execution), {t['cpu_s']:.1f}s "
                             f"CPU, {_mb(t['fact_bytes_read'])} fact data read, "
                             f"{int(t['fact_files_read'])} files read of "
                             f"{int(t['fact_files_listed'])} listed")
        lines += _warm_lines(summary.get("warm", {}).get(kind), modes)
        for mode, s in ks.get("against_off", {}).items():
            imp = s["improved"]
            lines.append(
                f"- **{mode} vs off** ({s['queries']} queries): elapsed improved >50% in "
                f"{imp['>50%']}, 30-50% in {imp['30-50%']}, 10-30% in {imp['10-30%']}; "
                f"average reduction: elapsed {_pct(s['avg_elapsed_reduction'])}, CPU "
                f"{_pct(s['avg_cpu_reduction'])}, data read {_pct(s['avg_data_read_reduction'])}")
        if ks.get("dpp_over_spark"):
            ratios = ", ".join(f"{c} {v:.2f}" for c, v in ks["dpp_over_spark"].items()
                               if v is not None)
            lines.append(f"- **dpp / spark** (ratio of sums): {ratios}")
        sc = ks.get("dpp_over_nostats")
        if sc and sc["queries"]:
            slow = ", ".join(f"{q} {r:.2f}" for q, r in sc["slowest"])
            over = ", ".join(q for q, _ in sc["slower_than_5pct"]) or "none"
            lines.append(f"- **dpp / dpp-nostats** (statistics pruning as set vs off, "
                         f"{sc['queries']} queries): elapsed {sc['elapsed']:.2f}, fact data "
                         f"read {sc['fact_bytes_read']:.2f}; slowest ratios {slow}; more than "
                         f"5% slower: {over}")
            if sc.get("paired_slowest"):
                pslow = ", ".join(f"{q} {r:.2f}" for q, r in sc["paired_slowest"])
                pover = ", ".join(q for q, _ in sc["paired_slower_than_5pct"]) or "none"
                lines.append(f"- **dpp / dpp-nostats, median of per-repetition ratios**: "
                             f"slowest {pslow}; more than 5% slower: {pover}")
        if kind in breakdown:
            lines += breakdown_summary(breakdown[kind])
        cov = summary.get("coverage", {}).get(kind)
        if cov and cov.get("checked", True):
            lines.append(f"- **ran** in every mode: {len(cov['ran'])} queries; **correct** "
                         f"(every mode's rows = DuckDB's): {len(cov['correct'])}"
                         + (f"; **WRONG**: {', '.join(sorted(cov['wrong']))}"
                            if cov["wrong"] else ""))
        elif cov:
            lines += _agreement_lines(cov, modes)
        if cov and cov["not_run"]:
            lines.append(f"- **not run** ({len(cov['not_run'])}):")
            for q in sorted(cov["not_run"], key=lambda n: int(n[1:])):
                lines.append(f"  - {q}: {cov['not_run'][q]}")
        tg = ks.get("targets")
        if tg:
            lines += ["", f"### Targets against `spark` ({tg['queries_compared']} queries)", ""]
            over = tg["data_read_above_spark"]
            lines.append("- data read by dpp no more than by spark on every query: "
                         + ("**met**" if not over else "**missed** on " + ", ".join(
                             f"{q} ({_mb(d)} vs {_mb(sp)})" for q, d, sp in over)))
            if tg["pruning_queries"]:
                lines.append(
                    f"- total elapsed of dpp below spark over the {len(tg['pruning_queries'])} "
                    f"queries where pruning applies: "
                    + ("**met**" if tg["pruning_elapsed_below_spark"] else "**missed**")
                    + f" ({tg['pruning_elapsed_dpp_s']:.1f}s vs "
                      f"{tg['pruning_elapsed_spark_s']:.1f}s)")
            else:   # nothing to judge: not a miss (a run of queries with nothing to prune)
                lines.append("- total elapsed of dpp below spark where pruning applies: "
                             "n/a (no query here prunes)")
            slow = tg["slower_than_spark"]
            lines.append(
                f"- no query more than {100 * (tg['slower_than_spark_limit'] - 1):.0f}% slower "
                "than spark: " + ("**met**" if not slow else "**missed** on " + ", ".join(
                    f"{q} ({ratio:.2f}x: {d:.2f}s vs {sp:.2f}s)" for q, ratio, d, sp in slow)))
            if "slower_than_spark_paired" in tg and (result["config"].get("repeat") or 1) > 1:
                ps = tg["slower_than_spark_paired"]
                lines.append(
                    "- the same by the median of per-repetition ratios (modes back to back in "
                    "each repetition): " + ("**met**" if not ps else "**missed** on " + ", ".join(
                        f"{q} ({x:.2f}x)" for q, x in ps)))
        lines.append("")
        if kind in breakdown:
            lines += render_breakdown(breakdown[kind])
        lines += render_file_pruning(result, kind)
        lines += render_storage(result, kind)
    if result.get("untranslated_queries"):
        lines.append(f"Not run (translation failed): {', '.join(result['untranslated_queries'])}")
    if result.get("complete") is False:
        lines.append("")
        lines.append(f"**Partial result**: {len(result.get('done', []))} query run(s) finished so "
                     "far (`tpcds bench ... --resume` continues).")
    return "\n".join(lines) + "\n"


def _runs_line(result: dict[str, Any]) -> str:
    """What the figures are: the cold headline, and the warm runs where there are any."""
    repeat = int(result["config"].get("repeat") or 1)
    warm = ("" if repeat < 2 else
            f" The {repeat - 1} later run(s) per query and mode are warm: their medians are "
            f"the **warm** lines under each table.")
    return (f"{repeat} measured run(s) per query and mode. **Headline: the cold run**, each "
            f"query's first measured run per mode, dpp's cached filters, footers and verdicts "
            f"forgotten before it, as a new job meets it (the unmeasured warm-up runs only "
            f"warm the JVM)." + warm)


def _warm_lines(warm: Optional[dict[str, Any]], modes: list[str]) -> list[str]:
    """The warm runs' totals under a kind's cold table, labelled as such."""
    if not warm or not warm.get("totals"):
        return []
    tot = warm["totals"]
    parts = ", ".join(f"{m} {tot[m]['total_s']:.1f}s" for m in modes if m in tot)
    ratio = (warm.get("dpp_over_spark") or {}).get("total_s")
    return [f"- **warm** (median of {warm['repeats']} later run(s) per query, not the "
            f"headline): {parts}"
            + (f"; dpp / spark {ratio:.2f}" if ratio is not None else "")]


def _agreement_lines(cov: dict[str, Any], modes: list[str]) -> list[str]:
    """Coverage without DuckDB (``--no-check``): correctness not checked; the modes' rows
    compared with each other instead."""
    from tpcds.reference import baseline_mode

    base = baseline_mode(modes) if modes else "spark"
    others = [m for m in modes if m != base]
    same = " = ".join(f"{m}'s rows" for m in [base, *others])
    lines = [f"- **ran** in every mode: {len(cov['ran'])} queries; **correct** (every mode's "
             f"rows = DuckDB's): not checked (`--no-check`)",
             f"- **modes agree** ({same}, every repetition): {len(cov['agree'])} of "
             f"{len(cov['ran'])}"
             + (f"; **MODES DISAGREE**: {', '.join(sorted(cov['disagree']))}"
                if cov["disagree"] else "")
             + (f"; not judged (LIMIT ties): {', '.join(sorted(cov['unjudged']))}"
                if cov["unjudged"] else "")]
    for q in sorted(cov["disagree"], key=lambda n: int(n[1:])):
        lines.append(f"  - {q}: {cov['disagree'][q]}")
    for q in sorted(cov["unjudged"], key=lambda n: int(n[1:])):
        lines.append(f"  - {q}: {cov['unjudged'][q]}")
    return lines


def render_chart(result: dict[str, Any], path: str | Path) -> None:
    """chart.png: per table kind, elapsed (split listing / execution) and data read by query."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    agg = aggregate(result)
    modes = result.get("modes", [])
    kinds = list(agg) or ["path"]
    most = max((len(agg.get(k, {})) for k in kinds), default=0)
    # two panels side by side up to 30 queries; one above the other, wider, beyond that
    wide = most > 30
    fig, axes = plt.subplots(2 * len(kinds) if wide else len(kinds), 1 if wide else 2,
                             figsize=(max(14.0, 0.22 * most), (9.0 if wide else 4.5) * len(kinds)),
                             squeeze=False)
    if wide:
        axes = axes.reshape(len(kinds), 2)
    colors = {"off": "#9e9e9e", "spark": "#1f77b4", "dpp": "#2ca02c"}
    for row, kind in enumerate(kinds):
        per_q = agg.get(kind, {})
        qs = sorted(per_q, key=lambda n: int(n[1:]))
        width = 0.8 / max(1, len(modes))
        ax_t, ax_d = axes[row]
        for i, m in enumerate(modes):
            xs = [j + i * width for j in range(len(qs))]
            lst = [per_q[q][m]["listing_s"] if m in per_q[q] else 0 for q in qs]
            exe = [per_q[q][m]["execution_s"] if m in per_q[q] else 0 for q in qs]
            c = colors.get(m)
            ax_t.bar(xs, lst, width, color=c, alpha=0.45, hatch="//")
            ax_t.bar(xs, exe, width, bottom=lst, color=c, label=m)
            ax_d.bar(xs, [per_q[q][m]["fact_bytes_read"] / 1e6 if m in per_q[q] else 0
                          for q in qs], width, color=c, label=m)
        for ax, title, unit in ((ax_t, "elapsed (hatched: listing)", "s"),
                                (ax_d, "fact data read", "MB")):
            ax.set_xticks([j + 0.4 - width / 2 for j in range(len(qs))])
            ax.set_xticklabels(qs, rotation=90 if len(qs) > 20 else 0, fontsize=7)
            ax.set_title(f"{kind} tables: {title}")
            ax.set_ylabel(unit)
            ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ------------------------------------------------------------------------- across scales

#: dpp's own phases in the scale table (breakdown keys), in the order a query goes through them
SCALE_PHASES: tuple[tuple[str, str], ...] = (
    ("open_s", "open"), ("analysis_s", "analysis"), ("build_s", "build"),
    ("wait_s", "wait"), ("enum_s", "split enumeration"), ("handoff_s", "handoff"))


def scale_rows(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per benchmark result and table kind with what changes with the scale: queries
    run and correct, dpp/spark (ratio of summed elapsed), the worst per-query ratio (median of
    per-repetition ratios) and how many pass 10%, dpp's phases summed over the queries, and the
    storage requests with the object-store projection. Rows are sorted by kind, then scale."""
    rows = []
    for res in results:
        summary = summarize(res)
        breakdown = dpp_breakdown(res) if "dpp" in res.get("modes", []) else {}
        for kind, ks in summary["kinds"].items():
            cov = summary["coverage"].get(kind, {})
            paired = paired_ratios(res, kind, "dpp", "spark", which="cold")
            worst = max(paired.items(), key=lambda kv: kv[1], default=(None, None))
            sums = breakdown.get(kind, {}).get("sums", {})
            store = storage_table(res, kind)
            calls = {m: {c: sum(v[m][c] for v in store.values() if m in v)
                         for c in ("list", "head", "measured_s", "projected_s")}
                     for m in ("spark", "dpp")}
            rows.append({
                "sf": res.get("data", {}).get("sf"), "kind": kind,
                "queries": len(cov.get("ran", [])),
                "checked": cov.get("checked", True),
                "correct": len(cov.get("correct", [])), "agree": len(cov.get("agree", [])),
                "not_run": len(cov.get("not_run", {})),
                "dpp_over_spark": (ks.get("dpp_over_spark") or {}).get("total_s"),
                "spark_s": ks.get("totals", {}).get("spark", {}).get("total_s"),
                "dpp_s": ks.get("totals", {}).get("dpp", {}).get("total_s"),
                "worst_query": worst[0], "worst_ratio": worst[1],
                "slower_10pct": sorted(q for q, x in paired.items() if x > SLOWER_LIMIT),
                "phases": {k: sums.get(k) for k, _ in SCALE_PHASES},
                "calls": calls,
                "projected_ratio": (calls["dpp"]["projected_s"] / calls["spark"]["projected_s"]
                                    if calls["spark"]["projected_s"] else None),
            })
    return sorted(rows, key=lambda r: (r["kind"], r["sf"] or 0))


def render_scale_table(results: list[dict[str, Any]]) -> str:
    """Markdown: the scale rows (:func:`scale_rows`) as three tables — the headline, dpp's
    phases, the object-store projection — each with a growth row (largest / smallest scale)
    per table kind where two scales were run."""
    rows = scale_rows(results)

    def num(x: Optional[float], fmt: str = "{:.2f}") -> str:
        return "-" if x is None else fmt.format(x)

    def grow(a: Optional[float], b: Optional[float]) -> str:
        return "-" if not a or b is None else f"x{b / a:.1f}"

    def growth_rows(cells: Any) -> list[str]:
        out = []
        for kind in dict.fromkeys(r["kind"] for r in rows):
            ks = [r for r in rows if r["kind"] == kind]
            if len(ks) > 1:
                lo, hi = ks[0], ks[-1]
                out.append("| " + " | ".join(
                    [f"{kind} SF{hi['sf']:g} / SF{lo['sf']:g}", *cells(lo, hi)]) + " |")
        return out

    def correct(r: dict[str, Any]) -> str:
        if r["checked"]:
            return f"{r['correct']} / {r['queries']}"
        return f"not checked ({r['agree']} / {r['queries']} modes agree)"

    head = ["| scale | table kind | queries ran (not run) | correct | spark elapsed (s) | "
            "dpp elapsed (s) | dpp / spark | worst query (per-repetition ratio) | "
            "> 10% slower |", "|---|---|---:|---|---:|---:|---:|---|---|"]
    for r in rows:
        head.append("| " + " | ".join([
            f"SF{r['sf']:g}", r["kind"], f"{r['queries']} ({r['not_run']})", correct(r),
            num(r["spark_s"], "{:.1f}"), num(r["dpp_s"], "{:.1f}"), num(r["dpp_over_spark"]),
            "-" if r["worst_query"] is None else f"{r['worst_query']} {r['worst_ratio']:.2f}",
            ", ".join(r["slower_10pct"]) or "none"]) + " |")
    head += growth_rows(lambda lo, hi: [
        "", "", grow(lo["spark_s"], hi["spark_s"]), grow(lo["dpp_s"], hi["dpp_s"]), "", "", ""])
    phases = ["| scale | table kind | " + " | ".join(f"{t} (s)" for _, t in SCALE_PHASES)
              + " |", "|---|---|" + "---:|" * len(SCALE_PHASES)]
    for r in rows:
        phases.append("| " + " | ".join([f"SF{r['sf']:g}", r["kind"]] + [
            num(r["phases"][k], "{:.2f}") for k, _ in SCALE_PHASES]) + " |")
    phases += growth_rows(lambda lo, hi: [grow(lo["phases"][k], hi["phases"][k])
                                          for k, _ in SCALE_PHASES])
    store = ["| scale | table kind | spark LIST / HEAD | dpp LIST / HEAD | dpp / spark "
             "measured | dpp / spark projected |", "|---|---|---:|---:|---:|---:|"]
    for r in rows:
        c = r["calls"]
        store.append("| " + " | ".join([
            f"SF{r['sf']:g}", r["kind"], f"{c['spark']['list']:.0f} / {c['spark']['head']:.0f}",
            f"{c['dpp']['list']:.0f} / {c['dpp']['head']:.0f}",
            num(c["dpp"]["measured_s"] / c["spark"]["measured_s"]
                if c["spark"]["measured_s"] else None),
            num(r["projected_ratio"])]) + " |")
    store += growth_rows(lambda lo, hi: [
        f"{grow(lo['calls']['spark']['list'], hi['calls']['spark']['list'])} / "
        f"{grow(lo['calls']['spark']['head'], hi['calls']['spark']['head'])}",
        f"{grow(lo['calls']['dpp']['list'], hi['calls']['dpp']['list'])} / "
        f"{grow(lo['calls']['dpp']['head'], hi['calls']['dpp']['head'])}", "", ""])
    return "\n".join(head + [""] + phases + [""] + store) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    """``python -m tpcds.report --scale OUT1 OUT2 ...``: the scale table of several benchmark
    output folders (their ``results.json``)."""
    import argparse
    import json

    p = argparse.ArgumentParser(prog="python -m tpcds.report", description=main.__doc__)
    p.add_argument("--scale", nargs="+", required=True, help="bench --out folders")
    args = p.parse_args(argv)
    results = [json.loads((Path(d) / "results.json").read_text()) for d in args.scale]
    print(render_scale_table(results), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
