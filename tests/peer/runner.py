"""Run peer cases: the tables once, each case in each variant and mode, rows and reads compared.

A **variant** is a table kind (``path``: temporary views over ``spark.read.parquet`` of the
folders, as a job reads files; ``catalog``: tables of Spark's catalog over the same folders,
written by Spark's ``saveAsTable`` as the suites write theirs) with adaptive execution on or
off (Spark's own suite runs every test both ways). A **mode** is how pruning runs:

* ``off``: every dynamic pruning and runtime filter of Spark off, dpp off: the reference rows
  and the reference reads;
* ``spark``: Spark's defaults, dpp off;
* ``dpp``: dpp's optimizer hook on Spark's defaults, as a job with ``dpp.enable`` runs.

A mode **pruned** a case when its scans read fewer partitions (or files) than ``off`` read:
measured the same way in every mode, from the executed plan's scan metrics, so Spark's own
dynamic pruning and dpp's count alike, and static filters (which ``off`` applies too) do not.
A case **mismatches** when a mode's rows differ from ``off``'s as multisets, or one raised and
the other did not.
"""
from __future__ import annotations

import shutil
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

import pyarrow.parquet as pq

from dpp.runtime.spark_metrics import file_scans
from tests.conftest import spark_conf
from tests.differential import PRUNING_OFF, capture
from tests.peer.model import PeerCase, PeerTable

DATABASE = "peer_suite"
KINDS = ("path", "catalog")
AQE = ("on", "off")
MODES = ("off", "spark", "dpp")
MODE_CONF = {
    "off": {**PRUNING_OFF, "spark.dpp.enabled": "false"},
    "spark": {"spark.dpp.enabled": "false"},
    "dpp": {"spark.dpp.enabled": "true"},
}
# what each run sets, restored after it: the variant's adaptive switch and the settings the
# original tests toggle around their queries (the suites' own defaults: reuse on)
BASE_CONF = {"spark.sql.exchange.reuse": "true",
             "spark.sql.optimizer.dynamicPartitionPruning.reuseBroadcastOnly": "true"}


@dataclass(frozen=True)
class Variant:
    kind: str
    aqe: str

    def __str__(self) -> str:
        return f"{self.kind}/aqe-{self.aqe}"


def variants(kinds: Sequence[str] = KINDS, aqe: Sequence[str] = AQE) -> list[Variant]:
    return [Variant(k, a) for k in kinds for a in aqe]


@dataclass
class ModeRun:
    """One execution of a case in one mode."""

    rows: Optional[int] = None
    error: Optional[str] = None
    partitions_read: int = 0
    files_read: int = 0
    dpp_applied: list[str] = field(default_factory=list)   # tables dpp's report pruned
    report: str = ""


@dataclass
class CaseResult:
    case: str
    variant: str
    runs: dict[str, ModeRun] = field(default_factory=dict)
    mismatched: list[str] = field(default_factory=list)    # modes whose rows differ from off's
    pruned: list[str] = field(default_factory=list)        # modes that read less than off
    why: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ------------------------------------------------------------------------- tables

def all_tables(cases: Iterable[PeerCase], shared: Iterable[PeerTable]) -> list[PeerTable]:
    """The shared tables and every case's own, each name once (a name defined twice
    differently is an error in the case lists)."""
    out: dict[str, PeerTable] = {}
    for t in [*shared, *(t for c in cases for t in c.tables)]:
        if t.name in out and out[t.name] is not t and not out[t.name].data.equals(t.data):
            raise ValueError(f"peer table {t.name!r} defined twice with different rows")
        out.setdefault(t.name, t)
    return list(out.values())


class Tables:
    """The suite's tables written once under ``root`` by Spark, then shown as either kind."""

    def __init__(self, spark: Any, root: Path, tables: Sequence[PeerTable]) -> None:
        self.spark, self.root, self.tables = spark, root, list(tables)
        self.kind: Optional[str] = None
        self._previous_db = spark.catalog.currentDatabase()
        spark.sql(f"DROP DATABASE IF EXISTS {DATABASE} CASCADE")
        spark.sql(f"CREATE DATABASE {DATABASE}")
        for t in self.tables:
            self._write(t)

    def folder(self, t: PeerTable) -> Path:
        return self.root / "tables" / t.name

    def _write(self, t: PeerTable) -> None:
        """Spark writes every table (its own partition folder names and encodings) from a
        staged Parquet file of the case list's rows, as ``saveAsTable`` of the suites does;
        the catalog kind is that table, the path kind reads its folder."""
        stage = self.root / "stage" / t.name / "part-0.parquet"
        stage.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(t.data, stage)
        df = self.spark.read.parquet(str(stage.parent))
        writer = df.write.format("parquet").mode("overwrite").option("path", str(self.folder(t)))
        if t.partition_by:
            writer = writer.partitionBy(*t.partition_by)
        writer.saveAsTable(f"{DATABASE}.{t.name}")
        if t.analyze:
            self.spark.sql(f"ANALYZE TABLE {DATABASE}.{t.name} COMPUTE STATISTICS FOR COLUMNS "
                           + ", ".join(t.analyze))

    def show(self, kind: str) -> None:
        """Make the suite's table names mean that kind's tables."""
        if kind == self.kind:
            return
        if kind == "path":
            for t in self.tables:
                reader = self.spark.read
                if t.data.num_rows == 0:   # no file to infer from: the table's own schema
                    reader = reader.schema(self.spark.table(f"{DATABASE}.{t.name}").schema)
                reader.parquet(str(self.folder(t))).createOrReplaceTempView(t.name)
        else:
            self._drop_views()
            self.spark.catalog.setCurrentDatabase(DATABASE)
        self.kind = kind

    def _drop_views(self) -> None:
        for t in self.tables:
            self.spark.catalog.dropTempView(t.name)

    def close(self) -> None:
        self._drop_views()
        self.spark.catalog.setCurrentDatabase(self._previous_db)
        self.spark.sql(f"DROP DATABASE IF EXISTS {DATABASE} CASCADE")
        shutil.rmtree(self.root / "stage", ignore_errors=True)


# ------------------------------------------------------------------------- running

def _reads(df: Any) -> tuple[int, int]:
    try:
        scans = file_scans(df)
    except Exception:
        return 0, 0
    return sum(s.partitions_read for s in scans), sum(s.files_read for s in scans)


def run_mode(spark: Any, session: Any, case: PeerCase, variant: Variant, mode: str
             ) -> tuple[ModeRun, Optional[Counter]]:
    conf = {**BASE_CONF, "spark.sql.adaptive.enabled": "true" if variant.aqe == "on" else "false",
            **case.conf, **MODE_CONF[mode]}
    with spark_conf(spark, conf):
        session.last_report = None
        df = None

        def rows() -> list[Any]:
            nonlocal df
            df = spark.sql(case.sql)
            return df.collect()

        out = capture(rows)
        run = ModeRun(rows=None if out.rows is None else sum(out.rows.values()), error=out.error)
        if df is not None and out.error is None:
            run.partitions_read, run.files_read = _reads(df)
        report = session.last_report if mode == "dpp" else None
        if report is not None:
            run.dpp_applied = [t.table for t in report.tables if t.pruning == "applied"]
            run.report = "; ".join(f"{t.table}: {t.pruning} {t.partitions_kept}/"
                                   f"{t.partitions_total}" + (f" ({t.reason})" if t.reason else "")
                                   for t in report.tables)
    return run, out.rows


def run_case(spark: Any, session: Any, case: PeerCase, variant: Variant) -> CaseResult:
    result = CaseResult(case.id, str(variant))
    answers: dict[str, Optional[Counter]] = {}
    for mode in MODES:
        result.runs[mode], answers[mode] = run_mode(spark, session, case, variant, mode)
    ref = result.runs["off"]
    for mode in MODES[1:]:
        run = result.runs[mode]
        if (run.error is None) != (ref.error is None) or answers[mode] != answers["off"]:
            result.mismatched.append(mode)
            result.why += (f"{mode}: {run.error or f'{run.rows} rows'} against off's "
                           f"{ref.error or f'{ref.rows} rows'}; ")
        elif ref.error is None and (run.partitions_read < ref.partitions_read
                                    or run.files_read < ref.files_read):
            result.pruned.append(mode)
    return result


@dataclass
class Tally:
    """Counts over case runs: runs, mismatches and pruned per mode."""

    runs: int = 0
    errors_in_off: int = 0
    pruned: Counter = field(default_factory=Counter)
    dpp_own: int = 0           # dpp-mode runs that read less and whose report says dpp pruned
    mismatched: Counter = field(default_factory=Counter)
    spark_only: list[str] = field(default_factory=list)   # Spark pruned, dpp mode did not

    def add(self, r: CaseResult) -> None:
        self.runs += 1
        self.errors_in_off += r.runs["off"].error is not None
        self.pruned.update(r.pruned)
        self.mismatched.update(r.mismatched)
        if "dpp" in r.pruned and r.runs["dpp"].dpp_applied:
            self.dpp_own += 1
        if "spark" in r.pruned and "dpp" not in r.pruned:
            self.spark_only.append(f"{r.case} [{r.variant}]")

    def line(self) -> str:
        return (f"peer suite: {self.runs} case runs, dpp pruned {self.pruned['dpp']} "
                f"({self.dpp_own} by dpp's own filters), Spark pruned {self.pruned['spark']}, "
                f"mismatches {self.mismatched['dpp']} (Spark's own: {self.mismatched['spark']})")


def run_suite(spark: Any, session: Any, cases: Sequence[PeerCase], tables: Tables,
              chosen: Callable[[int, PeerCase], Sequence[Variant]],
              progress: Callable[[CaseResult], None] = lambda r: None) -> Iterator[CaseResult]:
    """Each case in the variants ``chosen(index, case)`` names, grouped by table kind (one
    switch of the names per kind)."""
    for kind in KINDS:
        for i, case in enumerate(cases):
            for v in chosen(i, case):
                if v.kind != kind:
                    continue
                tables.show(kind)
                r = run_case(spark, session, case, v)
                progress(r)
                yield r
