"""Table model: a Hive-partitioned Parquet table from a path or from Spark's catalog.

A :class:`Table` is a snapshot: its location, its data columns (read from one Parquet footer,
or from the catalog), its ordered partition columns with their types and, for catalog tables,
the catalog's partition list with each partition's location. The split loader enumerates it;
:func:`spark_ddl` / :func:`spark_struct_type` give Spark the schema at handoff so Spark never
infers it.
"""
from __future__ import annotations

import dataclasses

import decimal
import json
import logging
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional, Sequence, Union
from urllib.parse import unquote, urlparse

from dpp.core.domain import (BIGINT, DATE, DOUBLE, INT, STRING, TIMESTAMP, TIMESTAMP_NTZ, DataType,
                        decimal_type)
from dpp.core.errors import DomainError, LayoutError
from hive_splits.buckets import BucketSpec
from hive_splits.jvm_refs import jvm_cached, jvm_class, jvm_text, scala_object
from hive_splits.listing import DirEntry, FileEntry, Lister, LocalLister, base_name, child_path
from hive_splits.naming import DEFAULT_PARTITION_NAME, parse_folder_name, partition_path

__all__ = [
    "PartitionColumn", "CatalogPartition", "Table", "table_from_path", "table_from_catalog",
    "with_catalog_partitions", "catalog_metadata", "catalog_partition_names",
    "infer_partition_type", "spark_ddl", "spark_struct_type", "local_path",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PartitionColumn:
    """One partition column, in folder order (outermost first)."""

    name: str
    type: DataType

    def __post_init__(self) -> None:
        object.__setattr__(self, "type", DataType.parse(self.type))


@dataclass(frozen=True)
class CatalogPartition:
    """A partition as the catalog lists it: raw text values (``None`` = NULL) and location."""

    values: tuple[tuple[str, Optional[str]], ...]
    location: str

    def at_default_path(self, root: str, path: Optional[str] = None) -> bool:
        """Whether the partition sits where Spark's own reader would find it, ``root/k=v/...``
        (``path``: its location as a local path when already converted): only then may its
        folder be handed to Spark as a partition folder, values read from the path."""
        here = local_path(self.location) if path is None else path
        return (posixpath.normpath(child_path(root, partition_path(list(self.values))))
                == posixpath.normpath(here))


@dataclass(frozen=True)
class Table:
    """A partitioned Parquet table.

    ``columns`` are the *data* columns as ``(name, Spark simple type string)`` (e.g.
    ``("x", "array<int>")``), partition columns excluded; ``partition_columns`` are ordered as
    the folders nest. ``catalog_partitions`` is set for tables from Spark's catalog (the loader
    then enumerates it instead of folders) and ``None`` for path tables.
    """

    name: str
    location: str
    columns: tuple[tuple[str, str], ...]
    partition_columns: tuple[PartitionColumn, ...]
    catalog_partitions: Optional[tuple[CatalogPartition, ...]] = None
    catalog_name: Optional[str] = None
    arrow_schema: Any = field(default=None, compare=False, repr=False)
    # how its folders are listed (hive_splits.listing); None: the local lister
    lister: Any = field(default=None, compare=False, repr=False)
    # catalog tables whose partitions the loader fetches itself, names first and then only
    # the survivors (hive_splits.metastore.MetastorePartitions); catalog_partitions is unused
    partition_source: Any = field(default=None, compare=False, repr=False)
    # Spark's bucketing of a catalog table (data-source tables only: Hive-format tables hash
    # differently); the loader prunes buckets by a single bucket column's domain
    bucketing: Optional[BucketSpec] = None
    # partition column types the table was declared with (``partition_types``): Spark's reader
    # of the folder is given the table's schema then, as a job naming those types does
    given_types: tuple[tuple[str, str], ...] = ()
    # Spark's size estimate of an unpartitioned catalog table (None: not measured); whether
    # it is a fact is dpp.analysis.rules.is_fact's call
    size_bytes: Optional[int] = field(default=None, compare=False)

    @property
    def is_catalog(self) -> bool:
        return self.catalog_partitions is not None or self.partition_source is not None

    @property
    def partition_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.partition_columns)

    def column_type(self, name: str) -> Optional[str]:
        """The Spark simple type string of a data or partition column; ``None`` if absent."""
        for c in self.partition_columns:
            if c.name == name:
                return c.type.simple_string()
        for n, t in self.columns:
            if n == name:
                return t
        return None

    def all_columns(self) -> list[tuple[str, str]]:
        """Data columns then partition columns: the column order Spark gives such tables."""
        return list(self.columns) + [(c.name, c.type.simple_string())
                                     for c in self.partition_columns]


def local_path(location: str) -> str:
    """A location (an encoded URI, as the catalog gives it, or a path) as the listers name it:
    a local path for a ``file:`` URI; for any other scheme the URI with its path decoded, as
    Hadoop prints a ``Path`` (see :mod:`hive_splits.listing`)."""
    if location.startswith("file:"):
        return unquote(urlparse(location).path)
    if "://" not in location:
        return location
    u = urlparse(location)
    return f"{u.scheme}://{u.netloc}{unquote(u.path)}"


# ------------------------------------------------------------------ partition type inference

_INT_RE = re.compile(r"^[+-]?[0-9]+$")
_DEC_RE = re.compile(r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$")
_DOUBLE_RE = re.compile(r"^\s*[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)"
                        r"(?:[eE][+-]?[0-9]+)?)\s*$")
_DATE_RE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
_TS_RE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?$")
_NULL = "null"  # the inferred "type" of the default partition: absorbed by any other type


def infer_partition_type(value: Optional[str]) -> Union[DataType, str]:
    """The type Spark infers for one unescaped folder value (``"null"`` for NULL).

    Order as in Spark's ``PartitioningUtils.inferPartitionColumnValue``: int, bigint, decimal
    (integers too large for bigint, or with an exponent; never a fraction), double, timestamp,
    date, else string.
    """
    if value is None:
        return _NULL
    if _INT_RE.match(value):
        n = int(value)
        if -(2 ** 31) <= n < 2 ** 31:
            return INT
        if -(2 ** 63) <= n < 2 ** 63:
            return BIGINT
    if _DEC_RE.match(value):
        if _scale(value) <= 0:  # Spark requires BigDecimal scale <= 0: no fraction
            d = decimal.Decimal(value)
            digits = len(str(abs(int(d)))) if d != 0 else 1
            if digits <= 38:
                return decimal_type(digits, 0)
    if _DOUBLE_RE.match(value):
        return DOUBLE
    if _TS_RE.match(value):
        try:
            TIMESTAMP.parse_text(value)
            return TIMESTAMP
        except DomainError:
            pass
    if _DATE_RE.match(value):
        try:
            DATE.parse_text(value)
            return DATE
        except DomainError:
            pass
    return STRING


def _scale(text: str) -> int:
    """Java ``BigDecimal(text).scale()``: fraction digits minus the exponent."""
    mant, _, exp = text.lower().partition("e")
    frac = mant.split(".", 1)[1] if "." in mant else ""
    return len(frac) - (int(exp) if exp else 0)


def _wider(a: Union[DataType, str], b: Union[DataType, str]) -> Union[DataType, str]:
    """Spark's ``findWiderTypeForPartitionColumn`` over the types inference can produce."""
    if a == b:
        return a
    if a == _NULL:
        return b
    if b == _NULL:
        return a
    assert isinstance(a, DataType) and isinstance(b, DataType)
    names = {a.name, b.name}
    if names == {"int", "bigint"}:
        return BIGINT
    if names == {"int", "double"}:
        return DOUBLE
    if names == {"date", "timestamp"}:
        return TIMESTAMP
    if "decimal" in names and names <= {"decimal", "int", "bigint"}:
        def digits(t: DataType) -> int:
            return {"int": 10, "bigint": 20}.get(t.name, t.precision or 0)
        return decimal_type(max(digits(a), digits(b)), 0)
    return STRING


def infer_column_type(values: Iterable[Optional[str]],
                      timestamp_type: str = "timestamp", type_inference: bool = True
                      ) -> DataType:
    """The type Spark infers for a partition column from all its folder values.

    ``timestamp_type`` is the session's ``spark.sql.timestampType`` (``timestamp`` or
    ``timestamp_ntz``): what Spark infers for timestamp-looking folder values.
    ``type_inference`` is ``spark.sql.sources.partitionColumnTypeInference.enabled``: off,
    Spark reads every partition column as a string.
    """
    if not type_inference:
        return STRING
    t: Union[DataType, str] = _NULL
    for v in values:
        t = _wider(t, infer_partition_type(v))
        if t == STRING:
            break
    if t == TIMESTAMP and timestamp_type == "timestamp_ntz":
        return TIMESTAMP_NTZ
    return STRING if t == _NULL else t  # all NULL → string (Spark 4 says void)


# ------------------------------------------------------------------ Arrow → Spark types

def arrow_to_spark_type(t: Any) -> str:
    """The Spark simple type string Spark's Parquet reader gives an Arrow (footer) type."""
    import pyarrow as pa
    import pyarrow.types as pt

    if pt.is_dictionary(t):
        return arrow_to_spark_type(t.value_type)
    simple = {pa.int8(): "tinyint", pa.int16(): "smallint", pa.int32(): "int",
              pa.int64(): "bigint", pa.uint8(): "smallint", pa.uint16(): "int",
              pa.uint32(): "bigint", pa.uint64(): "decimal(20,0)", pa.float32(): "float",
              pa.float64(): "double", pa.bool_(): "boolean", pa.date32(): "date",
              pa.date64(): "date", pa.null(): "void", pa.float16(): "float"}
    if t in simple:
        return simple[t]
    # pyarrow < 16 has no string views (a fallback of ``bool`` took every type for a string)
    if (pt.is_string(t) or pt.is_large_string(t)
            or getattr(pt, "is_string_view", lambda _: False)(t)):
        return "string"
    if pt.is_binary(t) or pt.is_large_binary(t) or pt.is_fixed_size_binary(t):
        return "binary"
    if pt.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pt.is_timestamp(t):
        return "timestamp" if t.tz is not None else "timestamp_ntz"
    if pt.is_list(t) or pt.is_large_list(t) or pt.is_fixed_size_list(t):
        return f"array<{arrow_to_spark_type(t.value_type)}>"
    if pt.is_map(t):
        return f"map<{arrow_to_spark_type(t.key_type)},{arrow_to_spark_type(t.item_type)}>"
    if pt.is_struct(t):
        inner = ",".join(f"{_quote(t.field(i).name)}:{arrow_to_spark_type(t.field(i).type)}"
                         for i in range(t.num_fields))
        return f"struct<{inner}>"
    raise LayoutError(f"Arrow type {t} has no Spark equivalent known here")


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def spark_ddl(table: Table) -> str:
    """The table's full schema (data, then partition columns) as a Spark DDL string."""
    return ", ".join(f"{_quote(n)} {t}" for n, t in table.all_columns())


def spark_struct_type(table: Table) -> Any:
    """The table's full schema as a PySpark ``StructType`` (needs an active SparkContext)."""
    from pyspark.sql.types import StructType, _parse_datatype_string

    # one parse of the whole DDL (a JVM call per column cost ~4 ms each, on every query's
    # opening of a declared table); DDL fields are nullable, as a listed table's are
    parsed = _parse_datatype_string(spark_ddl(table))
    assert isinstance(parsed, StructType) and len(parsed.fields) == len(table.all_columns())
    return parsed


# ------------------------------------------------------------------ path tables

class _OnceLister:
    """A lister that lists each folder once, for one reading of a table (finding its
    columns, their types and its first file each start at the root: at 100,000 partitions a
    root listing is a third of a second locally, a hundred requests on an object store)."""

    def __init__(self, lister: Lister) -> None:
        self._lister = lister
        self._seen: dict[str, tuple[list[DirEntry], list[FileEntry]]] = {}

    def list(self, folder: str) -> tuple[list[DirEntry], list[FileEntry]]:
        hit = self._seen.get(folder)
        if hit is None:
            hit = self._seen[folder] = self._lister.list(folder)
        return hit

    def __getattr__(self, name: str) -> Any:
        return getattr(self._lister, name)


def _discover_columns(lister: Lister, root: str) -> list[str]:
    """Partition column names along the first folder path that holds a data file (the loader
    checks the rest); along the first ``key=value`` path when no folder holds one.

    As in Spark's partition discovery, which only looks at folders holding files, a folder
    that is not ``key=value`` and holds no file anywhere below (``aaa_tmp/`` left by a tool)
    is passed over; one that holds a file is an error naming it (Spark refuses such a table:
    conflicting directory structures). Nothing is listed beyond that first path in the usual
    case, besides such stray folders."""
    def walk(path: str, names: list[str]) -> Optional[list[str]]:
        dirs, files = _list(lister, path, root)
        for d in dirs:  # sorted by name
            parsed = parse_folder_name(d.name)
            if parsed is None:
                _check_stray(lister, root, d.path)
                continue
            found = walk(d.path, names + [parsed[0]])
            if found is not None:
                return found
        return names if files else None

    found = walk(root, [])
    if found is not None:
        return found
    names: list[str] = []   # no data file anywhere: the first key=value path
    path = root
    while True:
        dirs, _ = _list(lister, path, root)
        first = next((d for d in dirs if parse_folder_name(d.name) is not None), None)
        if first is None:
            return names
        names.append(parse_folder_name(first.name)[0])  # type: ignore[index]
        path = first.path


def _check_stray(lister: Lister, root: str, path: str, column: Optional[str] = None) -> None:
    """A folder where a ``key=value`` one (of ``column``, when known) is expected: passed over
    when it holds no file anywhere below (it contributes nothing, as in Spark's partition
    discovery); a ``LayoutError`` naming it and the file when it holds one (Spark refuses the
    table too)."""
    pending = [path]
    while pending:
        folder = pending.pop()
        dirs, files = _list(lister, folder, root)
        if files:
            expected = ("a key=value partition folder" if column is None
                        else f"a partition folder of column {column!r}")
            raise LayoutError(f"folder {path!r} is not {expected} (table root {root!r}) and "
                              f"holds data file {files[0].path!r}; Spark's partition "
                              f"discovery rejects such a layout too")
        pending.extend(d.path for d in dirs)


def _list(lister: Lister, folder: str, root: str) -> tuple[list[DirEntry], list[FileEntry]]:
    try:
        return lister.list(folder)
    except OSError as exc:
        raise LayoutError(f"table {root!r}: cannot list folder {folder!r}: "
                          f"{exc.strerror or exc}") from None


def _infer_types(lister: Lister, root: str, names: Sequence[str], wanted: set[str],
                 timestamp_type: str = "timestamp", type_inference: bool = True
                 ) -> dict[str, DataType]:
    """Walks the partition folders down to the leaves once to infer the wanted columns' types.

    As Spark's partition discovery, only leaf folders that hold a data file contribute their
    values (an empty ``p=x/`` left behind must not turn an integer column into a string):
    every leaf folder is listed, one listing each. Callers that know the types pass
    ``partition_types`` and skip it.
    """
    values: dict[str, list[Optional[str]]] = {n: [] for n in names}
    level: list[tuple[str, tuple[Optional[str], ...]]] = [(root, ())]
    for depth in range(len(names)):
        nxt = []
        for folder, above in level:
            dirs, _ = _list(lister, folder, root)
            for e in dirs:
                parsed = parse_folder_name(e.name)
                if parsed is None or parsed[0] != names[depth]:
                    _check_stray(lister, root, e.path, names[depth])
                    continue   # holds no file: contributes no value, as in Spark
                nxt.append((e.path, above + (parsed[1],)))
        level = nxt
    for folder, texts in level:
        _, files = _list(lister, folder, root)
        if files:
            for n, v in zip(names, texts):
                values[n].append(v)
    return {n: infer_column_type(values[n], timestamp_type, type_inference)
            for n in names if n in wanted}


def _first_parquet(lister: Lister, root: str, depth: int) -> Optional[FileEntry]:
    """The first non-empty visible file at the leaf level, depth-first in name order."""
    def walk(path: str, d: int) -> Optional[FileEntry]:
        dirs, files = _list(lister, path, root)
        if d == depth:
            return next((f for f in files if f.size > 0), None)
        for sub in dirs:
            if parse_folder_name(sub.name) is None:
                continue   # not a partition folder: its files are not the table's
            found = walk(sub.path, d + 1)
            if found:
                return found
        return None

    return walk(root, 0)


def table_from_path(path: str, name: Optional[str] = None,
                    partition_types: Optional[Mapping[str, Union[DataType, str]]] = None,
                    schema: Any = None, timestamp_type: str = "timestamp",
                    lister: Optional[Lister] = None, type_inference: bool = True,
                    spark_types: Optional[Mapping[str, str]] = None) -> Table:
    """A table over a folder of Hive-partitioned Parquet files.

    Partition columns are read from the first ``key=value`` folder path; their types come from
    ``partition_types`` or are inferred as Spark does (which lists every partition folder, not
    the files: give the types to avoid it; ``timestamp_type`` is the session's
    ``spark.sql.timestampType``, which decides what timestamp-looking values infer as;
    ``type_inference`` its ``partitionColumnTypeInference.enabled``; ``spark_types``: the
    types Spark's reader of the folder gives its columns, by name, taken instead of inferring
    — not a declaration: the table keeps no given types). The
    data schema is read from ONE Parquet footer (or given as a pyarrow schema / list of
    (name, type string)); partition columns override same-named data columns. ``lister``
    (default: the local one) is how folders are listed and the footer read; the table keeps it
    for its loads.
    """
    lister = lister or LocalLister()
    root = lister.location(path)
    if not lister.is_dir(root):
        raise LayoutError(f"table location {root!r} does not exist or is not a folder")
    table_lister = lister
    lister = _OnceLister(lister)   # type: ignore[assignment]  # this reading lists a folder once
    names = _discover_columns(lister, root)
    given = {k: DataType.parse(v) for k, v in (partition_types or {}).items()}
    unknown = set(given) - set(names)
    if unknown:
        raise LayoutError(f"partition_types names columns {sorted(unknown)} that are not "
                          f"partition folders under {root!r} (found {names})")
    types = dict(given)
    for n in names:
        if n not in types and spark_types and n in spark_types:
            types[n] = DataType.parse(spark_types[n])
    missing = {n for n in names if n not in types}
    if missing:
        types.update(_infer_types(lister, root, names, missing, timestamp_type,
                                  type_inference))
    pcols = tuple(PartitionColumn(n, types[n]) for n in names)

    arrow_schema = None
    if schema is None:
        first = _first_parquet(lister, root, len(names))
        if first is None:
            raise LayoutError(f"table {root!r} holds no non-empty data file to read its schema "
                              f"from; pass schema=")
        try:
            arrow_schema = lister.read_footer(first.path, first.size).schema.to_arrow_schema()
        except Exception as exc:
            raise LayoutError(f"cannot read the Parquet footer of {first.path!r}: {exc}") from None
        cols = [(f.name, arrow_to_spark_type(f.type)) for f in arrow_schema]
    elif hasattr(schema, "names") and hasattr(schema, "field"):
        arrow_schema = schema
        cols = [(f.name, arrow_to_spark_type(f.type)) for f in schema]
    else:
        cols = [(n, DataType.parse(t).simple_string() if isinstance(t, DataType) else str(t))
                for n, t in schema]
    cols = [(n, t) for n, t in cols if n not in types]
    return Table(name=name or base_name(root), location=root,
                 columns=tuple(cols), partition_columns=pcols, arrow_schema=arrow_schema,
                 lister=table_lister,
                 given_types=tuple((k, t.simple_string()) for k, t in sorted(given.items())))


# ------------------------------------------------------------------ catalog tables

def _catalog_type(text: str) -> DataType:
    try:
        return DataType.from_catalog(text)
    except DomainError as exc:
        raise LayoutError(f"partition column type {text!r} is not supported: {exc}") from None


def catalog_metadata(spark: Any, name: str) -> Any:
    """The catalog's ``CatalogTable`` of ``name`` (one JVM call, no analysis), or None when the
    catalog has no such table."""
    jvm = spark._jvm
    catalog = spark._jsparkSession.sessionState().catalog()
    parts_name = name.split(".")
    db = parts_name[-2] if len(parts_name) >= 2 else None
    ident = jvm_class(jvm, "org.apache.spark.sql.catalyst.TableIdentifier").apply(
        parts_name[-1], jvm_class(jvm, "scala.Option").apply(db))
    try:
        # no tableExists first: against a Hive metastore each is a getTable round trip
        return catalog.getTableMetadata(ident)
    except Exception:   # NoSuchTable/NoSuchDatabase, or a catalog that cannot say
        return None


def _bucket_spec(spark: Any, meta: Any) -> Optional[BucketSpec]:
    """The catalog's bucketing of a data-source table (``USING parquet ... CLUSTERED BY``),
    or None: none, a Hive-format table (Hive's own hash), or metadata we cannot read."""
    try:
        provider = meta.provider()
        if not provider.isDefined() or str(provider.get()).lower() == "hive":
            return None
        spec = meta.bucketSpec()
        if not spec.isDefined():
            return None
        b = spec.get()
        cols = tuple(str(c) for c in _scala_list(spark._jvm, b.bucketColumnNames()))
        sort = tuple(str(c) for c in _scala_list(spark._jvm, b.sortColumnNames()))
        return BucketSpec(int(b.numBuckets()), cols, sort)
    except Exception as exc:  # another Spark build: no bucket pruning, never an error
        log.debug("no bucket spec for %s: %s", meta, exc)
        return None


def catalog_partition_names(spark: Any, meta: Any) -> list[str]:
    """Partition column names, in order (one JVM call: the partition schema as JSON)."""
    return [f["name"] for f in json.loads(meta.partitionSchema().json())["fields"]]


def table_from_catalog(spark: Any, name: str, *, partitions: bool = True,
                       meta: Any = None) -> Table:
    """A table from Spark's catalog: schema, partition columns, partitions and locations.

    The schema comes from the catalog's own metadata (one JVM call; no analysis, no
    ``listColumns`` query). Partitions (unless ``partitions=False``: the shape only) come from
    the session catalog in one JVM call (``listPartitions``, serialized to JSON by Jackson
    inside the JVM, so thousands of partitions cost one py4j round trip); custom locations
    (``ALTER TABLE ... ADD PARTITION ... LOCATION``) are kept as given.
    """
    from pyspark.sql.types import StructType

    if meta is None:
        meta = catalog_metadata(spark, name)
    if meta is None:
        raise LayoutError(f"table {name!r} is not in Spark's catalog")
    location = local_path(meta.location().toString())
    part_names = catalog_partition_names(spark, meta)
    schema = StructType.fromJson(json.loads(meta.schema().json()))
    cols: list[tuple[str, str]] = []
    ptypes: dict[str, DataType] = {}
    chars: list[str] = []
    for f in schema.fields:
        # CHAR(n) and VARCHAR(n) read as strings; their declared type may survive only in
        # the field's metadata
        declared = str(f.metadata.get("__CHAR_VARCHAR_TYPE_STRING") or f.dataType.simpleString())
        low = declared.strip().lower()
        if low.startswith("char"):
            chars.append(f"{f.name} {declared}")
        type_text = "string" if low.startswith(("char", "varchar")) else f.dataType.simpleString()
        if f.name in part_names:
            ptypes[f.name] = _catalog_type(type_text)
        else:
            cols.append((f.name, type_text))
    if chars:
        # Spark pads CHAR values on read and pads literals compared with them: folder text,
        # keys and the rewritten query's literals would all compare differently
        raise LayoutError(f"table {name!r} has CHAR(n) columns ({', '.join(sorted(chars))}): "
                          f"Spark pads their values on read; such tables are not pruned")
    pcols = tuple(PartitionColumn(n, ptypes[n]) for n in part_names)
    shape = Table(name=name, location=location, columns=tuple(cols), partition_columns=pcols,
                  catalog_partitions=(), catalog_name=name, bucketing=_bucket_spec(spark, meta))
    return with_catalog_partitions(spark, shape) if partitions else shape


def with_catalog_partitions(spark: Any, table: Table) -> Table:
    """``table`` (from :func:`table_from_catalog`) with the catalog's partitions as they are
    now. Callers that keep a table's schema across queries call this for every query: a
    partition another job added since must never be missed (its rows would be lost)."""
    name = table.catalog_name or table.name
    jvm = spark._jvm
    catalog = spark._jsparkSession.sessionState().catalog()
    parts_name = name.split(".")
    db = parts_name[-2] if len(parts_name) >= 2 else None
    ident = jvm_class(jvm, "org.apache.spark.sql.catalyst.TableIdentifier").apply(
        parts_name[-1], jvm_class(jvm, "scala.Option").apply(db))
    part_names = [c.name for c in table.partition_columns]
    partitions: list[CatalogPartition] = []
    if part_names:
        try:
            jparts = catalog.listPartitions(ident, jvm_class(jvm, "scala.Option").empty())
        except Exception as exc:
            raise LayoutError(f"partitions of table {name!r} cannot be listed: {exc}") from None
        for spec, loc in _partition_specs(jvm, jparts):
            values = []
            for n in part_names:
                if n not in spec:
                    raise LayoutError(f"catalog partition at {loc!r} of table {name!r} has no "
                                      f"value for partition column {n!r}")
                v = spec[n]
                values.append((n, None if v is None or v == DEFAULT_PARTITION_NAME else v))
            partitions.append(CatalogPartition(tuple(values), loc))
    return dataclasses.replace(table, catalog_partitions=tuple(partitions))


def _scala_list(jvm: Any, seq: Any) -> list[Any]:
    return list(jvm_class(jvm, "scala.jdk.javaapi.CollectionConverters").asJava(seq))


def _scala_mapper(jvm: Any) -> Any:
    """A Jackson mapper that knows Scala collections (Spark's own Jackson and Scala module)."""
    mapper = jvm.com.fasterxml.jackson.databind.ObjectMapper()
    mapper.registerModule(
        scala_object(jvm, "com.fasterxml.jackson.module.scala.DefaultScalaModule"))
    return mapper


def _partition_specs(jvm: Any, jparts: Any) -> list[tuple[dict[str, Optional[str]], str]]:
    """(spec, location) per partition: one Jackson call, or one py4j call per partition."""
    try:
        out_text = jvm_class(jvm, "java.io.StringWriter")()
        jvm_cached(jvm, "jackson-scala", lambda: _scala_mapper(jvm)).writeValue(out_text, jparts)
        data = json.loads(jvm_text(out_text.getBuffer()))
        out = []
        for p in data:
            uri = p["storage"]["locationUri"]
            if uri is None:
                raise LayoutError(f"catalog partition {p['spec']} has no location")
            out.append((dict(p["spec"]), local_path(uri)))
        return out
    except LayoutError:
        raise
    except Exception as exc:  # pragma: no cover - depends on the JVM's classpath
        log.debug("bulk partition listing via Jackson failed (%s); listing one by one", exc)
    out = []
    for p in _scala_list(jvm, jparts):
        spec = dict(jvm_class(jvm, "scala.jdk.javaapi.CollectionConverters").asJava(p.spec()))
        out.append((spec, local_path(p.location().toString())))
    return out
