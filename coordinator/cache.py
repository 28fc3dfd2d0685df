"""Fingerprints of build sides, the keys of the filter cache.

A build side's filter depends on the (normalized) query that produces it, the key columns, and
the exact files it reads: any change to a dimension's files (added, removed, rewritten: size or
mtime) gives another fingerprint, so a stale filter is never reused.
"""
from __future__ import annotations

import hashlib
import json
from typing import Iterable, Sequence

__all__ = ["fingerprint"]

_VERSION = "dpp-filter-cache-v1"


def fingerprint(normalized_query: str, key_columns: Sequence[str],
                files: Iterable[tuple[str, int, float]]) -> str:
    """sha256 hex of the query text, the key columns (in order) and the sorted file list."""
    listed = sorted((str(p), int(s), float(m)) for p, s, m in files)
    doc = {"v": _VERSION, "q": normalized_query, "k": list(key_columns),
           "f": [[p, s, repr(m)] for p, s, m in listed]}
    blob = json.dumps(doc, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()
