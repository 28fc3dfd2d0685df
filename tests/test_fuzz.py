"""The differential fuzzer (``tests/fuzz``) in the suite: a fixed seed for under a minute (on
the optimizer hook, then on the SQL-text analysis), and its self-test — with a deliberate bug
that drops one kept partition from every load, it must
report wrong rows in at least 90% of the pruned cases where the bug dropped one (it drops a
kept partition holding rows, the build side's values first; a fuzzer that cannot fail proves
nothing).

``DPP_FUZZ_SECONDS`` sets the fixed-seed budget (default 30 s; ``DPP_FUZZ_SQL_TEXT_SECONDS``
the SQL-text analysis', 30 s; ``DPP_FUZZ_COMPARE_SECONDS`` the run focused on comparisons
with a second reference to the fact, 15 s); ``make fuzz`` runs longer.
"""
from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import pytest

from hive_splits.loader import DROP_KEPT_SWITCH
from tests.fuzz.check import classic_backend, sql_text_backend
from tests.fuzz.cli import fuzz, parse_focus, self_test

SEED = 20261128
SECONDS = float(os.environ.get("DPP_FUZZ_SECONDS", "30"))
# the focused run's budget: comparisons with a second reference to the fact
COMPARE_SECONDS = float(os.environ.get("DPP_FUZZ_COMPARE_SECONDS", "15"))
# the SQL-text analysis' budget (its cases are fewer per second)
SQL_TEXT_SECONDS = float(os.environ.get("DPP_FUZZ_SQL_TEXT_SECONDS", "30"))


def test_a_fixed_seed_finds_no_mismatch(spark: Any, tmp_path: Path) -> None:
    out = io.StringIO()
    with classic_backend(spark, tmp_path) as b:
        tally = fuzz(b, SEED, SECONDS, tmp_path, shrink_s=60.0,
                     regressions=tmp_path / "regressions", out=out)
    print(out.getvalue())
    print(tally.line())
    assert tally.cases >= 10, (tally.line(), out.getvalue())
    assert tally.pruned > 0, tally.line()
    assert tally.mismatches == 0, out.getvalue()


def test_the_fuzzer_catches_a_dropped_partition(spark: Any, tmp_path: Path) -> None:
    """Every case dpp pruned (and got right) runs again with the switch on: at least 90% of
    them must then be reported as mismatches."""
    out = io.StringIO()
    with classic_backend(spark, tmp_path) as b:
        st = self_test(b, SEED + 1, 50, tmp_path, out=out)
    print(out.getvalue())
    print(st.line())
    assert DROP_KEPT_SWITCH not in os.environ
    # measured over the pruned cases where the switch dropped a partition: a case where dpp
    # kept no partition holding rows has nothing to drop, and no oracle could tell (the line
    # shows both counts)
    assert st.acted >= 10, st.line()
    assert st.caught >= 0.9 * st.acted, (st.line(), out.getvalue())


def test_a_fixed_seed_on_the_sql_text_analysis_finds_no_mismatch(spark: Any,
                                                                  tmp_path: Path) -> None:
    """The SQL-text analysis (a session without the optimizer hook) over the same generated
    relations and queries, its SQL cases: the same rows as Spark, and something pruned."""
    out = io.StringIO()
    with sql_text_backend(spark, tmp_path) as b:
        tally = fuzz(b, SEED + 2, SQL_TEXT_SECONDS, tmp_path, shrink_s=60.0,
                     regressions=tmp_path / "regressions", out=out)
    print(out.getvalue())
    print(tally.line())
    assert tally.cases >= 5, (tally.line(), out.getvalue())
    assert tally.pruned > 0, tally.line()
    assert tally.mismatches == 0, out.getvalue()


def test_the_fuzzer_focused_on_comparisons_reaches_the_statistics_bound(
        spark: Any, tmp_path: Path) -> None:
    """Cases whose rows are compared with a second reference to the fact (TPC-DS q72's
    shape): the same rows as Spark, and some served by a bound from file statistics, so the
    fuzzer does search that path."""
    out = io.StringIO()
    with classic_backend(spark, tmp_path) as b:
        tally = fuzz(b, SEED + 3, COMPARE_SECONDS, tmp_path, shrink_s=60.0,
                     regressions=tmp_path / "regressions", out=out,
                     focus=parse_focus("extra=compare_fact,compare_fact_rev"))
    print(out.getvalue())
    print(tally.line(), "bounded", tally.bounded)
    assert tally.cases >= 3, (tally.line(), out.getvalue())
    assert tally.bounded > 0, (tally.line(), out.getvalue())
    assert tally.mismatches == 0, out.getvalue()


def test_a_focus_names_known_fields_and_values() -> None:
    assert parse_focus("extra=compare_fact, compare_fact_rev;relation=catalog") == {
        "extra": {"compare_fact", "compare_fact_rev"}, "relation": {"catalog"}}
    assert parse_focus(None) == {} and parse_focus("") == {}
    with pytest.raises(ValueError, match="bogus"):
        parse_focus("bogus=1")
    with pytest.raises(ValueError, match="'compare_facts'"):
        parse_focus("extra=compare_facts")
    with pytest.raises(ValueError, match="FIELD=VALUE"):
        parse_focus("extra")
