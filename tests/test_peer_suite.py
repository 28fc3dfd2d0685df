"""The peer suite (``tests/peer``) under pytest: Spark's and Trino's dynamic pruning queries.

``python -m tests.peer`` runs every case in all four variants (path and catalog tables,
adaptive execution on and off) and prints the counts. Here every case runs once, the variants
taken in turn (case *i* in variant *i* mod 4), so each case and each variant is covered in a
quarter of the time. What must hold:

* every mode's rows equal Spark's with every pruning off (or both raise);
* where Spark's own pruning reads less than that reference, dpp's mode reads less too — except
  the cases listed in ``LEFT_TO_SPARK`` with the reason dpp does not prune them itself.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

import dpp
from tests.peer.runner import CaseResult, Tables, all_tables, run_suite, variants
from tests.peer.suites import load

# case id -> why dpp's mode reads more than Spark's own pruning there
LEFT_TO_SPARK: dict[str, str] = {}


@pytest.fixture(scope="module")
def peer_results(spark: Any, tmp_path_factory: pytest.TempPathFactory
                 ) -> Iterator[list[CaseResult]]:
    cases, shared = load()
    chosen = variants()
    session = dpp.enable(spark)
    assert session.optimizer_hook is not None, session.hook_note
    tables = Tables(spark, tmp_path_factory.mktemp("peer"), all_tables(cases, shared))
    try:
        yield list(run_suite(spark, session, cases, tables,
                             lambda i, c: [chosen[i % len(chosen)]]))
    finally:
        tables.close()
        dpp.disable(spark)


def test_every_case_gives_sparks_rows(peer_results: list[CaseResult]) -> None:
    assert len(peer_results) == len(load()[0])
    bad = [f"{r.case} [{r.variant}]: {r.why}" for r in peer_results if r.mismatched]
    assert not bad, "\n".join(bad)


def test_dpp_reads_less_wherever_spark_does(peer_results: list[CaseResult]) -> None:
    lost = [f"{r.case} [{r.variant}]: {r.runs['dpp'].report or 'no report'}"
            for r in peer_results
            if "spark" in r.pruned and "dpp" not in r.pruned and r.case not in LEFT_TO_SPARK]
    assert not lost, "\n".join(lost)


def test_dpp_prunes_cases_spark_cannot(peer_results: list[CaseResult]) -> None:
    """dpp's own filters prune somewhere Spark's do not (its build sides over shuffle joins,
    outer joins' preserved sides): a suite where dpp pruned only what Spark does would not
    show that dpp's analysis is running at all."""
    beyond = [r.case for r in peer_results if "dpp" in r.pruned and "spark" not in r.pruned
              and r.runs["dpp"].dpp_applied]
    assert beyond, "dpp pruned no case beyond Spark's own pruning"
