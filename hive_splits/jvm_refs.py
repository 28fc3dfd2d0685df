"""JVM classes and Scala objects by name, looked up once per gateway.

Through py4j every segment of ``jvm.org.apache.spark.sql.catalyst.TableIdentifier`` is a round
trip of its own (a reflection lookup: ~0.25 ms each on a 2-core machine), so naming a class in
a per-query path costs 1-2 ms every time it runs, and a catalog query named a few dozen of them
(partition source, metastore counters, table identifiers, the handoff). The class object itself
is a handle that stays valid as long as the JVM, so it is kept here per JVM view.
"""
from __future__ import annotations

import threading
import time
from typing import Any

__all__ = ["jvm_class", "scala_object", "jvm_cached", "jvm_static", "forget_misses", "jvm_text"]

_LOCK = threading.Lock()
# (id of the JVM view, name) -> (the view, the handle): the view is kept so its id is not reused
_CACHE: dict[tuple[int, str], tuple[Any, Any]] = {}

# py4j writes a reply through an 8 KiB buffered writer on a socket with Nagle's algorithm on:
# a longer reply leaves the JVM in two writes and the second waits for Python's delayed ACK,
# ~40 ms on Linux (py4j issue 516, in every py4j a Spark line ships). 2,600 characters are at
# most 7,800 bytes in UTF-8 (a backslash or newline py4j escapes is 2 bytes, like a pair half),
# so each piece is one write. Beyond ~40 pieces their round trips cost what the stall does.
_PIECE_CHARS = 2600
# how long jvm_static keeps a class or method the JVM did not have
_MISS_SECONDS = 60.0
_MOST_PIECES = 40


def jvm_class(jvm: Any, name: str) -> Any:
    """The py4j handle of the class (or package) ``name`` in ``jvm``, e.g.
    ``jvm_class(spark._jvm, "scala.Option").empty()``."""
    key = (id(jvm), name)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is jvm:
        return hit[1]
    obj = jvm
    for part in name.split("."):
        obj = getattr(obj, part)
    with _LOCK:
        _CACHE[key] = (jvm, obj)
    return obj


def scala_object(jvm: Any, name: str) -> Any:
    """The singleton of the Scala ``object`` ``name`` (its ``MODULE$``), e.g.
    ``scala_object(jvm, "org.apache.spark.sql.catalyst.optimizer.ConstantFolding")``."""
    key = (id(jvm), name + "$.MODULE$")
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is jvm:
        return hit[1]
    obj = getattr(jvm_class(jvm, name + "$"), "MODULE$")
    with _LOCK:
        _CACHE[key] = (jvm, obj)
    return obj


def jvm_cached(jvm: Any, key: str, make: Any) -> Any:
    """``make()``'s JVM object, made once per JVM view and kept under ``key`` (for objects
    that are safe to share between threads once built, such as a configured Jackson mapper,
    whose serializers are then introspected once, not per call)."""
    ck = (id(jvm), "cached:" + key)
    hit = _CACHE.get(ck)
    if hit is not None and hit[0] is jvm:
        return hit[1]
    obj = make()
    with _LOCK:
        _CACHE[ck] = (jvm, obj)
    return obj


def jvm_static(jvm: Any, class_name: str, method: str) -> Any:
    """The py4j handle of the static method ``method`` of class ``class_name``, looked up once
    per JVM view (py4j asks the JVM what a class's attribute is on every access: one more
    round trip per call), or None where the JVM has no such class or method. A miss is asked
    again after :data:`_MISS_SECONDS` (a jar loaded into the running driver later)."""
    ck = (id(jvm), f"static:{class_name}#{method}")
    hit = _CACHE.get(ck)
    if hit is not None and hit[0] is jvm:
        member, at = hit[1]
        if member is not None or time.monotonic() - at < _MISS_SECONDS:
            return member
    from py4j.java_gateway import JavaClass

    cls = jvm
    for part in class_name.split("."):   # not jvm_class: it would keep a miss for good
        cls = getattr(cls, part)
    try:
        member = getattr(cls, method) if isinstance(cls, JavaClass) else None
    except Exception:   # py4j: no such member in the JVM
        member = None
    with _LOCK:
        _CACHE[ck] = (jvm, (member, time.monotonic()))
    return member


def forget_misses(jvm: Any) -> None:
    """Drops what :func:`jvm_static` found missing in ``jvm`` (called where a jar has just
    been added to the running driver: its classes are there now)."""
    with _LOCK:
        for ck in [k for k, (view, v) in _CACHE.items()
                   if k[0] == id(jvm) and k[1].startswith("static:") and v[0] is None]:
            del _CACHE[ck]


def jvm_text(chars: Any) -> str:
    """The text of a JVM ``java.lang.StringBuilder`` / ``StringBuffer`` handle, read in pieces
    that py4j replies with in one write each (see ``_PIECE_CHARS``): a partition list of 40 KB
    costs a dozen loopback round trips instead of a 40 ms stall. Text no longer than one
    piece, or too long for pieces to pay, comes in one call. A cut never splits a surrogate
    pair (py4j would send each half as ``?``)."""
    n = int(chars.length())
    if n <= _PIECE_CHARS or n > _PIECE_CHARS * _MOST_PIECES:
        return str(chars.toString())
    pairs = int(chars.codePointCount(0, n)) != n   # else any cut is safe
    out = []
    i = 0
    while i < n:
        j = min(n, i + _PIECE_CHARS)
        if j < n and pairs and int(chars.codePointAt(j - 1)) > 0xFFFF:
            j -= 1   # j - 1 holds a pair's first half: cut before it
        out.append(str(chars.substring(i, j)))
        i = j
    return "".join(out)
