"""Listers: how the split loader sees folders, on a local disk or on any filesystem Spark reads.

Two implementations behind one small interface (:class:`Lister`):

* :class:`LocalLister` — ``os.scandir`` on local paths: the fastest way to list a local disk,
  and the default for plain paths and ``file:`` URIs.
* :class:`HadoopLister` — Hadoop's ``FileSystem`` in the driver's JVM, with the Hadoop
  configuration Spark itself reads with (``spark.hadoop.*`` included), so every scheme and
  credential that works for ``spark.read.parquet`` (``s3a://``, ``hdfs://``, ``gs://``,
  ``abfs://``, ``file:``) works for the loader.

py4j round trips are bounded per folder, never per file: a folder costs one ``listStatus`` and
one call that serializes the whole ``FileStatus[]`` inside the JVM (Hadoop's own ``Writable``
form: a length-prefixed ``FileStatusProto`` per entry, decoded here by :func:`_decode_statuses`).

Both count their calls (:class:`ListingCalls`): ``list`` is one LIST request per folder
listed, ``head`` one metadata request (getFileStatus) per path checked. On object stores those
are network round trips, which is what the loader exists to save; ``hive_splits.bench`` turns
the counts into a projection of wall time at object-store latency.

Paths: a local lister speaks local absolute paths; a Hadoop lister speaks fully qualified URI
strings as Hadoop prints them (``file:/data/t/k=v``, ``s3a://bucket/t/k=v``: the path part
*decoded*, so a Hive-escaped folder ``k=a%3Ab`` reads back as that name). Children are named
``folder + "/" + name`` on both.
"""
from __future__ import annotations

import logging
import operator
import os
import struct
import threading
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Optional
from urllib.parse import unquote, urlparse

from dpp.core.errors import LayoutError
from hive_splits.naming import is_hidden

__all__ = ["DirEntry", "FileEntry", "ListingCalls", "Lister", "LocalLister", "HadoopLister",
           "PrelistedLister",
           "LISTER_MODES", "is_local_location", "child_path", "parent_path",
           "base_name"]

log = logging.getLogger(__name__)

LISTER_MODES = ("auto", "local", "hadoop")


class DirEntry(NamedTuple):
    """A visible sub-folder (a tuple: made once per partition folder of every listing, where
    a frozen dataclass costs a microsecond each)."""

    path: str
    name: str


@dataclass(frozen=True)
class FileEntry:
    """A visible file: where it is, its bytes and modification time (ns since the epoch).

    ``change``: what shows the file unchanged beyond size and modification time, where the
    storage gives it (a local file's inode and change time: a rewrite in place, even one that
    sets the old modification time back, moves the change time). None: no such proof, and
    nothing read from the file (a footer) may be reused for it later."""

    path: str
    size: int
    mtime_ns: int
    change: Optional[tuple] = field(default=None, compare=False)


@dataclass
class ListingCalls:
    """Requests made to the storage, counted exactly (thread-safe)."""

    list: int = 0
    head: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, list_calls: int = 0, head_calls: int = 0) -> None:
        with self._lock:
            self.list += list_calls
            self.head += head_calls

    def snapshot(self) -> tuple[int, int]:
        with self._lock:
            return self.list, self.head


def child_path(folder: str, name: str) -> str:
    return folder.rstrip("/") + "/" + name


def parent_path(path: str) -> str:
    head, _, _ = path.rstrip("/").rpartition("/")
    return head


def base_name(path: str) -> str:
    return path.rstrip("/").rpartition("/")[2]


def is_local_location(location: str) -> bool:
    """A plain path or a ``file:`` URI (listed fastest by :class:`LocalLister`)."""
    if location.startswith("file:"):
        return True
    return "://" not in location and not _has_scheme(location)


def _has_scheme(location: str) -> bool:
    head, sep, _ = location.partition(":")
    return bool(sep) and len(head) > 1 and head.replace("+", "").replace("-", "").isalnum() \
        and "/" not in head


class Lister:
    """Lists folders of one filesystem and counts the requests it makes."""

    kind = "abstract"

    def __init__(self) -> None:
        self.calls = ListingCalls()

    def fresh(self) -> "Lister":
        """A lister of the same kind and handles with its own (zero) call counts: one per
        load, so each table's report counts its own requests."""
        return type(self)()

    def location(self, location: str) -> str:
        """``location`` as this lister names it (absolute / fully qualified)."""
        raise NotImplementedError

    def list(self, folder: str) -> tuple[list[DirEntry], list[FileEntry]]:
        """Visible sub-folders and files of ``folder``, each sorted by name (hidden names —
        ``_SUCCESS``, ``.crc`` — left out). Raises :class:`FileNotFoundError` for a folder that
        is not there and :class:`PermissionError` for one that may not be read."""
        raise NotImplementedError

    def is_dir(self, path: str) -> bool:
        """Whether ``path`` is a folder (one metadata request)."""
        raise NotImplementedError

    def read_footer(self, path: str, size: int) -> Any:
        """The Parquet footer (``pyarrow.parquet.FileMetaData``) of a file of ``size`` bytes."""
        raise NotImplementedError

    @property
    def footer_workers(self) -> int:
        """How many footers to read at once: a remote store's latency wants many requests
        in flight."""
        return 16

    def spark_uri(self, path: str) -> str:
        """``path`` as a URI string Spark's reader takes (glob characters not yet escaped)."""
        raise NotImplementedError


class PrelistedLister(Lister):
    """A table's partition folders as a listing already made gave them (the kept-partition
    index of a declared folder knows them by name: the split loader judges exactly those,
    without a listing of its own — at 100,000 partitions a hundred requests on an object
    store); every other folder (a kept partition's files) through ``inner``.

    ``rels``: each partition folder relative to ``root``, its levels joined by ``/``."""

    def __init__(self, inner: Lister, root: str, rels: list[str]) -> None:
        super().__init__()
        self._inner = inner.fresh()
        self.calls = self._inner.calls
        self.kind = inner.kind
        self._root = root.rstrip("/")
        self._rels = rels
        self._below: Optional[dict[str, list[str]]] = None

    def fresh(self) -> "Lister":
        return PrelistedLister(self._inner, self._root, self._rels)

    def over(self, inner: Lister) -> "PrelistedLister":
        """The same folders, every other listing through ``inner``."""
        return PrelistedLister(inner, self._root, self._rels)

    def _children(self) -> dict[str, list[str]]:
        """Sub-folder names by the folder's path relative to the root ("": the root)."""
        if self._below is None:
            below: dict[str, list[str]] = {}
            if "/" not in "\n".join(self._rels):   # one level: the root's folders
                # (kept in order before sorting: an index's names come sorted, and a sort of
                # sorted names is one pass where a set's order would need a full sort)
                names = list(dict.fromkeys(self._rels))
                names.sort()
                self._below = {"": names}
                return self._below
            for rel in self._rels:
                parent, _, name = rel.rpartition("/")
                while True:
                    names = below.setdefault(parent, [])
                    if names and names[-1] == name:
                        break
                    names.append(name)
                    if not parent:
                        break
                    parent, _, name = parent.rpartition("/")
            for names in below.values():
                if len(names) != len(set(names)):
                    names[:] = sorted(set(names))
                else:
                    names.sort()
            self._below = below
        return self._below

    def names_below(self, folder: str) -> Optional[list[str]]:
        """The names of ``folder``'s partition folders, sorted, or None where it is not a
        folder of the partition levels."""
        path = folder.rstrip("/")
        if path == self._root:
            return self._children().get("")
        if path.startswith(self._root + "/"):
            return self._children().get(path[len(self._root) + 1:])
        return None

    def list(self, folder: str) -> tuple[list[DirEntry], list[FileEntry]]:
        path = folder.rstrip("/")
        if path == self._root:
            rel = ""
        elif path.startswith(self._root + "/"):
            rel = path[len(self._root) + 1:]
        else:
            return self._inner.list(folder)
        names = self._children().get(rel)
        if names is None:
            return self._inner.list(folder)   # a partition folder: its files
        return [DirEntry(path + "/" + n, n) for n in names], []

    def location(self, location: str) -> str:
        return self._inner.location(location)

    def is_dir(self, path: str) -> bool:
        return self._inner.is_dir(path)

    def read_footer(self, path: str, size: int) -> Any:
        return self._inner.read_footer(path, size)

    @property
    def footer_workers(self) -> int:
        return self._inner.footer_workers

    def spark_uri(self, path: str) -> str:
        return self._inner.spark_uri(path)


_NAME = operator.itemgetter(1)      # a DirEntry's name
_PATH = operator.attrgetter("path")


class LocalLister(Lister):
    """``os.scandir`` on local paths (``file:`` URIs are accepted and turned into paths)."""

    kind = "local"

    def location(self, location: str) -> str:
        if not is_local_location(location):
            raise LayoutError(f"location {location!r} is not on the local filesystem: the local "
                              f"lister cannot list it (set spark.dpp.lister=auto or hadoop)")
        if location.startswith("file:"):
            location = unquote(urlparse(location).path)
        return os.path.abspath(location)

    def list(self, folder: str) -> tuple[list[DirEntry], list[FileEntry]]:
        if folder.startswith("file:"):
            folder = unquote(urlparse(folder).path)
        self.calls.add(list_calls=1)
        dirs: list[DirEntry] = []
        files: list[FileEntry] = []
        with os.scandir(folder) as it:
            for e in it:
                name = e.name
                if (not name or name[0] in "._" or name[-1] in "_c") and is_hidden(name):
                    continue   # only names that may be hidden are asked (100,000 a listing)
                if e.is_dir():
                    dirs.append(DirEntry(e.path, name))
                else:
                    st = e.stat()
                    files.append(FileEntry(e.path, st.st_size, st.st_mtime_ns,
                                           (st.st_ino, st.st_ctime_ns)))
        dirs.sort(key=_NAME)
        files.sort(key=_PATH)
        return dirs, files

    def is_dir(self, path: str) -> bool:
        if path.startswith("file:"):
            path = unquote(urlparse(path).path)
        self.calls.add(head_calls=1)
        return os.path.isdir(path)

    def read_footer(self, path: str, size: int) -> Any:
        """The footer alone, read with two ``pread`` calls and parsed from memory: pyarrow's
        reader of the path opens and seeks as for a whole file (TPC-DS catalog_sales' 1,836
        footers at SF10: 1.05 s that way, 0.78 s this way, on one thread)."""
        return read_local_footer(path)

    @property
    def footer_workers(self) -> int:
        # parsing a footer holds the GIL for most of its time: more threads than cores only
        # contend (1,836 footers on 2 cores: 0.56 s on 2-4 threads, 0.83 s on 16)
        return max(2, min(16, 2 * (os.cpu_count() or 1)))

    def spark_uri(self, path: str) -> str:
        return "file://" + path


_MAGIC = b"PAR1"


def read_local_footer(path: str) -> Any:
    """``pyarrow.parquet.FileMetaData`` of a local Parquet file from its tail bytes. A file
    too short for its footer, or without Parquet's trailing magic (an encrypted footer
    included), raises ``OSError`` naming the path, as an unreadable footer does."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if size < 12:
            raise OSError(f"{path}: {size} bytes, too short for a Parquet file")
        tail = os.pread(fd, 8, size - 8)
        length = int.from_bytes(tail[:4], "little")
        if tail[4:] != _MAGIC or length + 12 > size:
            raise OSError(f"{path}: no Parquet footer at its end (magic {tail[4:]!r}, "
                          f"footer length {length} of {size} bytes)")
        footer = os.pread(fd, length + 8, size - 8 - length)
    finally:
        os.close(fd)
    return pq.read_metadata(pa.BufferReader(footer))


# FileStatusProto (hadoop-common's FSProtos.proto) fields this module reads
_FT_DIR, _FT_FILE, _FT_SYMLINK = 1, 2, 3


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7


def _decode_status(msg: bytes) -> tuple[int, str, int, int]:
    """(file type, path, length, modification time in ms) of one ``FileStatusProto``."""
    ftype, path, length, mtime = 0, "", 0, 0
    i, n = 0, len(msg)
    while i < n:
        key, i = _varint(msg, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(msg, i)
            if num == 1:
                ftype = v
            elif num == 3:
                length = v
            elif num == 7:
                mtime = v
        elif wire == 2:
            ln, i = _varint(msg, i)
            if num == 2:
                path = msg[i:i + ln].decode("utf-8")
            i += ln
        elif wire == 5:
            i += 4
        elif wire == 1:
            i += 8
        else:
            raise ValueError(f"unexpected protobuf wire type {wire} in a FileStatus")
    return ftype, path, length, mtime


def _decode_statuses(buf: bytes) -> list[tuple[int, str, int, int]]:
    """``WritableUtils.toByteArray(FileStatus[])``: per entry a 4-byte big-endian length and a
    ``FileStatusProto``; then zero padding (the method returns its buffer's whole backing
    array), which ends the list: no entry is empty (each has a path)."""
    out = []
    i, n = 0, len(buf)
    while i + 4 <= n:
        (ln,) = struct.unpack_from(">i", buf, i)
        if ln <= 0:
            break
        i += 4
        out.append(_decode_status(buf[i:i + ln]))
        i += ln
    return out


class HadoopLister(Lister):
    """Hadoop's ``FileSystem`` through the driver's JVM, configured as Spark reads.

    The Hadoop configuration is the session's (``sessionState.newHadoopConf()``: the
    SparkContext's plus ``spark.hadoop.*`` and the session's SQL settings), taken once per
    lister; ``FileSystem`` instances come from Hadoop's own cache, per scheme and authority.
    """

    kind = "hadoop"

    def __init__(self, spark: Any = None, *, _shared: Optional["HadoopLister"] = None) -> None:
        super().__init__()
        if _shared is not None:  # same JVM handles, own counts
            self.__dict__.update({k: v for k, v in _shared.__dict__.items()
                                  if k not in ("calls", "_statuses")})
            return
        if spark is None:
            raise ValueError("HadoopLister needs a Spark session")
        jspark = spark._jsparkSession
        self._jvm = spark._jvm
        self._gateway = spark.sparkContext._gateway
        self._conf = jspark.sessionState().newHadoopConf()
        self._fs: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()
        self._local = threading.local()
        # a class looked up once: every jvm.a.b.C lookup is itself a round trip
        self._path_class = self._jvm.org.apache.hadoop.fs.Path
        classes = self._gateway.new_array(self._jvm.java.lang.Class, 1)
        classes[0] = self._jvm.java.lang.Class.forName("[Lorg.apache.hadoop.io.Writable;")
        # WritableUtils.toByteArray(Writable...) called by reflection: py4j cannot pass a
        # FileStatus[] where a Writable[] is declared, Java's reflection can
        self._to_bytes = self._jvm.java.lang.Class.forName(
            "org.apache.hadoop.io.WritableUtils").getMethod("toByteArray", classes)

    def fresh(self) -> "HadoopLister":
        return HadoopLister(_shared=self)

    @property
    def statuses(self) -> dict[str, Any]:
        """Folder → its ``FileStatus[]`` (a JVM reference), for leaf folders listed by this
        lister whose every entry is visible."""
        got = self.__dict__.get("_statuses")
        if got is None:
            got = self.__dict__["_statuses"] = {}
        return got

    # ---------------------------------------------------------------- paths
    def location(self, location: str) -> str:
        if is_local_location(location) and not location.startswith("file:"):
            location = "file:" + os.path.abspath(location)
        path = self._path(location)
        fs = self._filesystem(location, path)
        return str(fs.makeQualified(path).toString())

    def _path(self, text: str) -> Any:
        """A Hadoop ``Path`` naming exactly ``text``: ``Path(String)`` is what Spark's reader
        makes of the same string (it quotes ``%``, so a Hive-escaped ``k=a%3Ab`` stays that
        name); a plain absolute path is a ``file:`` one. One py4j call."""
        if text.startswith("/"):
            text = "file:" + text
        if not _has_scheme(text):
            raise LayoutError(f"path {text!r} has no scheme (expected a qualified URI)")
        return self._path_class(text)

    def _filesystem(self, text: str, path: Any) -> Any:
        """Hadoop's FileSystem for the path's scheme and authority (asked once per pair)."""
        u = urlparse(text if not text.startswith("/") else "file:" + text)
        key = (u.scheme.lower(), u.netloc)
        with self._lock:
            fs = self._fs.get(key)
        if fs is None:
            try:
                fs = path.getFileSystem(self._conf)
            except Exception as exc:
                raise LayoutError(f"no Hadoop filesystem for {text!r}: "
                                  f"{_java_message(exc)}") from None
            with self._lock:
                self._fs[key] = fs
        return fs

    def _args(self) -> Any:
        """This thread's one-element ``Object[]`` for the reflective call (made once)."""
        local = self._local
        args = getattr(local, "args", None)
        if args is None:
            args = local.args = self._gateway.new_array(self._jvm.java.lang.Object, 1)
        return args

    # ---------------------------------------------------------------- requests
    def list(self, folder: str) -> tuple[list[DirEntry], list[FileEntry]]:
        path = self._path(folder)
        fs = self._filesystem(folder, path)
        self.calls.add(list_calls=1)
        try:
            statuses = fs.listStatus(path)
            args = self._args()
            args[0] = statuses
            raw = bytes(self._to_bytes.invoke(None, args))
        except Exception as exc:
            raise _os_error(exc, folder) from None
        dirs: list[DirEntry] = []
        files: list[FileEntry] = []
        prefix = folder.rstrip("/") + "/"
        clean = True
        for ftype, p, length, mtime_ms in _decode_statuses(raw):
            name = base_name(p)
            if is_hidden(name):
                clean = False
                continue
            # children are named from the folder as given (a qualified form may differ in
            # spelling, e.g. file:/// vs file:/)
            child = prefix + name
            if ftype == _FT_DIR:
                dirs.append(DirEntry(child, name))
            else:
                files.append(FileEntry(child, length, mtime_ms * 1_000_000))
        if clean and not dirs:
            # Hadoop's own statuses of a leaf folder, exactly what Spark would list there: the
            # handoff gives them to Spark instead of letting it list (and stat) again
            with self._lock:
                self.statuses[folder] = statuses
        dirs.sort(key=lambda d: d.name)
        files.sort(key=lambda f: f.path)
        return dirs, files

    def is_dir(self, path: str) -> bool:
        p = self._path(path)
        fs = self._filesystem(path, p)
        self.calls.add(head_calls=1)
        try:
            return bool(fs.getFileStatus(p).isDirectory())
        except Exception as exc:
            err = _os_error(exc, path)
            if isinstance(err, FileNotFoundError):
                return False
            raise err from None

    def read_footer(self, path: str, size: int) -> Any:
        """Reads the file's tail through Hadoop (two positioned reads) and parses it with
        pyarrow, as a stand-alone footer."""
        import io

        import pyarrow.parquet as pq

        if size < 12:
            raise ValueError(f"{path}: {size} bytes is too small for a Parquet file")
        p = self._path(path)
        fs = self._filesystem(path, p)
        stream = fs.open(p)
        try:
            tail = self._read(stream, size - 8, 8)
            if tail[4:] != b"PAR1":
                raise ValueError(f"{path}: not a Parquet file (no PAR1 magic at the end)")
            (footer_len,) = struct.unpack("<i", tail[:4])
            footer = self._read(stream, size - 8 - footer_len, footer_len)
        finally:
            stream.close()
        return pq.read_metadata(io.BytesIO(b"PAR1" + footer + tail))

    @staticmethod
    def _read(stream: Any, position: int, length: int) -> bytes:
        # py4j copies a byte[] into Python bytes whenever one crosses over, so a buffer cannot
        # be filled in place: seek, then InputStream.readNBytes returns the bytes themselves
        stream.seek(position)
        data = bytes(stream.readNBytes(length))
        if len(data) != length:
            raise EOFError(f"read {len(data)} of {length} bytes at {position}")
        return data

    def spark_uri(self, path: str) -> str:
        return path


def _java_message(exc: Exception) -> str:
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            return f"{java.getClass().getSimpleName()}: {java.getMessage()}"
        except Exception:
            pass
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _os_error(exc: Exception, path: str) -> OSError:
    """A Java exception from a filesystem call as the Python ``OSError`` it means."""
    msg = _java_message(exc)
    java = getattr(exc, "java_exception", None)
    name = ""
    if java is not None:
        try:
            name = str(java.getClass().getName())
        except Exception:
            pass
    if "FileNotFound" in name or "FileNotFound" in msg:
        return FileNotFoundError(2, msg, path)
    if "AccessControl" in name or "AccessDenied" in name or "Permission denied" in msg:
        return PermissionError(13, msg, path)
    return OSError(5, msg, path)
