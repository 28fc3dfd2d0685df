"""A case the differential fuzzer found (``python -m tests.fuzz --backend connect --seed 909``),
shrunk: catalog[p:decimal] sql inner/eq/lt/none dim=string. It fails the same way on a classic
session.

A catalog table whose one partition is the NULL (default) partition, joined under ANSI to a
dimension whose string key 'A' cannot be cast to the join's DOUBLE. Spark alone returns no
row: its static pruning (the IS NOT NULL the join implies) leaves the table empty, and Spark
never evaluates the failing cast. With dpp the query fails on that cast: dpp's file index
hides the catalog relation from ``PruneFileSourcePartitions``, so Spark plans with the whole
table's size and evaluates the dimension side (the build side fails too and prunes nothing,
as it should). Fixed: a catalog relation Spark's static partition filters leave empty is left
to Spark (``dpp/jvm/src/dpp/spark/StaticPruning.java``).

first run: Spark 0 rows {}
dpp   error NumberFormatException: [CAST_INVALID_INPUT] The value 'A' of the type "STRING"
    cannot be cast to "DOUBLE" because it is malformed. Correct the value as per the syntax, or
    change its target type. Use `try_cast` to tolerate malformed input and return NULL instead.
    SQLSTATE: 22018
reports: fz_f587: none kept None/None (never listed: Spark did not scan this relation (nothing
    read))
"""
from tests.fuzz.check import assert_same_rows

CASE = {'dim': {'attrs': [0], 'key_type': 'string', 'keys': ['A'], 'keys2': []},
 'fact': {'col_in_file': False,
          'cols': [{'kind': 'decimal', 'name': 'p'}],
          'evolved': [],
          'files': [1],
          'leftovers': False,
          'partitions': [[None]],
          'placed': [],
          'relation': 'catalog',
          'rows_per_file': 1},
 'query': {'api': 'sql',
           'dim_filter': 'lt',
           'extra': 'none',
           'key': 'eq',
           'lower_names': False,
           'shape': 'inner'},
 'seed': 909,
 'settings': {},
 'step': None}


def test_fz_88bdfde1c7(spark, tmp_path):
    assert_same_rows(spark, tmp_path, CASE)
