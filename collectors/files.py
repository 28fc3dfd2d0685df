"""The files behind a DataFrame, with the size and modification time the filter cache keys on."""
from __future__ import annotations

import logging
import os
from typing import Any
from urllib.parse import unquote, urlparse

from dpp.core.remote import is_remote

__all__ = ["dataframe_files"]

log = logging.getLogger(__name__)


def dataframe_files(df: Any) -> list[tuple[str, int, float]]:
    """``(path, size, mtime)`` of every file ``df`` reads, sorted by path.

    Local files (``file:`` URIs or plain paths) are stat-ed with :func:`os.stat`; other file
    systems through Hadoop's ``FileSystem`` in the driver JVM. An empty list means the
    DataFrame reads no files (e.g. built from local rows): its result cannot be fingerprinted
    by files, so callers should not cache it.
    """
    out: list[tuple[str, int, float]] = []
    for uri in sorted(set(df.inputFiles())):
        parsed = urlparse(uri)
        if parsed.scheme in ("", "file"):
            path = unquote(parsed.path) if parsed.scheme else uri
            st = os.stat(path)
            out.append((uri, int(st.st_size), st.st_mtime_ns / 1e9))
        elif is_remote(df):
            # Spark Connect: no Hadoop FileSystem here to stat it; a build side whose files
            # cannot all be fingerprinted is not cached (an empty list says so)
            return []
        else:
            out.append(_hadoop_stat(df, uri))
    return out


def _hadoop_stat(df: Any, uri: str) -> tuple[str, int, float]:
    spark = df.sparkSession
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    path = jvm.org.apache.hadoop.fs.Path(uri)
    status = path.getFileSystem(conf).getFileStatus(path)
    return (uri, int(status.getLen()), int(status.getModificationTime()) / 1000.0)
