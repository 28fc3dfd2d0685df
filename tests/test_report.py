"""The job report layer: schema round trip and validation, summary lines, safe appends from
threads and processes, and the ``dpp report`` command (text table and HTML page).

No Spark here: reports are built by hand, so every expected number is known exactly.
"""
from __future__ import annotations

import base64
import copy
import hashlib
import html.parser
import json
import logging
import multiprocessing
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpp.runtime.report import (FILTER_KINDS, FILTER_OUTCOMES, QUERY_TEXT_LIMIT, SCHEMA_VERSION,
                        FilterReport, JobReport, ReportError, TableReport, append_jsonl,
                        human_bytes, log_report, read_jsonl)
from dpp.report_cli import main as report_main
from dpp.runtime.report_summary import QUERY_WIDTH, query_label

GiB = 1024 ** 3


# ---------------------------------------------------------------------------- builders
def star_report(i: int = 0, kept: int = 366, total: int = 1824,
                skipped: int = 1288490189, text: str | None = None) -> JobReport:
    """The design's example: store_sales pruned by a date_dim values filter."""
    r = JobReport.start(query_text=text if text is not None else f"SELECT {i} FROM store_sales",
                        kind="sql", settings={"spark.dpp.enabled": True,
                                              "spark.dpp.waitTimeout": 30.0},
                        enabled=True)
    r.tables.append(TableReport(
        table="store_sales", alias="ss", location="/data/store_sales", pruning="applied",
        partitions_total=total, partitions_kept=kept, pruned_dynamic=total - kept,
        folders_listed=kept + 1, files_listed=5 * kept, files_kept=5 * kept,
        bytes_kept=10 * GiB, bytes_skipped=skipped, wait_seconds=0.1,
        filters=[{"filter_id": f"q{i}-f1", "arrived": True, "outcome": "complete",
                  "reason": None}]))
    r.filters.append(FilterReport(
        filter_id=f"q{i}-f1", build_table="date_dim", build_column="d_date_sk",
        probe_table="store_sales", probe_column="ss_sold_date_sk",
        build_query="SELECT d_date_sk FROM date_dim WHERE d_year = 2000", build_rows=kept,
        distinct_values=kept, kind="values", encoded_bytes=1500, parts_expected=2,
        parts_reported=2, outcome="complete", build_seconds=0.41, wait_seconds=0.1))
    r.phases.update(analysis=0.01, build=0.41, wait=0.1, split_enumeration=0.2,
                    execution=0.8, total=1.5)
    r.spark_scan = {"files_read": 5 * kept, "bytes_read": 10 * GiB, "partitions_read": kept}
    return r


def bare_report(**kw: Any) -> JobReport:
    r = JobReport.start(query_text="SELECT 1", kind="sql", settings={}, enabled=True)
    for k, v in kw.items():
        setattr(r, k, v)
    return r


# ---------------------------------------------------------------------------- round trip
def test_start_fills_identity_fields():
    text = "SELECT * FROM t WHERE x = '" + "y" * 5000 + "'"
    r = JobReport.start(query_text=text, kind="join", settings={}, enabled=False)
    assert len(r.query_id) == 32 and int(r.query_id, 16) >= 0
    assert r.query_hash == hashlib.sha256(text.encode()).hexdigest()[:16]  # of the whole text
    assert r.query_text == text[:QUERY_TEXT_LIMIT]
    assert r.started_at.endswith("+00:00")
    assert r.schema_version == SCHEMA_VERSION == 2
    assert r.spark_scan == {"files_read": None, "bytes_read": None, "partitions_read": None}
    assert JobReport.start("SELECT 1", "sql", {}, True).query_id != r.query_id


def test_round_trip_through_dict_and_json():
    r = star_report(1)
    assert JobReport.from_dict(r.to_dict()) == r
    assert JobReport.from_json(r.to_json()) == r
    assert json.loads(r.to_json()) == r.to_dict()
    assert "\n" not in bare_report(query_text="SELECT\n1", error="a\nb").to_json()


def test_to_dict_is_a_copy():
    r = star_report(1)
    d = r.to_dict()
    d["tables"][0]["partitions_kept"] = 0
    assert r.tables[0].partitions_kept == 366


def test_table_counter_is_named_files_pruned_stats():
    d = star_report(1).to_dict()
    assert "files_pruned_stats" in d["tables"][0]
    assert "pruned_stats" not in d["tables"][0]


def test_missing_optional_fields_take_defaults():
    full = star_report(1).to_dict()
    d = {k: full[k] for k in ("schema_version", "query_id", "query_hash", "query_text", "kind",
                              "started_at", "settings", "enabled")}
    d["tables"] = [{"table": "store_sales"}]
    d["filters"] = [{"filter_id": "f"}]
    r = JobReport.from_dict(d)
    assert r.phases == {} and r.analysis_notes == [] and r.error is None
    assert r.tables == [TableReport(table="store_sales")]
    assert r.filters == [FilterReport(filter_id="f")]
    assert r.spark_scan == {"files_read": None, "bytes_read": None, "partitions_read": None}


_names = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
_count = st.integers(0, 10 ** 12)
_secs = st.floats(0, 1e6, allow_nan=False, allow_infinity=False)


@st.composite
def _reports(draw: st.DrawFn) -> JobReport:
    r = JobReport.start(query_text=draw(st.text(max_size=50)),
                        kind=draw(st.sampled_from(["sql", "join"])),
                        settings=draw(st.dictionaries(
                            st.sampled_from(["spark.dpp.enabled", "spark.dpp.waitTimeout"]),
                            st.one_of(st.booleans(), st.integers(), _secs, _names, st.none()))),
                        enabled=draw(st.booleans()))
    r.phases = draw(st.dictionaries(st.sampled_from(["analysis", "build", "total"]), _secs))
    r.analysis_notes = draw(st.lists(_names, max_size=3))
    r.error = draw(st.one_of(st.none(), _names))
    for i in range(draw(st.integers(0, 3))):
        r.filters.append(FilterReport(
            filter_id=f"f{i}", build_table=draw(st.one_of(st.none(), _names)),
            build_column=draw(_names), distinct_values=draw(st.one_of(st.none(), _count)),
            kind=draw(st.sampled_from(FILTER_KINDS)),
            outcome=draw(st.sampled_from(FILTER_OUTCOMES)), cache_hit=draw(st.booleans()),
            build_seconds=draw(st.one_of(st.none(), _secs)),
            reason=draw(st.one_of(st.none(), _names))))
    for _ in range(draw(st.integers(0, 3))):
        total = draw(st.one_of(st.none(), st.integers(0, 5000)))
        kept = None if total is None else draw(st.integers(0, total))
        r.tables.append(TableReport(
            table=draw(_names), alias=draw(st.one_of(st.none(), _names)),
            pruning=draw(st.sampled_from(["applied", "none"])), partitions_total=total,
            partitions_kept=kept, bytes_skipped=draw(_count), files_pruned_stats=draw(_count),
            wait_seconds=draw(_secs),
            filters=[{"filter_id": "f0", "arrived": draw(st.booleans()), "outcome": "pending",
                      "reason": None}]))
    return r


@settings(max_examples=60, deadline=None)
@given(_reports())
def test_any_valid_report_round_trips_and_summarizes_on_one_line(r: JobReport):
    assert JobReport.from_json(r.to_json()) == r
    line = r.summary_line()
    assert line.startswith("dpp: ") and "\n" not in line


# ---------------------------------------------------------------------------- validation
def _set(d: dict[str, Any], path: str, value: Any) -> None:
    """``tables.0.filters.0.arrived`` → d["tables"][0]["filters"][0]["arrived"] = value."""
    keys: list[Any] = [int(k) if k.isdigit() else k for k in path.split(".")]
    for k in keys[:-1]:
        d = d[k]
    d[keys[-1]] = value


@pytest.mark.parametrize("path,value,named", [
    ("schema_version", 3, "schema_version"),
    ("schema_version", True, "schema_version"),
    ("query_id", 5, "query_id"),
    ("query_id", "not-a-uuid", "query_id"),
    ("query_hash", "ABC", "query_hash"),
    ("query_text", "x" * (QUERY_TEXT_LIMIT + 1), "query_text"),
    ("kind", "sql2", "kind"),
    ("started_at", "yesterday", "started_at"),
    ("started_at", "2024-01-01T00:00:00+02:00", "started_at"),
    ("settings", [], "settings"),
    ("settings", {"spark.sql.shuffle.partitions": 4}, "settings.spark.sql.shuffle.partitions"),
    ("enabled", "yes", "enabled"),
    ("phases", {"total": -1.0}, "phases.total"),
    ("phases", {"build": "1s"}, "phases.build"),
    ("analysis_notes", ["ok", 3], r"analysis_notes\[1\]"),
    ("error", 5, "error"),
    ("spark_scan", {"files_read": -1}, "spark_scan.files_read"),
    ("spark_scan", {"rows_read": 1}, "spark_scan.rows_read"),
    ("filters", {}, "filters"),
    ("filters.0.outcome", "maybe", r"filters\[0\]\.outcome"),
    ("filters.0.kind", "set", r"filters\[0\]\.kind"),
    ("filters.0.build_rows", True, r"filters\[0\]\.build_rows"),
    ("filters.0.distinct_values", 1.5, r"filters\[0\]\.distinct_values"),
    ("filters.0.cache_hit", "no", r"filters\[0\]\.cache_hit"),
    ("filters.0.build_seconds", "fast", r"filters\[0\]\.build_seconds"),
    ("filters.0.surprise", 1, r"filters\[0\]\.surprise"),
    ("tables.0.pruning", "some", r"tables\[0\]\.pruning"),
    ("tables.0.partitions_kept", -1, r"tables\[0\]\.partitions_kept"),
    ("tables.0.partitions_kept", 5000, r"tables\[0\]\.partitions_kept"),
    ("tables.0.bytes_skipped", None, r"tables\[0\]\.bytes_skipped"),
    ("tables.0.filters.0.arrived", "yes", r"tables\[0\]\.filters\[0\]\.arrived"),
    ("tables.0", "store_sales", r"tables\[0\]"),
])
def test_from_dict_rejects_bad_input_naming_the_field(path: str, value: Any, named: str):
    d = star_report(1).to_dict()
    _set(d, path, value)
    with pytest.raises(ReportError, match=named):
        JobReport.from_dict(d)


def test_pruned_stats_is_refused_with_the_right_name():
    d = star_report(1).to_dict()
    d["tables"][0]["pruned_stats"] = 3
    with pytest.raises(ReportError, match=r"tables\[0\]\.pruned_stats.*files_pruned_stats"):
        JobReport.from_dict(d)


@pytest.mark.parametrize("missing", ["schema_version", "query_id", "query_hash", "enabled"])
def test_from_dict_names_a_missing_field(missing: str):
    d = star_report(1).to_dict()
    del d[missing]
    with pytest.raises(ReportError, match=f"'{missing}' is missing"):
        JobReport.from_dict(d)


def test_from_dict_rejects_non_objects():
    for bad in ([], "report", None):
        with pytest.raises(ReportError, match="JSON object"):
            JobReport.from_dict(bad)
    with pytest.raises(ReportError, match="not JSON"):
        JobReport.from_json("{not json")


def test_report_error_is_a_value_error():
    with pytest.raises(ValueError):
        JobReport.from_dict({})


# ---------------------------------------------------------------------------- summary line
def test_summary_line_of_the_design_example():
    assert star_report(1).summary_line() == (
        "dpp: store_sales kept 366/1824 partitions (80% pruned), 1.2 GiB skipped; "
        "date_dim.d_date_sk values(366) in 0.4 s")


def test_summary_line_several_tables_and_filters():
    r = bare_report()
    r.tables = [
        TableReport(table="store_sales", pruning="applied", partitions_total=100,
                    partitions_kept=10, bytes_skipped=3 * 1024 ** 2),
        TableReport(table="store_returns", pruning="applied", partitions_total=1000,
                    partitions_kept=999),
        TableReport(table="catalog_sales", reason="preserved side of an outer join"),
    ]
    r.filters = [
        FilterReport(filter_id="a", build_column="date_dim.d_date_sk", kind="range",
                     outcome="complete", build_seconds=1.04),
        FilterReport(filter_id="b", build_table="item", build_column="i_item_sk",
                     outcome="timeout"),
        FilterReport(filter_id="c", build_table="customer", build_column="c_customer_sk",
                     kind="values", distinct_values=3, outcome="complete", build_seconds=0.01,
                     cache_hit=True),
    ]
    assert r.summary_line() == (
        "dpp: store_sales kept 10/100 partitions (90% pruned), 3.0 MiB skipped; "
        "store_returns kept 999/1000 partitions (0.1% pruned); "
        "date_dim.d_date_sk range in 1.0 s; item.i_item_sk timeout; "
        "customer.c_customer_sk values(3) in 0.0 s (cache hit)")


def test_summary_line_statistics_only_and_self_join():
    r = bare_report()
    r.tables = [
        TableReport(table="store_sales", alias="ss1", pruning="applied", partitions_total=5,
                    partitions_kept=5, files_pruned_stats=2, bytes_skipped=1536),
        TableReport(table="store_sales", alias="ss2", pruning="applied", partitions_total=5,
                    partitions_kept=1, files_pruned_stats=1),
    ]
    assert r.summary_line() == (
        "dpp: store_sales ss1 kept 5/5 partitions (0% pruned), 2 files skipped by statistics, "
        "1.5 KiB skipped; store_sales ss2 kept 1/5 partitions (80% pruned), "
        "1 file skipped by statistics")


@pytest.mark.parametrize("kw,expected", [
    ({"tables": [TableReport(table="store_sales", reason="preserved side of an outer join")]},
     "dpp: no pruning (store_sales: preserved side of an outer join)"),
    ({"enabled": False, "analysis_notes": ["spark.dpp.enabled=false: no pruning"]},
     "dpp: no pruning (spark.dpp.enabled=false)"),
    ({"analysis_notes": ["unparsable SQL: line 1"]}, "dpp: no pruning (unparsable SQL: line 1)"),
    ({}, "dpp: no pruning (no partitioned table in the query)"),
    ({"tables": [TableReport(table="web_sales", reason="f1: timeout\n(after 30 s)")],
      "error": "boom"},
     "dpp: no pruning (error: boom; web_sales: f1: timeout (after 30 s))"),
])
def test_summary_line_without_pruning_says_why(kw: dict[str, Any], expected: str):
    assert bare_report(**kw).summary_line() == expected


@pytest.mark.parametrize("n,expected", [(None, "?"), (0, "0 B"), (1023, "1023 B"),
                                        (1536, "1.5 KiB"), (3 * 1024 ** 2, "3.0 MiB"),
                                        (1288490189, "1.2 GiB"), (2 * 1024 ** 4, "2.0 TiB"),
                                        (5 * 1024 ** 5, "5.0 PiB")])
def test_human_bytes(n: Any, expected: str):
    assert human_bytes(n) == expected


def test_log_report_emits_the_summary_line_at_info(caplog: pytest.LogCaptureFixture):
    r = star_report(1)
    logger = logging.getLogger("dpp.test_report")
    with caplog.at_level(logging.INFO, logger="dpp.test_report"):
        log_report(r, logger)
    [rec] = [x for x in caplog.records if x.name == "dpp.test_report"]
    assert rec.levelno == logging.INFO and rec.getMessage() == r.summary_line()


# ---------------------------------------------------------------------------- JSON lines
# Long lines (> PIPE_BUF, 4 KiB) so that unlocked writers would be likely to interleave.
_LONG = "x" * 3500


def _append_many(path: str, writer: int, n: int) -> None:
    for i in range(n):
        append_jsonl(star_report(i, text=f"{writer}:{i}:{_LONG}"), path)


def _texts(path: Path) -> set[str]:
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""  # every line complete, ending with a newline
    for ln in lines[:-1]:
        JobReport.from_json(ln.decode())  # every line parses on its own
    return {r.query_text.rsplit(":", 1)[0] for r in read_jsonl(path)}


def test_append_from_8_threads_gives_400_whole_lines(tmp_path: Path):
    path = tmp_path / "new" / "folder" / "jobs.jsonl"  # parent folders are created
    threads = [threading.Thread(target=_append_many, args=(str(path), w, 50)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(path.read_bytes().splitlines()) == 8 * 50
    assert _texts(path) == {f"{w}:{i}" for w in range(8) for i in range(50)}


def test_append_from_4_processes_gives_200_whole_lines(tmp_path: Path):
    path = tmp_path / "jobs.jsonl"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_many, args=(str(path), w, 50)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    assert [p.exitcode for p in procs] == [0] * 4
    assert len(path.read_bytes().splitlines()) == 4 * 50
    assert _texts(path) == {f"{w}:{i}" for w in range(4) for i in range(50)}


def test_read_jsonl_keeps_order_and_skips_blank_lines(tmp_path: Path):
    path = tmp_path / "jobs.jsonl"
    reports = [star_report(i) for i in range(3)]
    append_jsonl(reports[0], path)
    with open(path, "a") as fh:
        fh.write("\n   \n")
    append_jsonl(reports[1], path)
    append_jsonl(reports[2], path)
    assert read_jsonl(path) == reports


@pytest.mark.parametrize("bad,named", [
    (b"{not json\n", "not JSON"),
    (b'{"schema_version": 1}\n', "query_id"),
    (b"\xff\xfe\n", "UTF-8"),
])
def test_read_jsonl_names_the_bad_line(tmp_path: Path, bad: bytes, named: str):
    path = tmp_path / "jobs.jsonl"
    append_jsonl(star_report(1), path)
    append_jsonl(star_report(2), path)
    with open(path, "ab") as fh:
        fh.write(bad)
    with pytest.raises(ReportError, match=f"jobs.jsonl:3: .*{named}"):
        read_jsonl(path)


# ---------------------------------------------------------------------------- dpp report
def _three_jobs(tmp_path: Path) -> tuple[Path, list[JobReport]]:
    """Jobs keeping 1, 2, 3 of 40 partitions, 1.5 GiB skipped and 1.5 s each."""
    path = tmp_path / "jobs.jsonl"
    reports = [star_report(i, kept=i + 1, total=40, skipped=3 * GiB // 2) for i in range(3)]
    reports[2].filters[0].outcome = "timeout"
    for r in reports:
        append_jsonl(r, path)
    return path, reports


def test_cli_prints_one_row_per_job_and_totals(tmp_path: Path, capsys: pytest.CaptureFixture):
    path, reports = _three_jobs(tmp_path)
    assert report_main([str(path)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].split() == ["query", "started", "tables", "kept/total", "pruned", "skipped",
                                "filters", "total", "s"]
    rows = lines[2:-2]
    assert len(rows) == 3
    width = len(lines[1].split()[0])   # the query column: the query's text, not its hash
    for r, row in zip(reports, rows):
        assert row[:width].rstrip() == r.query_text
        cells = row[width:].split()
        assert cells[2] == "store_sales"
        assert cells[3] == f"{r.tables[0].partitions_kept}/40"
        assert cells[-1] == "1.50"
    assert rows[0][width:].split()[4:7] == ["98%", "1.5", "GiB"]   # 39/40 pruned = 97.5% -> 98%
    assert rows[2][width:].split()[7:9] == ["1", "timeout"]
    # totals: 6/120 kept, 114/120 = 95% pruned, 4.5 GiB, 2 complete + 1 timeout, 4.50 s
    assert lines[-1].split() == ["TOTAL", "3", "jobs", "1", "table", "6/120", "95%", "4.5",
                                 "GiB", "2", "complete,", "1", "timeout", "4.50"]


def test_cli_names_unknown_bytes_not_listed(tmp_path: Path, capsys: pytest.CaptureFixture):
    """Pruned partitions dpp never listed have no known size: not ``0 B``."""
    path, reports = _three_jobs(tmp_path)
    for r in reports:
        r.tables[0].bytes_skipped = 0
    reports[1].tables[0].files_pruned_stats, reports[1].tables[0].bytes_skipped = 2, 2048
    path.write_text("".join(r.to_json() + "\n" for r in reports))
    assert report_main([str(path)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    width = len(lines[1].split()[0])
    skipped = [row[width:].split()[5:7] for row in lines[2:-2]]
    assert skipped[0] == ["not", "listed"] and skipped[1] == ["2.0", "KiB"], skipped
    assert lines[-1].split()[7] == "2.0" and lines[-1].split()[8] == "KiB+"
    long = bare_report(query_text="SELECT " + "x, " * 40 + "1")
    assert query_label(long).endswith("…") and len(query_label(long)) == QUERY_WIDTH
    assert query_label(bare_report(query_text="")) == bare_report(query_text="").query_hash


def test_cli_on_an_empty_file_prints_a_zero_total(tmp_path: Path, capsys: pytest.CaptureFixture):
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    assert report_main([str(path)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 4 and lines[-1].split()[:3] == ["TOTAL", "0", "jobs"]


def test_cli_bad_file_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"schema_version": 1}\n')
    assert report_main([str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl:1" in err and "query_id" in err and "Traceback" not in err
    assert report_main([str(tmp_path / "missing.jsonl")]) == 2
    assert "missing.jsonl" in capsys.readouterr().err
    assert report_main([]) == 2  # no FILE: argparse's usage error, as a status


def test_cli_runs_as_a_module(tmp_path: Path):
    path, reports = _three_jobs(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "dpp.report_cli", str(path)],
                          capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[1])
    assert sum(ln.startswith(r.query_text) for r in reports
               for ln in proc.stdout.splitlines()) == 3


class _Page(html.parser.HTMLParser):
    """Collects what the page promises: images, job sections, text, external references."""

    def __init__(self) -> None:
        super().__init__()
        self.imgs: list[str] = []
        self.sections: list[str] = []
        self.tags: set[str] = set()
        self.external: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.add(tag)
        if tag == "img":
            self.imgs.append(a["src"] or "")
        if tag == "section" and a.get("class") == "job":
            self.sections.append(a["id"] or "")
        for k in ("src", "href"):
            if (a.get(k) or "").startswith(("http:", "https:", "//")):
                self.external.append(a[k] or "")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_cli_html_names_every_job_with_one_chart_each(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture):
    path, reports = _three_jobs(tmp_path)
    # a fourth job with nothing to draw still gets its (empty) chart; its text is escaped
    odd = bare_report(query_text="SELECT '</pre><script>alert(1)</script>'",
                      analysis_notes=["unparsable SQL: <x>"])
    append_jsonl(odd, path)
    reports.append(odd)
    out = tmp_path / "site" / "jobs.html"
    assert report_main([str(path), "--html", str(out)]) == 0
    assert str(out) in capsys.readouterr().err
    page = _Page()
    page.feed(out.read_text(encoding="utf-8"))
    page.close()
    text = " ".join(page.text)
    assert len(page.imgs) == len(reports) == 4
    for src in page.imgs:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]).startswith(b"\x89PNG\r\n\x1a\n")
    assert page.sections == [f"job-{r.query_id}" for r in reports]
    for r in reports:
        assert r.query_id in text and r.query_hash in text
    assert "script" not in page.tags and "<script>alert(1)</script>" in text
    assert page.external == []  # self-contained


def test_html_of_no_jobs_is_still_a_page(tmp_path: Path):
    from dpp.runtime.report_html import render_html

    page = _Page()
    page.feed(render_html([]))
    assert page.imgs == [] and "TOTAL" in " ".join(page.text)


def test_reports_are_not_changed_by_rendering(tmp_path: Path):
    from dpp.runtime.report_html import render_html

    r = star_report(1)
    before = copy.deepcopy(r)
    render_html([r])
    assert r == before
