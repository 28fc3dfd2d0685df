"""Shrinking a failing case and writing it out as a pytest regression test.

Greedy: each candidate is the case with one thing made simpler (a step, a setting, a query
clause, a partition, a level, a dimension row removed...); the first candidate that still
fails replaces the case, until none does or the time is up. The result is usually a fact of
two or three partitions and one plain query, which is what a developer wants to read.
"""
from __future__ import annotations

import copy
import dataclasses
import hashlib
import pprint
import textwrap
import time
from pathlib import Path
from typing import Callable, Iterator, Optional

from tests.fuzz.model import Case

REGRESSIONS = Path(__file__).resolve().parent.parent / "fuzz_regressions"


def _without_leaf(c: Case, i: int) -> Case:
    c = copy.deepcopy(c)
    f = c.fact
    del f.partitions[i]
    del f.files[i]
    f.evolved = [k - (k > i) for k in f.evolved if k != i]
    f.placed = [k - (k > i) for k in f.placed if k != i]
    return c


def _without_key(c: Case, i: int) -> Case:
    c = copy.deepcopy(c)
    d = c.dim
    del d.keys[i]
    del d.attrs[i]
    if i < len(d.keys2):
        del d.keys2[i]
    return c


def candidates(case: Case) -> Iterator[Case]:
    def changed(fn: Callable[[Case], None]) -> Case:
        c = copy.deepcopy(case)
        fn(c)
        return c

    if case.step:
        yield changed(lambda c: setattr(c, "step", None))
    for k in sorted(case.settings):
        yield changed(lambda c, k=k: c.settings.pop(k))
    q = case.query
    for attr, simple in (("extra", "none"), ("api", "sql"), ("dim_filter", "none"),
                         ("dim_filter", "lt"), ("shape", "inner"), ("key", "eq"),
                         ("lower_names", False)):
        if getattr(q, attr) != simple:
            yield changed(lambda c, a=attr, v=simple: setattr(c.query, a, v))
    f = case.fact
    if len(f.cols) > 1 and case.query.key != "two_level":
        def drop_level(c: Case) -> None:
            c.fact.cols.pop()
            seen: list = []
            keep = []
            for i, lf in enumerate(c.fact.partitions):
                if lf[:-1] not in seen:
                    seen.append(lf[:-1])
                    keep.append(i)
            c.fact.partitions = [c.fact.partitions[i][:-1] for i in keep]
            c.fact.files = [c.fact.files[i] for i in keep]
            c.fact.evolved = [keep.index(i) for i in c.fact.evolved if i in keep]
            c.fact.placed = [keep.index(i) for i in c.fact.placed if i in keep]
        yield changed(drop_level)
    for i in range(len(f.partitions) - 1, -1, -1):
        if len(f.partitions) > 1:
            yield _without_leaf(case, i)
    for attr, simple in (("leftovers", False), ("evolved", []), ("placed", []),
                         ("col_in_file", False), ("aged", False), ("rows_per_file", 1)):
        if getattr(f, attr) != simple:
            yield changed(lambda c, a=attr, v=simple: setattr(c.fact, a, v))
    if any(n > 1 for n in f.files):
        yield changed(lambda c: setattr(c.fact, "files", [min(n, 1) for n in c.fact.files]))
    for i in range(len(case.dim.keys) - 1, -1, -1):
        yield _without_key(case, i)


def shrink(case: Case, fails: Callable[[Case], bool], budget_s: float) -> Case:
    deadline = time.monotonic() + budget_s
    progress = True
    while progress and time.monotonic() < deadline:
        progress = False
        for c in candidates(case):
            if time.monotonic() >= deadline:
                break
            if fails(c):
                case, progress = c, True
                break
    return case


TEMPLATE = '''"""A case the differential fuzzer found (``python -m tests.fuzz``), shrunk: {label}.

{why}
"""
from tests.fuzz.check import assert_same_rows

CASE = {case}


def test_{name}(spark, tmp_path):
    assert_same_rows(spark, tmp_path, CASE{backend})
'''


def write_regression(case: Case, why: str, folder: Optional[Path] = None,
                     backend: str = "classic") -> Path:
    """A test replaying ``case`` on the session road it was found on (``sqltext``: a session
    without the optimizer hook; a Connect case replays on a classic session)."""
    folder = folder or REGRESSIONS
    folder.mkdir(parents=True, exist_ok=True)
    init = folder / "__init__.py"
    if not init.exists():
        init.write_text('"""Regression tests the differential fuzzer wrote (tests/fuzz)."""\n')
    text = case.to_json()
    name = ("fz_sqltext_" if backend == "sqltext" else "fz_") + \
        hashlib.sha256(text.encode()).hexdigest()[:10]
    path = folder / f"test_{name}.py"
    why_text = "\n".join(textwrap.fill(line.strip(), 96, subsequent_indent="    ")
                         for line in why.splitlines())
    literal = pprint.pformat(dataclasses.asdict(case), width=92, sort_dicts=True)
    label = textwrap.fill(case.label(), 80)
    path.write_text(TEMPLATE.format(label=label, why=why_text, case=literal, name=name,
                                    backend=', backend="sqltext"' if backend == "sqltext"
                                    else ""))
    return path
