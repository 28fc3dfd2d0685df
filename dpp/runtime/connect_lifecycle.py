"""What dpp keeps on the server for one Spark Connect session, and when it goes away: the
temporary views whose DataFrames are garbage (dropped at the next action, never from a
garbage-collection callback, which can find a lock of the client's own held), and dpp's
``cloneSession()`` clients (ended with the user's session and at exit, within
:data:`END_TIMEOUT`). Below :mod:`dpp.frontends.connect.frames` and :mod:`dpp.runtime.connect_handoff`, which
both hold a session's lifecycle."""
from __future__ import annotations

import atexit
import collections
import logging
import threading
import time
import weakref
from typing import Any, Optional

__all__ = ["ConnectLifecycle", "lifecycle_of", "END_TIMEOUT", "GUARD"]

log = logging.getLogger(__name__)

# how long ending dpp's clones may take at spark.stop() and at exit: a dead server must not
# hold the process (the client's own retries wait minutes)
END_TIMEOUT = 2.0

# ====================================================================== lifecycle

GUARD = threading.local()


class ConnectLifecycle:
    """What dpp keeps on the server for one Connect session, and when it goes away.

    * ``dead_views``: temporary views whose DataFrame is garbage. Finalizers only append here
      (a deque append takes no lock a finalizer could find held); :meth:`drain` drops them
      at the next action or dpp call on the session.
    * ``rewritten``: the SQL text of live rewritten ``spark.sql`` DataFrames → the user's
      text, so commands send the user's (:meth:`ConnectFrames._restore_sql`).
    * ``clones``: dpp's ``cloneSession()`` clients. They end with the user's session
      (``spark.stop()``, wrapped here) and at interpreter exit, each within
      :data:`END_TIMEOUT`; the client's own exit handler of a clone (which calls the server
      with retries lasting minutes) is unregistered in favour of that.
    """

    def __init__(self, spark: Any) -> None:
        self._spark = weakref.ref(spark)
        self.dead_views: "collections.deque[str]" = collections.deque()
        self.rewritten: dict[str, str] = {}
        self.clones: list[Any] = []
        self._lock = threading.Lock()
        self._ended = False
        original = vars(spark).get("stop")
        lifecycle = self

        def stop(*args: Any, **kwargs: Any) -> Any:
            lifecycle.end()
            fn = original if original is not None else type(spark).stop.__get__(spark)
            return fn(*args, **kwargs)

        stop.dpp_lifecycle = self  # type: ignore[attr-defined]
        spark.stop = stop
        atexit.register(self._at_exit)

    # ------------------------------------------------------------------ views
    def queue_views(self, names: Any) -> None:
        """From a finalizer: remember names to drop later. No RPC, no lock."""
        self.dead_views.extend(names)

    def drain(self) -> None:
        """Drops the queued views (a drop is itself an action: not re-entered)."""
        if getattr(GUARD, "draining", False) or not self.dead_views:
            return
        spark = self._spark()
        if spark is None or self._ended:
            return
        GUARD.draining = True
        try:
            while True:
                try:
                    name = self.dead_views.popleft()
                except IndexError:
                    return
                try:
                    spark.catalog.dropTempView(name)
                except Exception:  # the session may be closed
                    log.debug("dropping %s failed", name, exc_info=True)
        finally:
            GUARD.draining = False

    # ------------------------------------------------------------------ clones
    def add_clone(self, sib: Any) -> None:
        """A clone dpp made: ended with the user's session, not by the client's exit hook."""
        try:
            atexit.unregister(sib.client._on_exit)
        except Exception:  # another client build: its hook stays
            log.debug("no exit hook to take over", exc_info=True)
        with self._lock:
            self.clones.append(sib)

    def end_clones(self, clones: Optional[list[Any]] = None,
                   timeout: float = END_TIMEOUT) -> None:
        """Releases ``clones`` (default: all) server-side and closes their channels, in
        parallel, giving up on the release after ``timeout`` seconds."""
        with self._lock:
            chosen = list(self.clones) if clones is None else [c for c in clones
                                                               if c in self.clones]
            self.clones = [c for c in self.clones if c not in chosen]
        _end_clients([c.client for c in chosen], timeout)

    def end(self) -> None:
        """The user's session ends: clones end; queued views go with the server session."""
        if self._ended:
            return
        self.end_clones()
        self.dead_views.clear()
        self.rewritten.clear()
        self._ended = True
        try:
            atexit.unregister(self._at_exit)
        except Exception:  # pragma: no cover
            pass

    def _at_exit(self) -> None:
        if self._ended:
            return
        spark = self._spark()
        if spark is not None and self.dead_views and not _closed(spark):
            t = threading.Thread(target=self.drain, name="dpp-drop-views", daemon=True)
            t.start()
            t.join(END_TIMEOUT / 2)
        self.end_clones(timeout=END_TIMEOUT / 2)
        self._ended = True


def _closed(spark: Any) -> bool:
    try:
        return bool(spark.is_stopped)
    except Exception:
        return True


def _end_clients(clients: list[Any], timeout: float) -> None:
    """Each client's server session released (best effort, on a daemon thread, bounded by
    ``timeout`` in all) and its channel closed: a dead server cannot hold the caller."""
    def release(c: Any) -> None:
        try:
            c.release_session()
        except Exception:
            log.debug("releasing a dpp clone failed", exc_info=True)

    threads = []
    for c in clients:
        if getattr(c, "is_closed", True):
            continue
        t = threading.Thread(target=release, args=(c,), name="dpp-end-clone", daemon=True)
        t.start()
        threads.append(t)
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    for c in clients:
        try:
            c._closed = True
            c._channel.close()
        except Exception:
            log.debug("closing a dpp clone failed", exc_info=True)


_LIFECYCLE_LOCK = threading.Lock()


def lifecycle_of(spark: Any) -> ConnectLifecycle:
    """The Connect session's :class:`ConnectLifecycle` (made, and ``stop`` wrapped, once)."""
    got = vars(spark).get("_dpp_lifecycle")
    if got is not None:
        return got
    with _LIFECYCLE_LOCK:
        got = vars(spark).get("_dpp_lifecycle")
        if got is None:
            got = ConnectLifecycle(spark)
            spark._dpp_lifecycle = got
        return got


