"""Running cases on a session a test (or the fuzzer's command) already has."""
from __future__ import annotations

import contextlib
import itertools
import json
from pathlib import Path
from typing import Any, Iterator, Union

from tests.fuzz.model import Case
from tests.fuzz.runner import Backend, CaseRun, Result

_COUNTER = itertools.count()


@contextlib.contextmanager
def classic_backend(spark: Any, workdir: Path) -> Iterator[Backend]:
    """``dpp.enable`` on ``spark`` (undone after, if this enabled it) with a report file."""
    import dpp
    from dpp.enable import session_of

    was_enabled = session_of(spark) is not None
    report = workdir / "reports.jsonl"
    old = spark.conf.get("spark.dpp.report.path", None)
    spark.conf.set("spark.dpp.report.path", str(report))
    dpp.enable(spark)
    try:
        yield Backend(spark, report)
    finally:
        if not was_enabled:
            dpp.disable(spark)
        if old is None:
            spark.conf.unset("spark.dpp.report.path")
        else:
            spark.conf.set("spark.dpp.report.path", old)


class SqlTextBackend(Backend):
    """A classic session enabled without the optimizer hook: every ``spark.sql`` query takes
    the SQL-text analysis (the path a session without the hook's jar, and a Spark Connect
    client of a plain server, take). Only cases written as SQL exercise it."""

    name = "sqltext"

    def supports(self, case: Case) -> bool:
        return case.query.api == "sql"


@contextlib.contextmanager
def sql_text_backend(spark: Any, workdir: Path) -> Iterator[Backend]:
    """``dpp.enable`` on ``spark`` with ``spark.dpp.optimizerHook=false`` (a session enabled
    with the hook is disabled for the while, and enabled again after, as it was)."""
    import dpp
    from dpp.enable import session_of

    was_enabled = session_of(spark) is not None
    if was_enabled:
        dpp.disable(spark)
    saved = {k: spark.conf.get(k, None) for k in ("spark.dpp.report.path",
                                                   "spark.dpp.optimizerHook")}
    spark.conf.set("spark.dpp.report.path", str(workdir / "reports.jsonl"))
    spark.conf.set("spark.dpp.optimizerHook", "false")
    dpp.enable(spark)
    try:
        assert session_of(spark).optimizer_hook is None   # type: ignore[union-attr]
        yield SqlTextBackend(spark, workdir / "reports.jsonl")
    finally:
        dpp.disable(spark)
        for k, v in saved.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)
        if was_enabled:
            dpp.enable(spark)


def run_case(backend: Backend, case: Case, workdir: Path) -> Result:
    n = next(_COUNTER)
    return CaseRun(backend, case, workdir / f"case-{n}", n).run()


def assert_same_rows(spark: Any, tmp_path: Path, case: Union[str, dict, Case],
                     backend: str = "classic") -> None:
    """A regression test's body: the case gives Spark's rows through dpp (``sqltext``: on a
    session without the optimizer hook, the SQL-text analysis)."""
    if isinstance(case, dict):
        case = json.dumps(case)
    c = Case.from_json(case) if isinstance(case, str) else case
    road = sql_text_backend if backend == "sqltext" else classic_backend
    with road(spark, tmp_path) as b:
        res = run_case(b, c, tmp_path)
    assert res.mismatch is None, f"{c.label()}\n{res.mismatch}"
