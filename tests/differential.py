"""Differential checks: a query (or ``dpp.join``) through DppSession against plain Spark.

The expected answer is Spark alone over the same folders with every pruning off (Spark's
dynamic partition pruning, runtime bloom filters and semi-join reduction); path tables are read
by a fresh ``spark.read.parquet(path)`` view, so Spark infers their partition values under the
session settings of the moment, as the user's own job would. Both sides run under the same
session settings (time zone, ANSI, case sensitivity...). Where Spark raises, dpp must raise
too; otherwise the rows must be equal as multisets.

Every SQL check also runs through dpp's optimizer hook (``HOOK_RUNS``): the same query as
plain ``spark.sql`` on a session with the hook installed, path tables as its lazy views; its
rows are checked like the others' (pruning is asserted on the SQL-text runs, whose reports
name tables as the queries do).

Every dpp run also checks that no split loader waited out ``spark.dpp.waitTimeout``: on these
tiny tables a build side takes a second or two, so reaching the timeout means a hang that the
fallback (no pruning) would otherwise hide.

On a Spark Connect client of ``dpp connect-server`` (``tests/test_connect_peer_bugs.py``) the
same checks run as a client would run them: the query as plain ``spark.sql`` (a ``dpp.join``
as the DataFrame join it stands for), path facts as ``spark.read.parquet`` views, Spark's
answer with ``spark.dpp.enabled=false`` on the same session, and the reports read from the
server's report file (``spark.dpp.report.path``), by the client's session id.
"""
from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

from dpp.runtime.views import norm_name
from tests.conftest import spark_conf

PRUNING_OFF = {
    "spark.sql.optimizer.dynamicPartitionPruning.enabled": "false",
    "spark.sql.optimizer.runtime.bloomFilter.enabled": "false",
    "spark.sql.optimizer.runtimeFilter.semiJoinReduction.enabled": "false",
}
WAIT_TIMEOUT = "20s"
_WAIT_SECONDS = 20.0
TIME_ZONES = ("UTC", "America/Los_Angeles", "Asia/Kolkata")
TZ = "spark.sql.session.timeZone"
HOOK_RUNS = True


def utc(*args: int) -> dt.datetime:
    return dt.datetime(*args, tzinfo=dt.timezone.utc)


@dataclass(frozen=True)
class Fact:
    """A partitioned fact table: a registered path table or a table of Spark's catalog."""

    kind: str            # "path" | "catalog"
    name: str            # the name queries use through dpp
    path: str            # its folder (catalog tables: their location)

    @property
    def ref_name(self) -> str:
        """The name the reference query uses (a plain Spark view for path tables)."""
        return f"{self.name}_ref" if self.kind == "path" else self.name

    def reference_df(self, spark: Any) -> Any:
        return spark.read.parquet(self.path) if self.kind == "path" else spark.table(self.name)

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"


@dataclass
class Outcome:
    rows: Optional[Counter]
    error: Optional[str] = None

    @property
    def n(self) -> str:
        return f"error {self.error}" if self.error else f"{sum(self.rows.values())} rows"


def _canonical(v: Any) -> Any:
    """A value that compares as Spark does between rows: NaN equals NaN (Python's ``nan !=
    nan`` would make equal rows differ) and -0.0 stays distinct from 0.0 (Python's ``-0.0 ==
    0.0`` would hide a changed sign)."""
    if isinstance(v, float) and (math.isnan(v) or (v == 0.0 and math.copysign(1.0, v) < 0)):
        return "NaN" if math.isnan(v) else "-0.0"
    if isinstance(v, (tuple, list)):
        return tuple(_canonical(x) for x in v)
    return v


def capture(fn: Callable[[], Sequence[Any]]) -> Outcome:
    try:
        return Outcome(Counter(_canonical(tuple(r)) for r in fn()))
    except Exception as exc:  # Spark's analysis or runtime errors: compared, not raised
        text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        return Outcome(None, f"{type(exc).__name__}: {text}")


def _session(spark: Any, facts: Sequence[Fact], dpp: Any = None) -> Any:
    from dpp import DppSession

    dpp = dpp if dpp is not None else DppSession(spark)
    for f in facts:
        if f.kind == "path":
            dpp.register_table(f.name, f.path)
    return dpp


def summary(report: Optional[dict]) -> str:
    """One line per table reference and filter of a job report."""
    if report is None:
        return "no report"
    parts = []
    for t in report["tables"]:
        parts.append(f"{t['table']}: {t['pruning']} kept {t['partitions_kept']}/"
                     f"{t['partitions_total']}" + (f" ({t['reason']})" if t["reason"] else ""))
    for f in report["filters"]:
        parts.append(f"{f['filter_id']} {f['build_column']}: {f['outcome']} kind={f['kind']}"
                     f" cache_hit={f['cache_hit']}" + (f" ({f['reason']})" if f["reason"] else ""))
    parts.extend(f"note: {n}" for n in report.get("analysis_notes", []))
    return "; ".join(parts)


@dataclass
class Check:
    """One comparison: what Spark gave, what dpp gave (each run) and dpp's reports."""

    label: str
    expected: Outcome
    runs: list[tuple[Outcome, Optional[dict]]]
    hook_runs: list[tuple[Outcome, Optional[dict]]] = field(default_factory=list)
    # a query with no join and no subquery on a dpp connect-server: only Spark's own static
    # partition pruning applies there (the hook prunes by joins), so no report is expected
    static_only: bool = False
    served: bool = False     # dpp connect-server's runs (their reports are the server's)

    @property
    def expected_count(self) -> int:
        """Rows Spark returned (-1 when it raised)."""
        return -1 if self.expected.rows is None else sum(self.expected.rows.values())

    def verify(self) -> "Check":
        """Asserts dpp's answer equals Spark's (each run) and that nothing waited out the
        wait timeout."""
        runs = [(f"run {i + 1}", got, rep) for i, (got, rep) in enumerate(self.runs)]
        runs += [("optimizer hook", got, rep) for got, rep in self.hook_runs]
        for which, got, rep in runs:
            where = f"{self.label} ({which}): {summary(rep)}"
            print(f"[check] {self.label} {which}: spark {self.expected.n}, dpp {got.n}; "
                  f"{summary(rep)}")
            if self.expected.error is not None:
                assert got.error is not None, (
                    f"Spark raises ({self.expected.error}) but dpp returned {got.n}: {where}")
                continue
            assert got.error is None, (
                f"Spark returns {self.expected.n}, dpp raised {got.error}: {where}")
            missing = self.expected.rows - got.rows
            extra = got.rows - self.expected.rows
            assert not missing and not extra, (
                f"dpp returned {got.n} where Spark returns {self.expected.n}; missing "
                f"{_short(missing)}, extra {_short(extra)}: {where}")
            if rep is not None:
                late = [t["table"] for t in rep["tables"]
                        if (t.get("wait_seconds") or 0.0) >= 0.9 * _WAIT_SECONDS]
                assert not late, f"{late} waited out spark.dpp.waitTimeout (a hang): {where}"
        return self

    def assert_pruned(self, table: str, kept: Optional[int] = None) -> None:
        """Pruning applied on every reference to ``table`` (exactly ``kept`` partitions)."""
        for i, (got, rep) in enumerate(self.runs):
            if got.error is not None:
                continue  # a failed run is reported by verify()
            if self.static_only and rep is None:
                continue  # Spark's static pruning, on the server road (see static_only)
            if self.served and rep is None and not kept and self.expected_count == 0:
                # the server's hook reports every plan holding a relation it may prune,
                # scanned or not: no report at all is a plan Spark emptied itself (an empty
                # local build side) before any rule saw the fact, so nothing is read
                continue
            refs = [t for t in (rep or {"tables": []})["tables"] if t["table"] == table]
            assert refs, f"{self.label} run {i + 1}: no report for {table}: {summary(rep)}"
            for t in refs:
                if (t.get("reason") or "").startswith("never listed") and not kept:
                    continue   # Spark skipped the scan (an empty build side): nothing read
                assert t["pruning"] == "applied" and \
                    t["partitions_kept"] < t["partitions_total"], (
                        f"{self.label} run {i + 1}: expected pruning of {table}, got "
                        f"{summary(rep)}")
                if kept is not None:
                    assert t["partitions_kept"] == kept, (
                        f"{self.label} run {i + 1}: expected {kept} partitions of {table} kept "
                        f"(exactly the matching ones), got {summary(rep)}")


def _short(c: Counter, limit: int = 4) -> str:
    items = list(c.items())[:limit]
    more = f" (+{len(c) - limit} more)" if len(c) > limit else ""
    return "{" + ", ".join(f"{k}×{v}" for k, v in items) + "}" + more


def _dpp_settings(cache: bool) -> dict[str, Optional[str]]:
    return {"spark.dpp.enabled": "true", "spark.dpp.waitTimeout": WAIT_TIMEOUT,
            "spark.dpp.filterCache.enabled": "true" if cache else "false"}


def served(spark: Any) -> bool:
    """A Spark Connect client of ``dpp connect-server``: the server prunes its queries."""
    from dpp.core.remote import is_remote

    return is_remote(spark) and str(spark.conf.get("spark.dpp.connectServer", "false")) \
        .lower() == "true"


def _report_lines(spark: Any) -> int:
    path = spark.conf.get("spark.dpp.report.path", None)
    try:
        return len(open(path).read().splitlines()) if path else 0
    except OSError:
        return 0


def _served_report(spark: Any, since: int, facts: Sequence[Fact]) -> Optional[dict]:
    """The server's reports for this client session after line ``since``, as one report; a
    path fact's entries named as the query names it (the server knows only its folder)."""
    import json

    path = spark.conf.get("spark.dpp.report.path", None)
    try:
        lines = open(path).read().splitlines()[since:] if path else []
    except OSError:
        lines = []
    mine = [r for r in map(json.loads, filter(str.strip, lines))
            if (r.get("connect_session") or {}).get("session_id") == spark.session_id]
    if not mine:
        return None
    folders = {f.path.rstrip("/"): f.name for f in facts if f.kind == "path"}
    bases = {f.path.rstrip("/").rsplit("/", 1)[-1]: f.name for f in facts if f.kind == "path"}
    tables = []
    for r in mine:
        for t in r["tables"]:
            loc = (t.get("location") or "").replace("file:", "", 1).rstrip("/")
            name = folders.get(loc) or (bases.get(t["table"]) if not loc else None)
            tables.append({**t, "table": name or t["table"]})
    return {"tables": tables, "filters": [f for r in mine for f in r["filters"]],
            "analysis_notes": [n for r in mine for n in r["analysis_notes"]]}


def _served_run(spark: Any, facts: Sequence[Fact], run: Callable[[], Sequence[Any]]
                ) -> tuple[Outcome, Optional[dict]]:
    import time

    since = _report_lines(spark)
    got = capture(run)
    report = _served_report(spark, since, facts)
    deadline = time.monotonic() + 3.0
    while report is None and time.monotonic() < deadline:
        # a relation Spark never scanned is reported when the Connect operation's end event
        # reaches the server's listener, just after the client has its rows
        time.sleep(0.2)
        report = _served_report(spark, since, facts)
    return got, report


def run_sql(spark: Any, facts: Sequence[Fact], query: str, *, cache: bool,
            settings: Mapping[str, Optional[str]] = {}, session: Any = None) -> Check:
    """``query`` (``{f0}``, ``{f1}``... name the facts) through dpp.collect / dpp.sql vs Spark.

    With the filter cache on, dpp runs the query twice (the second run may use the cached
    filter) and both answers are checked. ``session``: a DppSession to reuse (path tables are
    registered on it); by default a fresh one.
    """
    names = {f"f{i}": f.name for i, f in enumerate(facts)}
    refs = {f"f{i}": f.ref_name for i, f in enumerate(facts)}
    if served(spark):
        return _served_sql(spark, facts, query, names, refs, cache, settings)
    with spark_conf(spark, settings):
        with spark_conf(spark, PRUNING_OFF):
            for f in facts:
                if f.kind == "path":
                    f.reference_df(spark).createOrReplaceTempView(f.ref_name)
            expected = capture(lambda: spark.sql(query.format(**refs)).collect())
        runs = []
        with spark_conf(spark, _dpp_settings(cache)):
            dpp = _session(spark, facts, session)
            q = query.format(**names)
            runs.append((capture(lambda: dpp.collect(q)), _report(dpp)))
            if cache:
                dpp.last_report = None
                runs.append((capture(lambda: dpp.sql(q).collect()), _report(dpp)))
            hook_runs = [_hook_run(spark, facts, q, dpp)] if HOOK_RUNS else []
    tables = ", ".join(map(str, facts))
    where = f"{tables}; cache={'on' if cache else 'off'}; {_describe(settings)}"
    return Check(f"sql [{where}] {q}", expected, runs, hook_runs)


def _served_sql(spark: Any, facts: Sequence[Fact], query: str, names: dict[str, str],
                refs: dict[str, str], cache: bool, settings: Mapping[str, Optional[str]]
                ) -> Check:
    with spark_conf(spark, settings):
        with spark_conf(spark, {**PRUNING_OFF, "spark.dpp.enabled": "false"}):
            for f in facts:
                if f.kind == "path":
                    f.reference_df(spark).createOrReplaceTempView(f.ref_name)
            expected = capture(lambda: spark.sql(query.format(**refs)).collect())
        with spark_conf(spark, _dpp_settings(cache)):
            for f in facts:   # the job's own read of the folder, under the same settings
                if f.kind == "path":
                    f.reference_df(spark).createOrReplaceTempView(f.name)
            q = query.format(**names)
            runs = [_served_run(spark, facts, lambda: spark.sql(q).collect())
                    for _ in range(2 if cache else 1)]
    where = (f"{', '.join(map(str, facts))}; cache={'on' if cache else 'off'}; "
             f"{_describe(settings)}; dpp connect-server")
    static = " join " not in q.lower() and q.lower().count("select") == 1
    return Check(f"sql [{where}] {q}", expected, runs, static_only=static, served=True)


def _hook_run(spark: Any, facts: Sequence[Fact], q: str, dpp: Any
              ) -> tuple[Outcome, Optional[dict]]:
    """``q`` as plain ``spark.sql`` with dpp's optimizer hook installed for this run only."""
    from dpp.frontends.hook.optimizer_hook import OptimizerHook

    dpp.optimizer_hook = OptimizerHook(dpp)
    views = [f.name for f in facts if f.kind == "path"]
    try:
        dpp.ensure_views(views)   # lazy relations: the hook lists them
        dpp.last_report = None
        got = capture(lambda: spark.sql(q).collect())
        return got, _report(dpp)
    finally:
        hook, dpp.optimizer_hook = dpp.optimizer_hook, None
        hook.close()
        for v in views:
            dpp.catalog.views.forget(norm_name(v))


def run_join(spark: Any, fact: Fact, dim: Callable[[], Any], on: Sequence[tuple[str, str]], *,
             cache: bool, how: str = "inner",
             settings: Mapping[str, Optional[str]] = {}) -> Check:
    """``dpp.join(fact, dim(), on)`` vs ``<fact read by Spark>.join(dim(), on)``.

    ``dim`` builds the dimension DataFrame; it is called inside the session settings. One dpp
    run whatever ``cache`` says: dpp.join never caches (its build side has no query text to
    fingerprint), the setting is only passed through.
    """
    def reference() -> list:
        fdf, ddf = fact.reference_df(spark), dim()
        cond = None
        for a, b in on:
            c = fdf[a] == ddf[b]
            cond = c if cond is None else cond & c
        return fdf.join(ddf, cond, how).collect()

    if served(spark):   # the DataFrame join dpp.join stands for, pruned by the server
        with spark_conf(spark, settings):
            with spark_conf(spark, {**PRUNING_OFF, "spark.dpp.enabled": "false"}):
                expected = capture(reference)
            with spark_conf(spark, _dpp_settings(cache)):
                runs = [_served_run(spark, [fact], reference)]
        return Check(f"join [{fact}; {_describe(settings)}; dpp connect-server] "
                     f"{fact.name} join dim on={list(on)} how={how!r}", expected, runs,
                     served=True)
    with spark_conf(spark, settings):
        with spark_conf(spark, PRUNING_OFF):
            expected = capture(reference)
        runs = []
        with spark_conf(spark, _dpp_settings(cache)):
            dpp = _session(spark, [fact])
            runs.append((capture(lambda: dpp.join(fact.name, dim(), on=list(on),
                                                  how=how).collect()), _report(dpp)))
    where = f"{fact}; cache={'on' if cache else 'off'}; {_describe(settings)}"
    return Check(f"join [{where}] dpp.join({fact.name!r}, dim, on={list(on)}, how={how!r})",
                 expected, runs)


def _report(dpp: Any) -> Optional[dict]:
    return dpp.last_report.to_dict() if dpp.last_report is not None else None


def _describe(settings: Mapping[str, Optional[str]]) -> str:
    text = ", ".join(f"{k.replace('spark.sql.', '')}={v}" for k, v in settings.items())
    return text or "defaults"


class Checks:
    """Runs many checks in one test and fails it once, listing every check that failed (so a
    test shows all its wrong answers, not only the first).

    >>> with Checks(spark) as c:                                  # doctest: +SKIP
    ...     r = c.sql([fact], "SELECT ... FROM {f0} f JOIN ...", cache=True)
    ...     c.pruned(r, fact.name, kept=2)
    """

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self.failures: list[str] = []

    def __enter__(self) -> "Checks":
        return self

    def __exit__(self, et: Any, ev: Any, tb: Any) -> None:
        if self.failures and (et is None or issubclass(et, AssertionError)):
            if ev is not None:
                self.failures.append(f"then: {ev}")
            raise AssertionError(f"{len(self.failures)} check(s) failed:\n- " +
                                 "\n- ".join(self.failures)) from ev

    def _soft(self, fn: Callable[[], Any]) -> None:
        try:
            fn()
        except AssertionError as exc:
            self.failures.append(str(exc).split("\nassert ")[0])

    def sql(self, facts: Sequence[Fact], query: str, **kw: Any) -> Check:
        c = run_sql(self.spark, facts, query, **kw)
        self._soft(c.verify)
        return c

    def join(self, fact: Fact, dim: Callable[[], Any], on: Sequence[tuple[str, str]],
             **kw: Any) -> Check:
        c = run_join(self.spark, fact, dim, on, **kw)
        self._soft(c.verify)
        return c

    def pruned(self, check: Check, table: str, kept: Optional[int] = None) -> None:
        self._soft(lambda: check.assert_pruned(table, kept))
