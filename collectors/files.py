"""The files behind a DataFrame, with what the filter cache keys on: path, size, modification
time, and what the file system says beyond them."""
from __future__ import annotations

import logging
import os
from typing import Any
from urllib.parse import unquote, urlparse

from dpp.core.remote import is_remote

__all__ = ["dataframe_files"]

log = logging.getLogger(__name__)


def dataframe_files(df: Any) -> list[tuple[str, int, float, str]]:
    """``(path, size, mtime, identity)`` of every file ``df`` reads, sorted by path.

    Local files (``file:`` URIs or plain paths) are stat-ed with :func:`os.stat`; their
    ``identity`` is the inode, the device and the change time in nanoseconds: a file rewritten
    in place keeps its inode but gets a new change time, even when its size and modification
    time are set back (``os.utime`` moves the change time too). Other file systems are asked
    through Hadoop's ``FileSystem`` in the driver JVM; their identity is the ETag where the
    file status carries one (S3A, ABFS), else empty: there a rewrite with the same size and
    modification time is not seen. An empty list means the DataFrame reads no files (e.g.
    built from local rows): its result cannot be fingerprinted by files, so callers should
    not cache it.
    """
    out: list[tuple[str, int, float, str]] = []
    for uri in sorted(set(df.inputFiles())):
        parsed = urlparse(uri)
        if parsed.scheme in ("", "file"):
            path = unquote(parsed.path) if parsed.scheme else uri
            st = os.stat(path)
            out.append((uri, int(st.st_size), st.st_mtime_ns / 1e9,
                        f"ino={st.st_ino};dev={st.st_dev};ctime={st.st_ctime_ns}"))
        elif is_remote(df):
            # Spark Connect: no Hadoop FileSystem here to stat it; a build side whose files
            # cannot all be fingerprinted is not cached (an empty list says so)
            return []
        else:
            out.append(_hadoop_stat(df, uri))
    return out


def _hadoop_stat(df: Any, uri: str) -> tuple[str, int, float, str]:
    spark = df.sparkSession
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    path = jvm.org.apache.hadoop.fs.Path(uri)
    status = path.getFileSystem(conf).getFileStatus(path)
    identity = ""
    try:   # org.apache.hadoop.fs.EtagSource (Hadoop 3.3.2+: S3A, ABFS)
        etag = status.getEtag()
        identity = f"etag={etag}" if etag else ""
    except Exception:
        log.debug("no ETag for %s", uri, exc_info=True)
    return (uri, int(status.getLen()), int(status.getModificationTime()) / 1000.0, identity)
