"""A case's data on disk and its relations in a session (classic or a Spark Connect client):
the fact's folders and files written with pyarrow as Spark's writer lays them out, the
dimension as a table of Spark's catalog behind a temporary view, and the fact as the case's
relation kind."""
from __future__ import annotations

import datetime as dt
import decimal
import os
import shutil
import time
import zoneinfo
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import pyarrow as pa
import pyarrow.parquet as pq

from tests.fuzz.model import CATALOG_TYPES, Case

NULL_FOLDER = "__HIVE_DEFAULT_PARTITION__"
# what Spark's ExternalCatalogUtils.escapePathName escapes (on every platform)
_ESCAPED = set('"#%\'*/:=?\\\x7f{[]^') | {chr(c) for c in range(1, 32)}


def escape(text: str) -> str:
    return "".join(f"%{ord(ch):02X}" if ch in _ESCAPED else ch for ch in text)


def folder(col: str, text: Optional[str]) -> str:
    return f"{escape(col)}={NULL_FOLDER if text is None else escape(text)}"


def sql_string(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def literal(kind: str, text: str) -> str:
    """A partition value as a SQL literal of the catalog type ``kind``."""
    if kind in ("int", "bigint", "smallint"):
        return str(int(text))
    if kind == "decimal":
        return text
    if kind == "boolean":
        return text
    if kind == "date":
        return f"DATE{sql_string(text)}"
    if kind == "timestamp":
        return f"TIMESTAMP{sql_string(text)}"
    return sql_string(text)


def parse(text: Optional[str], t: str, tz: str = "UTC") -> Any:
    """A dimension key's text as a Python value of Spark type ``t`` (None where it is not one);
    a timestamp's text is a wall-clock time in ``tz``, as Spark reads a partition folder's."""
    if text is None:
        return None
    try:
        if t in ("int", "bigint", "smallint"):
            v = int(text)
            lim = {"int": 2 ** 31, "bigint": 2 ** 63, "smallint": 2 ** 15}[t]
            return v if -lim <= v < lim else None
        if t == "double":
            return float(text)
        if t.startswith("decimal"):
            v = decimal.Decimal(text).quantize(decimal.Decimal("0.01"))
            return v if abs(v) < 10 ** 8 else None
        if t == "boolean":
            return {"true": True, "false": False}.get(text)
        if t == "date":
            return dt.date.fromisoformat(text[:10])
        if t == "timestamp":
            base = text if len(text) > 10 else text + " 00:00:00"
            return dt.datetime.fromisoformat(base).replace(tzinfo=zoneinfo.ZoneInfo(tz))
    except (ValueError, ArithmeticError):
        return None
    return text


def arrow_type(t: str) -> pa.DataType:
    return {"int": pa.int32(), "bigint": pa.int64(), "smallint": pa.int16(),
            "double": pa.float64(), "boolean": pa.bool_(), "date": pa.date32(),
            "timestamp": pa.timestamp("us", tz="UTC"), "string": pa.string(),
            "decimal": pa.decimal128(10, 2)}.get(t.split("(")[0], pa.string())


@dataclass
class World:
    """Where one case lives: ``root`` the fact's folder, ``names`` its relations' names."""

    case: Case
    base: Path
    n: int
    fact_dir: Optional[Path] = None   # the fact's folder when the backend fixes it

    @property
    def root(self) -> Path:
        return self.fact_dir or self.base / "fact"

    @property
    def fact_name(self) -> str:
        return f"fz_f{self.n}"

    @property
    def dim_table(self) -> str:
        return f"fz_d{self.n}"

    @property
    def dim_view(self) -> str:
        return f"fz_dv{self.n}"

    def leaf_dir(self, i: int) -> Path:
        f = self.case.fact
        if i in f.placed:
            return self.base / "elsewhere" / f"loc {i}"
        return self.root.joinpath(*[folder(c.name, v) for c, v in zip(f.cols, f.partitions[i])])

    # ------------------------------------------------------------------ files
    def write_files(self) -> None:
        f = self.case.fact
        ident = 0
        for i, leaf in enumerate(f.partitions):
            d = self.leaf_dir(i)
            d.mkdir(parents=True, exist_ok=True)
            for j in range(f.files[i]):
                self.write_fact_file(d / f"part-{j}.parquet", i, ident)
                ident += f.rows_per_file
            if f.leftovers and i == 0:
                (d / "_SUCCESS").write_bytes(b"")
                (d / ".hidden.parquet").write_bytes(b"not parquet")
                tmp = d / "_temporary"
                tmp.mkdir(exist_ok=True)
                (tmp / "part-9.parquet").write_bytes(b"not parquet either")
        self.root.mkdir(parents=True, exist_ok=True)
        if f.leftovers:
            (self.root / "_SUCCESS").write_bytes(b"")
            (self.root / "_committed_1").write_bytes(b"{}")
        if f.aged:
            then = time.time() - 3600
            for top in (self.root, self.base / "elsewhere"):
                for p in [top, *top.rglob("*")] if top.exists() else []:
                    os.utime(p, (then, then))
        self.write_dim_files(self.base / "dim0")

    def write_fact_file(self, path: Path, leaf: int, first_id: int, shift: int = 0) -> None:
        f = self.case.fact
        n = f.rows_per_file
        cols: dict[str, Any] = {"id": pa.array(range(first_id, first_id + n), pa.int32()),
                                "x": pa.array([(first_id + k + shift) % 7 for k in range(n)],
                                              pa.int32())}
        if leaf in f.evolved:
            cols["extra"] = pa.array([f"e{leaf}"] * n)
        if f.col_in_file:
            v = f.partitions[leaf][0]
            cols[f.cols[0].name] = pa.array([v] * n, pa.string())
        pq.write_table(pa.table(cols), path, compression="NONE")

    def write_dim_files(self, d: Path, bump: int = 0) -> None:
        dim = self.case.dim
        d.mkdir(parents=True, exist_ok=True)
        kt = dim.key_type
        tz = self.case.settings.get("spark.sql.session.timeZone", "UTC")
        tbl = pa.table({
            "k": pa.array([parse(v, kt, tz) for v in dim.keys], arrow_type(kt)),
            "ks": pa.array(dim.keys, pa.string()),
            "k2": pa.array((dim.keys2 + [None] * len(dim.keys))[:len(dim.keys)], pa.string()),
            "a": pa.array([(a + bump) % 10 for a in dim.attrs], pa.int32())})
        pq.write_table(tbl, d / "part-0.parquet", compression="NONE")

    # ------------------------------------------------------------------ relations
    def create(self, spark: Any) -> None:
        """The dimension table and view; the fact's catalog table (its partitions placed)."""
        kt = self.case.dim.key_type
        ktype = "DECIMAL(10,2)" if kt == "decimal" else kt.upper()
        spark.sql(f"DROP TABLE IF EXISTS {self.dim_table}")
        spark.sql(f"CREATE TABLE {self.dim_table} (k {ktype}, ks STRING, k2 STRING, a INT) "
                  f"USING parquet LOCATION {sql_string(str(self.base / 'dim0'))}")
        self.define_dim_view(spark, redefined=False)
        f = self.case.fact
        if f.relation != "catalog":
            return
        spark.sql(f"DROP TABLE IF EXISTS {self.fact_name}")
        cols = ["id INT", "x INT"] + (["extra STRING"] if f.evolved else [])
        cols += [f"`{c.name}` {CATALOG_TYPES[c.kind]}" for c in f.cols]
        parts = ", ".join(f"`{c.name}`" for c in f.cols)
        spark.sql(f"CREATE TABLE {self.fact_name} ({', '.join(cols)}) USING parquet "
                  f"PARTITIONED BY ({parts}) LOCATION {sql_string(str(self.root))}")
        spark.sql(f"ALTER TABLE {self.fact_name} RECOVER PARTITIONS")
        for i in f.placed:
            self.add_partition(spark, i)

    def add_partition(self, spark: Any, i: int) -> None:
        f = self.case.fact
        spec = ", ".join(f"`{c.name}` = {literal(c.kind, v)}"
                         for c, v in zip(f.cols, f.partitions[i]) if v is not None)
        spark.sql(f"ALTER TABLE {self.fact_name} ADD IF NOT EXISTS PARTITION ({spec}) "
                  f"LOCATION {sql_string(str(self.leaf_dir(i)))}")

    def define_dim_view(self, spark: Any, redefined: bool, key_type: str = "") -> None:
        """The dimension's view; ``redefined``: other values of ``a``; ``key_type``: the
        key column in another type (a view redefined with another schema)."""
        a = "(a + 3) % 10 AS a" if redefined else "a"
        k = f"CAST(k AS {key_type}) AS k" if key_type else "k"
        spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {self.dim_view} AS "
                  f"SELECT {k}, ks, k2, {a} FROM {self.dim_table}")

    def drop(self, spark: Any) -> None:
        for stmt in (f"DROP TABLE IF EXISTS {self.fact_name}",
                     f"DROP TABLE IF EXISTS {self.dim_table}",
                     f"DROP VIEW IF EXISTS {self.dim_view}"):
            try:
                spark.sql(stmt)
            except Exception:
                pass
        shutil.rmtree(self.base, ignore_errors=True)

    # ------------------------------------------------------------------ steps
    def add_file(self) -> None:
        i = next((k for k, n in enumerate(self.case.fact.files) if n), 0)
        d = self.leaf_dir(i)
        d.mkdir(parents=True, exist_ok=True)
        self.write_fact_file(d / "part-8.parquet", i, 10_000)

    def add_leaf(self) -> None:
        f = self.case.fact
        texts = [c_vals[0] for c_vals in zip(*f.partitions)] if f.partitions else []
        d = self.root.joinpath(*[folder(c.name, (t or "") + ("9" if c.kind in
                                                              ("int", "bigint", "smallint")
                                                              else "")) if t is not None
                                 else folder(c.name, None) for c, t in zip(f.cols, texts)])
        d.mkdir(parents=True, exist_ok=True)
        self.write_fact_file(d / "part-0.parquet", 0, 20_000)

    def remove_leaf(self) -> None:
        i = next((k for k, n in enumerate(self.case.fact.files) if n), 0)
        shutil.rmtree(self.leaf_dir(i), ignore_errors=True)

    def rewrite_file(self) -> None:
        """A file rewritten in place: other values, the same size and modification time."""
        i = next((k for k, n in enumerate(self.case.fact.files) if n), 0)
        p = self.leaf_dir(i) / "part-0.parquet"
        if not p.exists():
            return
        st = p.stat()
        self.write_fact_file(p, i, 0, shift=3)
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))

    def overwrite_dim(self, spark: Any) -> None:
        """The dimension table overwritten by Spark's own write (other attributes)."""
        src = self.base / "dim1"
        self.write_dim_files(src, bump=4)
        spark.sql(f"INSERT OVERWRITE TABLE {self.dim_table} "
                  f"SELECT * FROM parquet.`{src}`")
