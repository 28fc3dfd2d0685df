"""What the docs state about the code, checked against the code."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_readme_counts_the_jvm_part_truly() -> None:
    """The README gives the JVM part's size (it is meant to stay thin: a rule, file indexes, a
    describer); the figure must be the sources' own, to the line."""
    text = (ROOT / "README.md").read_text()
    m = re.search(r"([\d,]+) lines of Java, ([\d,]+) of them code", text)
    assert m, "the README no longer states the JVM part's size"
    sources = sorted((ROOT / "dpp" / "jvm" / "src").rglob("*.java"))
    lines = [ln for f in sources for ln in f.read_text().splitlines()]
    code = [ln for ln in lines if ln.strip() and not re.match(r"\s*(//|\*|/\*)", ln)]
    assert (int(m.group(1).replace(",", "")), int(m.group(2).replace(",", ""))) == (
        len(lines), len(code))


def test_why_not_page_names_every_reported_filter_outcome() -> None:
    """docs/why-not.md explains each outcome a report's filter entry can carry."""
    from dpp.core.outcomes import REPORTED_OUTCOMES

    page = (Path(__file__).resolve().parents[1] / "docs" / "why-not.md").read_text()
    missing = [o.value for o in REPORTED_OUTCOMES if f"| `{o.value}` |" not in page]
    assert not missing, f"docs/why-not.md does not explain {missing}"
