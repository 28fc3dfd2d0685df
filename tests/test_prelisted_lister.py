"""The split loader over partition folders another listing already made (a declared folder's
kept-partition index): the same verdicts and files as listing the folder itself, and no
listing of the partition levels."""
from __future__ import annotations

from pathlib import Path

from dpp.core.domain import Domain, TupleDomain
from hive_splits import table_from_path
from hive_splits.listing import LocalLister, PrelistedLister
from hive_splits.loader import SplitLoader
from tests.conftest import write_parquet


def _layout(root: Path) -> list[str]:
    rels = []
    for y in (2020, 2021, 2022):
        for r in ("east", "west"):
            rel = f"y={y}/r={r}"
            write_parquet(root / rel / "part-0.parquet", {"v": [y]})
            rels.append(rel)
    return rels


def _load(table, lister=None):
    dom = TupleDomain.of({"y": Domain.values("int", [2021, 2022]),
                          "r": Domain.values("string", ["west"])})
    return SplitLoader(table, static=dom, lister=lister).load()


def test_prelisted_folders_give_the_listing_loaders_answer(tmp_path: Path) -> None:
    rels = _layout(tmp_path / "t")
    table = table_from_path(str(tmp_path / "t"))
    want = _load(table)
    inner = LocalLister()
    pre = PrelistedLister(inner, inner.location(str(tmp_path / "t")), list(reversed(rels)))
    got = _load(table, pre)
    assert sorted(got.pruned_folders) == sorted(want.pruned_folders)
    assert [(p.path, p.values) for p in got.partitions] == \
        [(p.path, p.values) for p in want.partitions]
    assert sorted(s.path for s in got.splits) == sorted(s.path for s in want.splits)
    assert got.partitions_kept == want.partitions_kept == 2
    # the partition levels came from the names: only the two kept folders were listed
    assert (got.list_calls, want.list_calls) == (2, 5)


def test_a_folder_the_names_do_not_hold_is_never_judged(tmp_path: Path) -> None:
    """Folders made after the index listed: not in the names, so neither judged nor read by
    the index (its scan lists only folders it knows)."""
    rels = _layout(tmp_path / "t")
    table = table_from_path(str(tmp_path / "t"))
    inner = LocalLister()
    pre = PrelistedLister(inner, inner.location(str(tmp_path / "t")), rels[:2])
    got = _load(table, pre)
    assert got.partitions_total == 1   # y=2020, pruned at its level: the rest unseen
    assert got.partitions_kept == 0
