"""The optimizer hook's messages to Python, cut in parts that py4j writes in one piece each.

A plan description over 8 KiB left the JVM as two socket writes and waited ~40 ms for
Python's delayed ACK on every optimizer run (py4j's Nagle issue). The JVM now sends it in
parts (``DppHook.send``) and ``dpp.frontends.hook.bridge`` joins them. What must hold: the parts join to
the very message (multi-byte characters, surrogate pairs and py4j's escapes included), each
part fits one write, and a plan large enough to be cut is pruned with Spark's own rows.
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpp.enable import session_of
from dpp.frontends.hook.bridge import LAST, PART, Parts
from tests.adversarial_support import OFF, enabled
from tests.conftest import spark_conf


def test_parts_of_interleaved_messages_join_each_to_its_own() -> None:
    parts = Parts()
    assert parts.add(PART + "m1 {\"op\":") is None
    assert parts.add(PART + "m2 [1,") is None
    assert parts.add(PART + "m1 \"pl an\"") is None
    assert parts.add(LAST + "m2 2]") == "[1,2]"
    assert parts.add(LAST + "m1 }") == "{\"op\":\"pl an\"}"
    assert len(parts) == 0 and parts.joined == 2


def test_a_message_whose_last_part_never_came_is_dropped_in_time() -> None:
    parts = Parts()
    for i in range(200):   # calls the JVM abandoned midway (its bounded wait)
        parts.add(f"{PART}a{i} x")
    assert len(parts) <= 64
    assert parts.add(LAST + "a199 y") == "xy"   # the newest are kept


def test_a_text_that_is_no_part_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="not a part"):
        Parts().add("\x01other m1 x")


def _wire_bytes(s: str) -> int:
    """py4j's size of a string on the wire: UTF-8, a backslash, CR or LF escaped in two."""
    return len(s.encode("utf-8", "surrogatepass")) + sum(s.count(c) for c in "\\\r\n")


def test_the_jvm_cuts_a_message_into_parts_that_join_to_it(spark: Any) -> None:
    from dpp.runtime.jvm_build import load_into

    hook = load_into(spark)
    rng = random.Random(7)
    alphabet = ["a", "\\", "\n", "\r", "\"", "é", "€", "😀", "𝄞", " "]
    for budget in (16, 100, 7000):
        for _ in range(5):
            text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 3 * budget)))
            got = [str(p) for p in hook.parts(text, budget)]
            assert "".join(got) == text
            assert all(_wire_bytes(p) <= budget + 4 for p in got)   # a pair is kept whole
            assert all(p and not "\udc00" <= p[0] <= "\udfff" for p in got[1:])
            assert len(got) == 1 or all(p for p in got)


@pytest.fixture(scope="module")
def wide(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fact and a dimension with columns enough that the plan's description passes
    8 KiB, named with characters of two, three and four bytes."""
    root = tmp_path_factory.mktemp("hook_bridge")
    cols = {f"größe_€_{i}_𝄞": pa.array([i, i + 1], pa.int64()) for i in range(60)}
    for day in range(6):
        folder = root / "fact" / f"day={day}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({**cols, "amount": pa.array([day, day + 10], pa.int64())}),
                       folder / "part-0.parquet")
    (root / "dim").mkdir()
    pq.write_table(pa.table({"d_day": pa.array(range(6), pa.int32()),
                             "d_name": pa.array([f"tag-ü-{d}" for d in range(6)])}),
                   root / "dim" / "part-0.parquet")
    for name in ("fact", "dim"):
        spark.read.parquet(str(root / name)).createOrReplaceTempView(f"br_{name}")
    try:
        with enabled(spark, root):
            yield root
    finally:
        for name in ("fact", "dim"):
            spark.catalog.dropTempView(f"br_{name}")


def test_a_plan_described_in_parts_is_pruned_with_sparks_rows(spark: Any, wide: Path) -> None:
    select = ", ".join(f"`größe_€_{i}_𝄞` + {i} AS `ä_{i}_😀`" for i in range(60))
    sql = (f"SELECT {select}, amount, d_name FROM br_fact JOIN br_dim ON day = d_day "
           f"WHERE d_name IN ('tag-ü-2', 'tag-ü-4')")
    with spark_conf(spark, OFF):
        want = sorted(tuple(r) for r in spark.sql(sql).collect())
    session = session_of(spark)
    bridge = session.optimizer_hook._bridge
    joined = bridge.parts.joined
    session.last_report = None
    got = sorted(tuple(r) for r in spark.sql(sql).collect())
    assert got == want and len(want) == 4
    assert bridge.parts.joined > joined   # the description came in parts
    report = session.last_report
    kept = [t.partitions_kept for t in report.tables if t.pruning == "applied"]
    assert kept == [2], report.to_dict()
