"""The fuzzer through ``dpp connect-server``: a client that never imports dpp.

The server is started as a user starts it (``tests.connect_server.DppConnectServer``), with a
report file; the client reads the lines of its own session. The oracle runs on the same client
session with ``spark.dpp.enabled=false`` set by the client, which the server honours per
session.
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Iterator, Optional

from tests.fuzz.model import Case
from tests.fuzz.runner import Backend


DECLARED = "fz_decl"


class ConnectBackend(Backend):
    """A declared table is the server's (``--conf spark.dpp.tables.fz_decl=<folder>`` at its
    start, read as ``global_temp.fz_decl``): a client cannot declare one, so each declared
    case writes its fact into that folder, and the server's dpp meets a folder whose layout
    changed since it declared it, as a user's would."""

    name = "connect"

    def __init__(self, spark: Any, report_path: Path, declared_dir: Path) -> None:
        super().__init__(spark, report_path)
        self.declared_dir = declared_dir

    def declared_fact(self, w: Any) -> str:
        return f"global_temp.{DECLARED}"

    def declare(self, name: str, folder: Optional[str]) -> None:
        """Nothing: the server declared its table at its start."""

    def reports_since(self, mark: int) -> list[dict]:
        sid = self.spark.session_id
        return [r for r in super().reports_since(mark)
                if (r.get("connect_session") or {}).get("session_id") == sid]


@contextlib.contextmanager
def connect_backend(workdir: Path) -> Iterator[Backend]:
    from pyspark.sql import SparkSession

    from tests.connect_server import DppConnectServer

    report = workdir / "server-reports.jsonl"
    declared = workdir / "declared"
    # a table the server can declare at its start; each declared case replaces its files
    import pyarrow as pa
    import pyarrow.parquet as pq

    (declared / "p=0").mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": pa.array([0], pa.int32()), "x": pa.array([0], pa.int32())}),
                   declared / "p=0" / "part-0.parquet")
    server = DppConnectServer(workdir / "server", conf={
        "spark.dpp.report.path": str(report),
        f"spark.dpp.tables.{DECLARED}": str(declared)})
    server.start()
    spark: Any = None
    try:
        spark = SparkSession.builder.remote(server.url).getOrCreate()
        yield ConnectBackend(spark, report, declared)
    finally:
        if spark is not None:
            with contextlib.suppress(Exception):
                spark.stop()
        server.stop()
