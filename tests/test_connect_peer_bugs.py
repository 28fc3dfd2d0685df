"""The peer-bug suite, from a Spark Connect client against ``dpp connect-server``.

``tests/test_peer_bugs.py`` holds the wrong-result bugs other engines had (time zones and
DST, -0.0 and NaN, CHAR padding, implicit casts, DATE against TIMESTAMP, TIMESTAMP_NTZ, column
name case, Trino's empty build side, SPARK-38570's literal partition column in a UNION branch,
SPARK-32659's non-atomic keys, the filter cache). Here every one of its tests runs again with
``spark`` a plain Connect client of a ``dpp connect-server``: the tables are made through the
client, each query runs as the client writes it (``tests/differential.py`` on a served
session), Spark's answer comes from the same session with dpp off, and pruning is read from
the server's reports. Each test runs one of its variants (table kind, time zone, cache)
here, and the classic module a sample of them all: ``DPP_ALL_VARIANTS=1`` runs the whole
matrix over Connect.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.connect_server import DppConnectServer, client
from tests.test_peer_bugs import *  # noqa: F401,F403  (its fixtures and tests, collected here)

pytestmark = pytest.mark.connect
# one variant of each test (tests/conftest.py), whose matrix the classic module samples;
# DPP_ALL_VARIANTS=1 runs them all here too
SAMPLE_VARIANTS = 1000
# under make test-all only over Connect (tests/conftest.py): their subject is a plan shape or
# a value of a type, which the server's hook decides on as the classic session's does; the
# classic module runs each of them under make test. The time zone, DST, TIMESTAMP_NTZ, case
# and filter cache tests, where a Connect session's own settings matter, run here always.
FULL_ONLY = frozenset({"test_union_literal_partition_column", "test_non_atomic_join_keys",
                       "test_negative_zero_partition", "test_char_padding",
                       "test_string_partition_int_key"})


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DppConnectServer]:
    srv = DppConnectServer(tmp_path_factory.mktemp("peer-connect-server"))
    srv.start(timeout=300.0)
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def spark(connect_server: DppConnectServer) -> Iterator[Any]:
    """This module's ``spark``: a Connect client, its reports in a file of its own."""
    s = client(connect_server.url)
    s.conf.set("spark.dpp.report.path", str(Path(connect_server.workdir) / "reports.jsonl"))
    try:
        yield s
    finally:
        s.stop()
