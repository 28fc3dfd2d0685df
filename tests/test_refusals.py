"""Refusals are typed: a code and a subject from the analysis, words only from the report,
and the manual's tables made from the same entries (docs/why-not.md)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from dpp.core.refusals import ENTRIES, KEY, TABLE, Code, Refusal, refusals_markdown
from dpp.runtime.report import JobReport, ReportError

ROOT = Path(__file__).resolve().parent.parent


def test_every_code_has_one_entry_with_words_of_its_own() -> None:
    assert set(ENTRIES) == set(Code)
    templates = [e.template for e in ENTRIES.values()]
    assert len(set(templates)) == len(templates)
    assert {e.scope for e in ENTRIES.values()} == {TABLE, KEY}


def test_the_manual_lists_every_code_in_the_table_of_its_scope() -> None:
    page = (ROOT / "docs" / "why-not.md").read_text()
    for code, entry in ENTRIES.items():
        row = f"| `{code.value}` |"
        assert row in refusals_markdown(entry.scope) and row in page, code
        other = KEY if entry.scope == TABLE else TABLE
        assert row not in refusals_markdown(other), code


def test_words_fill_the_subject_and_values() -> None:
    r = Refusal.of(Code.TYPE_DIFFERS, "day", spark="int", dpp="string")
    assert r.words() == "partition column day is int in Spark's plan, string to dpp"
    assert str(r) == r.words() and r.get("spark") == "int"
    with pytest.raises(KeyError):     # a value the words need and the analysis did not give
        Refusal(Code.TYPE_DIFFERS, "day").words()


def test_the_report_keeps_codes_and_reads_them_back() -> None:
    report = JobReport.start(query_text="SELECT 1", kind="plan", settings={}, enabled=True)
    report.add_table_unpruned("sales", None, Refusal(Code.STATICALLY_EMPTY))
    key = Refusal.of(Code.JOIN_KEEPS_UNMATCHED, "s.day", join="LEFT OUTER")
    report.refuse([key, key])          # said once
    line = report.to_dict()
    assert line["tables"][0]["reason_code"] == "statically-empty"
    assert line["tables"][0]["reason"] == Refusal(Code.STATICALLY_EMPTY).words()
    assert line["refusals"] == [{"code": "join-keeps-unmatched", "subject": "s.day",
                                 "words": key.words()}]
    assert line["analysis_notes"] == [key.words()]
    back = JobReport.from_dict(line)
    assert back.refusals == line["refusals"] and back.tables[0].reason_code == "statically-empty"


def test_a_code_the_reader_does_not_know_is_named() -> None:
    report = JobReport.start(query_text="SELECT 1", kind="plan", settings={}, enabled=True)
    report.add_table_unpruned("sales", None, Refusal(Code.NEVER_LISTED))
    line = report.to_dict()
    line["tables"][0]["reason_code"] = "no-such-code"
    with pytest.raises(ReportError, match=r"tables\[0\]\.reason_code"):
        JobReport.from_dict(line)


def test_a_line_of_schema_version_1_still_reads() -> None:
    report = JobReport.start(query_text="SELECT 1", kind="plan", settings={}, enabled=True)
    line = report.to_dict()
    line["schema_version"] = 1
    del line["refusals"]
    assert JobReport.from_dict(line).refusals == []


def test_a_table_is_refused_only_with_a_refusal() -> None:
    report = JobReport.start(query_text="SELECT 1", kind="plan", settings={}, enabled=True)
    with pytest.raises(TypeError, match="Refusal"):
        report.add_table_unpruned("sales", None, "some words")   # type: ignore[arg-type]


def _calls(tree: ast.AST, name: str) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute) and n.func.attr == name]


def test_no_front_end_writes_a_refusal_in_words() -> None:
    """Every reason a table is refused for, and every key refusal, is built from a code:
    no call passes a string literal or an f-string (the words are the report's)."""
    offenders = []
    for path in sorted((ROOT / "dpp").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for call in _calls(tree, "add_table_unpruned") + _calls(tree, "refuse"):
            for arg in call.args[2:] if call.func.attr == "add_table_unpruned" else call.args:
                if isinstance(arg, (ast.Constant, ast.JoinedStr)):
                    offenders.append(f"{path.relative_to(ROOT)}:{call.lineno}")
    assert not offenders, offenders
