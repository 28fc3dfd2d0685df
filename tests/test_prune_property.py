"""Property: dynamic partition pruning never drops (or adds) a row.

For random tables partitioned by ONE column of each supported type (int, bigint, smallint,
decimal(p,s), double, string, date, timestamp, boolean) — with NULL, type extremes, -0.0, NaN,
unicode and folder-escaped strings (``/ : % = #``), DST instants of America/Los_Angeles — and
random build sides (a dimension key of the same or a comparable type, with a random filter,
joined by ``f.p = d.k`` in one of nine SQL shapes: inner joins, IN / EXISTS / LEFT SEMI, and
outer joins with the fact on the null-supplying side; a third of the examples also carry a
literal filter on ``f.p``, i.e. static pruning), ``DppSession.sql(q)`` returns exactly the rows
of ``spark.sql(q)`` run with every pruning off over ``spark.read.schema(...).parquet(path)``
views (the declared partition type, as ``partition_types`` gives it to dpp), under the session
time zones UTC, America/Los_Angeles and Asia/Kolkata, with ``spark.dpp.maxDistinctValues``
small (the domain collapses to a range or a bloom filter) or large, blooms on or off. Where
dpp raises and Spark does not, that is a failure too. See ``tests/prune_property_support.py``
for the generator, the batching (one Spark write per fact type and one ``UNION ALL`` query per
time zone and batch, each branch tagged with its example) and the reproducer.

Profiles (``DPP_PROPERTY_PROFILE``):

* ``default``: hypothesis batches of 26 examples per type, derandomized (the same examples
  every run; hypothesis's first batch is its simplest example repeated): 2 batches under
  ``make test`` (27 distinct examples per type, at least 25 asserted; about 1 minute for the
  module on two cores), 3 under ``make test-all`` (``DPP_ALL_VARIANTS=1``, ``tests/budget.py``:
  53 distinct, at least 50 asserted). The test also asserts all three time zones.
* ``deep``: 12 batches of 30 per type (~330 distinct examples per type), random seeds (pass
  ``--hypothesis-seed=N`` to repeat a run). About 25 minutes on two cores.

``DPP_PROPERTY_KEEP_GOING=1`` runs every batch even after a failure and reports all failures
at the end (for triage). Hypothesis's database is off and its own shrinking is disabled (each
step would be a Spark batch): a failing batch is instead narrowed to the failing example(s)
(bisection when the whole query raised), each re-run alone and shrunk greedily within
``DPP_PROPERTY_SHRINK_SECONDS`` (default 90), and the message ends with a command that re-runs
the minimal example on its own::

    python -m tests.prune_property_support '<json>'
"""
from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from tests.budget import ALL_VARIANTS
from tests.prune_property_support import (KINDS, TIME_ZONES, Batch, dedupe, failure_report,
                                          run_batch, strategies)

PROFILE = os.environ.get("DPP_PROPERTY_PROFILE", "default").strip().lower() or "default"
_PROFILES = {
    #            batches, examples per batch, per-type timeout (s)
    "default": dict(batches=3 if ALL_VARIANTS else 2, size=26, timeout=600, derandomize=True),
    "deep": dict(batches=12, size=30, timeout=3600, derandomize=False),
}
if PROFILE not in _PROFILES:
    raise pytest.UsageError(f"DPP_PROPERTY_PROFILE={PROFILE!r}: expected one of {sorted(_PROFILES)}")
P = _PROFILES[PROFILE]
# the first batch is one example: the later ones each add about ``size`` distinct ones
MIN_EXAMPLES_PER_TYPE = 50 if PROFILE != "default" or P["batches"] > 2 else 25
KEEP_GOING = os.environ.get("DPP_PROPERTY_KEEP_GOING", "") not in ("", "0", "false")
SHRINK_SECONDS = float(os.environ.get("DPP_PROPERTY_SHRINK_SECONDS", "90"))

for _name, _p in _PROFILES.items():
    settings.register_profile(
        f"dpp-property-{_name}", max_examples=_p["batches"], deadline=None, database=None,
        derandomize=_p["derandomize"], print_blob=not _p["derandomize"],
        phases=[Phase.explicit, Phase.generate],          # no shrinking: see the docstring
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                               HealthCheck.large_base_example, HealthCheck.filter_too_much])


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("prune_property")


class Stats:
    def __init__(self) -> None:
        self.examples = 0
        self.batches = 0
        self.by_tz: Counter = Counter()
        self.shapes: Counter = Counter()
        self.dim_types: Counter = Counter()
        self.filter_kinds: Counter = Counter()
        self.pruned = 0
        self.static = 0
        self.settings: Counter = Counter()
        self.seconds = 0.0
        self.phases: Counter = Counter()

    def add(self, results: list) -> None:
        self.batches += 1
        for g in results:
            self.seconds += g.seconds
            self.phases.update(g.phases)
            self.settings[(g.settings.max_distinct, g.settings.bloom)] += len(g.outcomes)
            for o in g.outcomes:
                self.examples += 1
                self.by_tz[o.example.tz] += 1
                self.shapes[o.example.shape] += 1
                self.dim_types["same" if o.example.dim_type == o.example.fact_type
                               else o.example.dim_type] += 1
                self.pruned += o.pruned
                self.static += bool(o.example.fact_filters)
                for f in o.filters:
                    self.filter_kinds[f"{f.get('kind')}/{f.get('outcome')}"] += 1

    def line(self, kind: str) -> str:
        return (f"[prune-property:{PROFILE}] {kind}: {self.examples} examples in "
                f"{self.batches} batches, {self.seconds:.0f} s of Spark "
                f"({', '.join(f'{k} {v:.0f} s' for k, v in self.phases.items())}); time zones "
                f"{dict(self.by_tz)}; partitions pruned in {self.pruned} (with a fact-side literal "
                f"filter: {self.static}); dim key types "
                f"{dict(self.dim_types)}; filters {dict(self.filter_kinds)}; "
                f"(maxDistinct, bloom) {dict(self.settings)}")


@pytest.mark.timeout(P["timeout"] * (3 if KEEP_GOING else 1))
@pytest.mark.parametrize("kind", KINDS)
def test_pruning_never_drops_a_row(spark: Any, workdir: Path, kind: str,
                                   capsys: pytest.CaptureFixture) -> None:
    stats = Stats()
    failures: dict[str, str] = {}        # batch → message: hypothesis replays a failure once
    collected: list[str] = []
    batch_strategy = strategies()(kind, P["size"])

    @settings(parent=settings.get_profile(f"dpp-property-{PROFILE}"))
    @given(batch=batch_strategy)
    def prop(batch: Batch) -> None:
        batch = dedupe(batch)
        key = "\n".join(e.key() for e in batch.examples) + repr(batch.settings)
        if key in failures:
            raise AssertionError(failures[key])
        results = run_batch(spark, workdir, batch)
        stats.add(results)
        if any(o.failed for g in results for o in g.outcomes):
            msg = failure_report(spark, workdir, batch, results, SHRINK_SECONDS)
            failures[key] = msg
            if KEEP_GOING:
                collected.append(msg)
                return
            raise AssertionError(msg)

    try:
        prop()
    finally:
        with capsys.disabled():
            print("\n" + stats.line(kind))
    if collected:
        raise AssertionError(f"{len(collected)} failing batch(es) of {kind}:\n\n" +
                             "\n\n".join(collected))
    assert stats.examples >= MIN_EXAMPLES_PER_TYPE, (
        f"only {stats.examples} distinct {kind} examples ran; the {PROFILE} profile must run "
        f"at least {MIN_EXAMPLES_PER_TYPE}")
    assert set(stats.by_tz) == set(TIME_ZONES), f"time zones not all covered: {stats.by_tz}"


def test_reproducer_json_round_trips() -> None:
    """The JSON a failure prints re-creates exactly the example (values of every type)."""
    from hypothesis import strategies as st

    from tests.prune_property_support import Example, Settings

    @settings(max_examples=30, deadline=None, database=None, derandomize=True)
    @given(batch=st.sampled_from(KINDS).flatmap(lambda k: strategies()(k, 3)))
    def prop(batch: Batch) -> None:
        for ex in batch.examples:
            for st_ in (None, Settings(2, False, 0.3)):
                back, bst = Example.from_json(ex.to_json(st_))
                assert back.to_json(bst) == ex.to_json(st_)
                assert bst == st_

    prop()
