"""The manual's generated parts match what they are generated from (``scripts/docs_gen.py``).

Like ``tests/test_rules_table.py`` for ``docs/rules.md``: a setting or report field without a
description, or a generated table that no longer matches the code or the kept benchmark
summaries, fails here; ``python scripts/docs_gen.py`` (run by ``make docs``) rewrites them.
"""
from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_gen", ROOT / "scripts" / "docs_gen.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


gen = _gen()


def test_every_setting_is_described() -> None:
    from dpp.runtime import config

    missing = [k for k in config.KNOWN_KEYS if k not in config.SETTING_DOCS]
    assert not missing, f"add these to dpp.runtime.config.SETTING_DOCS: {missing}"
    extra = [k for k in config.SETTING_DOCS
             if k not in config.KNOWN_KEYS and k != config.TABLES_PREFIX + "<name>"]
    assert not extra, f"dpp.runtime.config.SETTING_DOCS describes keys that do not exist: {extra}"


def test_every_report_field_is_described() -> None:
    from dpp.runtime import report

    fields = {f"{rec}.{name}" for rec, fs in gen.report_fields().items() for name, _ in fs}
    missing = sorted(fields - set(report.FIELD_DOCS))
    assert not missing, f"add these to dpp.runtime.report.FIELD_DOCS: {missing}"
    extra = sorted(set(report.FIELD_DOCS) - fields)
    assert not extra, f"dpp.runtime.report.FIELD_DOCS describes fields that do not exist: {extra}"


def test_the_defaults_shown_are_the_defaults() -> None:
    """What the reference prints as a default, parsed as a user's --conf would be, is the
    default DppConfig holds."""
    from dpp.runtime import config

    shown = gen.settings_defaults()
    base = config.DppConfig()
    for key, (name, parse) in config._KEYS.items():
        want = getattr(base, name)
        if shown[key] == "unset":
            assert want is None, key
        else:
            assert parse(key, shown[key]) == want, key


def test_no_generated_part_is_stale() -> None:
    stale = gen.stale()
    assert not stale, f"stale: {stale}; run python scripts/docs_gen.py (make docs)"


def test_the_generated_pages_have_their_blocks() -> None:
    """Each block is shown somewhere (a page that lost its marker would go silently stale)."""
    text = "".join(p.read_text() for p in gen.pages())
    for name in gen.GENERATORS:
        assert f"<!-- generated:{name} -->" in text, name
    assert "<!-- generated:jvm-size -->" in (ROOT / "README.md").read_text()


@pytest.mark.parametrize("path", sorted((ROOT / "docs" / "bench").glob("*.json")),
                         ids=lambda p: p.stem)
def test_kept_benchmark_summaries_say_how_they_were_made(path: Path) -> None:
    s = json.loads(path.read_text())
    assert s["name"] == path.stem
    assert s["command"].startswith("tpcds bench --data ")
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", s["date"])
    assert s["data"]["scale_factor"] > 0
    for kind in s["kinds"].values():
        for mode in kind["modes"].values():
            assert 0 <= mode["correct"] <= mode["ran"] <= mode["queries"]


def test_a_run_without_spark_is_set_against_the_text_path() -> None:
    """A hook-against-text run (``--modes dpp,text``) has no Spark column to divide by: its
    ratios are dpp / text, and the table says so."""
    kept = [json.loads(p.read_text()) for p in (ROOT / "docs" / "bench").glob("*.json")]
    runs = [s for s in kept if "spark" not in next(iter(s["kinds"].values()))["modes"]]
    assert runs, "no kept run without Spark"
    for s in runs:
        assert s["baseline"] == "text"
        table = gen.bench_run_markdown(s)
        assert "dpp / text" in table and "/ spark" not in table


def test_the_headline_run_is_kept() -> None:
    assert (ROOT / "docs" / "bench" / f"{gen.HEADLINE}.json").exists()


def test_every_page_is_in_the_navigation() -> None:
    """MkDocs' strict build says the same (``make docs``); this says it without MkDocs."""
    nav = (ROOT / "mkdocs.yml").read_text()
    listed = set(re.findall(r":\s*([\w./-]+\.md)\s*$", nav, re.M))
    pages = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert pages - listed == set(), "pages missing from mkdocs.yml's nav"
    assert listed - pages == set(), "mkdocs.yml names pages that do not exist"
