"""A case the differential fuzzer found (``python -m tests.fuzz``), shrunk: catalog[p:decimal] sql inner/eq/lt/none dim=decimal step=add_files.

after step add_files: Spark 1 rows {(0, 0, Decimal('1.50'), 3, '1.5')×1}
dpp   2 rows {(0, 0, Decimal('1.50'), 3, '1.5')×1, (10000, 4, Decimal('1.50'), 3, '1.5')×1}
reports: fz_f175: none kept 1/1 (filters kept every partition)
"""
from tests.fuzz.check import assert_same_rows

CASE = {'dim': {'attrs': [3], 'key_type': 'decimal', 'keys': ['1.5'], 'keys2': [None]},
 'fact': {'col_in_file': False,
          'cols': [{'kind': 'decimal', 'name': 'p'}],
          'evolved': [],
          'files': [1],
          'leftovers': False,
          'partitions': [['1.50']],
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
 'step': 'add_files'}


def test_fz_sqltext_d0987e8bf1(spark, tmp_path):
    assert_same_rows(spark, tmp_path, CASE, backend="sqltext")
