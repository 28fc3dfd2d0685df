"""``tpcds.concurrency``: concurrent clients on one driver get right answers, counted right.

Tiny sizes (48 partitions, 2 client threads sharing the suite's session, a few queries each,
counted, never timed): every concurrent star join through dpp's optimizer hook returns the
rows the generator knows, dpp's reports show it pruned each one, and the window's counts add
up. Spark's own DPP on the same session and data gives the same answers.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tpcds.concurrency import (ClassicFront, Config, Window, expected_rows, pick, read_reports,
                               run_clients, summarize, variants)
from tpcds.partition_scale import expected

PARTITIONS, KEEP = 48, 30
CLIENTS, PER_CLIENT = 2, 3


def test_variants_partition_the_known_answer() -> None:
    vs = variants(PARTITIONS, KEEP)
    assert len({(v.m, v.r) for v in vs}) == len(vs)
    whole = expected(PARTITIONS, KEEP)
    for m in {v.m for v in vs}:   # one modulus' residues split the answer exactly
        rows = sorted(row for v in vs if v.m == m for row in v.rows)
        assert rows == whole
    for v in vs:
        assert list(v.rows) == expected_rows(PARTITIONS, KEEP, v.m, v.r) != []
    # concurrent clients, and one client's consecutive queries, ask different questions
    assert pick(vs, 0, 0) != pick(vs, 1, 0)
    assert pick(vs, 0, 0) != pick(vs, 0, 1)


@pytest.fixture
def front(spark: Any, tmp_path: Path):
    cfg = Config(data=tmp_path / "data", out=tmp_path / "out", partitions=PARTITIONS,
                 keep=KEEP, clients=[CLIENTS])
    f = ClassicFront(cfg, lambda _m: None, spark=spark)
    try:
        yield f
    finally:
        f.close()
        spark.sql(f"DROP TABLE IF EXISTS {f.fact}")


def _window(front: ClassicFront, mode: str) -> tuple[Window, Any]:
    sessions = front.sessions(CLIENTS)
    front.set_mode(mode, sessions)
    run = run_clients(sessions, front.fact, front.variants, per_client=PER_CLIENT,
                      setup=front.setup, teardown=front.teardown)
    return summarize(Window("classic", mode, CLIENTS, 0.0), run), run


def test_concurrent_clients_get_right_rows_with_dpp(front: ClassicFront) -> None:
    assert front.fact.endswith(".sales")   # the catalog table
    _, start = read_reports(front.reports)
    w, run = _window(front, "dpp")
    errors = [o.error for o in run.outcomes if o.error]
    assert not errors, errors
    assert run.stuck == 0
    assert len(run.outcomes) == CLIENTS * PER_CLIENT
    assert all(o.ok and o.correct for o in run.outcomes)
    # the counts add up: per client, and right + wrong + failed = every query run
    assert w.per_client == [PER_CLIENT] * CLIENTS
    assert w.correct == w.completed == CLIENTS * PER_CLIENT
    assert w.wrong == w.failed == 0
    assert w.correct + w.wrong + w.failed == len(run.outcomes)
    assert sorted((o.client, o.index) for o in run.outcomes) == \
        [(c, j) for c in range(CLIENTS) for j in range(PER_CLIENT)]
    # each client's query was pruned by dpp's hook (one report each, the fact pruned)
    reports, _ = read_reports(front.reports, start)
    pruned = [t for r in reports for t in r.get("tables") or [] if t.get("pruning") == "applied"]
    assert len(pruned) >= CLIENTS * PER_CLIENT, json.dumps(reports)[:2000]
    for t in pruned:
        assert t["partitions_total"] == PARTITIONS
        assert t["partitions_kept"] < PARTITIONS


def test_concurrent_clients_spark_mode_agrees(front: ClassicFront) -> None:
    _, start = read_reports(front.reports)
    w, run = _window(front, "spark")
    assert [o.error for o in run.outcomes if o.error] == []
    assert w.correct == CLIENTS * PER_CLIENT and w.wrong == w.failed == 0
    reports, _ = read_reports(front.reports, start)
    assert reports == []   # the hook is off in Spark's mode


def test_thread_cpu_adds_up_to_the_process(front: ClassicFront) -> None:
    """The driver JVM's CPU by thread group covers the whole process (threads that ended in
    the window are a line of their own), and the report prints it per right answer."""
    from tpcds.concurrency import ThreadCpu, proc_cpu, render_markdown

    pid = front.jvm_pid()
    assert pid
    before = proc_cpu(pid)
    watch = ThreadCpu(pid).start()
    w, _ = _window(front, "dpp")
    w.jvm_threads_s = watch.stop()
    whole = proc_cpu(pid) - before
    assert w.jvm_threads_s and all(v > 0 for v in w.jvm_threads_s.values())
    # ticks are 10 ms: the groups add up to the process's CPU within a few ticks
    assert abs(sum(w.jvm_threads_s.values()) - whole) < 0.2, (w.jvm_threads_s, whole)
    text = render_markdown({"config": {"partitions": PARTITIONS, "kind": "catalog",
                                       "variants": 1, "seconds": 0, "cores": 2,
                                       "clients": [CLIENTS], "fronts": ["classic"],
                                       "modes": ["dpp"]},
                            "windows": [w.to_dict()]})
    assert "Driver JVM CPU per right answer by thread" in text
    assert "| **whole JVM** |" in text


def test_rounds_report_medians_and_every_round() -> None:
    """With several rounds a ratio is of the cells' medians (the lower middle of an even
    count), and every round's figure is shown: one lucky window does not decide it."""
    from tpcds.concurrency import Window, median_qpm, render_markdown

    def w(mode: str, n: int, qpm: float, rnd: int) -> dict:
        win = Window("classic", mode, n, 1.0, wall_s=1.0, correct=1, qpm=qpm)
        win.round = rnd
        return win.to_dict()

    ws = [w("spark", 16, 300.0, 0), w("dpp", 16, 200.0, 0),
          w("dpp", 16, 330.0, 1), w("spark", 16, 100.0, 1),
          w("spark", 16, 310.0, 2), w("dpp", 16, 320.0, 2),
          w("dpp", 1, 10.0, 0), w("dpp", 1, 30.0, 1)]
    assert median_qpm(ws, "classic", "spark", 16) == 300.0
    assert median_qpm(ws, "classic", "dpp", 16) == 320.0
    assert median_qpm(ws, "classic", "dpp", 1) == 10.0   # even count: the lower middle
    assert median_qpm(ws, "connect", "dpp", 16) is None
    text = render_markdown({"config": {"partitions": 10, "kind": "catalog", "variants": 1,
                                       "seconds": 1, "cores": 2, "clients": [1, 16],
                                       "fronts": ["classic"], "modes": ["spark", "dpp"],
                                       "rounds": 3},
                            "windows": ws})
    assert "| classic | dpp | 16 | 200.0, 330.0, 320.0 | 320.0 |" in text
    assert "| classic | 16 | 1.07× |" in text   # 320 / 300
    assert "| classic | 1 | — |" in text         # no spark cell at 1 client
