"""Which lister reads a table's folders (``spark.dpp.lister``), one shared per session.

Kept apart from :mod:`hive_splits.listing` (the listers themselves) so that the pyarrow
lister of a Spark Connect client (:mod:`hive_splits.arrow_fs`), built on the same interface,
is chosen here without :mod:`hive_splits.listing` importing its own subclass.
"""
from __future__ import annotations

import threading
from typing import Any, Optional
from urllib.parse import urlparse

from dpp.core.errors import LayoutError
from dpp.core.remote import is_remote
from hive_splits.arrow_fs import ArrowLister
from hive_splits.listing import LISTER_MODES, HadoopLister, Lister, LocalLister, is_local_location

__all__ = ["lister_for"]


def lister_for(location: str, mode: str = "auto", spark: Any = None,
               cache: Optional[dict] = None) -> Lister:
    """The lister for a table at ``location`` under ``spark.dpp.lister = mode``.

    ``auto``: the local lister for plain paths and ``file:`` URIs, Hadoop's for any other
    scheme. ``cache`` (per session) keeps one Hadoop lister, so its JVM handles are made once.
    """
    if mode not in LISTER_MODES:
        raise LayoutError(f"lister {mode!r} is not one of {', '.join(LISTER_MODES)}")
    if mode == "local" or (mode == "auto" and is_local_location(location)):
        if not is_local_location(location):
            raise LayoutError(f"location {location!r}: spark.dpp.lister=local lists only local "
                              f"paths; use auto or hadoop for this scheme")
        return LocalLister()
    if spark is None:
        raise LayoutError(f"location {location!r} needs Hadoop's FileSystem to be listed, "
                          f"which needs a Spark session")
    if is_remote(spark):
        # Spark Connect: Hadoop's FileSystem is in the server's JVM, out of reach; pyarrow's
        # filesystem on the client, configured from the session's spark.hadoop.* settings
        return _arrow_lister(location, spark, cache)
    if cache is not None:
        with _CACHE_LOCK:
            shared = cache.get("hadoop")
            if shared is None:
                shared = cache["hadoop"] = HadoopLister(spark)
        return shared.fresh()
    return HadoopLister(spark)


_CACHE_LOCK = threading.Lock()


def _arrow_lister(location: str, spark: Any, cache: Optional[dict]) -> Lister:
    """The pyarrow lister for a non-local ``location`` of a Spark Connect session, one per
    scheme and authority in ``cache`` (a fresh count each)."""
    u = urlparse(location)
    slot = ("arrow", u.scheme.lower(), u.netloc)
    with _CACHE_LOCK:
        shared = cache.get(slot) if cache is not None else None
    if shared is None:
        from dpp.core.spark_compat import conf_items

        shared = ArrowLister.for_location(location, conf_items(spark))
        if cache is not None:
            with _CACHE_LOCK:
                cache[slot] = shared
    return shared.fresh()
