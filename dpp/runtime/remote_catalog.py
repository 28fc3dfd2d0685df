"""Spark Connect: partitioned catalog tables pruned by a static partition predicate.

On a classic session the split loader asks the metastore (through the JVM) for the surviving
partitions' *locations* and hands Spark their files. A Spark Connect client has no JVM, and
asking for each survivor's location by SQL (``DESCRIBE … PARTITION``) costs a round trip per
partition, while assuming ``root/k=v`` locations would read the wrong folder for a partition
added at a location of its own. So on Connect no location is needed at all:

1. **Shape** (:func:`connect_catalog_table`): the columns from ``spark.catalog.listColumns``
   (one round trip, already paid to tell a partitioned table from a dimension) and, for a
   partitioned table, one ``DESCRIBE TABLE EXTENDED``: the table must be in the session
   catalog with its partitions *tracked by the catalog* (``Partition Provider: Catalog``, or
   a Hive-format table) and ``spark.sql.hive.manageFilesourcePartitions`` on — only then is
   every row of the table in a partition ``SHOW PARTITIONS`` lists, with the partition
   column's value read from that partition's text (Spark's ``CatalogTablePartition.toRow``:
   ``CAST(text AS type)`` in the session time zone). Anything else is left to Spark, with the
   reason.
2. **Survivors** (:class:`ConnectPartitions`, the loader's partition source): ``SHOW
   PARTITIONS`` (one round trip, Hive-escaped ``k=v/k2=v2`` texts, ``__HIVE_DEFAULT_PARTITION__``
   for NULL) gives every partition's texts; the unchanged :class:`~hive_splits.SplitLoader`
   tests them against the static and dynamic domains exactly as it tests a path table's
   folders (same text reading, same session rules, same counters). Nothing is listed
   (:class:`NoListing`): no location is asked for.
3. **Handoff** (:func:`kept_predicate`, :func:`predicate_column`): the reference is replaced by
   ``spark.table(t).where(<kept partitions>)`` — the kept partitions' own texts cast to the
   column's type, as Spark casts them when it reads a partition's value, so each kept
   partition satisfies the predicate by construction. Neighbouring kept values (in the
   order of every value the table has) become one range ``>= lo AND <= hi`` (exact: no other
   partition lies between), at most :data:`~hive_splits.metastore.MAX_TERMS` ranges per
   column (closest ranges merged beyond: a superset) — for integral, decimal, date and
   timestamp columns; other types list their kept values — ``IS NULL`` for a kept default
   partition; several partition columns give a disjunction of conjunctions grouped by
   shared tails (or, past :data:`MAX_DISJUNCTS`, one conjunction per column: a superset).
   Spark's own ``PruneFileSourcePartitions`` (metastore partition pruning included) then
   lists only the admitted partitions, wherever they are. The predicate is a row filter on
   partition columns, so it is right even where Spark would not prune by it.

4. **Sizing** (:func:`folder_format`, :func:`default_folders`): Spark sizes a catalog table it
   prunes while planning by the files of the partitions it admits, so a predicate keeping a
   few partitions can flip a join to a broadcast of the fact that Spark's own plan (which
   admits every partition the join's ``IS NOT NULL`` admits) does not make (TPC-DS q72). When
   the loader pruned by a join, the table is plain Parquet (no bucketing, no storage
   options) and the files Spark serves for the predicate (``inputFiles()``: the server
   lists the admitted partitions) are exactly those of the admitted partitions' default
   folders ``root/k=v`` as the client lists them, the session reads those folders instead,
   in a clone sized as the table (as a path table is). Anything else keeps the predicate.

Soundness: the predicate admits every kept partition's rows (their value *is* the cast of the
kept text), and what it leaves out are partitions the loader pruned — by the same domain
tests that prune path tables. The snapshot is ``SHOW PARTITIONS`` at planning time: a
partition another job adds afterwards is read only if its value is admitted (as a partition
added after Spark's own planning is not read at all).
"""
from __future__ import annotations

import logging
import posixpath
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional, Sequence, Union

from dpp.core.domain import DataType
from dpp.core.errors import DomainError, DppError
from hive_splits.listing import DirEntry, FileEntry, Lister, child_path
from hive_splits.loader import LoadResult
from hive_splits.metastore import _runs
from hive_splits.naming import parse_folder_name, partition_path
from hive_splits.table import CatalogPartition, PartitionColumn, Table, local_path

__all__ = ["ConnectPartitions", "NoListing", "Unprunable", "connect_catalog_table",
           "default_folders", "folder_format", "is_connect_catalog", "same_files", "kept_predicate", "predicate_column", "predicate_sql",
           "quote_table", "MAX_DISJUNCTS", "SESSION_CATALOG"]

log = logging.getLogger(__name__)

SESSION_CATALOG = "spark_catalog"
# several partition columns: past this many conjunctions the predicate is one term per
# column (the product of each column's kept values: a superset)
MAX_DISJUNCTS = 64
# types whose order Python's values of them share with Spark's: ranges of neighbours may
# stand for their kept values. Not floats (NaN and -0.0 order differently), not strings (a
# session's default collation may order them otherwise): their kept values are listed
_ORDERED = {"tinyint", "smallint", "int", "bigint", "decimal", "date", "timestamp",
            "timestamp_ntz"}

Spec = tuple[tuple[str, Optional[str]], ...]
SqlRunner = Callable[[str], Any]


class Unprunable(DppError):
    """A partitioned catalog table dpp cannot prune exactly on Spark Connect (the message
    says why); it is left to Spark."""


# ---------------------------------------------------------------------------- the shape

def quote_table(name: str) -> str:
    """``db.t`` as ``\\`db\\`.\\`t\\``` for SQL text; a name holding a backtick is refused
    (its parts cannot be told apart from its text)."""
    if "`" in name:
        raise Unprunable(f"table name {name!r} holds a backtick")
    return ".".join(f"`{p}`" for p in name.split("."))


def _describe(sql: SqlRunner, name: str) -> tuple[dict[str, str], dict[str, str]]:
    """``DESCRIBE TABLE EXTENDED`` in one round trip: the column section's column → type
    (the declared type: ``char(3)`` where ``listColumns`` may say ``string``) and the detail
    section (``Catalog``, ``Provider``, ``Location``, ``Partition Provider``, …) as key →
    value."""
    rows = sql(f"DESCRIBE TABLE EXTENDED {quote_table(name)}").collect()
    types: dict[str, str] = {}
    detail: dict[str, str] = {}
    section = "columns"
    for r in rows:
        key = (r[0] or "").strip()
        if key.startswith("# Detailed Table Information"):
            section = "detail"
            continue
        if key.startswith("#") or not key:
            if section == "columns":
                section = "other"   # partition information: the columns again
            elif section == "detail":
                break
            continue
        if section == "columns":
            types[key] = (r[1] or "").strip()
        elif section == "detail":
            detail[key] = (r[1] or "").strip()
    return types, detail


def folder_format(detail: dict[str, str]) -> Optional[str]:
    """The reader a partition folder of the table ``detail`` describes (``DESCRIBE TABLE
    EXTENDED``'s detail section) can be read with so that it gives the rows Spark's read of
    the table gives, or None: only a Parquet data-source table with no bucketing and no
    storage options (a Hive-format table has its serde, a bucketed one its bucket layout,
    options change how files are read)."""
    if detail.get("Provider", "").strip().lower() != "parquet":
        return None
    if detail.get("Num Buckets") or detail.get("Bucket Columns"):
        return None
    if detail.get("Storage Properties", "").strip().strip("[]").strip():
        return None
    return "parquet"


def _norm(path: str) -> str:
    """A path as :func:`default_folders` compares it (a URI's ``//`` after its scheme kept)."""
    return path.rstrip("/") if "://" in path else posixpath.normpath(path)


def same_files(folders: dict[str, set[str]], listed: Iterable[str]) -> bool:
    """Whether the files a lister found in ``folders`` are exactly the files Spark serves
    there (:func:`default_folders`'s answer)."""
    return {_norm(p) for p in listed} == set().union(*folders.values())


def default_folders(root: str, every: Sequence[Spec], served: Iterable[str]
                    ) -> Optional[dict[str, set[str]]]:
    """The folders of ``served`` (the files Spark lists for the admitted partitions) when
    each file lies directly in the default folder ``root/k=v`` of one of the table's
    partitions (``every``), as folder → its files (local paths); None when one does not (a
    partition at a location of its own, a nested file): then the partitions' own locations
    are needed, and the caller keeps the predicate."""
    if not root:
        return None
    defaults = {_norm(child_path(root, partition_path(list(spec)))) for spec in every}
    out: dict[str, set[str]] = {}
    for f in served:
        path = _norm(local_path(f))
        folder = posixpath.dirname(path)
        if folder not in defaults:
            return None
        out.setdefault(folder, set()).add(path)
    return out


def connect_catalog_table(sql: SqlRunner, name: str, columns: Sequence[Any],
                          manages_partitions: bool) -> Table:
    """The shape of partitioned catalog table ``name`` for pruning on Spark Connect, from
    ``spark.catalog.listColumns`` rows (``columns``) and one ``DESCRIBE TABLE EXTENDED``.
    ``manages_partitions``: the server's ``spark.sql.hive.manageFilesourcePartitions``.
    Raises :class:`Unprunable` with the reason where the partitions ``SHOW PARTITIONS`` lists
    might not hold every row (partitions discovered from the folders, another catalog) or a
    partition column's value cannot be read as Spark reads it (CHAR columns, collations,
    types without a domain)."""
    if not manages_partitions:
        raise Unprunable("spark.sql.hive.manageFilesourcePartitions=false: Spark discovers "
                         "the partitions from the folders, not the catalog")
    declared, detail = _describe(sql, name)
    chars = sorted({f"{n} {t}" for n, t in
                    [(c.name, str(c.dataType)) for c in columns] + list(declared.items())
                    if t.strip().lower().startswith("char")})
    if chars:
        # Spark pads CHAR values on read and pads what they are compared with: a partition's
        # text and a dimension's key would compare differently here than in Spark
        raise Unprunable(f"CHAR(n) columns ({', '.join(chars)}): Spark pads their values "
                         f"on read")
    catalog = detail.get("Catalog")
    if catalog is not None and catalog != SESSION_CATALOG:
        raise Unprunable(f"in catalog {catalog!r}, not Spark's session catalog")
    provider = detail.get("Provider", "").lower()
    if provider != "hive" and detail.get("Partition Provider", "").lower() != "catalog":
        raise Unprunable("its partitions are not tracked by the catalog (no 'Partition "
                         "Provider: Catalog'): Spark discovers them from the folders")
    pcols: list[PartitionColumn] = []
    data: list[tuple[str, str]] = []
    for c in columns:
        text = str(c.dataType)
        if c.isPartition:
            try:
                pcols.append(PartitionColumn(c.name, DataType.from_catalog(text)))
            except DomainError as exc:
                raise Unprunable(f"partition column {c.name} of type {text}: {exc}") from None
        else:
            data.append((c.name, text))
    # listColumns gives columns in the table's order: partition columns in partitioning order
    location = local_path(detail.get("Location", "")) if detail.get("Location") else ""
    return Table(name=name, location=location, columns=tuple(data),
                 partition_columns=tuple(pcols), catalog_name=name,
                 partition_source=ConnectPartitions(sql, name, pcols, location,
                                                    folder_format(detail)),
                 lister=NoListing())


def is_connect_catalog(table: Optional[Table]) -> bool:
    """Whether ``table`` is a catalog table pruned the Connect way (by a predicate)."""
    return table is not None and isinstance(table.partition_source, ConnectPartitions)


# ---------------------------------------------------------------------------- the loader's side

class NoListing(Lister):
    """The loader's lister for a table Spark lists itself: every kept partition is "listed"
    as empty, nothing is asked of any storage (and nothing counted)."""

    kind = "spark"

    def location(self, location: str) -> str:
        return location

    def list(self, folder: str) -> tuple[list[DirEntry], list[FileEntry]]:
        return [], []

    def is_dir(self, path: str) -> bool:
        return True

    def read_footer(self, path: str, size: int) -> Any:
        raise OSError(f"{path}: files of a Spark Connect catalog table are not read here")

    def spark_uri(self, path: str) -> str:
        return path


class ConnectPartitions:
    """The loader's partition source for a catalog table on Spark Connect: every partition's
    texts from ``SHOW PARTITIONS`` (one round trip); the survivors' "partitions" are made
    here, at the table's default paths (never read: :class:`NoListing`), since only their
    texts are handed on."""

    def __init__(self, sql: SqlRunner, name: str, columns: Sequence[PartitionColumn],
                 root: str, folder_format: Optional[str] = None) -> None:
        self.sql = sql
        self.name = name
        self.columns = list(columns)
        self.root = root or "/"
        # how a partition folder can be read as the table reads it (None: it cannot)
        self.folder_format = folder_format
        self.last_names: Optional[list[Spec]] = None   # what names() answered last

    def fresh(self) -> "ConnectPartitions":
        """The same source with nothing answered yet: one per load, so the partitions a load
        tested are the ones its predicate is made from."""
        return ConnectPartitions(self.sql, self.name, self.columns, self.root,
                                 self.folder_format)

    def names(self) -> list[Spec]:
        """Every partition's values (raw text; None for the default partition), in column
        order. Raises :class:`Unprunable` for a name that does not spell the partition
        columns in order."""
        rows = self.sql(f"SHOW PARTITIONS {quote_table(self.name)}").collect()
        want = [c.name.lower() for c in self.columns]
        out: list[Spec] = []
        for r in rows:
            text = str(r[0])
            spec = [parse_folder_name(part) for part in text.split("/")]
            if any(p is None for p in spec) or [p[0].lower() for p in spec] != want:  # type: ignore[index]
                raise Unprunable(f"partition {text!r} does not name the partition columns "
                                 f"{want} in order")
            out.append(tuple((c.name, p[1]) for c, p in zip(self.columns, spec)))  # type: ignore[index]
        self.last_names = out
        return out

    def _placeholder(self, spec: Spec) -> CatalogPartition:
        return CatalogPartition(spec, child_path(self.root, partition_path(list(spec))))

    def fetch(self, survivors: Sequence[Spec], typed: Sequence[dict[str, Any]],
              values: Optional[Sequence[Sequence[tuple[Any, str]]]] = None
              ) -> tuple[list[CatalogPartition], dict[str, Any]]:
        """The survivors, no round trip; ``values`` (every value per column, sorted) is kept
        in the load's metastore info for :func:`kept_predicate`."""
        return ([self._placeholder(s) for s in survivors],
                {"fetched": 0, "returned": len(survivors), "pushed": True,
                 "connect_values": values})

    def fetch_every(self) -> tuple[list[CatalogPartition], dict[str, Any]]:
        """Every partition (no domain on a partition column: nothing is pruned)."""
        parts = [self._placeholder(s) for s in self.names()]
        return parts, {"names_listed": len(parts), "fetched": 0, "returned": len(parts),
                       "pushed": False, "connect_values": None}


# ---------------------------------------------------------------------------- the predicate

@dataclass(frozen=True)
class Term:
    """One column's admitted values: ranges of texts (``lo == hi``: one value), an exact
    list of texts, and whether NULL (the default partition) is admitted."""

    column: str
    type: DataType
    runs: tuple[tuple[str, str], ...] = ()
    exact: tuple[str, ...] = ()
    null: bool = False


@dataclass(frozen=True)
class And:
    terms: tuple[Union[Term, "Or"], ...]


@dataclass(frozen=True)
class Or:
    parts: tuple[Union[And, Term], ...]


Pred = Union[Term, And, Or]
FALSE = Or(())


def _size(p: Optional[Pred]) -> int:
    if p is None:
        return 0
    if isinstance(p, Term):
        return 1
    if isinstance(p, And):
        return sum(_size(t) for t in p.terms)
    return sum(_size(t) for t in p.parts)


def _conj(*terms: Optional[Pred]) -> Optional[Pred]:
    kept = tuple(t for t in terms if t is not None)
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else And(kept)  # type: ignore[arg-type]


def _disj(parts: Sequence[Optional[Pred]]) -> Optional[Pred]:
    if any(p is None for p in parts):
        return None   # one branch admits everything
    if len(parts) == 1:
        return parts[0]
    return Or(tuple(parts))  # type: ignore[arg-type]


class _Columns:
    """Per partition column: every text the table has, and the sorted (typed, text) values
    the loader read (None where they cannot be ordered)."""

    def __init__(self, table: Table, every: Sequence[Sequence[Optional[str]]],
                 values: Optional[Sequence[Sequence[tuple[Any, str]]]]) -> None:
        self.pcols = list(table.partition_columns)
        self.every = [set(e) for e in every]
        self.values = values

    def term(self, depth: int, texts: Iterable[Optional[str]],
             typed: dict[str, Any]) -> Optional[Term]:
        """The column's term admitting ``texts`` (None: every value the table has)."""
        texts = set(texts)
        if texts >= self.every[depth]:
            return None
        pc = self.pcols[depth]
        nonnull = {t: typed.get(t) for t in texts if t is not None}
        runs: tuple[tuple[str, str], ...] = ()
        exact: tuple[str, ...] = ()
        if nonnull:
            every = self.values[depth] if self.values is not None else None
            # ranges need the values in Spark's order: a text the loader kept as text (a
            # type the session's rules cannot read with certainty, a value beyond Python's
            # range) is ordered as text, not as Spark orders its cast
            ordered = (pc.type.name in _ORDERED and every is not None
                       and not any(isinstance(v, str) for v, _ in every))
            if ordered:
                try:
                    runs = tuple(_runs(nonnull, every))  # type: ignore[arg-type]
                except TypeError:
                    ordered = False
            if not ordered:
                exact = tuple(sorted(nonnull))
        return Term(pc.name, pc.type, runs, exact, None in texts)


def kept_predicate(table: Table, result: LoadResult, every: Sequence[Spec]
                   ) -> Optional[Pred]:
    """The predicate admitting ``result``'s kept partitions of ``table`` (and, where runs
    merge, a few more), None when it would admit every partition, :data:`FALSE` when none
    was kept. ``every``: all partitions' texts (the loader's candidates)."""
    if result.partitions_kept == 0:
        return FALSE
    if result.partitions_kept >= len(every):
        return None
    n = len(table.partition_columns)
    names = [c.name for c in table.partition_columns]
    kept = [tuple((kp.texts or {}).get(c) for c in names) for kp in result.partitions]
    typed: list[dict[str, Any]] = [{} for _ in range(n)]
    for kp in result.partitions:
        for d, c in enumerate(names):
            t = (kp.texts or {}).get(c)
            if t is not None:
                typed[d].setdefault(t, kp.values.get(c))
    cols = _Columns(table, [[spec[d][1] for spec in every] for d in range(n)],
                    result.metastore.get("connect_values"))

    def build(rows: list[tuple[Optional[str], ...]], depth: int) -> Optional[Pred]:
        if depth == n:
            return None
        groups: dict[Optional[str], list[tuple[Optional[str], ...]]] = {}
        for r in rows:
            groups.setdefault(r[depth], []).append(r)
        by_tail: dict[Optional[Pred], list[Optional[str]]] = {}
        for text, rs in groups.items():
            by_tail.setdefault(build(rs, depth + 1), []).append(text)
        return _disj([_conj(cols.term(depth, texts, typed[depth]), tail)
                      for tail, texts in by_tail.items()])

    pred = build(kept, 0)
    if n > 1 and _size(pred) > MAX_DISJUNCTS:
        pred = _conj(*(cols.term(d, {r[d] for r in kept}, typed[d]) for d in range(n)))
    return pred


# ---------------------------------------------------------------------------- rendering

def _quote_col(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def predicate_column(pred: Pred, F: Any) -> Any:
    """``pred`` as a Column of ``F`` (``pyspark.sql[.connect].functions``): literals travel
    as typed protocol literals, so no text needs escaping; each is the partition's text
    cast to the column's type, as Spark casts it when it reads the partition's value."""
    if isinstance(pred, Or):
        if not pred.parts:
            return F.lit(False)
        return _balanced([predicate_column(p, F) for p in pred.parts], lambda a, b: a | b)
    if isinstance(pred, And):
        return _balanced([predicate_column(t, F) for t in pred.terms], lambda a, b: a & b)
    col = F.col(_quote_col(pred.column))
    simple = pred.type.simple_string()

    def lit(text: str) -> Any:
        v = F.lit(text)
        return v if simple == "string" else v.cast(simple)

    ors = []
    for lo, hi in pred.runs:
        ors.append(col == lit(lo) if lo == hi else ((col >= lit(lo)) & (col <= lit(hi))))
    if pred.exact:
        ors.append(col.isin(*[lit(t) for t in pred.exact]))
    if pred.null:
        ors.append(col.isNull())
    out = None
    for c in ors:
        out = c if out is None else (out | c)
    return out if out is not None else F.lit(False)


def _balanced(columns: list[Any], join: Callable[[Any, Any], Any]) -> Any:
    """``columns`` joined pairwise into a tree of depth log2(n): Spark's optimizer walks
    expressions recursively, and thousands of partitions joined one after another would be
    a chain that deep."""
    while len(columns) > 1:
        columns = [join(columns[i], columns[i + 1]) if i + 1 < len(columns) else columns[i]
                   for i in range(0, len(columns), 2)]
    return columns[0]


def predicate_sql(pred: Optional[Pred], limit: int = 400) -> str:
    """``pred`` as readable SQL for the report (display only; cut at ``limit`` characters)."""
    def text(p: Pred) -> str:
        if isinstance(p, Or):
            return "FALSE" if not p.parts else "(" + " OR ".join(text(x) for x in p.parts) + ")"
        if isinstance(p, And):
            return "(" + " AND ".join(text(x) for x in p.terms) + ")"
        col = _quote_col(p.column)
        simple = p.type.simple_string()

        def lit(t: str) -> str:
            q = "'" + t.replace("\\", "\\\\").replace("'", "\\'") + "'"
            return q if simple == "string" else f"CAST({q} AS {simple})"
        ors = [f"{col} = {lit(lo)}" if lo == hi else f"{col} BETWEEN {lit(lo)} AND {lit(hi)}"
               for lo, hi in p.runs]
        if p.exact:
            ors.append(f"{col} IN ({', '.join(lit(t) for t in p.exact)})")
        if p.null:
            ors.append(f"{col} IS NULL")
        return ("(" + " OR ".join(ors) + ")") if len(ors) > 1 else (ors[0] if ors else "FALSE")
    s = "TRUE" if pred is None else text(pred)
    return s if len(s) <= limit else s[:limit - 1] + "…"
