"""Trino's dynamic filtering tests as peer cases: the queries, in Spark SQL over small tables.

Ported: ``io.trino.testing.BaseDynamicPartitionPruningTest`` (its probe ``partitioned_lineitem``
is partitioned by ``suppkey``; Hive, Iceberg and Delta run it) and
``io.trino.execution.AbstractTestCoordinatorDynamicFiltering`` (probes there are tables of a
test connector; here each becomes a partitioned table whose partition column is the column the
dynamic filter covers). The tests assert on Trino's collected filter domains and operator
statistics; only their queries are ported (``spark_prunes`` stays None).

Tables: TPC-H-like (and, for the one TPC-DS query, TPC-DS-like) rows made here with pyarrow by
a fixed integer hash, no files and no randomness: 20 suppliers (``Supplier#000000001`` ...
``Supplier#000000020``, so Trino's name filters select as they do at scale ``tiny``, where
there are 100), 40 parts, 160 partsupp rows (4 suppliers a part, TPC-H's formula), 300 orders
with TPC-H's sparse order keys, 1 to 7 lines each (about 1,200 lineitems, every (partkey,
suppkey) a partsupp row, every supplier present). The partitioned copies have the same columns
as their source (Trino's ``partitioned_lineitem`` keeps only orderkey, partkey, suppkey);
``suppkey``, ``ss_sold_date_sk`` (with a NULL partition), ``address`` and ``k0``/``k2`` are
the partition columns. Literals that assume 100 suppliers are scaled to 20 where a case says so.
"""
from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any, Optional

import pyarrow as pa

from tests.peer.model import PeerCase, PeerTable

# ------------------------------------------------------------------------- data

_MASK = (1 << 64) - 1
N_SUPPLIERS = 20
N_PARTS = 40
N_ORDERS = 300
N_CUSTOMERS = 150
N_ADDRESSES = 40
N_STORES = 12
N_STORE_SALES = 600
CLOSED_DATE_SK = 2451189          # the one s_closed_date_sk of TPC-DS tiny's store
MONEY = pa.decimal128(12, 2)
CENT = Decimal("0.01")


def _h(*xs: int) -> int:
    """A fixed 64-bit mix of integers (splitmix64 steps): the tables' only source of variety."""
    x = 0x9E3779B97F4A7C15
    for v in xs:
        x = ((x ^ (v & _MASK)) + 0x9E3779B97F4A7C15) & _MASK
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
        x ^= x >> 31
    return x


_WORDS = ("furiously", "quickly", "carefully", "blithely", "slyly", "regular", "final",
          "pending", "express", "ironic", "special", "bold", "deposits", "accounts",
          "packages", "requests", "theodolites", "foxes", "pinto", "beans")


def _comment(*key: int) -> str:
    return " ".join(_WORDS[_h(*key, i) % len(_WORDS)] for i in range(3))


def _money(cents: int) -> Decimal:
    return (Decimal(cents) / 100).quantize(CENT)


def _address(k: int) -> str:
    """Addresses are partition values of ``tr_partitioned_customer``: plain, never numbers."""
    return f"addr{k:03d}"


def _supplier_rows() -> list[dict[str, Any]]:
    return [{"suppkey": s, "name": f"Supplier#{s:09d}", "address": _address(2 * s),
             "nationkey": _h(1, s) % 25, "phone": f"{10 + _h(2, s) % 25}-{_h(3, s) % 900 + 100}",
             "acctbal": _money(_h(4, s) % 1100000 - 99999), "comment": _comment(5, s)}
            for s in range(1, N_SUPPLIERS + 1)]


def _retailprice(p: int) -> Decimal:
    return _money(90000 + (p // 10) % 20001 + 100 * (p % 1000))


def _part_suppliers(p: int) -> list[int]:
    """TPC-H's partsupp suppliers of part ``p``: four distinct suppliers."""
    s = N_SUPPLIERS
    return [(p + j * (s // 4 + (p - 1) // s)) % s + 1 for j in range(4)]


def _orderkey(i: int) -> int:
    """TPC-H's sparse order keys: 8 used, 24 skipped."""
    return (i // 8) * 32 + i % 8 + 1


_SHIPMODES = ("AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK")
_INSTRUCTS = ("DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN")
_PRIORITIES = ("1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW")
_SEGMENTS = ("AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY")
_START = dt.date(1992, 1, 1)
_CURRENT = dt.date(1995, 6, 17)


def _orders_and_lines() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    customers = [c for c in range(1, N_CUSTOMERS + 1) if c % 3 != 0]
    orders: list[dict[str, Any]] = []
    lines: list[dict[str, Any]] = []
    for i in range(N_ORDERS):
        okey = _orderkey(i)
        odate = _START + dt.timedelta(days=_h(10, okey) % 2255)
        total = Decimal(0)
        statuses = set()
        for ln in range(1, 1 + 1 + _h(11, okey) % 7):
            p = 1 + _h(12, okey, ln) % N_PARTS
            s = _part_suppliers(p)[_h(13, okey, ln) % 4]
            qty = 1 + _h(14, okey, ln) % 50
            price = (qty * _retailprice(p)).quantize(CENT)
            discount = _money(_h(15, okey, ln) % 11)
            tax = _money(_h(16, okey, ln) % 9)
            ship = odate + dt.timedelta(days=1 + _h(17, okey, ln) % 121)
            commit = odate + dt.timedelta(days=30 + _h(18, okey, ln) % 61)
            receipt = ship + dt.timedelta(days=1 + _h(19, okey, ln) % 30)
            flag = ("R" if _h(20, okey, ln) % 2 else "A") if receipt <= _CURRENT else "N"
            status = "O" if ship > _CURRENT else "F"
            statuses.add(status)
            total += price * (1 + tax) * (1 - discount)
            lines.append({
                "orderkey": okey, "partkey": p, "suppkey": s, "linenumber": ln,
                "quantity": Decimal(qty).quantize(CENT), "extendedprice": price,
                "discount": discount, "tax": tax, "returnflag": flag, "linestatus": status,
                "shipdate": ship, "commitdate": commit, "receiptdate": receipt,
                "shipinstruct": _INSTRUCTS[_h(21, okey, ln) % 4],
                "shipmode": _SHIPMODES[_h(22, okey, ln) % 7], "comment": _comment(23, okey, ln)})
        orders.append({
            "orderkey": okey, "custkey": customers[_h(24, okey) % len(customers)],
            "orderstatus": statuses.pop() if len(statuses) == 1 else "P",
            "totalprice": total.quantize(CENT), "orderdate": odate,
            "orderpriority": _PRIORITIES[_h(25, okey) % 5],
            "clerk": f"Clerk#{1 + _h(26, okey) % 10:09d}", "shippriority": 0,
            "comment": _comment(27, okey)})
    return orders, lines


def _table(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    return pa.table({f.name: pa.array([r[f.name] for r in rows], f.type) for f in schema},
                    schema=schema)


SUPPLIER_SCHEMA = pa.schema([("suppkey", pa.int64()), ("name", pa.string()),
                             ("address", pa.string()), ("nationkey", pa.int64()),
                             ("phone", pa.string()), ("acctbal", MONEY), ("comment", pa.string())])
PARTSUPP_SCHEMA = pa.schema([("partkey", pa.int64()), ("suppkey", pa.int64()),
                             ("availqty", pa.int32()), ("supplycost", MONEY),
                             ("comment", pa.string())])
ORDERS_SCHEMA = pa.schema([("orderkey", pa.int64()), ("custkey", pa.int64()),
                           ("orderstatus", pa.string()), ("totalprice", MONEY),
                           ("orderdate", pa.date32()), ("orderpriority", pa.string()),
                           ("clerk", pa.string()), ("shippriority", pa.int32()),
                           ("comment", pa.string())])
LINEITEM_SCHEMA = pa.schema([("orderkey", pa.int64()), ("partkey", pa.int64()),
                             ("suppkey", pa.int64()), ("linenumber", pa.int32()),
                             ("quantity", MONEY), ("extendedprice", MONEY), ("discount", MONEY),
                             ("tax", MONEY), ("returnflag", pa.string()),
                             ("linestatus", pa.string()), ("shipdate", pa.date32()),
                             ("commitdate", pa.date32()), ("receiptdate", pa.date32()),
                             ("shipinstruct", pa.string()), ("shipmode", pa.string()),
                             ("comment", pa.string())])
CUSTOMER_SCHEMA = pa.schema([("custkey", pa.int64()), ("name", pa.string()),
                             ("address", pa.string()), ("nationkey", pa.int64()),
                             ("phone", pa.string()), ("acctbal", MONEY),
                             ("mktsegment", pa.string()), ("comment", pa.string())])
STORE_SCHEMA = pa.schema([("s_store_sk", pa.int64()), ("s_store_id", pa.string()),
                          ("s_closed_date_sk", pa.int64()), ("s_store_name", pa.string()),
                          ("s_number_employees", pa.int32()), ("s_city", pa.string())])
STORE_SALES_SCHEMA = pa.schema([("ss_sold_date_sk", pa.int64()), ("ss_item_sk", pa.int64()),
                                ("ss_customer_sk", pa.int64()), ("ss_store_sk", pa.int64()),
                                ("ss_ticket_number", pa.int64()), ("ss_quantity", pa.int32()),
                                ("ss_sales_price", pa.decimal128(7, 2)),
                                ("ss_net_profit", pa.decimal128(7, 2))])


def _supplier() -> pa.Table:
    return _table(_supplier_rows(), SUPPLIER_SCHEMA)


def _partsupp() -> pa.Table:
    rows = [{"partkey": p, "suppkey": s, "availqty": 1 + _h(30, p, s) % 9999,
             "supplycost": _money(100 + _h(31, p, s) % 99901), "comment": _comment(32, p, s)}
            for p in range(1, N_PARTS + 1) for s in _part_suppliers(p)]
    return _table(rows, PARTSUPP_SCHEMA)


_ORDERS_ROWS, _LINEITEM_ROWS = _orders_and_lines()


def _orders() -> pa.Table:
    return _table(_ORDERS_ROWS, ORDERS_SCHEMA)


def _lineitem() -> pa.Table:
    return _table(_LINEITEM_ROWS, LINEITEM_SCHEMA)


def _lineitem_int() -> pa.Table:
    """``partitioned_lineitem_int``: ``orderkey, CAST(suppkey AS int) suppkey_int``."""
    return pa.table({"orderkey": pa.array([r["orderkey"] for r in _LINEITEM_ROWS], pa.int64()),
                     "suppkey_int": pa.array([r["suppkey"] for r in _LINEITEM_ROWS], pa.int32())})


def _customer() -> pa.Table:
    rows = [{"custkey": c, "name": f"Customer#{c:09d}",
             "address": _address(1 + _h(40, c) % N_ADDRESSES), "nationkey": _h(41, c) % 25,
             "phone": f"{10 + _h(42, c) % 25}-{_h(43, c) % 900 + 100}",
             "acctbal": _money(_h(44, c) % 1100000 - 99999),
             "mktsegment": _SEGMENTS[_h(45, c) % 5], "comment": _comment(46, c)}
            for c in range(1, N_CUSTOMERS + 1)]
    return _table(rows, CUSTOMER_SCHEMA)


def _supplier_decimal() -> pa.Table:
    """``CAST(suppkey AS decimal(19, 0)) suppkey_decimal`` with the supplier's name."""
    rows = _supplier_rows()
    return pa.table({"name": pa.array([r["name"] for r in rows], pa.string()),
                     "suppkey_decimal": pa.array([Decimal(r["suppkey"]) for r in rows],
                                                 pa.decimal128(19, 0))})


def _supplier_varchar() -> pa.Table:
    """``name, CAST(address AS varchar(42)) address``: a STRING in Spark."""
    rows = _supplier_rows()
    return pa.table({"name": pa.array([r["name"] for r in rows], pa.string()),
                     "address": pa.array([r["address"] for r in rows], pa.string())})


def _store() -> pa.Table:
    closed = {3, 9}   # two stores closed on the one date (TPC-DS tiny: one distinct value)
    rows = [{"s_store_sk": s, "s_store_id": f"AAAAAAAA{s:08d}",
             "s_closed_date_sk": CLOSED_DATE_SK if s in closed else None,
             "s_store_name": _WORDS[_h(50, s) % len(_WORDS)],
             "s_number_employees": 200 + _h(51, s) % 100, "s_city": ("Midway", "Fairview")[s % 2]}
            for s in range(1, N_STORES + 1)]
    return _table(rows, STORE_SCHEMA)


def _store_sales() -> pa.Table:
    """30 sale dates (2451180..2451209, one of them the closed date) and NULL dates."""
    rows = []
    for i in range(N_STORE_SALES):
        date_sk: Optional[int] = None if _h(60, i) % 31 == 0 else 2451180 + _h(61, i) % 30
        rows.append({"ss_sold_date_sk": date_sk, "ss_item_sk": 1 + _h(62, i) % 100,
                     "ss_customer_sk": 1 + _h(63, i) % 100, "ss_store_sk": 1 + _h(64, i) % N_STORES,
                     "ss_ticket_number": 1 + i // 3, "ss_quantity": 1 + _h(65, i) % 100,
                     "ss_sales_price": _money(_h(66, i) % 20000),
                     "ss_net_profit": _money(_h(67, i) % 40000 - 20000)})
    return _table(rows, STORE_SALES_SCHEMA)


def _kv(columns: list[tuple[str, pa.DataType]], rows: list[tuple[Any, ...]]) -> pa.Table:
    return pa.table({name: pa.array([r[i] for r in rows], t)
                     for i, (name, t) in enumerate(columns)})


REAL, INT, BIGINT = pa.float32(), pa.int32(), pa.int64()

_LINEITEM = _lineitem()

TABLES: list[PeerTable] = [
    PeerTable("tr_supplier", _supplier()),
    PeerTable("tr_partsupp", _partsupp()),
    PeerTable("tr_orders", _orders()),
    PeerTable("tr_lineitem", _LINEITEM),
    # BaseDynamicPartitionPruningTest.initTables: partitioned_lineitem, partitioned by suppkey
    PeerTable("tr_partitioned_lineitem", _LINEITEM, ("suppkey",)),
    # testJoinWithImplicitCoercion: an integer partition column joined to a bigint
    PeerTable("tr_partitioned_lineitem_int", _lineitem_int(), ("suppkey_int",)),
    # testJoinDynamicFilteringMultiJoinOnPartitionedTables: t1_part has no partition column
    PeerTable("tr_t0_part", _kv([("v0", REAL), ("k0", INT)], [(1.0, 1), (1.0, 2)]), ("k0",)),
    PeerTable("tr_t1_part", _kv([("v1", REAL), ("i1", INT)], [(2.0, 10), (2.0, 20)])),
    PeerTable("tr_t2_part", _kv([("v2", REAL), ("i2", INT), ("k2", INT)],
                                [(3.0, 1, 1), (3.0, 2, 2)]), ("k2",)),
    # testJoinDynamicFilteringMultiJoinOnBucketedTables: the same, bigint values, no buckets
    PeerTable("tr_t0_bucketed", _kv([("v0", BIGINT), ("k0", INT)], [(1, 1), (1, 2)]), ("k0",)),
    PeerTable("tr_t1_bucketed", _kv([("v1", BIGINT), ("i1", INT)], [(2, 10), (2, 20)])),
    PeerTable("tr_t2_bucketed", _kv([("v2", BIGINT), ("i2", INT), ("k2", INT)],
                                    [(3, 1, 1), (3, 2, 2)]), ("k2",)),
    # AbstractTestCoordinatorDynamicFiltering: the probes and build sides it adds
    PeerTable("tr_supplier_decimal", _supplier_decimal()),
    PeerTable("tr_supplier_varchar", _supplier_varchar()),
    PeerTable("tr_partitioned_customer", _customer(), ("address",)),
    PeerTable("tr_store", _store()),
    PeerTable("tr_partitioned_store_sales", _store_sales(), ("ss_sold_date_sk",)),
]

# ------------------------------------------------------------------------- cases

PARTITIONED_JOIN = {"spark.sql.autoBroadcastJoinThreshold": "-1"}

_BASE = "BaseDynamicPartitionPruningTest"
_COORD = "AbstractTestCoordinatorDynamicFiltering"

BASE_NOTE = ("Trino's session forces JOIN_DISTRIBUTION_TYPE=PARTITIONED (ported as "
             "autoBroadcastJoinThreshold=-1), no join reordering (Spark's default) and large "
             "dynamic filters, and disables the filtering-semi-join-to-inner rewrite (not "
             "ported); its assertions on dynamic filter statistics and domains are not ported.")
COORD_NOTE = ("Trino's probe is a table of its test connector (which returns no rows), here a "
              "partitioned table with rows; no join reordering (Spark's default) and no "
              "filtering-semi-join-to-inner rewrite (not ported); its assertions on the domains "
              "the connector receives are not ported.")
COORD_PARTITIONED_NOTE = ("Its default session forces JOIN_DISTRIBUTION_TYPE=PARTITIONED: "
                          "ported as autoBroadcastJoinThreshold=-1.")
BROADCAST_NOTE = ("Trino runs it with BROADCAST and PARTITIONED joins (and coordinator filter "
                  "distribution on/off, not ported): this is the BROADCAST run, Spark's default "
                  "threshold (every table is far below it).")
PARTITIONED_NOTE = ("Trino runs it with BROADCAST and PARTITIONED joins (and coordinator filter "
                    "distribution on/off, not ported): this is the PARTITIONED run, "
                    "autoBroadcastJoinThreshold=-1.")
SUPPLIERS_NOTE = ("Suppliers 16..20 of 20 stand for Trino's 80..100 of 100: the literal "
                  "'Supplier#000000080' became 'Supplier#000000016'.")


def _case(slug: str, origin: str, sql: str, conf: Optional[dict[str, str]] = None,
          note: str = "") -> PeerCase:
    return PeerCase(id=f"trino/{slug}", origin=origin, sql=" ".join(sql.split()),
                    conf=dict(PARTITIONED_JOIN if conf is None else conf), note=note)


def _notes(*parts: str) -> str:
    return " ".join(p for p in parts if p)


def _both(slug: str, origin: str, sql: str, note: str = "") -> list[PeerCase]:
    """A test Trino runs with a broadcast and a partitioned join: a case for each."""
    return [_case(f"{slug}-broadcast", origin, sql, {}, _notes(COORD_NOTE, BROADCAST_NOTE, note)),
            _case(f"{slug}-partitioned", origin, sql, PARTITIONED_JOIN,
                  _notes(COORD_NOTE, PARTITIONED_NOTE, note))]


def _base(slug: str, method: str, sql: str, note: str = "") -> PeerCase:
    return _case(f"pruning-{slug}", f"{_BASE}.{method}", sql,
                 note=_notes(BASE_NOTE, note))


def _coord(slug: str, method: str, sql: str, note: str = "") -> PeerCase:
    return _case(f"coord-{slug}", f"{_COORD}.{method}", sql,
                 note=_notes(COORD_NOTE, COORD_PARTITIONED_NOTE, note))


def _coord_both(slug: str, method: str, sql: str, note: str = "") -> list[PeerCase]:
    return _both(f"coord-{slug}", f"{_COORD}.{method}", sql, note)


_MULTI_JOIN = (
    # t0 table scan depends on DFs from t1 and t2
    "SELECT v0, v1, v2 FROM ({t0} JOIN {t2} ON k0 = i2) JOIN {t1} ON k0 = i1",
    # DF evaluation order is: t1 => t2 => t0
    "SELECT v0, v1, v2 FROM ({t0} JOIN {t2} ON k0 = i2) JOIN {t1} ON k2 = i1",
    # "(k0 * -1) + 2 = i2" prevents DF to be used on t0
    "SELECT v0, v1, v2 FROM ({t0} JOIN {t2} ON (k0 * -1) + 2 = i2) JOIN {t1} ON k2 = i1",
)
_MULTI_JOIN_WHAT = ("t0's scan waits on filters from t1 and t2",
                    "filters evaluate t1, then t2, then t0",
                    "(k0 * -1) + 2 = i2 keeps the filter off t0")


def _base_multi_join() -> list[PeerCase]:
    out: list[PeerCase] = []
    method = "testJoinDynamicFilteringMultiJoinOnPartitionedTables"
    tables = {"t0": "tr_t0_part", "t1": "tr_t1_part", "t2": "tr_t2_part"}
    for n, (sql, what) in enumerate(zip(_MULTI_JOIN, _MULTI_JOIN_WHAT), 1):
        common = (f"Query {n} of testJoinDynamicFilteringMultiJoin ({what}); Trino asserts "
                  "0 rows and fewer input positions than without dynamic filtering.")
        out.append(_case(f"pruning-multi-join-partitioned-tables-{n}-broadcast",
                         f"{_BASE}.{method}", sql.format(**tables), {},
                         f"{common} Trino runs it with each join distribution type (BROADCAST, "
                         "PARTITIONED, AUTOMATIC): this is BROADCAST/AUTOMATIC, Spark's default "
                         "threshold (no join reordering either way)."))
        out.append(_case(f"pruning-multi-join-partitioned-tables-{n}-partitioned",
                         f"{_BASE}.{method}", sql.format(**tables), PARTITIONED_JOIN,
                         f"{common} Trino runs it with each join distribution type: this is "
                         "PARTITIONED."))
    method = "testJoinDynamicFilteringMultiJoinOnBucketedTables"
    tables = {"t0": "tr_t0_bucketed", "t1": "tr_t1_bucketed", "t2": "tr_t2_bucketed"}
    for n, (sql, what) in enumerate(zip(_MULTI_JOIN, _MULTI_JOIN_WHAT), 1):
        out.append(_case(f"pruning-multi-join-bucketed-tables-{n}", f"{_BASE}.{method}",
                         sql.format(**tables), PARTITIONED_JOIN,
                         f"Query {n} of testJoinDynamicFilteringMultiJoin ({what}); Trino asserts "
                         "0 rows. Trino's tables are also bucketed (by v0/v1/v2, 10 buckets): "
                         "buckets dropped, PeerTable has none; PARTITIONED join as in Trino."))
    return out


_PL = "tr_partitioned_lineitem partitioned_lineitem"
_L = "tr_partitioned_lineitem lineitem"
_S = "tr_supplier supplier"
_TWO = "('Supplier#000000001', 'Supplier#000000002')"

CASES: list[PeerCase] = [
    # ---------------------------------------------------- BaseDynamicPartitionPruningTest
    _base("join-with-empty-build-side", "testJoinWithEmptyBuildSide",
          f"SELECT * FROM {_PL} JOIN {_S} ON partitioned_lineitem.suppkey = supplier.suppkey "
          "AND supplier.name = 'abc'"),
    _base("join-with-selective-build-side", "testJoinWithSelectiveBuildSide",
          f"SELECT * FROM {_PL} JOIN {_S} ON partitioned_lineitem.suppkey = supplier.suppkey "
          "AND supplier.name = 'Supplier#000000001'"),
    _base("join-with-non-selective-build-side", "testJoinWithNonSelectiveBuildSide",
          f"SELECT * FROM {_PL} JOIN {_S} ON partitioned_lineitem.suppkey = supplier.suppkey"),
    _base("join-large-build-side-range", "testJoinLargeBuildSideRangeDynamicFiltering",
          f"SELECT * FROM {_PL} JOIN tr_orders orders "
          "ON partitioned_lineitem.orderkey = orders.orderkey",
          "The join key orderkey is not the partition column (Trino's filter is a min/max "
          "range on it)."),
    _base("join-with-multiple-dynamic-filters-on-probe",
          "testJoinWithMultipleDynamicFiltersOnProbe",
          f"SELECT * FROM (SELECT supplier.suppkey FROM {_PL} JOIN {_S} "
          "ON partitioned_lineitem.suppkey = supplier.suppkey "
          f"AND supplier.name IN {_TWO}) t "
          f"JOIN {_S} ON t.suppkey = supplier.suppkey AND supplier.suppkey IN (2, 3)",
          "Trino's inner supplier is tpch.tiny.supplier, the outer the test schema's copy: "
          "both tr_supplier."),
    _base("join-with-implicit-coercion", "testJoinWithImplicitCoercion",
          "SELECT * FROM tr_partitioned_lineitem_int l JOIN tr_supplier s "
          "ON l.suppkey_int = s.suppkey AND s.name = 'Supplier#000000001'",
          "Probe partitioned by an int column joined to bigint suppkey (Trino: CAST(suppkey AS "
          "int) suppkey_int; Spark widens the int side)."),
    _base("semi-join-with-empty-build-side", "testSemiJoinWithEmptyBuildSide",
          "SELECT * FROM tr_partitioned_lineitem "
          "WHERE suppkey IN (SELECT suppkey FROM tr_supplier WHERE name = 'abc')"),
    _base("semi-join-with-selective-build-side", "testSemiJoinWithSelectiveBuildSide",
          "SELECT * FROM tr_partitioned_lineitem "
          "WHERE suppkey IN (SELECT suppkey FROM tr_supplier WHERE name = 'Supplier#000000001')"),
    _base("semi-join-with-non-selective-build-side", "testSemiJoinWithNonSelectiveBuildSide",
          "SELECT * FROM tr_partitioned_lineitem "
          "WHERE suppkey IN (SELECT suppkey FROM tr_supplier)"),
    _base("semi-join-large-build-side-range", "testSemiJoinLargeBuildSideRangeDynamicFiltering",
          "SELECT * FROM tr_partitioned_lineitem "
          "WHERE orderkey IN (SELECT orderkey FROM tr_orders)",
          "The semi join key orderkey is not the partition column."),
    _base("right-join-with-empty-build-side", "testRightJoinWithEmptyBuildSide",
          "SELECT * FROM tr_partitioned_lineitem l RIGHT JOIN tr_supplier s "
          "ON l.suppkey = s.suppkey WHERE name = 'abc'"),
    _base("right-join-with-selective-build-side", "testRightJoinWithSelectiveBuildSide",
          "SELECT * FROM tr_partitioned_lineitem l RIGHT JOIN tr_supplier s "
          "ON l.suppkey = s.suppkey WHERE name = 'Supplier#000000001'"),
    _base("right-join-with-non-selective-build-side", "testRightJoinWithNonSelectiveBuildSide",
          "SELECT * FROM tr_partitioned_lineitem l RIGHT JOIN tr_supplier s "
          "ON l.suppkey = s.suppkey"),
    *_base_multi_join(),
    # ---------------------------------------------- AbstractTestCoordinatorDynamicFiltering
    *_coord_both("join-with-empty-build-side", "testJoinWithEmptyBuildSide",
                 f"SELECT * FROM {_L} JOIN {_S} ON lineitem.suppkey = supplier.suppkey "
                 "AND supplier.name = 'abc'"),
    *_coord_both("join-with-large-build-side", "testJoinWithLargeBuildSide",
                 f"SELECT * FROM {_L} JOIN tr_orders orders ON lineitem.orderkey = orders.orderkey",
                 "The join key orderkey is not the partition column (Trino expects no filter: "
                 "the build side is too large)."),
    *_coord_both("multi-column-join-with-different-cardinalities",
                 "testMultiColumnJoinWithDifferentCardinalitiesInBuildSide",
                 "SELECT * FROM tr_partitioned_lineitem l1 JOIN tr_lineitem l2 "
                 "ON l1.orderkey = l2.orderkey AND l1.suppkey = l2.suppkey "
                 "WHERE l2.suppkey BETWEEN 1 AND 10",
                 "l2 is tpch.tiny.lineitem there, the unpartitioned tr_lineitem here; BETWEEN 1 "
                 "AND 10 keeps 10 of 20 suppliers (10 of 100 in Trino)."),
    *_coord_both("join-with-selective-build-side", "testJoinWithSelectiveBuildSide",
                 f"SELECT * FROM {_L} JOIN {_S} ON lineitem.suppkey = supplier.suppkey "
                 "AND supplier.name = 'Supplier#000000001'"),
    _coord("inequality-join-le", "testInequalityJoinWithSelectiveBuildSide",
           f"SELECT * FROM {_L} JOIN {_S} ON lineitem.suppkey <= supplier.suppkey "
           f"AND supplier.name IN {_TWO}", "Query 1 of 4 (<=)."),
    _coord("inequality-join-lt", "testInequalityJoinWithSelectiveBuildSide",
           f"SELECT * FROM {_L} JOIN {_S} ON lineitem.suppkey < supplier.suppkey "
           f"AND supplier.name IN {_TWO}", "Query 2 of 4 (<)."),
    _coord("inequality-join-ge", "testInequalityJoinWithSelectiveBuildSide",
           f"SELECT * FROM {_L} JOIN {_S} ON lineitem.suppkey >= supplier.suppkey "
           f"AND supplier.name IN {_TWO}", "Query 3 of 4 (>=)."),
    _coord("inequality-join-gt", "testInequalityJoinWithSelectiveBuildSide",
           f"SELECT * FROM {_L} JOIN {_S} ON lineitem.suppkey > supplier.suppkey "
           f"AND supplier.name IN {_TWO}", "Query 4 of 4 (>)."),
    _coord("is-not-distinct-from-join-equal", "testIsNotDistinctFromJoinWithSelectiveBuildSide",
           "SELECT * FROM tr_partitioned_store_sales store_sales JOIN tr_store store "
           "ON store_sales.ss_sold_date_sk = store.s_closed_date_sk",
           "Query 1 of 3 (plain =). tpcds.tiny store_sales/store as tr_partitioned_store_sales "
           "(partitioned by ss_sold_date_sk, with a NULL partition) and tr_store (one non-NULL "
           "s_closed_date_sk, 2451189, on two stores)."),
    _coord("is-not-distinct-from-join", "testIsNotDistinctFromJoinWithSelectiveBuildSide",
           "SELECT * FROM tr_partitioned_store_sales store_sales JOIN tr_store store "
           "ON store_sales.ss_sold_date_sk <=> store.s_closed_date_sk",
           "Query 2 of 3: IS NOT DISTINCT FROM as <=> (NULL dates match NULL closed dates)."),
    _coord("is-not-distinct-from-join-empty-build",
           "testIsNotDistinctFromJoinWithSelectiveBuildSide",
           "SELECT * FROM tr_partitioned_store_sales store_sales JOIN tr_store store "
           "ON store_sales.ss_sold_date_sk <=> store.s_closed_date_sk "
           "AND store.s_closed_date_sk < 0",
           "Query 3 of 3: IS NOT DISTINCT FROM as <=>, build side filtered to no rows (Trino "
           "expects a NULL-only domain)."),
    _coord("join-with-implicit-coercion-decimal", "testJoinWithImplicitCoercion",
           f"SELECT * FROM {_L} JOIN tr_supplier_decimal s "
           "ON lineitem.suppkey = s.suppkey_decimal AND s.name >= 'Supplier#000000016'",
           "Query 1 of 2: bigint partition column = decimal(19,0) (memory.default.supplier_decimal "
           "as tr_supplier_decimal). " + SUPPLIERS_NOTE),
    _coord("join-with-implicit-coercion-varchar", "testJoinWithImplicitCoercion",
           "SELECT * FROM tr_partitioned_customer customer JOIN tr_supplier_varchar s "
           "ON customer.address = s.address AND s.name >= 'Supplier#000000016'",
           "Query 2 of 2: customer partitioned by address (40 addresses; supplier addresses are "
           "customer addresses here, unlike TPC-H, so rows come back). Trino coerces varchar(40) "
           "to varchar(42); both are STRING in Spark, so no coercion is left. "
           + SUPPLIERS_NOTE),
    *_coord_both("join-with-non-selective-build-side", "testJoinWithNonSelectiveBuildSide",
                 f"SELECT * FROM {_L} JOIN {_S} ON lineitem.suppkey = supplier.suppkey"),
    *_coord_both("join-with-multiple-dynamic-filters-on-probe",
                 "testJoinWithMultipleDynamicFiltersOnProbe",
                 f"SELECT * FROM (SELECT supplier.suppkey FROM {_L} JOIN {_S} "
                 f"ON lineitem.suppkey = supplier.suppkey AND supplier.name IN {_TWO}) t "
                 "JOIN tr_partsupp partsupp ON t.suppkey = partsupp.suppkey "
                 "AND partsupp.suppkey IN (2, 3)"),
    _coord("right-join-with-empty-build-side", "testRightJoinWithEmptyBuildSide",
           f"SELECT * FROM {_L} RIGHT JOIN {_S} ON lineitem.suppkey = supplier.suppkey "
           "WHERE supplier.name = 'abc'"),
    _coord("right-join-with-non-selective-build-side", "testRightJoinWithNonSelectiveBuildSide",
           f"SELECT * FROM {_L} RIGHT JOIN {_S} ON lineitem.suppkey = supplier.suppkey"),
    _coord("right-join-with-selective-build-side", "testRightJoinWithSelectiveBuildSide",
           f"SELECT * FROM {_L} RIGHT JOIN {_S} ON lineitem.suppkey = supplier.suppkey "
           "WHERE supplier.name = 'Supplier#000000001'"),
    *_coord_both("semi-join-with-empty-build-side", "testSemiJoinWithEmptyBuildSide",
                 f"SELECT * FROM {_L} WHERE lineitem.suppkey IN "
                 f"(SELECT supplier.suppkey FROM {_S} WHERE supplier.name = 'abc')"),
    *_coord_both("semi-join-with-large-build-side", "testSemiJoinWithLargeBuildSide",
                 f"SELECT * FROM {_L} WHERE lineitem.orderkey IN "
                 "(SELECT orders.orderkey FROM tr_orders orders)",
                 "The semi join key orderkey is not the partition column."),
    *_coord_both("semi-join-with-selective-build-side", "testSemiJoinWithSelectiveBuildSide",
                 f"SELECT * FROM {_L} WHERE lineitem.suppkey IN "
                 f"(SELECT supplier.suppkey FROM {_S} WHERE supplier.name = 'Supplier#000000001')"),
    *_coord_both("semi-join-with-non-selective-build-side", "testSemiJoinWithNonSelectiveBuildSide",
                 f"SELECT * FROM {_L} WHERE lineitem.suppkey IN "
                 f"(SELECT supplier.suppkey FROM {_S})"),
    *_coord_both("semi-join-with-multiple-dynamic-filters-on-probe",
                 "testSemiJoinWithMultipleDynamicFiltersOnProbe",
                 f"SELECT * FROM (SELECT lineitem.suppkey FROM {_L} WHERE lineitem.suppkey IN "
                 f"(SELECT supplier.suppkey FROM {_S} WHERE supplier.name IN {_TWO})) t "
                 "WHERE t.suppkey IN (SELECT partsupp.suppkey FROM tr_partsupp partsupp "
                 "WHERE partsupp.suppkey IN (2, 3))"),
]
