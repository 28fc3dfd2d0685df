"""A case the differential fuzzer found (``python -m tests.fuzz``), shrunk: catalog[p:date] sql inner/eq/lt/none dim=date step=add_files.

after step add_files: Spark 1 rows {(0, 0, datetime.date(2024, 1, 1), 3, '2024-01-01')×1}
dpp   2 rows {(0, 0, datetime.date(2024, 1, 1), 3, '2024-01-01')×1, (10000, 4,
    datetime.date(2024, 1, 1), 3, '2024-01-01')×1}
reports: fz_f104: none kept 1/1 (filters kept every partition)
"""
from tests.fuzz.check import assert_same_rows

CASE = {'dim': {'attrs': [3],
         'key_type': 'date',
         'keys': ['2024-01-01'],
         'keys2': ['2024-01-01 12:00:00.5']},
 'fact': {'col_in_file': False,
          'cols': [{'kind': 'date', 'name': 'p'}],
          'evolved': [],
          'files': [1],
          'leftovers': False,
          'partitions': [['2024-01-01']],
          'placed': [],
          'relation': 'catalog',
          'rows_per_file': 1},
 'query': {'api': 'sql',
           'dim_filter': 'lt',
           'extra': 'none',
           'key': 'eq',
           'lower_names': False,
           'shape': 'inner'},
 'seed': 404,
 'settings': {},
 'step': 'add_files'}


def test_fz_10082b731c(spark, tmp_path):
    assert_same_rows(spark, tmp_path, CASE)
