"""The files of the partitions a load kept: what its table's scan reads.

A load that leaves the listing to Spark (a catalog table whose kept partitions Spark's own
catalog index fetches by name) keeps partitions without a location. Whoever needs their files
anyway — a bound read from the footers of the kept partitions only — must locate them first;
reading ``LoadResult.partitions`` as a file set without doing so would read no file at all.
"""
from __future__ import annotations

import logging
from typing import Optional

from hive_splits.listing import FileEntry, Lister
from hive_splits.loader import KeptPartition, LoadResult
from hive_splits.table import Table, local_path

log = logging.getLogger(__name__)


def kept_files(table: Table, result: LoadResult, lister: Lister) -> Optional[list[FileEntry]]:
    """The files of ``result``'s kept partitions of ``table``, listed with ``lister`` where
    the load did not list them; None where they cannot be known (a partition without a
    location that the catalog cannot locate now), so that the caller reads every file
    instead of none.

    Unlocated partitions are fetched from the table's partition source by their catalog
    values (the same objects Spark's catalog index fetches for its scan); one of them no
    longer there gives None, never a smaller file set."""
    located = _located(table, result.partitions)
    if located is None:
        return None
    files: list[FileEntry] = []
    for path in located:
        listed = result.listings.get(path)
        if listed is None:
            try:
                listed = lister.list(path)[1]
            except FileNotFoundError:   # read as empty, as Spark reads a missing location
                listed = []
        files.extend(listed)
    return files


def _located(table: Table, partitions: list[KeptPartition]) -> Optional[list[str]]:
    """Each kept partition's folder, in order; None when one cannot be located."""
    missing = [kp for kp in partitions if not kp.path]
    if not missing:
        return [kp.path for kp in partitions]
    source = table.partition_source
    if source is None or any(kp.texts is None for kp in missing):
        return None
    columns = [pc.name for pc in table.partition_columns]
    specs = [tuple((c, kp.texts[c]) for c in columns) for kp in missing]   # type: ignore[index]
    try:
        fetched, _info = source.fetch(specs, [kp.values for kp in missing])
    except Exception as exc:   # noqa: BLE001 - not located: the caller reads every file
        log.info("kept partitions of %s not located: %s", table.name, exc)
        return None
    by_spec = {cp.values: cp for cp in fetched}
    found: dict[int, str] = {}   # id of an unlocated kept partition -> its folder
    for kp, spec in zip(missing, specs):
        cp = by_spec.get(spec)
        if cp is None or not cp.location:   # dropped meanwhile, or a partition without one
            return None
        found[id(kp)] = local_path(cp.location)
    return [kp.path or found[id(kp)] for kp in partitions]


__all__ = ["kept_files"]
