"""Fingerprints of build sides, the keys of the filter cache.

A build side's filter depends on what it computes (its query or canonical plan, with every
relation's schema and reader options), the key columns, the session settings that change
what a read or an expression returns, and the exact files it reads. A file is named by its
path, size and modification time, plus what the file system offers beyond those (on a local
file system its inode, device and change time, which a rewrite in place or ``os.utime``
moves; on object stores an ETag where Hadoop exposes one): any change seen there gives
another fingerprint. A change none of these show (a rewrite in place with the same size and
modification time on a store without change times or ETags) is not seen: that is why the
filter cache is off by default (``spark.dpp.filterCache.enabled``).
"""
from __future__ import annotations

import hashlib
import json
from typing import Iterable, Optional, Sequence

__all__ = ["fingerprint"]

_VERSION = "dpp-filter-cache-v2"


def fingerprint(normalized_query: str, key_columns: Sequence[str],
                files: Iterable[Sequence[object]], settings: Optional[str] = None,
                relations: Optional[str] = None) -> str:
    """sha256 hex of the query text, the key columns (in order), the sorted file list, the
    value-changing session settings and the relations' schemas and reader options.

    ``files``: ``(path, size, mtime)`` or ``(path, size, mtime, identity)`` each, where
    ``identity`` is what the file system says beyond size and mtime (inode, change time,
    ETag), as text."""
    listed = sorted((str(f[0]), int(f[1]), float(f[2]),  # type: ignore[call-overload]
                     str(f[3]) if len(f) > 3 else "") for f in files)
    doc = {"v": _VERSION, "q": normalized_query, "k": list(key_columns),
           "f": [[p, s, repr(m), i] for p, s, m, i in listed],
           "s": settings, "r": relations}
    blob = json.dumps(doc, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()
