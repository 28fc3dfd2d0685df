"""A case the differential fuzzer found (``python -m tests.fuzz``), shrunk: catalog[p:decimal] sql inner/eq/lt/none dim=decimal.

first run: Spark 1 rows {(0, 0, Decimal('-0.10'), 1, '-0.1')×1}
dpp   0 rows {}
reports: fz_f214: none kept 1/1 (filters kept every partition)
"""
from tests.fuzz.check import assert_same_rows

CASE = {'dim': {'attrs': [1], 'key_type': 'decimal', 'keys': ['-0.1'], 'keys2': []},
 'fact': {'col_in_file': False,
          'cols': [{'kind': 'decimal', 'name': 'p'}],
          'evolved': [],
          'files': [1],
          'leftovers': False,
          'partitions': [['-0.1']],
          'placed': [],
          'relation': 'catalog',
          'rows_per_file': 1},
 'query': {'api': 'sql',
           'dim_filter': 'lt',
           'extra': 'none',
           'key': 'eq',
           'lower_names': False,
           'shape': 'inner'},
 'seed': 6161,
 'settings': {},
 'step': None}


def test_fz_sqltext_727f153b1a(spark, tmp_path):
    assert_same_rows(spark, tmp_path, CASE, backend="sqltext")
