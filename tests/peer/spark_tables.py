"""The tables of Spark's ``DynamicPartitionPruningSuite`` (its ``beforeAll``), same rows."""
from __future__ import annotations

import pyarrow as pa

from tests.peer.model import PeerTable

FACT_ROWS = [
    (1000, 1, 1, 10), (1010, 2, 1, 10), (1020, 2, 1, 10), (1030, 3, 2, 10),
    (1040, 3, 2, 50), (1050, 3, 2, 50), (1060, 3, 2, 50), (1070, 4, 2, 10),
    (1080, 4, 3, 20), (1090, 4, 3, 10), (1100, 4, 3, 10), (1110, 5, 3, 10),
    (1120, 6, 4, 10), (1130, 7, 4, 50), (1140, 8, 4, 50), (1150, 9, 1, 20),
    (1160, 10, 1, 20), (1170, 11, 1, 30), (1180, 12, 2, 20), (1190, 13, 2, 20),
    (1200, 14, 3, 40), (1200, 15, 3, 70), (1210, 16, 4, 10), (1220, 17, 4, 20),
    (1230, 18, 4, 20), (1240, 19, 5, 40), (1250, 20, 5, 40), (1260, 21, 5, 40),
    (1270, 22, 5, 50), (1280, 23, 1, 50), (1290, 24, 1, 50), (1300, 25, 1, 50),
]
STORE_ROWS = [(1, "North-Holland", "NL"), (2, "South-Holland", "NL"), (3, "Bavaria", "DE"),
              (4, "California", "US"), (5, "Texas", "US"), (6, "Texas", "US")]
CODE_ROWS = [(1, 10), (2, 20), (3, 30), (4, 40), (5, 50), (6, 60)]


def _fact() -> pa.Table:
    cols = list(zip(*FACT_ROWS))
    return pa.table({name: pa.array(c, pa.int32()) for name, c in
                     zip(("date_id", "store_id", "product_id", "units_sold"), cols)})


def _stores() -> pa.Table:
    ids, provinces, countries = zip(*STORE_ROWS)
    return pa.table({"store_id": pa.array(ids, pa.int32()),
                     "state_province": pa.array(provinces, pa.string()),
                     "country": pa.array(countries, pa.string())})


def _codes() -> pa.Table:
    ids, codes = zip(*CODE_ROWS)
    return pa.table({"store_id": pa.array(ids, pa.int32()), "code": pa.array(codes, pa.int32())})


def _product() -> pa.Table:
    ids = list(range(1000))
    return pa.table({"product_id": pa.array(ids, pa.int64()),
                     "store_id": pa.array([i % 10 for i in ids], pa.int64()),
                     "code": pa.array([i + 1 for i in ids], pa.int64())})


def spark_tables() -> list[PeerTable]:
    """``product``, ``fact_np`` (unpartitioned), ``fact_sk``, ``fact_stats`` (both by
    ``store_id``), ``dim_store``, ``dim_stats`` and ``code_stats`` (by ``store_id``); the
    ``*_stats`` tables and ``dim_store`` analyzed for ``store_id`` as the suite does."""
    return [
        PeerTable("product", _product()),
        PeerTable("fact_np", _fact()),
        PeerTable("fact_sk", _fact(), ("store_id",)),
        PeerTable("fact_stats", _fact(), ("store_id",), analyze=("store_id",)),
        PeerTable("dim_store", _stores(), analyze=("store_id",)),
        PeerTable("dim_stats", _stores(), analyze=("store_id",)),
        PeerTable("code_stats", _codes(), ("store_id",), analyze=("store_id",)),
    ]
