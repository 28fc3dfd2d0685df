"""A lister that needs no JVM: ``pyarrow.fs`` on the client, for Spark Connect sessions.

On Spark Connect the driver's JVM (and Hadoop's ``FileSystem`` in it) is on the server, out of
reach of this process; the split loader still lists from the client. Local paths keep the local
lister; ``s3://``/``s3a://``, ``gs://``, ``abfs(s)://`` and ``hdfs://`` go through the matching
``pyarrow.fs`` filesystem, configured from the session's ``spark.hadoop.*`` settings where they
map one to one (:func:`arrow_filesystem`). A setting that has no pyarrow counterpart (an
OAuth or custom credentials provider, a key file pyarrow cannot be given) is a ``ConfigError``
naming the key and the path, never a silent fall back to other credentials: the loader would
then list with another identity than Spark reads with.

Paths are kept as the URIs the table's location uses (``s3a://bucket/t/k=v``), so Spark's
reader gets them back unchanged; only calls into pyarrow use its own form (``bucket/t/k=v``).
"""
from __future__ import annotations

import threading
from typing import Any, Mapping, Optional
from urllib.parse import urlparse

from dpp.core.errors import ConfigError, LayoutError
from hive_splits.listing import DirEntry, FileEntry, Lister
from hive_splits.naming import is_hidden

__all__ = ["ArrowLister", "arrow_filesystem", "ARROW_SCHEMES"]

ARROW_SCHEMES = ("s3", "s3a", "s3n", "gs", "abfs", "abfss", "hdfs")
_H = "spark.hadoop."
_S3_PROVIDERS_OK = ("org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
                    "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider",
                    "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider")


def _bool(conf: Mapping[str, str], key: str, default: bool) -> bool:
    raw = conf.get(key)
    return default if raw is None else str(raw).strip().lower() == "true"


def _s3(conf: Mapping[str, str], bucket: str, where: str) -> Any:
    from pyarrow import fs

    def get(name: str) -> tuple[Optional[str], str]:
        # Hadoop's per-bucket settings win over the general ones
        for key in (f"{_H}fs.s3a.bucket.{bucket}.{name}", f"{_H}fs.s3a.{name}"):
            if conf.get(key):
                return str(conf[key]).strip(), key
        return None, f"{_H}fs.s3a.{name}"

    provider, pkey = get("aws.credentials.provider")
    anonymous = False
    if provider:
        names = [p.strip() for p in provider.split(",") if p.strip()]
        if any(p not in _S3_PROVIDERS_OK for p in names):
            raise ConfigError(f"{pkey}={provider!r}: listing {where} from a Spark Connect client "
                              f"maps only access/secret keys, session tokens and anonymous "
                              f"access to pyarrow's S3FileSystem")
        anonymous = names == ["org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"]
    access, akey = get("access.key")
    secret, skey = get("secret.key")
    if bool(access) != bool(secret):
        missing = skey if access else akey
        raise ConfigError(f"{missing}: needed with {akey if access else skey} to list {where} "
                          f"from a Spark Connect client")
    token, _ = get("session.token")
    endpoint, _ = get("endpoint")
    region, _ = get("endpoint.region")
    ssl, _ = get("connection.ssl.enabled")
    path_style, _ = get("path.style.access")
    kwargs: dict[str, Any] = {"anonymous": anonymous}
    if access:
        kwargs.update(access_key=access, secret_key=secret, session_token=token)
    if endpoint:
        scheme = "https" if (ssl or "true").lower() == "true" else "http"
        kwargs["endpoint_override"] = endpoint if "://" in endpoint else f"{scheme}://{endpoint}"
    if region:
        kwargs["region"] = region
    if path_style is not None:
        kwargs["force_virtual_addressing"] = path_style.lower() != "true"
    return fs.S3FileSystem(**kwargs)


def _gcs(conf: Mapping[str, str], where: str) -> Any:
    from pyarrow import fs

    for key in (f"{_H}google.cloud.auth.service.account.json.keyfile",
                f"{_H}fs.gs.auth.service.account.json.keyfile"):
        if conf.get(key):
            raise ConfigError(f"{key}: pyarrow's GcsFileSystem takes no key file; to list "
                              f"{where} from a Spark Connect client set "
                              f"GOOGLE_APPLICATION_CREDENTIALS in the client's environment "
                              f"to the same file and unset this key for the client")
    auth = str(conf.get(f"{_H}fs.gs.auth.type", "")).upper()
    return fs.GcsFileSystem(anonymous=auth == "UNAUTHENTICATED")


def _azure(conf: Mapping[str, str], account_host: str, where: str) -> Any:
    from pyarrow import fs

    account = account_host.split(".", 1)[0]
    auth_key = f"{_H}fs.azure.account.auth.type.{account_host}"
    auth = str(conf.get(auth_key, conf.get(f"{_H}fs.azure.account.auth.type", "SharedKey")))
    if auth != "SharedKey":
        raise ConfigError(f"{auth_key}={auth!r}: listing {where} from a Spark Connect client "
                          f"maps only SharedKey (fs.azure.account.key.<account>) to pyarrow's "
                          f"AzureFileSystem")
    key = conf.get(f"{_H}fs.azure.account.key.{account_host}")
    return fs.AzureFileSystem(account_name=account, account_key=key or None)


def _hdfs(host: str, port: Optional[int], where: str) -> Any:
    from pyarrow import fs

    try:
        return fs.HadoopFileSystem(host or "default", port or 0)
    except Exception as exc:
        raise ConfigError(f"{where}: pyarrow's HadoopFileSystem cannot connect from this "
                          f"client ({exc}); it needs libhdfs, JAVA_HOME and the Hadoop "
                          f"CLASSPATH on the client") from None


def arrow_filesystem(location: str, conf: Mapping[str, str]) -> Any:
    """The ``pyarrow.fs`` filesystem for ``location``, configured from ``conf`` (the session's
    settings, ``spark.hadoop.*`` as Spark reads them). ``ConfigError`` where they do not map."""
    u = urlparse(location)
    scheme = u.scheme.lower()
    if scheme in ("s3", "s3a", "s3n"):
        return _s3(conf, u.netloc, location)
    if scheme == "gs":
        return _gcs(conf, location)
    if scheme in ("abfs", "abfss"):
        if "@" not in u.netloc:
            raise LayoutError(f"location {location!r}: expected abfs[s]://container@account"
                              f".dfs.core.windows.net/path")
        return _azure(conf, u.netloc.split("@", 1)[1], location)
    if scheme == "hdfs":
        return _hdfs(u.hostname or "", u.port, location)
    raise ConfigError(f"location {location!r}: on Spark Connect the loader lists from the "
                      f"client, and scheme {scheme!r} has no pyarrow filesystem here "
                      f"(supported: local paths, {', '.join(ARROW_SCHEMES)}); "
                      f"spark.dpp.enabled=false leaves this table to Spark")


class ArrowLister(Lister):
    """Lists one filesystem through ``pyarrow.fs``; paths are the table's URIs."""

    kind = "arrow"

    def __init__(self, filesystem: Any = None, *, _shared: Optional["ArrowLister"] = None
                 ) -> None:
        super().__init__()
        self._fs = _shared._fs if _shared is not None else filesystem
        self._lock = threading.Lock()

    @classmethod
    def for_location(cls, location: str, conf: Mapping[str, str]) -> "ArrowLister":
        return cls(arrow_filesystem(location, conf))

    def fresh(self) -> "ArrowLister":
        return ArrowLister(_shared=self)

    @staticmethod
    def _arrow_path(uri: str) -> str:
        """``scheme://authority/path`` as pyarrow names it: ``bucket/path`` on object stores,
        ``container/path`` on Azure, ``/path`` on HDFS, the path itself without a scheme."""
        u = urlparse(uri)
        scheme = u.scheme.lower()
        path = u.path   # as stored: a Hive-escaped folder name (k=a%3Ab) is its literal key
        if scheme in ("s3", "s3a", "s3n", "gs"):
            return (u.netloc + path).rstrip("/")
        if scheme in ("abfs", "abfss"):
            return (u.netloc.split("@", 1)[0] + path).rstrip("/")
        if scheme in ("hdfs", "file"):
            return path.rstrip("/") or "/"
        return uri.rstrip("/")

    def location(self, location: str) -> str:
        return location.rstrip("/")

    def list(self, folder: str) -> tuple[list[DirEntry], list[FileEntry]]:
        from pyarrow import fs

        self.calls.add(list_calls=1)
        try:
            infos = self._fs.get_file_info(fs.FileSelector(self._arrow_path(folder),
                                                           allow_not_found=False))
        except FileNotFoundError:
            raise
        except PermissionError:
            raise
        except OSError as exc:
            text = str(exc)
            if "not found" in text.lower() or "does not exist" in text.lower():
                raise FileNotFoundError(f"{folder}: {text}") from None
            if "denied" in text.lower() or "forbidden" in text.lower():
                raise PermissionError(f"{folder}: {text}") from None
            raise
        base = folder.rstrip("/")
        dirs: list[DirEntry] = []
        files: list[FileEntry] = []
        for info in infos:
            name = info.base_name
            if is_hidden(name):
                continue
            path = base + "/" + name
            if info.type == fs.FileType.Directory:
                dirs.append(DirEntry(path, name))
            elif info.type == fs.FileType.File:
                files.append(FileEntry(path, int(info.size or 0), int(info.mtime_ns or 0)))
        dirs.sort(key=lambda d: d.name)
        files.sort(key=lambda f: f.path)
        return dirs, files

    def is_dir(self, path: str) -> bool:
        from pyarrow import fs

        self.calls.add(head_calls=1)
        return self._fs.get_file_info(self._arrow_path(path)).type == fs.FileType.Directory

    def read_footer(self, path: str, size: int) -> Any:
        import pyarrow.parquet as pq

        with self._fs.open_input_file(self._arrow_path(path)) as f:
            return pq.read_metadata(f)

    def spark_uri(self, path: str) -> str:
        return path
