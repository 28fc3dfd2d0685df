"""The wire codec: encode → decode is the identity, and the decoder raises only CodecError.

Hostile input comes in three layers: random bytes, mutations of valid frames (bit flips,
truncation, extension, length fields), and well-framed payloads (right length and checksum)
that carry malformed JSON, so the fuzzing reaches the validation behind the frame checks.
"""
from __future__ import annotations

import base64
import json
import struct
import tracemalloc
import zlib
from typing import Any, Optional, Union

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpp.core import codec
from dpp.core.codec import (CODEC_VERSION, decode, decode_domain, decode_tuple_domain, encode,
                       encode_domain, encode_tuple_domain)
from dpp.core.domain import DOUBLE, INT, STRING, Domain, TupleDomain, decimal_type
from dpp.core.errors import CodecError, DomainError
from tests.budget import LAW_EXAMPLES
from tests.domain_strategies import any_domains, tuple_domains, typed

LAW = settings(max_examples=LAW_EXAMPLES, deadline=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
_HEADER = struct.Struct(">4sBBI")


def frame(payload: bytes, compress: bool = False, version: int = CODEC_VERSION) -> bytes:
    """A well-formed frame (right length and checksum) around any payload bytes."""
    flags = 0
    if compress:
        payload, flags = zlib.compress(payload), 1
    return _HEADER.pack(b"DPPD", version, flags, len(payload)) + payload + \
        struct.pack(">I", zlib.crc32(payload))


def frame_json(obj: Any, compress: bool = False) -> bytes:
    return frame(json.dumps(obj).encode("utf-8"), compress)


def decoded_or_codec_error(data: bytes, max_bytes: int = codec.DEFAULT_MAX_BYTES
                           ) -> Optional[Union[Domain, TupleDomain]]:
    """Decodes; a CodecError is fine, any other exception fails the test, and whatever does
    decode must be a usable value that survives its own round trip."""
    try:
        out = decode(data, max_bytes=max_bytes)
    except CodecError:
        return None
    assert isinstance(out, (Domain, TupleDomain))
    out.describe()
    assert decode(encode(out)) == out
    return out


_domain_or_tuple = typed(any_domains).map(lambda p: p[1]) | tuple_domains()


# ---------------------------------------------------------------- round trip

@LAW
@given(typed(any_domains))
def test_encode_decode_is_the_identity_for_domains(p):
    _, d = p
    data = encode_domain(d)
    back = decode_domain(data)
    assert back == d and hash(back) == hash(d)
    assert back.kind == d.kind and back.value_count() == d.value_count()
    assert encode(back) == data  # one encoding per value: caches may key on the bytes


@LAW
@given(tuple_domains())
def test_encode_decode_is_the_identity_for_tuple_domains(td):
    data = encode_tuple_domain(td)
    assert decode_tuple_domain(data) == td
    assert decode(data) == td


def test_round_trip_of_large_domains_goes_through_compression():
    d = Domain.values(STRING, [f"value-{i:05d}" for i in range(2000)])
    data = encode(d)
    assert data[5] & 1  # compressed
    assert decode(data) == d
    b = Domain.values(INT, range(5000)).simplify(10, bloom_fpp=0.01)
    assert decode(encode(b)) == b and decode(encode(b)).contains(4321)


# ---------------------------------------------------------------- hostile bytes

@LAW
@given(st.binary(max_size=64) | st.binary(max_size=64).map(
    lambda b: b"DPPD" + bytes([CODEC_VERSION]) + b))
def test_decoder_on_random_bytes_raises_only_codec_error(data):
    decoded_or_codec_error(data)


@st.composite
def _mutations(draw: st.DrawFn) -> bytes:
    data = bytearray(encode(draw(_domain_or_tuple)))
    how = draw(st.sampled_from(["flip", "truncate", "extend", "length", "payload"]))
    if how == "flip":
        for _ in range(draw(st.integers(1, 3))):
            i = draw(st.integers(0, len(data) - 1))
            data[i] ^= 1 << draw(st.integers(0, 7))
    elif how == "truncate":
        del data[draw(st.integers(0, len(data) - 1)):]
    elif how == "extend":
        data += draw(st.binary(min_size=1, max_size=16))
    elif how == "length":
        data[6:10] = struct.pack(">I", draw(st.integers(0, 2 ** 32 - 1)))
    else:  # corrupt the payload, then re-frame it so the checksum passes
        header, payload = bytes(data[:10]), bytearray(data[10:-4])
        compressed = bool(header[5] & 1)
        if compressed:
            payload = bytearray(zlib.decompress(payload))
        for _ in range(draw(st.integers(1, 4))):
            i = draw(st.integers(0, len(payload) - 1))
            payload[i] = draw(st.integers(0, 255))
        return frame(bytes(payload), compressed)
    return bytes(data)


@LAW
@given(_mutations())
def test_decoder_on_mutated_frames_raises_only_codec_error(data):
    decoded_or_codec_error(data)


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2 ** 70), 2 ** 70) |
    st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8) |
    st.sampled_from(["NaN", "inf", "0x1p3", "2024-01-01", "1e999", "", "int", "bloom"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=4),
    max_leaves=12)


def _paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, prefix + (i,))
    return out


@st.composite
def _malformed_payloads(draw: st.DrawFn) -> Any:
    """A valid wire object with one part replaced by, or stripped of, arbitrary JSON."""
    x = draw(_domain_or_tuple)
    obj: Any = {"d": x.to_data()} if isinstance(x, Domain) else {"t": x.to_data()}
    if draw(st.integers(0, 9)) == 0:
        return draw(_json)
    path = draw(st.sampled_from(_paths(obj)[1:]))
    parent = obj
    for step in path[:-1]:
        parent = parent[step]
    how = draw(st.sampled_from(["replace", "delete", "wrap", "huge"]))
    if how == "delete":
        del parent[path[-1]]
    elif how == "wrap":
        parent[path[-1]] = [parent[path[-1]]]
    elif how == "huge":
        parent[path[-1]] = draw(st.sampled_from([10 ** 400, -(10 ** 400), 2 ** 64, 1e300,
                                                 2 ** 31 + 1, -1]))
    else:
        parent[path[-1]] = draw(_json)
    return obj


@LAW
@given(_malformed_payloads(), st.booleans())
def test_decoder_on_well_framed_malformed_json_raises_only_codec_error(obj, compress):
    decoded_or_codec_error(frame_json(obj, compress))


@LAW
@given(_malformed_payloads())
def test_from_data_on_malformed_data_raises_only_domain_error(obj):
    """The codec turns every failure into CodecError; behind it, from_data keeps its own
    promise of DomainError only (other callers read data forms directly)."""
    inner = obj.get("d", obj.get("t")) if isinstance(obj, dict) else obj
    for read in (Domain.from_data, TupleDomain.from_data):
        try:
            out = read(inner)
        except DomainError:
            continue
        assert read(out.to_data()) == out


@pytest.mark.parametrize("payload", [
    b"[" * 100_000 + b"]" * 100_000,
    b'{"d":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    b'{"t":{"none":false,"columns":[["a",' + b"{\"x\":" * 100_000 + b"1" + b"}" * 100_000
    + b"]]}}",
    b'{"d":{"type":"int","null":false,"kind":"values","values":[' + b"9" * 100_000 + b"]}}",
    b'{"d":{"type":"int","null":false,"kind":"values","values":[1e999]}}',
    b'{"d":{"type":"double","null":false,"kind":"values","values":[NaN]}}',
    b'{"d":{"type":"int","null":Infinity,"kind":"all"}}',
    b'\xff\xfe{"d":1}', b'{"d":{"type":"string","null":false,"kind":"values","values":["\xc3"]}}',
    b"", b"null", b"{}", b'{"d":1,"t":2}', b'{"x":{}}', b'{"d":{}}', b'{"t":[]}',
    b'{"d":{"type":"decimal(' + b"9" * 5000 + b',0)","null":false,"kind":"all"}}',
    b'{"d":{"type":"int","null":false,"kind":"values","values":[]}}',
    b'{"d":{"type":"int","null":false,"kind":"values","values":[2,1]}}',
    b'{"d":{"type":"int","null":false,"kind":"values","values":[true]}}',
    b'{"d":{"type":"int","null":false,"kind":"range","ranges":[[null,true,5,false]]}}',
    b'{"d":{"type":"int","null":false,"kind":"range","ranges":[[5,true,1,true]]}}',
    b'{"d":{"type":"int","null":false,"kind":"range","ranges":[[1,true,5,true],[2,true,9,true]]}}',
    b'{"d":{"type":"int","null":false,"kind":"weird"}}',
    b'{"t":{"none":false,"columns":[["a",{"type":"int","null":false,"kind":"all"}],'
    b'["a",{"type":"int","null":false,"kind":"all"}]]}}',
])
def test_decoder_on_malformed_payloads_raises_codec_error(payload):
    with pytest.raises(CodecError):
        decode(frame(payload))
    with pytest.raises(CodecError):
        decode(frame(payload, compress=True))


def _bloom_data(**changes: Any) -> dict:
    data = Domain.bloom(INT, [1, 2, 3], 0.01).to_data()
    data["bloom"].update(changes)
    return {"d": data}


@pytest.mark.parametrize("changes", [
    {"capacity": 2 ** 31}, {"capacity": 0}, {"capacity": 1.5}, {"capacity": True},
    {"fpp": 0.0}, {"fpp": 1.0}, {"fpp": 10 ** 400}, {"fpp": "0.01"}, {"count": -1},
    {"bits": "not base64!"}, {"bits": base64.b64encode(b"\0").decode()}, {"bits": 5},
])
def test_decoder_refuses_bad_bloom_parameters_without_allocating_their_filter(changes):
    tracemalloc.start()
    try:
        with pytest.raises(CodecError):
            decode(frame_json(_bloom_data(**changes)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024  # a 2**31-capacity filter would be ~2.5 GB


def test_bloom_missing_field_and_wrong_types_are_codec_errors():
    good = _bloom_data()
    for field in ("capacity", "fpp", "count", "bits"):
        bad = json.loads(json.dumps(good))
        del bad["d"]["bloom"][field]
        with pytest.raises(CodecError, match=field):
            decode(frame_json(bad))
    bad = json.loads(json.dumps(good))
    del bad["d"]["bloom"]
    with pytest.raises(CodecError, match="bloom"):
        decode(frame_json(bad))


# ---------------------------------------------------------------- bounds and frames

def test_oversize_input_is_refused_before_parsing():
    d = Domain.values(STRING, [f"v{i}" for i in range(50)])
    data = encode(d)
    with pytest.raises(CodecError, match="bound"):
        decode(data, max_bytes=len(data) - 1)
    assert decode(data, max_bytes=len(data)) == d
    with pytest.raises(CodecError, match="bound"):
        encode(d, max_bytes=len(data) - 1)
    with pytest.raises(CodecError, match="bound"):
        decode(b"\0" * 100, max_bytes=99)


def _bomb(size: int) -> bytes:
    """A zlib stream of ``size`` bytes of JSON-ish filler, built without holding it all."""
    c = zlib.compressobj(9)
    chunk = b" " * (1 << 20)
    out = [c.compress(b'{"d":' + b" " * 10)]
    for _ in range(size // len(chunk)):
        out.append(c.compress(chunk))
    out.append(c.compress(b'{"type":"int","null":false,"kind":"all"}}'))
    out.append(c.flush())
    return b"".join(out)


def test_zlib_bomb_is_refused_without_inflating_it():
    packed = _bomb(64 << 20)  # 64 MiB of spaces: valid JSON once inflated
    data = _HEADER.pack(b"DPPD", CODEC_VERSION, 1, len(packed)) + packed + \
        struct.pack(">I", zlib.crc32(packed))
    assert len(data) < 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(CodecError, match="bound"):
            decode(data, max_bytes=1 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20


def test_compressed_frame_with_stray_bytes_after_the_stream_is_refused():
    payload = zlib.compress(json.dumps({"d": Domain.all(INT).to_data()}).encode()) + b"junk"
    data = _HEADER.pack(b"DPPD", CODEC_VERSION, 1, len(payload)) + payload + \
        struct.pack(">I", zlib.crc32(payload))
    with pytest.raises(CodecError):
        decode(data)


def test_frame_checks_name_what_is_wrong():
    good = encode(Domain.values(INT, [1, 2]))
    with pytest.raises(CodecError, match="magic"):
        decode(b"XXXX" + good[4:])
    with pytest.raises(CodecError, match="version"):
        decode(good[:4] + bytes([CODEC_VERSION + 1]) + good[5:])
    with pytest.raises(CodecError, match="flags"):
        decode(good[:5] + b"\x02" + good[6:])
    with pytest.raises(CodecError, match="length"):
        decode(good + b"\0")
    with pytest.raises(CodecError, match="truncated"):
        decode(good[:8])
    with pytest.raises(CodecError, match="checksum"):
        decode(good[:-1] + bytes([good[-1] ^ 1]))
    with pytest.raises(CodecError):
        decode("not bytes")  # type: ignore[arg-type]
    assert decode(bytearray(good)) == decode(memoryview(good)) == Domain.values(INT, [1, 2])


def test_typed_entry_points_refuse_the_other_kind():
    d = Domain.values(DOUBLE, [1.0])
    td = TupleDomain.of({"x": Domain.values(decimal_type(5, 2), ["1.25"])})
    with pytest.raises(CodecError):
        decode_tuple_domain(encode(d))
    with pytest.raises(CodecError):
        decode_domain(encode(td))
    with pytest.raises(CodecError):
        encode_domain(td)  # type: ignore[arg-type]
    with pytest.raises(CodecError):
        encode_tuple_domain(d)  # type: ignore[arg-type]
    with pytest.raises(CodecError):
        encode({"d": 1})  # type: ignore[arg-type]
