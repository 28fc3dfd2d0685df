"""Running a case: the oracle and dpp on one session and the same data, rows compared as
multisets, before and after the case's step.

The oracle is the same query with ``spark.dpp.enabled=false`` and Spark's dynamic partition
pruning, runtime bloom filters and semi-join reduction off. Where the oracle raises, dpp must
raise too, and the other way round. Two exceptions, where the oracle raises and dpp's run
does not: a step removed files the oracle's listing still names (Spark fails on the missing
file) that dpp's pruned scan never reads; and an ANSI error on a bad value (Spark alone raises
or not by the order it evaluates rows in; :data:`DATA_ERRORS`). The converse — dpp raising
where the oracle returns rows — is always a mismatch.
"""
from __future__ import annotations

import json
import shutil
import math
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from tests.fuzz.model import SAMPLED, Case
from tests.fuzz.queries import builder
from tests.fuzz.world import World

PRUNING_OFF = {
    "spark.dpp.enabled": "false",
    "spark.sql.optimizer.dynamicPartitionPruning.enabled": "false",
    "spark.sql.optimizer.runtime.bloomFilter.enabled": "false",
    "spark.sql.optimizer.runtimeFilter.semiJoinReduction.enabled": "false",
}
# generous: a late filter would only mean "no pruning", and hide what the fuzzer looks for
DPP_ON = {"spark.dpp.enabled": "true", "spark.dpp.waitTimeout": "120s"}
MISSING_FILE = ("FileNotFound", "does not exist", "FAILED_READ_FILE", "No such file")
# ANSI errors on a value: whether Spark meets the bad value depends on which rows it evaluates
# and in what order (AQE ends a join whose other side came back empty before the fact stage
# fails, or not) — Spark with pruning off raises or returns rows by timing alone
DATA_ERRORS = ("CAST_INVALID_INPUT", "ARITHMETIC_OVERFLOW", "DIVIDE_BY_ZERO", "CAST_OVERFLOW",
               "NUMERIC_VALUE_OUT_OF_RANGE", "DATETIME_FIELD_OUT_OF_BOUNDS")


@dataclass
class Outcome:
    rows: Optional[Counter]
    error: Optional[str] = None

    def show(self, limit: int = 6) -> str:
        if self.error:
            return f"error {self.error}"
        assert self.rows is not None
        items = sorted(self.rows.items(), key=repr)[:limit]
        more = "" if len(self.rows) <= limit else f" …{len(self.rows) - limit} more"
        return f"{sum(self.rows.values())} rows {{" + ", ".join(
            f"{k}×{v}" for k, v in items) + "}" + more


@dataclass
class Result:
    case: Case
    mismatch: Optional[str] = None      # what differed, or None
    pruned: bool = False                # some dpp run of the case skipped something
    errors: int = 0                     # runs where both sides raised (agreeing)
    data_errors: int = 0                # the oracle met a bad value that dpp's run did not
    mutated: bool = False               # the self-test's switch dropped a kept partition
    seconds: float = 0.0
    reports: list = field(default_factory=list)


def _canonical(v: Any) -> Any:
    if isinstance(v, float) and (math.isnan(v) or (v == 0.0 and math.copysign(1.0, v) < 0)):
        return "NaN" if math.isnan(v) else "-0.0"
    if isinstance(v, (tuple, list)):
        return tuple(_canonical(x) for x in v)
    if hasattr(v, "asDict"):
        return tuple(_canonical(x) for x in v)
    return v


def capture(fn: Callable[[], Any]) -> Outcome:
    try:
        return Outcome(Counter(_canonical(tuple(r)) for r in fn()))
    except Exception as exc:  # Spark's errors are compared, not raised
        full = str(exc).strip()
        text = full.splitlines()[0][:300] if full else ""
        # the first line of a py4j error names only the call: the class is further down
        tags = [m for m in MISSING_FILE + DATA_ERRORS if m in full and m not in text]
        return Outcome(None, f"{type(exc).__name__}: {text}"
                       + (f" [{', '.join(tags)}]" if tags else ""))


class Backend:
    """A session to run cases on: a classic SparkSession with ``dpp.enable``, or a Spark
    Connect client of ``dpp connect-server`` that never imports dpp."""

    name = "classic"

    def __init__(self, spark: Any, report_path: Path) -> None:
        self.spark = spark
        self.report_path = report_path

    #: the folder of the one table the backend declared itself (a server's, fixed at its
    #: start), or None: a case's declared table is declared by the case
    declared_dir: Optional[Path] = None

    def supports(self, case: Case) -> bool:
        return True

    def declared_fact(self, w: "World") -> str:
        """The name a declared fact is read by."""
        return w.fact_name

    def conf(self, settings: dict[str, str]) -> Any:
        """The settings set on the session for a block, and put back after."""
        from tests.conftest import spark_conf

        return spark_conf(self.spark, settings)

    def report_mark(self) -> int:
        try:
            return len(self.report_path.read_text().splitlines())
        except OSError:
            return 0

    def reports_since(self, mark: int) -> list[dict]:
        for attempt in range(20):
            try:
                lines = self.report_path.read_text().splitlines()[mark:]
            except OSError:
                return []
            try:
                return [json.loads(x) for x in lines if x.strip()]
            except json.JSONDecodeError:   # a line still being written: read it again
                if attempt == 19:
                    raise
                time.sleep(0.1)
        return []

    def declare(self, name: str, folder: Optional[str]) -> None:
        """``spark.dpp.tables.<name>`` set (or removed) while dpp is on, as a job does."""
        key = f"spark.dpp.tables.{name}"
        if folder is None:
            self.spark.conf.unset(key)
        else:
            self.spark.conf.set(key, folder)
        self.spark.sql("SELECT 1").collect()   # dpp reads declarations at each spark.sql


def pruned(reports: list[dict]) -> bool:
    return any(t.get("pruning") == "applied" for r in reports for t in r.get("tables", []))


def bounded(reports: list[dict]) -> bool:
    """Whether a run used a bound read from file statistics (a comparison's other side)."""
    return any("statistics" in (f.get("build_column") or "") and f.get("outcome") == "complete"
               for r in reports for f in r.get("filters", []))


class CaseRun:
    """One case on one backend: its world, the two modes' relations, the runs."""

    def __init__(self, backend: Backend, case: Case, base: Path, n: int) -> None:
        self.b = backend
        self.case = case
        fixed = backend.declared_dir if case.fact.relation == "declared" else None
        if fixed is not None:   # the backend's declared folder, emptied for this case
            shutil.rmtree(fixed, ignore_errors=True)
            fixed.mkdir(parents=True)
        self.w = World(case, base, n, fact_dir=fixed)
        self.out = base / "out"
        self.frames: dict[str, Callable[[], Any]] = {}
        self.step_settings: dict[str, str] = {}   # what a ``setting`` step changed

    def fact_for(self, mode: str) -> str:
        """The fact's name in ``mode``: the catalog table; a ``spark.read.parquet`` view; a
        declared table (dpp) or Spark's reader of its folder by name (the oracle)."""
        w, kind, spark = self.w, self.case.fact.relation, self.b.spark
        if kind == "catalog":
            return w.fact_name
        if kind == "path":
            if "path" not in self.frames:
                spark.read.parquet(str(w.root)).createOrReplaceTempView(w.fact_name)
                self.frames["path"] = lambda: None
            return w.fact_name
        if mode == "oracle":
            # Spark's reader of the folder, resolved where the query is: a DataFrame reused on
            # a classic session keeps the listing it was made with, a Connect client's is
            # analysed again at each run, as a declared table must be
            return "parquet.`" + str(w.root).replace("`", "``") + "`"
        return self.b.declared_fact(w)

    def run_mode(self, mode: str, reuse: bool) -> tuple[Outcome, list[dict]]:
        settings = {**self.case.settings, **self.step_settings}
        settings.update(PRUNING_OFF if mode == "oracle" else DPP_ON)
        if mode != "oracle" and self.case.query.extra in SAMPLED:
            # what a sample draws depends on the files read below it: the oracle's Spark
            # has its own pruning off, so dpp's run does too (dpp alone is under test)
            settings.update({k: v for k, v in PRUNING_OFF.items() if k != "spark.dpp.enabled"})
        mark = self.b.report_mark()
        def make() -> Callable[[], Any]:
            if mode == "dpp" and self.case.fact.relation == "declared":
                self.b.declare(self.w.fact_name, str(self.w.root))
            fact = self.fact_for(mode)
            return builder(self.case, self.b.spark, fact, self.w.dim_view, str(self.out / mode))

        with self.b.conf(settings):
            if reuse and mode in self.frames:
                got = capture(self.frames[mode])
            else:
                try:   # a relation Spark cannot read (no file left) raises here: compared too
                    fn = make()
                except Exception as exc:
                    fn = _raiser(exc)
                self.frames[mode] = fn
                got = capture(fn)
        reports = self.b.reports_since(mark) if mode == "dpp" else []
        return got, reports

    def run(self) -> Result:
        t0 = time.monotonic()
        res = Result(self.case)
        try:
            self.w.write_files()
            self.w.create(self.b.spark)
            self._compare(res, "first run", reuse=False)
            if self.case.step and res.mismatch is None:
                self.apply_step()
                self._compare(res, f"after step {self.case.step}",
                              reuse=self.case.step == "reuse_df")
        finally:
            if self.case.fact.relation == "declared":
                try:
                    with self.b.conf(DPP_ON):
                        self.b.declare(self.w.fact_name, None)
                except Exception:
                    pass
            self.w.drop(self.b.spark)
            for v in (self.w.fact_name, self.w.fact_name + "_o"):
                try:
                    self.b.spark.catalog.dropTempView(v)
                except Exception:
                    pass
        res.seconds = time.monotonic() - t0
        return res

    def _compare(self, res: Result, when: str, reuse: bool) -> None:
        from hive_splits import loader

        want, _ = self.run_mode("oracle", reuse)
        before = loader.dropped_by_switch
        got, reports = self.run_mode("dpp", reuse)
        res.mutated = res.mutated or loader.dropped_by_switch > before
        res.reports.extend(reports)
        res.pruned = res.pruned or pruned(reports)
        if want.error and got.error:
            res.errors += 1
            return
        if want.error and self.case.step in ("remove_partition",) and \
                any(m in want.error for m in MISSING_FILE):
            return   # Spark reads a file its listing still names; a pruned scan may not
        if want.error and got.error is None and any(m in want.error for m in DATA_ERRORS):
            res.data_errors += 1
            return
        if want.error != got.error or want.rows != got.rows:
            res.mismatch = (f"{when}: Spark {want.show()}\n    dpp   {got.show()}\n"
                            f"    reports: {_summary(reports)}")

    def apply_step(self) -> None:
        s, w, spark = self.case.step, self.w, self.b.spark
        if s in ("add_files", "reuse_df"):
            w.add_file()
        elif s == "add_partition":
            w.add_leaf()
        elif s == "remove_partition":
            w.remove_leaf()
        elif s == "rewrite_file":
            w.rewrite_file()
        elif s == "overwrite_dim":
            w.overwrite_dim(spark)
        elif s == "redefine_view":
            w.define_dim_view(spark, redefined=True)
            if self.case.fact.relation == "path":
                (spark.read.option("pathGlobFilter", "part-0*").parquet(str(w.root))
                 .createOrReplaceTempView(w.fact_name))
        elif s == "retype_view":   # the same view name, the key now text
            w.define_dim_view(spark, redefined=False, key_type="STRING")
        elif s == "setting":
            tz = self.case.settings.get("spark.sql.session.timeZone", "UTC")
            ansi = self.case.settings.get("spark.sql.ansi.enabled", "true")
            self.step_settings = {
                "spark.sql.session.timeZone":
                    "Asia/Kolkata" if tz != "Asia/Kolkata" else "America/Los_Angeles",
                "spark.sql.ansi.enabled": "false" if ansi == "true" else "true"}


def _raiser(exc: Exception) -> Callable[[], Any]:
    def fail() -> Any:
        raise exc
    return fail


def _summary(reports: list[dict]) -> str:
    parts = []
    for r in reports:
        for t in r.get("tables", []):
            parts.append(f"{t.get('table')}: {t.get('pruning')} kept {t.get('partitions_kept')}"
                         f"/{t.get('partitions_total')}"
                         + (f" ({t['reason']})" if t.get("reason") else "")
                         + (f" rows {t['row_group_filter']}" if t.get("row_group_filter")
                            else ""))
        bounds = [f for f in r.get("filters", []) if "statistics" in (f.get("build_column")
                                                                        or "")]
        parts += [f"bound {f.get('build_column')}: {f.get('outcome')}" for f in bounds]
    return "; ".join(parts) or "none"
