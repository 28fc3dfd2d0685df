"""The README and the manual: every relative link resolves (file and anchor), and no page
narrates its own making (that history belongs in CHANGELOG.md)."""
from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_SKIP = {".venv", "site", "data", "bench-out", "spark-warehouse", "node_modules", "build"}


def _markdown() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.md")
                  if not any(part in _SKIP or part.startswith(".") or part.endswith(".egg-info")
                             for part in p.relative_to(ROOT).parts[:-1]))


def _docs() -> list[Path]:
    return [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))


_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _slug(heading: str) -> str:
    """Python-Markdown's toc slug (what MkDocs uses for anchors)."""
    text = re.sub(r"`|\*\*|\*|_(?=\w)|(?<=\w)_", "", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(path: Path) -> set[str]:
    text = _FENCE.sub("", path.read_text())
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.*?)\s*#*\s*$", text, re.M)}


@pytest.mark.parametrize("page", _docs(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    text = _FENCE.sub("", page.read_text())
    text = re.sub(r"`[^`\n]*`", "", text)
    broken = []
    for target in _LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("//"):
            continue                                   # http:, https:, mailto:
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)}: broken links {broken}"


_HISTORY = re.compile(
    r"\b(round|issue|session|iteration|sprint)s? \d+"
    r"|(?<![\w&/])#\d+\b"
    r"|\bwe (built|added|made|wrote|fixed|changed|implemented|tried|measured)\b"
    r"|\bthis round\b",
    re.I)


@pytest.mark.parametrize("page", [p for p in _markdown() if p.name != "CHANGELOG.md"],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_narrates_its_own_making(page: Path) -> None:
    hits = [f"{i}: {m.group(0)!r}" for i, line in enumerate(page.read_text().splitlines(), 1)
            for m in _HISTORY.finditer(line)]
    assert not hits, (f"{page.relative_to(ROOT)} tells how it was built (say what the software "
                      f"does; history goes in CHANGELOG.md): {hits}")
