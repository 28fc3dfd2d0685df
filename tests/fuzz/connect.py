"""The fuzzer through ``dpp connect-server``: a client that never imports dpp.

The server is started as a user starts it (``tests.connect_server.DppConnectServer``), with a
report file; the client reads the lines of its own session. The oracle runs on the same client
session with ``spark.dpp.enabled=false`` set by the client, which the server honours per
session.
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Iterator

from tests.fuzz.model import Case
from tests.fuzz.runner import Backend


class ConnectBackend(Backend):
    name = "connect"

    def supports(self, case: Case) -> bool:
        # a declared table is the server's (--conf spark.dpp.tables.NAME at its start, read
        # as global_temp.NAME): a client cannot declare one per case
        return case.fact.relation != "declared"

    def reports_since(self, mark: int) -> list[dict]:
        sid = self.spark.session_id
        return [r for r in super().reports_since(mark)
                if (r.get("connect_session") or {}).get("session_id") == sid]


@contextlib.contextmanager
def connect_backend(workdir: Path) -> Iterator[Backend]:
    from pyspark.sql import SparkSession

    from tests.connect_server import DppConnectServer

    report = workdir / "server-reports.jsonl"
    server = DppConnectServer(workdir / "server", conf={"spark.dpp.report.path": str(report)})
    server.start()
    spark: Any = None
    try:
        spark = SparkSession.builder.remote(server.url).getOrCreate()
        yield ConnectBackend(spark, report)
    finally:
        if spark is not None:
            with contextlib.suppress(Exception):
                spark.stop()
        server.stop()
