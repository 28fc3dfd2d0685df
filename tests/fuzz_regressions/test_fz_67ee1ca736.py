"""A case the differential fuzzer found (``python -m tests.fuzz``), as found: declared[p:decimal] df right/eq/rand/distinct dim=double.

Found as: first run: Spark 7 rows {(0, 0, '1.5', 2, '1.5')×1, (1, 1, '1.5', 2, '1.5')×1, (3, 3,
    '1.50', 2, '1.5')×1, (4, 4, '1.50', 2, '1.5')×1, (None, None, None, 3, None)×1, (None, None,
    None, 6, None)×1} …1 more
dpp   7 rows {(0, 0, 1.5, 2, '1.5')×1, (1, 1, 1.5, 2, '1.5')×1, (3, 3, 1.5, 2, '1.5')×1, (4, 4,
    1.5, 2, '1.5')×1, (None, None, None, 3, None)×1, (None, None, None, 6, None)×1} …1 more
reports: fz_f6: none kept 4/4 (nothing to prune: read whole through dpp's listing)
"""
from tests.fuzz.check import assert_same_rows

CASE = {'dim': {'attrs': [2, 3, 4, 8, 6],
         'key_type': 'double',
         'keys': ['1.5', None, '1.50', None, None],
         'keys2': []},
 'fact': {'col_in_file': False,
          'cols': [{'kind': 'decimal', 'name': 'p'}],
          'evolved': [],
          'files': [2, 1, 2, 3],
          'leftovers': False,
          'partitions': [['1.5'], ['-0.1'], ['1.50'], [None]],
          'placed': [],
          'relation': 'declared',
          'rows_per_file': 1},
 'query': {'api': 'df',
           'dim_filter': 'rand',
           'extra': 'distinct',
           'key': 'eq',
           'lower_names': False,
           'shape': 'right'},
 'seed': 2,
 'settings': {'spark.sql.ansi.enabled': 'false',
              'spark.sql.sources.partitionColumnTypeInference.enabled': 'false'},
 'step': None}


def test_fz_67ee1ca736(spark, tmp_path):
    assert_same_rows(spark, tmp_path, CASE)
