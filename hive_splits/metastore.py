"""A catalog table's partitions from the metastore: names for all, full objects only for survivors.

Fetching every partition of a table (``listPartitions``) ships each one's storage descriptor,
location, parameters and statistics out of the metastore, and a Hive metastore builds every
one of them through JDO: at TPC-DS scale 1 that is ~1,800 objects per fact table per query,
when the static and dynamic domains typically admit 1–10%. So the loader asks in two steps:

1. **names** (``listPartitionNames``: one string per partition, ``k=v/k2=v2``, nothing else):
   every partition is tested against the domains here, exactly as folders are, so the counters
   stay exact (total, pruned static, pruned dynamic);
2. **the survivors only** (``listPartitionsByFilter``, the call Spark's own
   ``PruneFileSourcePartitions`` makes), with a predicate built from the surviving values:
   ``col IN (...)`` per column (``BETWEEN`` their min and max beyond
   :data:`IN_LIST_LIMIT` values, ``OR col IS NULL`` for the default partition). A Hive
   metastore evaluates it itself (``spark.sql.hive.metastorePartitionPruning``, on by default).

What comes back is a superset the loader re-tests; every surviving name must be among it, or
the loader falls back to fetching every partition (said in the report) — a metastore that
cannot evaluate the predicate (an error) falls back the same way. Spark's Hive client counts
the partition objects the metastore returned (``HiveCatalogMetrics``): the report quotes those
counts, for the loader and, in the TPC-DS bench, for Spark's own reading.
"""
from __future__ import annotations

import logging
import re
from typing import Any, Iterable, Optional, Sequence

from dpp.core.errors import LayoutError
from hive_splits.jvm_refs import jvm_static, jvm_class, jvm_text, scala_object
from hive_splits.naming import (DEFAULT_PARTITION_NAME, escape_path_name, parse_folder_name,
                                unescape_path_name)

__all__ = ["MetastorePartitions", "IN_LIST_LIMIT", "partitions_fetched_metric"]

log = logging.getLogger(__name__)

# Beyond this many values of one column, the predicate is a range: Hive's own
# spark.sql.hive.metastorePartitionPruningInSetThreshold (1000) turns larger IN lists into one
IN_LIST_LIMIT = 1000

# Most OR-ed terms per column in a metastore filter: past it, the closest runs are merged
MAX_TERMS = 32

Spec = tuple[tuple[str, Optional[str]], ...]


def _ranges(kept: dict[str, Any]) -> list[tuple[str, str]]:
    """One range from the smallest to the largest kept value, as texts."""
    ordered = sorted(kept.items(), key=lambda tv: tv[1])
    return [(ordered[0][0], ordered[-1][0])]


def _runs(kept: dict[str, Any], every: Sequence[tuple[Any, str]]) -> list[tuple[str, str]]:
    """Kept values grouped into runs of neighbours in ``every`` (all the column's values,
    sorted), as (first text, last text); at most :data:`MAX_TERMS` runs, the runs with the
    fewest unkept values between them merged first."""
    runs: list[list[int]] = []   # [first index, last index] into every
    for idx, (_, text) in enumerate(every):
        if text in kept:
            if runs and runs[-1][1] == idx - 1:
                runs[-1][1] = idx
            else:
                runs.append([idx, idx])
    missing = set(kept) - {t for _, t in every}
    if missing:  # a kept value the list does not have: fall back to one covering range
        return _ranges(kept)
    while len(runs) > MAX_TERMS:
        gap, at = min((runs[j + 1][0] - runs[j][1], j) for j in range(len(runs) - 1))
        runs[at][1] = runs[at + 1][1]
        del runs[at + 1]
    return [(every[a][1], every[b][1]) for a, b in runs]


def partitions_fetched_metric(spark: Any) -> Optional[int]:
    """Spark's count of partition objects fetched from a Hive metastore in this JVM so far
    (``HiveCatalogMetrics.METRIC_PARTITIONS_FETCHED``); None where it is not available."""
    try:
        metrics = scala_object(spark._jvm, "org.apache.spark.metrics.source.HiveCatalogMetrics")
        return int(metrics.METRIC_PARTITIONS_FETCHED().getCount())
    except Exception:
        return None


class MetastorePartitions:
    """Partition names and partitions of one catalog table, from Spark's session catalog."""

    def __init__(self, spark: Any, name: str, columns: Sequence[Any],
                 listed: Optional[str] = None) -> None:
        self.spark = spark
        self.name = name
        self.columns = list(columns)  # hive_splits.table.PartitionColumn, in order
        # the token under which the optimizer hook's rule kept the names it listed for this
        # query's plan (Spark's static pruning works from them): read once, not listed again
        self.listed = listed

    def for_plan(self, token: Optional[str]) -> "MetastorePartitions":
        """This table's partitions as one plan's relation gives them: with the names the
        rule listed for that plan (``token``), or listed here."""
        return MetastorePartitions(self.spark, self.name, self.columns, token)

    def _ident(self) -> Any:
        jvm = self.spark._jvm
        parts = self.name.split(".")
        db = parts[-2] if len(parts) >= 2 else None
        return jvm_class(jvm, "org.apache.spark.sql.catalyst.TableIdentifier").apply(
            parts[-1], jvm_class(jvm, "scala.Option").apply(db))

    def _catalog(self) -> Any:
        return self.spark._jsparkSession.sessionState().catalog()

    def _listed_names(self) -> list[str]:
        """Every partition's name, ``k=v/k2=v2`` escaped as Spark writes folders: one
        metastore call. The external catalog is asked directly where the table's database is
        known: the session catalog's call first asks the metastore whether the database and
        the table exist (two more calls under Spark's one metastore lock, for a table the
        analyzer has just resolved)."""
        jvm = self.spark._jvm
        if self.listed is not None:
            token, self.listed = self.listed, None   # taken once: a second call lists
            try:
                take = jvm_static(jvm, "dpp.spark.DppHook", "takeNames")
                if take is None:
                    raise LookupError("dpp.spark.DppHook.takeNames")
                kept = take(token)
            except Exception as exc:   # no hook jar of this build: list below
                log.debug("table %s: the rule's names unavailable (%s)", self.name, exc)
                kept = None
            if kept is not None:
                text = jvm_text(kept)
                return text.split("\n") if text else []
        none = jvm_class(jvm, "scala.Option").empty()
        parts = self.name.split(".")
        try:
            if len(parts) >= 2:
                conf = self.spark._jsparkSession.sessionState().conf()
                fold = (lambda x: x) if conf.caseSensitiveAnalysis() else str.lower
                external = self._catalog().externalCatalog()
                return _joined_names(jvm, external.listPartitionNames(
                    fold(parts[-2]), fold(parts[-1]), none))
        except Exception as exc:   # Spark's own call below says what is wrong, if anything
            log.debug("table %s: names from the external catalog failed (%s)", self.name, exc)
        return _joined_names(jvm, self._catalog().listPartitionNames(self._ident(), none))

    def rows(self) -> list[tuple[Optional[str], ...]]:
        """Every partition's values (raw text; None for the default partition), in column
        order, one tuple per partition: one metastore call that ships names only.

        At 100,000 partitions this is the loader's largest cost per query, so the names are
        read in one regular-expression pass over their joined text (a name that does not
        match the table's columns in order is then found and named by :meth:`names`)."""
        try:
            names = self._listed_names()
        except Exception as exc:
            raise LayoutError(f"partition names of table {self.name!r} cannot be listed: "
                              f"{_first_line(exc)}") from None
        if not names:
            return []
        pattern = "/".join(re.escape(escape_path_name(c.name)) + "=([^/\n]+)"
                           for c in self.columns)
        joined = "\n".join(names)
        found = re.findall(f"^{pattern}$", joined, re.IGNORECASE | re.MULTILINE)
        if len(found) != len(names):   # one does not fit: the slow path names it
            return [tuple(v for _, v in spec) for spec in self._parsed(names)]
        if len(self.columns) == 1:
            found = [(v,) for v in found]
        if "%" not in joined and DEFAULT_PARTITION_NAME not in joined:
            return found
        default = DEFAULT_PARTITION_NAME
        return [tuple(None if v == default else unescape_path_name(v) for v in row)
                for row in found]

    def names(self) -> list[Spec]:
        """Every partition's values as ``((column, raw text), ...)`` (None for the default
        partition), in column order."""
        cols = [c.name for c in self.columns]
        return [tuple(zip(cols, row)) for row in self.rows()]

    def _parsed(self, names: Sequence[str]) -> list[Spec]:
        want = [c.name.lower() for c in self.columns]
        out = []
        for text in names:
            spec = []
            for part in text.split("/"):
                parsed = parse_folder_name(part)
                if parsed is None:
                    raise LayoutError(f"table {self.name!r}: partition name {text!r} is not "
                                      f"k=v/... ")
                spec.append(parsed)
            if [k.lower() for k, _ in spec] != want:
                raise LayoutError(f"table {self.name!r}: partition {text!r} does not name the "
                                  f"partition columns {want} in order")
            out.append(tuple((c.name, v) for c, (_, v) in zip(self.columns, spec)))
        return out

    def fetch(self, survivors: Sequence[Spec], typed: Sequence[dict[str, Any]],
              values: Optional[Sequence[Sequence[tuple[Any, str]]]] = None
              ) -> tuple[list[Any], dict[str, Any]]:
        """The partitions (:class:`~hive_splits.table.CatalogPartition`) of ``survivors``
        (``typed``: their typed values), and what it cost: ``fetched`` (objects returned),
        ``pushed`` (the predicate went to the metastore), ``note``. ``values``: per column,
        every value the table has as (typed value, text), sorted — survivors that are
        neighbours in it are asked for as one range."""
        info: dict[str, Any] = {"pushed": False, "note": None}
        before = partitions_fetched_metric(self.spark)
        predicate = self._predicate(survivors, typed, values)
        parts: Optional[list[Any]] = None
        if predicate is not None:
            try:
                parts = self._by_filter(predicate)
                info["pushed"] = True
                got = {p.values for p in parts}
                missing = [s for s in survivors if s not in got]
                if missing:
                    info["note"] = (f"the metastore's answer lacked {len(missing)} surviving "
                                    f"partition(s) (e.g. {_spec_text(missing[0])}): fetched all")
                    parts = None
            except LayoutError:
                raise
            except Exception as exc:
                info["note"] = (f"the metastore could not evaluate the partition filter "
                                f"({_first_line(exc)}): fetched all partitions")
                log.warning("table %s: %s", self.name, info["note"])
                parts = None
        if parts is None:
            parts = self.fetch_all()
            info["pushed"] = False
        info["fetched"] = self._fetched_since(before, parts)
        info["returned"] = len(parts)
        info["predicate"] = predicate
        return parts, info

    def fetch_every(self) -> tuple[list[Any], dict[str, Any]]:
        """Every partition's object in one call, and what it cost (as :meth:`fetch` says it;
        no names were listed)."""
        before = partitions_fetched_metric(self.spark)
        parts = self.fetch_all()
        return parts, {"names_listed": None, "fetched": self._fetched_since(before, parts),
                       "returned": len(parts), "pushed": False, "note": None, "predicate": None}

    def _fetched_since(self, before: Optional[int], parts: Sequence[Any]) -> int:
        """Partition objects the metastore shipped since ``before`` (Spark's counter), or
        what came back where the counter is not available."""
        after = partitions_fetched_metric(self.spark)
        return after - before if before is not None and after is not None else len(parts)

    def fetch_all(self) -> list[Any]:
        from hive_splits.table import with_catalog_partitions, Table

        shape = Table(name=self.name, location="", columns=(),
                      partition_columns=tuple(self.columns), catalog_partitions=(),
                      catalog_name=self.name)
        return list(with_catalog_partitions(self.spark, shape).catalog_partitions or ())

    # ---------------------------------------------------------------- the predicate
    def _predicate(self, survivors: Sequence[Spec], typed: Sequence[dict[str, Any]],
                   values: Optional[Sequence[Sequence[tuple[Any, str]]]] = None
                   ) -> Optional[str]:
        """SQL over the partition columns admitting every survivor (a superset), or None.

        Per column, the surviving values that are neighbours among the values the table has
        (``values``) become one range ``>= AND <=`` (exact: no other partition lies between),
        so a month of dates is one term, not thirty: a Hive metastore fails on long ``OR``
        chains (Spark turns ``IN`` into one ``=`` per value), seen at 150 values on Derby.
        Beyond :data:`MAX_TERMS` runs, the closest runs are merged (a superset: the loader
        re-tests every partition). Without ``values``, ``IN`` up to :data:`IN_LIST_LIMIT`
        values, else one range from the smallest to the largest."""
        terms = []
        for i, c in enumerate(self.columns):
            texts: dict[Optional[str], Any] = {}
            for spec, vals in zip(survivors, typed):
                texts.setdefault(spec[i][1], vals.get(c.name))
            col = "`" + c.name.replace("`", "``") + "`"
            nonnull = {t: v for t, v in texts.items() if t is not None}
            ors = []
            if nonnull:
                try:
                    runs = (_runs(nonnull, values[i]) if values is not None
                            else _ranges(nonnull))
                except TypeError:  # values that do not order: say nothing of this column
                    continue
                if values is not None and len(nonnull) == len(values[i]):
                    continue  # every value of the column survives: nothing to say of it
                for lo, hi in runs:
                    # not BETWEEN: Spark's analyzed plan keeps it as a RuntimeReplaceable
                    # that the catalog's own evaluation cannot run
                    ors.append(f"{col} = {_lit(lo, c.type)}" if lo == hi else
                               f"({col} >= {_lit(lo, c.type)} AND {col} <= {_lit(hi, c.type)})")
                if values is None and len(nonnull) <= IN_LIST_LIMIT:
                    ors = [f"{col} IN ({', '.join(_lit(t, c.type) for t in nonnull)})"]
            if None in texts:
                ors.append(f"{col} IS NULL")
            if ors:
                terms.append("(" + " OR ".join(ors) + ")")
        return " AND ".join(terms) if terms else None

    def _by_filter(self, predicate: str) -> list[Any]:
        from hive_splits.table import _partition_specs, CatalogPartition

        jvm = self.spark._jvm
        jdf = self.spark.table(self.name).where(predicate)._jdf
        plan = jdf.queryExecution().analyzed()
        # literal casts folded (CAST('2451545' AS INT) → 2451545): Hive's filter conversion
        # takes literals only
        folding = scala_object(jvm, "org.apache.spark.sql.catalyst.optimizer.ConstantFolding")
        condition = folding.apply(plan).condition()
        preds = jvm_class(jvm, "java.util.ArrayList")()
        preds.add(condition)
        seq = jvm_class(jvm, "scala.jdk.javaapi.CollectionConverters").asScala(preds).toSeq()
        jparts = self._catalog().listPartitionsByFilter(self._ident(), seq)
        names = [c.name for c in self.columns]
        out = []
        for spec, loc in _partition_specs(jvm, jparts):
            values = []
            for n in names:
                v = spec.get(n, spec.get(n.lower()))
                values.append((n, None if v is None or v == DEFAULT_PARTITION_NAME else v))
            out.append(CatalogPartition(tuple(values), loc))
        return out


def _joined_names(jvm: Any, jnames: Any) -> list[str]:
    """The partition names of a Scala ``Seq[String]`` as one text: iterating it from
    Python costs a round trip per name (0.15-0.25 s for TPC-DS's 1,824 partitions). Names
    are escaped paths (control characters, newline included, are ``%XX``), so a newline
    cannot occur inside one."""
    from hive_splits.table import _scala_list

    try:
        size = int(jnames.size())
        if size == 0:
            return []
        if size <= 64:   # a few KB at most: one call
            text = str(jnames.mkString("\n"))
        else:            # read in pieces (jvm_text: py4j's 40 ms stall on a longer reply)
            buffer = jvm_class(jvm, "java.lang.StringBuilder")()
            jnames.addString(jvm_class(jvm, "scala.collection.mutable.StringBuilder")(buffer),
                             "\n")
            text = jvm_text(buffer)
    except Exception:   # not a Scala Seq on this build: one call per name
        return [str(n) for n in _scala_list(jvm, jnames)]
    return text.split("\n")


def _lit(text: str, type_: Any) -> str:
    """The partition text as a SQL literal of the column's type: Spark casts the catalog's
    text the same way when it reads the partition's value (session time zone included)."""
    quoted = "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
    simple = type_.simple_string()
    if simple == "string":
        return quoted
    return f"CAST({quoted} AS {simple})"


def _spec_text(spec: Iterable[tuple[str, Optional[str]]]) -> str:
    return "/".join(f"{k}={DEFAULT_PARTITION_NAME if v is None else v}" for k, v in spec)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
