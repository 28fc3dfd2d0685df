"""The fuzzer's command: a session (classic; a client of a ``dpp connect-server`` it starts;
or a classic session without the optimizer hook, whose ``spark.sql`` takes the SQL-text
analysis), cases drawn from the seed until the time is up, mismatches shrunk and written
out.

The last line printed is ``fuzz: <N> cases, <W> mismatches, <P> pruned``; the exit status is
1 on any mismatch, 2 when no case could run at all.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

from hive_splits.loader import DROP_KEPT_SWITCH
from tests.fuzz.generate import draw_case
from tests.fuzz.model import DIM_FILTERS, EXTRAS, JOIN_SHAPES, KEYS, RELATIONS, STEPS, Case
from tests.fuzz.runner import Backend, Result, _summary, bounded

# The Python that runs the fuzzer is the one Spark's workers must use (a plain `python -m`).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


@dataclass
class Tally:
    cases: int = 0
    mismatches: int = 0
    pruned: int = 0
    bounded: int = 0               # cases a bound from file statistics served
    both_raised: int = 0
    data_errors: int = 0
    harness_errors: int = 0
    pruned_mismatched: int = 0     # pruned cases that also mismatched (the self-test's catch)
    by_relation: dict = field(default_factory=dict)   # relation kind -> [cases, pruned]
    mutated: int = 0               # pruned cases where the self-test's switch dropped one
    mutated_mismatched: int = 0
    found: list = field(default_factory=list)   # (case, why, regression path)

    def line(self) -> str:
        return f"fuzz: {self.cases} cases, {self.mismatches} mismatches, {self.pruned} pruned"


def classic_session(workdir: Path) -> Any:
    """A local[2] SparkSession with Hive support (Derby in ``workdir``), as the tests use."""
    from pyspark.sql import SparkSession

    return (SparkSession.builder.master("local[2]").appName("dpp-fuzz")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "4")
            .config("spark.default.parallelism", "4")
            .config("spark.sql.warehouse.dir", str(workdir / "warehouse"))
            .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={workdir}")
            .config("spark.hadoop.javax.jdo.option.ConnectionURL",
                    f"jdbc:derby:;databaseName={workdir / 'metastore_db'};create=true")
            .config("spark.driver.memory", "2g")
            .enableHiveSupport().getOrCreate())


@contextlib.contextmanager
def backend(kind: str, workdir: Path) -> Iterator[Backend]:
    if kind == "connect":
        from tests.fuzz.connect import connect_backend

        with connect_backend(workdir) as b:
            yield b
        return
    from tests.fuzz.check import classic_backend, sql_text_backend

    spark = classic_session(workdir)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        with (sql_text_backend if kind == "sqltext" else classic_backend)(spark, workdir) as b:
            yield b
    finally:
        spark.stop()


# what ``--focus`` may name: a field of the case's query, its fact's relation kind, its step
_FOCUS_VALUES: dict[str, tuple[str, ...]] = {
    "api": ("sql", "df"), "shape": JOIN_SHAPES, "key": KEYS, "dim_filter": DIM_FILTERS,
    "extra": EXTRAS, "relation": RELATIONS, "step": STEPS}
FOCUS_FIELDS = tuple(_FOCUS_VALUES)


def parse_focus(text: Optional[str]) -> dict[str, set[str]]:
    """``--focus extra=compare_fact,compare_fact_rev;relation=catalog``: the cases drawn are
    kept only where each named field has one of the values (the rest of the draw is as
    ever), to search around a shape a bug was found in."""
    focus: dict[str, set[str]] = {}
    for part in filter(None, (p.strip() for p in (text or "").split(";"))):
        name, sep, values = part.partition("=")
        name = name.strip()
        if not sep or name not in FOCUS_FIELDS or not values.strip():
            raise ValueError(f"--focus {part!r}: expected FIELD=VALUE[,VALUE...] with FIELD "
                             f"one of {', '.join(FOCUS_FIELDS)}")
        chosen = {v.strip() for v in values.split(",") if v.strip()}
        unknown = sorted(chosen - set(_FOCUS_VALUES[name]))
        if unknown:
            raise ValueError(f"--focus {name}: {', '.join(map(repr, unknown))} is not one of "
                             f"{', '.join(_FOCUS_VALUES[name])}")
        focus[name] = chosen
    return focus


def _in_focus(case: Case, focus: dict[str, set[str]]) -> bool:
    for name, values in focus.items():
        have = (case.fact.relation if name == "relation" else case.step if name == "step"
                else getattr(case.query, name))
        if str(have) not in values:
            return False
    return True


def fuzz(b: Backend, seed: int, seconds: float, workdir: Path, *, shrink_s: float = 180.0,
         regressions: Optional[Path] = None, max_cases: Optional[int] = None,
         out: Any = sys.stdout, verbose: bool = False,
         focus: Optional[dict[str, set[str]]] = None) -> Tally:
    """Cases from ``seed`` until ``seconds`` are up (only those in ``focus``, see
    :func:`parse_focus`); returns the tally."""
    from tests.fuzz.check import run_case
    from tests.fuzz.shrink import shrink, write_regression

    rng = random.Random(seed)
    tally = Tally()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and (max_cases is None or tally.cases < max_cases):
        case = draw_case(rng, seed)
        if not b.supports(case) or (focus and not _in_focus(case, focus)):
            continue
        try:
            res = run_case(b, case, workdir)
        except Exception as exc:   # the harness's own trouble (a table it could not make)
            tally.harness_errors += 1
            print(f"harness error ({type(exc).__name__}: {str(exc)[:200]}) {case.label()}",
                  file=out, flush=True)
            continue
        tally.cases += 1
        tally.pruned += res.pruned
        tally.bounded += bounded(res.reports)
        if verbose:
            print(f"case {tally.cases}: {'pruned' if res.pruned else 'unpruned'}"
                  f"{' mutated' if res.mutated else ''}"
                  f"{' MISMATCH' if res.mismatch else ''} {case.label()} "
                  f"[{_summary(res.reports)}]", file=out, flush=True)
        if res.pruned and res.mutated:
            tally.mutated += 1
            tally.mutated_mismatched += res.mismatch is not None
        kind = tally.by_relation.setdefault(case.fact.relation, [0, 0])
        kind[0] += 1
        kind[1] += res.pruned
        tally.both_raised += res.errors
        tally.data_errors += res.data_errors
        if res.mismatch is None:
            continue
        tally.mismatches += 1
        tally.pruned_mismatched += res.pruned
        print(f"MISMATCH {case.label()}\n    {res.mismatch}\n    case: {case.to_json()}",
              file=out, flush=True)
        if shrink_s > 0:
            def fails(c: Case) -> bool:
                try:
                    return run_case(b, c, workdir).mismatch is not None
                except Exception:
                    return False
            small = shrink(case, fails, shrink_s)
            again = run_case(b, small, workdir)
            why = again.mismatch or res.mismatch
            path = write_regression(small, why, regressions, getattr(b, "name", "classic"))
            print(f"  shrunk to {small.label()}\n    {why}\n  written: {path}",
                  file=out, flush=True)
            tally.found.append((small, why, path))
    return tally


@dataclass
class SelfTest:
    pruned: int = 0        # cases dpp pruned (run without the switch), and that agreed
    acted: int = 0         # ... of which the switch then dropped a kept partition (one that
    #                        holds rows: a case that kept none gives the mutation nothing to drop)
    caught: int = 0        # ... of which the fuzzer then reported a mismatch (all acted)

    def line(self) -> str:
        def pct(n: int, d: int) -> str:
            return f"{n / d:.0%}" if d else "-"
        return (f"self-test: {self.caught} of {self.acted} pruned cases whose kept partitions "
                f"hold rows caught ({pct(self.caught, self.acted)}); "
                f"{self.caught} of all {self.pruned} pruned cases ({pct(self.caught, self.pruned)}"
                f"; the other {self.pruned - self.acted} kept no partition holding rows, "
                f"nothing to drop)")


def self_test(b: Backend, seed: int, cases: int, workdir: Path, out: Any = sys.stdout,
              seconds: float = 1800.0) -> SelfTest:
    """Each case drawn from ``seed`` runs as usual; one dpp pruned (and got right) runs again
    with :data:`DROP_KEPT_SWITCH` set — every split load then drops one partition it kept —
    and must now mismatch. Classic sessions only (the switch is read in this process)."""
    from hive_splits import loader
    from tests.fuzz.check import run_case

    rng = random.Random(seed)
    st = SelfTest()
    deadline = time.monotonic() + seconds
    drawn = 0
    while drawn < cases and time.monotonic() < deadline:
        case = draw_case(rng, seed)
        if not b.supports(case):
            continue
        drawn += 1
        try:
            clean = run_case(b, case, workdir)
        except Exception:
            continue
        if not clean.pruned or clean.mismatch is not None:
            continue
        os.environ[DROP_KEPT_SWITCH] = "1"
        before = loader.dropped_by_switch
        try:
            bad = run_case(b, case, workdir)
        except Exception:
            continue
        finally:
            del os.environ[DROP_KEPT_SWITCH]
        st.pruned += 1
        st.acted += loader.dropped_by_switch > before
        st.caught += bad.mismatch is not None
        if bad.mismatch is None:
            print(f"not caught: {case.label()} [{_summary(bad.reports)}]", file=out, flush=True)
    return st


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--backend", choices=("classic", "connect", "sqltext"), default="classic",
                    help="classic: the optimizer hook; connect: Connect clients of dpp "
                         "connect-server; sqltext: the SQL-text analysis (a classic session "
                         "enabled without the hook; SQL cases only)")
    ap.add_argument("--shrink-seconds", type=float, default=180.0)
    ap.add_argument("--regressions", type=Path, default=None,
                    help="where shrunk cases are written as tests (tests/fuzz_regressions)")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--verbose", action="store_true", help="a line per case")
    ap.add_argument("--focus", default=None, metavar="FIELD=V[,V];...",
                    help="only cases with these values, e.g. "
                         "'extra=compare_fact,compare_fact_rev;relation=catalog' (fields: "
                         + ", ".join(FOCUS_FIELDS) + ")")
    ap.add_argument("--self-test", type=int, default=0, metavar="CASES",
                    help=f"instead of fuzzing: draw CASES cases and rerun each pruned one with "
                         f"{DROP_KEPT_SWITCH}=1, which must then mismatch")
    a = ap.parse_args(argv)
    try:
        focus = parse_focus(a.focus)
    except ValueError as exc:
        ap.error(str(exc))
    workdir = a.workdir or Path(tempfile.mkdtemp(prefix="dpp-fuzz-"))
    workdir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    if a.self_test:
        try:
            with backend("classic", workdir) as b:
                st = self_test(b, a.seed, a.self_test, workdir)
        finally:
            if a.workdir is None:
                shutil.rmtree(workdir, ignore_errors=True)
        print(st.line())
        return 0 if st.acted and st.caught >= 0.9 * st.acted else 1
    try:
        with backend(a.backend, workdir) as b:
            tally = fuzz(b, a.seed, a.minutes * 60.0 - (time.monotonic() - start), workdir,
                         shrink_s=a.shrink_seconds, regressions=a.regressions,
                         verbose=a.verbose, focus=focus)
    finally:
        if a.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"backend {a.backend}, seed {a.seed}: {tally.both_raised} runs raised on both "
          f"sides (agreeing), {tally.data_errors} where only Spark met a bad value, "
          f"{tally.harness_errors} cases the harness could not set up")
    print("by relation (cases/pruned): " + ", ".join(
        f"{k} {n}/{p}" for k, (n, p) in sorted(tally.by_relation.items()))
        + f"; bounded by file statistics: {tally.bounded}"
        + f"; pruned cases that mismatched: {tally.pruned_mismatched}"
        + (f"; with a partition dropped by {DROP_KEPT_SWITCH}: {tally.mutated}, of which "
           f"{tally.mutated_mismatched} mismatched" if os.environ.get(DROP_KEPT_SWITCH) else ""))
    print(tally.line())
    if tally.mismatches:
        return 1
    return 2 if tally.cases == 0 else 0
