"""A case the differential fuzzer found (``python -m tests.fuzz``), shrunk: path[p:decimal] sql inner/data_col/lt/none dim=decimal step=rewrite_file.

after step rewrite_file: Spark 1 rows {(0, 3, 10.0, 3, '1.5')×1}
dpp   0 rows {}
reports: fact: applied kept 1/1
"""
from tests.fuzz.check import assert_same_rows

CASE = {'dim': {'attrs': [3], 'key_type': 'decimal', 'keys': ['1.5'], 'keys2': []},
 'fact': {'col_in_file': False,
          'cols': [{'kind': 'decimal', 'name': 'p'}],
          'evolved': [],
          'files': [2],
          'leftovers': False,
          'partitions': [['10.00']],
          'placed': [],
          'relation': 'path',
          'rows_per_file': 1},
 'query': {'api': 'sql',
           'dim_filter': 'lt',
           'extra': 'none',
           'key': 'data_col',
           'lower_names': False,
           'shape': 'inner'},
 'seed': 202,
 'settings': {},
 'step': 'rewrite_file'}


def test_fz_63f0fa4bb8(spark, tmp_path):
    assert_same_rows(spark, tmp_path, CASE)
