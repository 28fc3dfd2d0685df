"""Spark's bucketing, reproduced: which bucket file a join key's rows live in.

A table written with ``bucketBy(n, col)`` (``CLUSTERED BY (col) INTO n BUCKETS``) puts a row
with value ``v`` in bucket ``pmod(hash(v), n)`` — Spark's ``Murmur3Hash`` expression with seed
42 (``HashPartitioning.partitionIdExpression``) — and names each file after its bucket
(``part-00000-<uuid>_00003.c000.snappy.parquet``: bucket 3; ``BucketingUtils.getBucketId``).
Spark prunes buckets only from literals in the query; given a dynamic filter's values, the
split loader keeps only the files of the buckets those values hash to.

The hash must equal Spark's for every type, or rows are lost: this is
``org.apache.spark.unsafe.hash.Murmur3_x86_32`` and catalyst's ``Murmur3HashFunction``
transcribed — ints, dates, booleans, bytes and shorts through ``hashInt``; longs and
timestamps (microseconds) through ``hashLong``; decimals of precision up to 18 through
``hashLong`` of the unscaled value, wider ones through ``hashUnsafeBytes`` of the unscaled
BigInteger's two's-complement bytes; strings through ``hashUnsafeBytes`` of their UTF-8 bytes
(Spark's legacy tail: each trailing byte mixed alone, sign-extended); doubles and floats with
-0.0 as 0.0; NULL leaves the seed (hash 42). ``tests/test_buckets.py`` checks it against Spark.
"""
from __future__ import annotations

import datetime as dt
import decimal
import math
import re
import struct
from dataclasses import dataclass
from typing import Any, Optional

from dpp.core.domain import DataType, Domain

__all__ = ["BucketSpec", "SEED", "spark_hash", "bucket_id", "bucket_of_file", "buckets_for",
           "MAX_HASHED_VALUES"]

SEED = 42
# A value set larger than this is not hashed value by value (it would cost more than it saves
# and such a set rarely misses a bucket anyway): every bucket is kept
MAX_HASHED_VALUES = 100_000

_C1 = 0xCC9E2D51
_C2 = 0x1B873593
_M32 = 0xFFFFFFFF
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_DAY = dt.date(1970, 1, 1).toordinal()
# BucketingUtils.bucketedFileName: "<anything>_<digits>" optionally followed by ".<anything>"
_BUCKET_FILE = re.compile(r".*_(\d+)(?:\..*)?$")


@dataclass(frozen=True)
class BucketSpec:
    """A table's bucketing as Spark's catalog records it."""

    num_buckets: int
    columns: tuple[str, ...]
    sort_columns: tuple[str, ...] = ()


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _mix_k1(k1: int) -> int:
    k1 = (k1 * _C1) & _M32
    k1 = _rotl(k1, 15)
    return (k1 * _C2) & _M32


def _mix_h1(h1: int, k1: int) -> int:
    h1 ^= k1
    h1 = _rotl(h1, 13)
    return (h1 * 5 + 0xE6546B64) & _M32


def _fmix(h1: int, length: int) -> int:
    h1 ^= length
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _M32
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _M32
    h1 ^= h1 >> 16
    return h1


def _signed(h: int) -> int:
    return h - (1 << 32) if h & 0x80000000 else h


def _hash_int(v: int, seed: int) -> int:
    return _fmix(_mix_h1(seed & _M32, _mix_k1(v & _M32)), 4)


def _hash_long(v: int, seed: int) -> int:
    v &= 0xFFFFFFFFFFFFFFFF
    h1 = _mix_h1(seed & _M32, _mix_k1(v & _M32))
    h1 = _mix_h1(h1, _mix_k1(v >> 32))
    return _fmix(h1, 8)


def _hash_bytes(b: bytes, seed: int) -> int:
    """``Murmur3_x86_32.hashUnsafeBytes``: little-endian words, then each tail byte alone."""
    n = len(b)
    aligned = n - n % 4
    h1 = seed & _M32
    for i in range(0, aligned, 4):
        h1 = _mix_h1(h1, _mix_k1(int.from_bytes(b[i:i + 4], "little")))
    for i in range(aligned, n):
        byte = b[i] - 256 if b[i] > 127 else b[i]       # Java's byte is signed
        h1 = _mix_h1(h1, _mix_k1(byte & _M32))
    return _fmix(h1, n)


def _java_bigint_bytes(v: int) -> bytes:
    """``BigInteger.toByteArray()``: minimal two's-complement, big-endian."""
    length = (v + (v < 0)).bit_length() // 8 + 1
    return v.to_bytes(length, "big", signed=True)


def spark_hash(value: Any, dtype: DataType) -> int:
    """Spark's ``hash(value)`` (a signed 32-bit int) for one value of ``dtype``."""
    return _signed(_hash(value, dtype, SEED))


def _hash(value: Any, t: DataType, seed: int) -> int:
    if value is None:
        return seed & _M32
    n = t.name
    if n in ("tinyint", "smallint", "int"):
        return _hash_int(int(value), seed)
    if n == "bigint":
        return _hash_long(int(value), seed)
    if n == "boolean":
        return _hash_int(1 if value else 0, seed)
    if n == "date":
        return _hash_int(value.toordinal() - _EPOCH_DAY, seed)
    if n in ("timestamp", "timestamp_ntz"):
        v = value
        if v.tzinfo is not None:
            v = v.astimezone(dt.timezone.utc).replace(tzinfo=None)
        delta = v - _EPOCH
        return _hash_long((delta.days * 86_400 + delta.seconds) * 1_000_000
                          + delta.microseconds, seed)
    if n == "string":
        return _hash_bytes(str(value).encode("utf-8", "surrogatepass"), seed)
    if n == "decimal":
        with decimal.localcontext() as ctx:   # the default 28 digits would round 38-digit values
            ctx.prec = 100
            unscaled = int(decimal.Decimal(value).scaleb(t.scale))  # exact: quantized to scale
        if t.precision is not None and t.precision <= 18:
            return _hash_long(unscaled, seed)
        return _hash_bytes(_java_bigint_bytes(unscaled), seed)
    if n == "float":
        f = float(value)
        if f == 0.0:
            f = 0.0
        bits = 0x7FC00000 if math.isnan(f) else struct.unpack("<i", struct.pack("<f", f))[0]
        return _hash_int(bits, seed)
    if n == "double":
        f = float(value)
        if f == 0.0:
            f = 0.0
        bits = (0x7FF8000000000000 if math.isnan(f)
                else struct.unpack("<q", struct.pack("<d", f))[0])
        return _hash_long(bits, seed)
    raise ValueError(f"no Spark hash for type {t}")


def bucket_id(value: Any, dtype: DataType, num_buckets: int) -> int:
    """Spark's bucket of a row whose (single) bucket column holds ``value``:
    ``pmod(hash(value), num_buckets)``."""
    if num_buckets < 1:
        raise ValueError(f"num_buckets must be >= 1, got {num_buckets}")
    return spark_hash(value, dtype) % num_buckets      # Python's % is pmod for n > 0


def bucket_of_file(file_name: str) -> Optional[int]:
    """The bucket id Spark wrote into a bucketed file's name; None when there is none."""
    m = _BUCKET_FILE.match(file_name)
    return int(m.group(1)) if m else None


def buckets_for(domain: Domain, spec_type: DataType, num_buckets: int
                ) -> Optional[frozenset[int]]:
    """Every bucket a row allowed by ``domain`` can be in; None when that cannot be said (a
    range, a bloom filter, ALL, a type mismatch, a value that cannot be hashed): keep them all.

    Sound by construction: a bucket is left out only when no value the domain allows hashes
    to it, NULL included when the domain allows NULL.
    """
    if domain.type != spec_type:
        return None
    out: set[int] = set()
    if domain.null_allowed:
        out.add(bucket_id(None, spec_type, num_buckets))
    if domain.value_set.empty:
        return frozenset(out)
    count = domain.value_count()
    if count is None or count > MAX_HASHED_VALUES:
        return None
    values = domain.discrete_values()
    if values is None:
        return None
    try:
        for v in values:
            out.add(bucket_id(v, spec_type, num_buckets))
            if len(out) == num_buckets:
                break
    except (ValueError, TypeError, ArithmeticError, AttributeError):
        return None
    return frozenset(out)
