"""Security: the codec under fuzzing, no code execution on any wire, Redis auth that fails
cleanly and never leaks the password, namespaced expiring keys, and temporary views that
never touch a user's."""
from __future__ import annotations

import ast
import logging
import pickle
import random
import struct
import sys
import tracemalloc
import zlib
from pathlib import Path

import pytest

from dpp.core.codec import decode, encode
from dpp.runtime.config import DppConfig
from dpp.core.domain import (BIGINT, DATE, INT, STRING, Domain, TupleDomain, decimal_type)
from dpp.core.errors import CodecError
from tests.reliability_helpers import (JOIN_Q, only_filter, reference, register_star, rows,
                                            table_report, write_star)

ROOT = Path(__file__).resolve().parents[1]


def _valid_encodings() -> list[bytes]:
    import datetime as dt
    import decimal

    doms = [
        Domain.values(BIGINT, [1, 5, 9, 2 ** 40]),
        Domain.values(STRING, ["a", "ünï", "x y", ""], null_allowed=True),
        Domain.range(INT, 3, 70),
        Domain.values(DATE, [dt.date(2000, 1, 1), dt.date(2001, 2, 3)]),
        Domain.values(decimal_type(7, 2), [decimal.Decimal("1.50"), decimal.Decimal("-3.25")]),
        Domain.bloom(BIGINT, list(range(0, 3000, 3)), 0.05, 1000),
        Domain.all(INT), Domain.none(STRING), Domain.only_null(BIGINT),
        Domain.values(BIGINT, list(range(2000))),  # big enough to be compressed
    ]
    out = [encode(d) for d in doms]
    out.append(encode(TupleDomain.of({"k": doms[0], "s": doms[1]})))
    out.append(encode(TupleDomain.none()))
    out.append(encode(TupleDomain.all()))
    return out


def _frame(payload: bytes, flags: int = 0) -> bytes:
    return struct.pack(">4sBBI", b"DPPD", 1, flags, len(payload)) + payload + \
        struct.pack(">I", zlib.crc32(payload))


def _payload(frame: bytes) -> bytes:
    (flags,) = struct.unpack_from(">B", frame, 5)
    body = frame[10:-4]
    return zlib.decompress(body) if flags & 1 else body


def _mutate(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        if op == 0 and b:                      # flip a bit
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        elif op == 1 and b:                    # replace a byte
            b[rng.randrange(len(b))] = rng.randrange(256)
        elif op == 2:                          # insert bytes
            i = rng.randrange(len(b) + 1)
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif op == 3 and b:                    # delete a run
            i = rng.randrange(len(b))
            del b[i:i + rng.randint(1, 16)]
        elif op == 4 and b:                    # truncate
            del b[rng.randrange(len(b)):]
        else:                                  # splice in an interesting token
            tok = rng.choice([b"null", b"1e999", b"-0", b"[]", b"{}", b'"', b"NaN", b"\\u0000",
                              b"99999999999999999999999999", b'"values"', b'"bloom"',
                              b'"range"', b"true", b'"__class__"', b"\xff\xfe"])
            i = rng.randrange(len(b) + 1)
            b[i:i] = tok
    return bytes(b)


BOUND = 1 << 20  # the decode bound used while fuzzing


def test_codec_fuzz_raises_only_codec_error_with_bounded_memory():
    """>= 100,000 inputs: mutated frames, re-framed mutated JSON payloads (valid CRC, so the
    parser and the validator see them), random bytes, and hostile shapes."""
    rng = random.Random(20240601)
    valid = _valid_encodings()
    payloads = [_payload(v) for v in valid]
    for v in valid:  # the corpus itself round-trips
        decode(v)
    hostile = [
        _frame(b"[" * 200_000 + b"]" * 200_000),                      # deep nesting
        _frame(b'{"d":' * 50_000 + b"1" + b"}" * 50_000),
        _frame(zlib.compress(b" " * (80 * 1024 * 1024), 9), flags=1),  # zip bomb (80 MiB)
        _frame(b'{"d":{"type":"bigint","kind":"values","values":[' + b"9" * 100_000 + b"]}}"),
        _frame(b'{"d": 1e999}'),
        _frame(b"\xff" * 64),
        struct.pack(">4sBBI", b"DPPD", 1, 0, 2 ** 32 - 1) + b"{}",     # lying length
        b"", b"DPPD", b"DPPD\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00",
    ]
    n = 0
    accepted = 0
    tracemalloc.start()
    try:
        for data in hostile:
            with pytest.raises(CodecError):
                decode(data, max_bytes=BOUND)
            n += 1
        for i in range(100_000):
            kind = i % 10
            if kind < 4:
                data = _mutate(rng, rng.choice(valid))
            elif kind < 8:
                data = _frame(_mutate(rng, rng.choice(payloads)))
            elif kind == 8:
                data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 64)))
            else:
                data = b"DPPD\x01\x00" + bytes(rng.randrange(256) for _ in range(rng.randint(0, 40)))
            try:
                out = decode(data, max_bytes=BOUND)
            except CodecError:
                pass
            else:
                accepted += 1
                assert isinstance(out, (Domain, TupleDomain))
            n += 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert n >= 100_000
    assert accepted < n // 2  # most mutations are rejected; the rest are well-formed domains
    # a zip bomb is cut at the bound; decompression may hold about twice the bound at once
    assert peak < 2.5 * BOUND + 4 * 1024 * 1024, f"peak {peak} bytes"


def test_decoder_cannot_be_made_to_import_or_call_anything(tmp_path):
    canary = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            import os
            return (os.system, (f"touch {canary}",))

    evil = pickle.dumps(Evil(), protocol=0)
    evil_hi = pickle.dumps(Evil(), protocol=pickle.HIGHEST_PROTOCOL)
    bad = [
        evil, evil_hi, _frame(evil), _frame(evil_hi),
        _frame(zlib.compress(evil_hi), flags=1),
        b"cos\nsystem\n(S'touch " + str(canary).encode() + b"'\ntR.",
        _frame(b'{"d":{"__class__":"os.system","__reduce__":["os.system",["id"]]}}'),
        _frame(b'{"__class__":"dpp.core.domain.Domain","d":{"type":"bigint"}}'),
        _frame(b'{"d":{"py/object":"subprocess.Popen","args":["id"]}}'),
        _frame(b'{"d":{"type":"__import__(\'os\').system(\'id\')","kind":"values","values":[]}}'),
        _frame(b'{"t":{"columns":{"k":{"type":"bigint","kind":"values","values":[1],'
               b'"__reduce__":"os.system"}}}}'),
        _frame(b'{"d":{"type":"bigint","kind":"values","values":[{"$type":"os.system"}]}}'),
        _frame(b'!!python/object/apply:os.system ["id"]'),
    ]
    before = set(sys.modules)
    for data in bad:
        with pytest.raises(CodecError):
            decode(data)
    assert set(sys.modules) - before == set()
    assert not canary.exists()


def _py_files():
    for pkg in ("dpp", "coordinator", "collectors", "hive_splits"):
        yield from sorted((ROOT / pkg).rglob("*.py"))


def test_no_module_imports_pickle_or_calls_eval():
    banned_modules = {"pickle", "cPickle", "_pickle", "marshal", "shelve", "dill", "cloudpickle",
                      "jsonpickle", "yaml"}
    banned_calls = {"eval", "exec", "__import__", "compile"}
    found = []
    files = list(_py_files())
    assert len(files) > 15
    for path in files:
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [(node.module or "").split(".")[0]]
            else:
                names = []
            found += [f"{path.relative_to(ROOT)}:{node.lineno} imports {n}"
                      for n in names if n in banned_modules]
            if isinstance(node, ast.Call):
                fn = node.func
                if isinstance(fn, ast.Name) and fn.id in banned_calls:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} calls {fn.id}")
                if (isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name)
                        and fn.value.id in banned_modules):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} calls "
                                 f"{fn.value.id}.{fn.attr}")
    assert found == []


# ---------------------------------------------------------------------- Redis auth


@pytest.fixture(scope="module")
def star(tmp_path_factory):
    return write_star(tmp_path_factory.mktemp("rel_security"))


def _session(spark, star, **kw):
    from dpp import DppSession

    kw.setdefault("wait_timeout", 5.0)
    kw.setdefault("filter_cache", False)
    s = DppSession(spark, config=DppConfig(**kw))
    register_star(s, star)
    return s


PW = "S3cret-pw-7f1c"
ALICE_PW = "alice-Pw-93ad"


def _run_and_capture(spark, star, url, caplog, moy):
    s = _session(spark, star, coordinator=url)
    q = JOIN_Q.format(moy=moy)
    with caplog.at_level(logging.DEBUG):
        got = s.collect(q)
        explained = s.explain(q)
    report = s.last_report
    s.close()
    assert rows(got) == reference(spark, q, star)
    return report, explained


@pytest.mark.parametrize("mode", ["requirepass", "acl"])
def test_redis_auth_through_the_url(spark, star, redis_factory, caplog, mode):
    if mode == "requirepass":
        server = redis_factory(password=PW)
        good, wrong = server.url, server.url.replace(PW, "wrong-" + PW[::-1])
        secrets = [PW]
    else:
        server = redis_factory(acl_users=["default off",
                                          f"alice on >{ALICE_PW} ~* &* +@all"])
        good = f"redis://alice:{ALICE_PW}@127.0.0.1:{server.port}/0"
        wrong = f"redis://alice:not-{ALICE_PW}@127.0.0.1:{server.port}/0"
        secrets = [ALICE_PW]
        anon = f"redis://127.0.0.1:{server.port}/0"
    report, explained = _run_and_capture(spark, star, good, caplog, 2)
    f = only_filter(report)
    assert f["outcome"] == "complete", f
    assert table_report(report)["pruning"] == "applied"
    urls = [wrong] + ([anon] if mode == "acl" else [])
    for url in urls:
        report, explained2 = _run_and_capture(spark, star, url, caplog, 3)
        f = only_filter(report)
        assert f["outcome"] in ("unavailable", "failed"), f
        assert f["reason"] and ("auth" in f["reason"].lower() or "password" in
                                f["reason"].lower() or "noperm" in f["reason"].lower()), f
        assert table_report(report)["pruning"] == "none"
        text = report.to_json() + explained + explained2 + caplog.text + report.summary_line()
        for secret in secrets + [wrong.split(":")[2].split("@")[0]]:
            assert secret not in text
        if "@" in url:
            assert "***" in report.to_json()  # the URL is shown, redacted


# ---------------------------------------------------------------------- keys


def test_every_redis_key_is_namespaced_and_expiring(spark, star, fresh_redis):
    s = _session(spark, star, coordinator=fresh_redis.url, filter_cache=True, filter_ttl=60.0)
    q = JOIN_Q.format(moy=5)
    assert rows(s.collect(q)) == reference(spark, q, star)
    s.collect(q)  # a cache hit: its keys too
    assert only_filter(s.last_report)["cache_hit"] is True
    client = fresh_redis.client()
    keys = list(client.scan_iter(count=1000))
    assert keys, "the Redis coordinator stored nothing"
    kinds = {k.decode().rsplit(":", 1)[-1] for k in keys}
    assert {"meta", "parts"} <= kinds and any(k.startswith(b"dpp:cache:") for k in keys)
    for k in keys:
        assert k.startswith(b"dpp:"), k
        ttl = client.pttl(k)
        assert 0 < ttl <= 60_000, (k, ttl)
    s.close()


# ---------------------------------------------------------------------- temporary views


def _views(spark):
    return {t.name for t in spark.catalog.listTables() if t.isTemporary}


def test_temporary_views_never_collide_with_the_users(spark, star, tmp_path):
    from dpp import DppSession

    # the user's own views: one named like a table they register with dpp, one other
    spark.range(3).selectExpr("id AS ss_item", "CAST(id AS INT) AS ss_qty",
                              "CAST(100 + id AS INT) AS ss_sold_date_sk") \
        .createOrReplaceTempView("rel_user_sales")
    spark.range(7).createOrReplaceTempView("rel_user_other")
    s = DppSession(spark, config=DppConfig(wait_timeout=5.0, filter_cache=False))
    register_star(s, star)
    s.register_table("rel_user_sales", str(star["sales"]), partition_types={
        "ss_sold_date_sk": "int"})
    before = _views(spark)
    queries = [JOIN_Q.format(moy=1),
               "SELECT count(*) FROM rel_user_sales WHERE ss_sold_date_sk = 101",
               "SELECT count(*) FROM rel_user_sales JOIN date_dim ON ss_sold_date_sk = "
               "d_date_sk WHERE d_moy = 1",
               "SELECT count(*) FROM rel_user_other"]
    for q in queries:
        s.collect(q)
        assert not [v for v in _views(spark) if v.startswith("__dpp_")]
        s.sql(q)
        assert not [v for v in _views(spark) if v.startswith("__dpp_")]
    with pytest.raises(Exception):
        s.collect("SELECT count(*) FROM sales WHERE ss_sold_date_sk = 101 AND nope = 1")
    assert not [v for v in _views(spark) if v.startswith("__dpp_")]
    after = _views(spark)
    assert before <= after | {"sales", "date_dim"}
    assert "rel_user_sales" in after and "rel_user_other" in after
    # untouched: the user's rows, not the registered table's
    assert sorted(r[0] for r in spark.table("rel_user_sales").collect()) == [0, 1, 2]
    assert spark.table("rel_user_other").count() == 7
    spark.catalog.dropTempView("rel_user_sales")
    spark.catalog.dropTempView("rel_user_other")
    s.close()
