"""``hive_splits.column_bounds``: a column's bounds over files, from their footers alone;
anything the statistics cannot vouch for gives none."""
from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from hive_splits.column_bounds import column_bounds
from hive_splits.footers import FooterCache
from hive_splits.listing import FileEntry


def _entry(path: Path) -> FileEntry:
    st = os.stat(path)
    return FileEntry(str(path), st.st_size, st.st_mtime_ns, (st.st_ino, st.st_ctime_ns))


def _read(path: str, _size: int) -> object:
    return pq.read_metadata(path)


def _write(path: Path, table: pa.Table, **kw: object) -> FileEntry:
    pq.write_table(table, path, **kw)
    return _entry(path)


def test_bounds_span_every_row_group_of_every_file(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.parquet", pa.table({"q": pa.array(range(10, 40), pa.int32())}),
               row_group_size=7)
    b = _write(tmp_path / "b.parquet", pa.table({"q": pa.array([5, None, 77], pa.int64())}))
    bounds, why = column_bounds([a, b], "q", "bigint", _read, FooterCache())
    assert bounds is not None, why
    assert (bounds.low, bounds.high, bounds.files) == (5, 77, 2)
    assert bounds.row_groups == 5 + 1


def test_nulls_and_files_without_the_column_bound_nothing(tmp_path: Path) -> None:
    """A row group of NULLs only has no min/max and needs none; a file without the column
    reads as NULLs; a name differing in case is the same column (a superset is sound)."""
    nulls = _write(tmp_path / "n.parquet", pa.table({"q": pa.nulls(4, pa.int32())}))
    other = _write(tmp_path / "o.parquet", pa.table({"x": pa.array([999], pa.int32())}))
    upper = _write(tmp_path / "u.parquet", pa.table({"Q": pa.array([3, 4], pa.int32())}))
    bounds, why = column_bounds([nulls, other, upper], "q", "int", _read)
    assert bounds is not None and (bounds.low, bounds.high) == (3, 4), why
    only_nulls, _ = column_bounds([nulls, other], "q", "int", _read)
    assert only_nulls is not None and only_nulls.empty


def test_what_statistics_cannot_vouch_for_gives_no_bounds(tmp_path: Path) -> None:
    good = _write(tmp_path / "g.parquet", pa.table({"q": pa.array([1, 2], pa.int32())}))
    bare = _write(tmp_path / "b.parquet", pa.table({"q": pa.array([1, 500], pa.int32())}),
                  write_statistics=False)
    bounds, why = column_bounds([good, bare], "q", "int", _read)
    assert bounds is None and "no statistics" in why
    both = _write(tmp_path / "c.parquet",
                  pa.table({"q": pa.array([1], pa.int32()), "Q": pa.array([9], pa.int32())}))
    bounds, why = column_bounds([good, both], "q", "int", _read)
    assert bounds is None and "several columns" in why
    text = _write(tmp_path / "t.parquet", pa.table({"q": ["a", "b"]}))
    bounds, why = column_bounds([good, text], "q", "int", _read)
    assert bounds is None and "statistics of 'q' are" in why
    bounds, why = column_bounds([good], "q", "double", _read)
    assert bounds is None and "type double" in why
    gone = FileEntry(str(tmp_path / "missing.parquet"), 10, 0, None)
    bounds, why = column_bounds([good, gone], "q", "int", _read)
    assert bounds is None and "footer unreadable" in why


def test_dates_and_the_calendar_switch(tmp_path: Path) -> None:
    day = _write(tmp_path / "d.parquet",
                 pa.table({"d": pa.array([dt.date(2024, 2, 29), dt.date(1999, 1, 1)])}))
    bounds, why = column_bounds([day], "d", "date", _read)
    assert bounds is not None and (bounds.low, bounds.high) == (
        dt.date(1999, 1, 1), dt.date(2024, 2, 29)), why
    old = _write(tmp_path / "o.parquet", pa.table({"d": pa.array([dt.date(1500, 3, 1)])}))
    bounds, why = column_bounds([day, old], "d", "date", _read)
    assert bounds is None and "1500-03-01" in why


def test_no_files_no_values(tmp_path: Path) -> None:
    bounds, why = column_bounds([], "q", "int", _read)
    assert bounds is not None and bounds.empty and bounds.files == 0, why


def test_a_local_footer_read_from_its_tail_is_pyarrows_own(tmp_path: Path) -> None:
    from hive_splits.listing import LocalLister

    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({"q": pa.array(range(100), pa.int64()),
                             "s": pa.array([str(i) for i in range(100)])}),
                   path, row_group_size=30)
    mine = LocalLister().read_footer(str(path), os.path.getsize(path))
    assert mine.equals(pq.read_metadata(path))
    assert mine.row_group(3).column(0).statistics.max == 99


def test_a_local_file_without_a_footer_names_itself(tmp_path: Path) -> None:
    import pytest

    from hive_splits.listing import read_local_footer

    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"q": [1, 2, 3]}), good)
    data = good.read_bytes()
    for name, body in (("short.parquet", b"PAR1"), ("cut.parquet", data[:-3]),
                       ("long_footer.parquet", b"PAR1" + b"\xff\xff\x00\x00PAR1")):
        bad = tmp_path / name
        bad.write_bytes(body)
        with pytest.raises(OSError, match=name):
            read_local_footer(str(bad))
    # column_bounds reads such a file as unreadable: no bound, the path said
    bounds, why = column_bounds([_entry(good), _entry(tmp_path / "cut.parquet")], "q",
                                "bigint", lambda p, s: read_local_footer(p), FooterCache())
    assert bounds is None and "cut.parquet" in why
