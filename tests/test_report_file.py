"""The report schema round trip, safe appends, the ``dpp report`` summary and HTML page."""
from __future__ import annotations

import html.parser
import json
import multiprocessing
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from dpp.core.refusals import Code, Refusal
from dpp.runtime.report import FilterReport, JobReport, ReportError, TableReport, append_jsonl, read_jsonl


def _report(i: int, kept: int = 7, total: int = 40) -> JobReport:
    r = JobReport.start(query_text=f"SELECT {i}", kind="sql", settings={"spark.dpp.enabled": True},
                        enabled=True)
    r.tables.append(TableReport(table="store_sales", pruning="applied", partitions_total=total,
                                partitions_kept=kept, pruned_dynamic=total - kept,
                                bytes_skipped=3 * 1024 ** 3 // 2))
    r.filters.append(FilterReport(filter_id=f"q{i}-f1", build_column="date_dim.d_date_sk",
                                  kind="values", distinct_values=kept, outcome="complete",
                                  build_seconds=0.44))
    r.phases.update(analysis=0.01, build=0.44, total=1.5)
    return r


def test_round_trip():
    r = _report(1)
    assert JobReport.from_dict(json.loads(r.to_json())) == r


@pytest.mark.parametrize("field,value", [("schema_version", 3), ("enabled", "yes"),
                                         ("settings", []), ("query_id", 5)])
def test_from_dict_names_the_bad_field(field, value):
    d = _report(1).to_dict()
    d[field] = value
    with pytest.raises(ReportError, match=field):
        JobReport.from_dict(d)


def test_from_dict_rejects_unknown_outcome():
    d = _report(1).to_dict()
    d["filters"][0]["outcome"] = "maybe"
    with pytest.raises(ReportError, match=r"filters\[0\]\.outcome"):
        JobReport.from_dict(d)


def test_summary_line_exact():
    assert _report(1).summary_line() == ("dpp: store_sales kept 7/40 partitions (82% pruned), "
                                         "1.5 GiB skipped; date_dim.d_date_sk values(7) in 0.4 s")
    r = JobReport.start(query_text="SELECT 1", kind="sql", settings={}, enabled=True)
    r.add_table_unpruned("store_sales", None, Refusal(Code.PRESERVED_SIDE))
    assert r.summary_line() == ("dpp: no pruning (store_sales: preserved side of an outer join, "
                                "and no other usable predicate)")
    assert r.tables[0].reason_code == "preserved-side"


def _append_many(path: str, n: int, offset: int) -> None:
    for i in range(n):
        append_jsonl(_report(offset + i), path)


def test_appends_from_threads_and_processes_never_interleave(tmp_path: Path):
    path = str(tmp_path / "r.jsonl")
    threads = [threading.Thread(target=_append_many, args=(path, 50, t * 1000))
               for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_many, args=(path, 50, 100_000 + p * 1000))
             for p in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
        assert p.exitcode == 0
    reports = read_jsonl(path)
    assert len(reports) == 8 * 50 + 4 * 50
    assert len({r.query_id for r in reports}) == len(reports)


def test_read_jsonl_names_the_bad_line(tmp_path: Path):
    path = tmp_path / "r.jsonl"
    append_jsonl(_report(1), path)
    with open(path, "a") as fh:
        fh.write("{not json\n")
    with pytest.raises(ReportError, match=r"r.jsonl:2"):
        read_jsonl(path)


class _Collect(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.imgs = 0
        self.text: list[str] = []
        self.ids: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.imgs += 1
            assert a["src"].startswith("data:image/png;base64,")
        if a.get("id", "").startswith("job-"):  # one container per job, named by its id
            self.ids.append(a["id"])

    def handle_data(self, data):
        self.text.append(data)


def test_cli_summary_and_html(tmp_path: Path):
    path = tmp_path / "r.jsonl"
    reports = [_report(i, kept=i + 1) for i in range(3)]
    for r in reports:
        append_jsonl(r, path)
    out = tmp_path / "page" / "jobs.html"
    proc = subprocess.run([sys.executable, "-m", "dpp.cli", "report", str(path), "--html",
                           str(out)], capture_output=True, text=True, check=True)
    lines = proc.stdout.strip().splitlines()
    body = [ln for ln in lines if ln.startswith(tuple(r.query_text for r in reports))]
    assert len(body) == 3
    assert lines[-1].startswith("TOTAL") and "6/120" in lines[-1]
    p = _Collect()
    p.feed(out.read_text())
    text = " ".join(p.text)
    assert p.imgs == 3
    assert p.ids == [f"job-{r.query_id}" for r in reports]
    for r in reports:
        assert r.query_hash in text and r.query_id in text


def test_cli_bad_file_is_a_clear_error(tmp_path: Path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"schema_version": 1}\n')
    proc = subprocess.run([sys.executable, "-m", "dpp.cli", "report", str(bad)],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "bad.jsonl:1" in proc.stderr and "query_id" in proc.stderr
