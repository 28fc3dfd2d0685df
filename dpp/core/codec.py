"""The wire codec for domains: versioned, size-bounded, data-only bytes.

Frame: ``b"DPPD"`` magic, one version byte, one flags byte (bit 0: zlib), a 4-byte big-endian
payload length, the payload (UTF-8 JSON, maybe compressed), and a CRC-32 of the payload.
The decoder never executes anything: JSON parsing (deep nesting ends in RecursionError, caught) plus strict validation in
:meth:`Domain.from_data`; every failure, whatever its cause, is one :class:`CodecError`.
It sits beside the algebra (and imports only it) so that collectors, the coordinator and the
session share one format without depending on each other.
"""
from __future__ import annotations

import json
import struct
import zlib
from typing import Any, Union

from dpp.core.domain import Domain, TupleDomain
from dpp.core.errors import CodecError

__all__ = ["encode", "decode", "encode_domain", "decode_domain", "encode_tuple_domain",
           "decode_tuple_domain", "CODEC_VERSION", "DEFAULT_MAX_BYTES", "CodecError"]

MAGIC = b"DPPD"
CODEC_VERSION = 1
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
_HEADER = struct.Struct(">4sBBI")
_TRAILER = struct.Struct(">I")
_FLAG_ZLIB = 1
_COMPRESS_OVER = 512


def encode(obj: Union[Domain, TupleDomain], max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """Domain or TupleDomain → bytes; a result above ``max_bytes`` is a CodecError."""
    if isinstance(obj, Domain):
        data: dict[str, Any] = {"d": obj.to_data()}
    elif isinstance(obj, TupleDomain):
        data = {"t": obj.to_data()}
    else:
        raise CodecError(f"can only encode Domain or TupleDomain, got {type(obj).__name__}")
    payload = json.dumps(data, separators=(",", ":"), allow_nan=False).encode("utf-8")
    flags = 0
    if len(payload) > _COMPRESS_OVER:
        packed = zlib.compress(payload, 6)
        if len(packed) < len(payload):
            payload, flags = packed, _FLAG_ZLIB
    out = _HEADER.pack(MAGIC, CODEC_VERSION, flags, len(payload)) + payload + \
        _TRAILER.pack(zlib.crc32(payload))
    if len(out) > max_bytes:
        raise CodecError(f"encoded domain is {len(out)} bytes, over the bound of {max_bytes}")
    return out


def decode(data: bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> Union[Domain, TupleDomain]:
    """bytes → Domain or TupleDomain; anything but a well-formed frame is a CodecError."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise CodecError(f"expected bytes, got {type(data).__name__}")
    data = bytes(data)
    if len(data) > max_bytes:
        raise CodecError(f"payload of {len(data)} bytes is over the bound of {max_bytes}")
    if len(data) < _HEADER.size + _TRAILER.size:
        raise CodecError(f"truncated: {len(data)} bytes is shorter than a frame")
    magic, version, flags, length = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise CodecError("not an encoded domain (bad magic)")
    if version != CODEC_VERSION:
        raise CodecError(f"unsupported codec version {version}; this reader knows "
                         f"{CODEC_VERSION}")
    if flags & ~_FLAG_ZLIB:
        raise CodecError(f"unknown flags {flags:#x}")
    if _HEADER.size + length + _TRAILER.size != len(data):
        raise CodecError(f"length field says {length} payload bytes, frame holds "
                         f"{len(data) - _HEADER.size - _TRAILER.size}")
    payload = data[_HEADER.size:_HEADER.size + length]
    (crc,) = _TRAILER.unpack_from(data, _HEADER.size + length)
    if zlib.crc32(payload) != crc:
        raise CodecError("checksum mismatch: the payload is corrupt")
    if flags & _FLAG_ZLIB:
        try:
            d = zlib.decompressobj()
            payload = d.decompress(payload, max_bytes)
            if d.unconsumed_tail or not d.eof or d.unused_data:
                raise CodecError(f"decompressed payload is over the bound of {max_bytes} bytes, "
                                 f"truncated, or followed by stray bytes")
        except zlib.error as exc:
            raise CodecError(f"compressed payload is corrupt: {exc}") from None
    try:
        text = payload.decode("utf-8")
        obj = json.loads(text, parse_constant=_reject_constant)
        if not isinstance(obj, dict) or len(obj) != 1:
            raise CodecError("payload must be an object with one key, 'd' or 't'")
        if "d" in obj:
            return Domain.from_data(obj["d"])
        if "t" in obj:
            return TupleDomain.from_data(obj["t"])
        raise CodecError("payload must hold 'd' (domain) or 't' (tuple domain)")
    except CodecError:
        raise
    except Exception as exc:  # every other failure is the input's fault: one error type
        raise CodecError(f"malformed payload: {type(exc).__name__}: {exc}") from None


def encode_domain(d: Domain, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    if not isinstance(d, Domain):
        raise CodecError(f"expected a Domain, got {type(d).__name__}")
    return encode(d, max_bytes)


def decode_domain(data: bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> Domain:
    out = decode(data, max_bytes)
    if not isinstance(out, Domain):
        raise CodecError("payload holds a tuple domain where a domain was expected")
    return out


def encode_tuple_domain(t: TupleDomain, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    if not isinstance(t, TupleDomain):
        raise CodecError(f"expected a TupleDomain, got {type(t).__name__}")
    return encode(t, max_bytes)


def decode_tuple_domain(data: bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> TupleDomain:
    out = decode(data, max_bytes)
    if not isinstance(out, TupleDomain):
        raise CodecError("payload holds a domain where a tuple domain was expected")
    return out


def _reject_constant(name: str) -> Any:
    raise CodecError(f"non-standard JSON constant {name}")

