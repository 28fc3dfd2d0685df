"""A case the differential fuzzer found (``python -m tests.fuzz``), as found: catalog[p:smallint,q:string] df anti/cast_dim/window_tie/union_all dim=string
step=add_files.

Found as: after step add_files: Spark 40 rows {(0, 0, 1, '%41')×2, (1, 1, 1, '%41')×2, (10, 3,
    1, ' lead')×2, (11, 4, 1, ' lead')×2, (12, 5, 1, ' lead')×2, (13, 6, 1, ' lead')×2} …14 more
dpp   44 rows {(0, 0, 1, '%41')×2, (1, 1, 1, '%41')×2, (10, 3, 1, ' lead')×2, (10000, 4, 1,
    '%41')×2, (10001, 5, 1, '%41')×2, (11, 4, 1, ' lead')×2} …16 more
reports: fz_f30: none kept 6/6 (nothing to prune: read whole through dpp's listing)
"""
from tests.fuzz.check import assert_same_rows

CASE = {'dim': {'attrs': [], 'key_type': 'string', 'keys': [], 'keys2': []},
 'fact': {'col_in_file': False,
          'cols': [{'kind': 'smallint', 'name': 'p'}, {'kind': 'string', 'name': 'q'}],
          'evolved': [],
          'files': [1, 2, 1, 3, 3, 0],
          'leftovers': False,
          'partitions': [['1', '%41'],
                         ['2', '%41'],
                         ['12', ' lead'],
                         ['1', ' lead'],
                         ['12', 'b'],
                         ['300', 'b']],
          'placed': [0, 2, 5],
          'relation': 'catalog',
          'rows_per_file': 2},
 'query': {'api': 'df',
           'dim_filter': 'window_tie',
           'extra': 'union_all',
           'key': 'cast_dim',
           'lower_names': False,
           'shape': 'anti'},
 'seed': 1,
 'settings': {'spark.dpp.statsPruning.enabled': 'true',
              'spark.sql.adaptive.enabled': 'true',
              'spark.sql.ansi.enabled': 'true',
              'spark.sql.caseSensitive': 'false',
              'spark.sql.sources.partitionColumnTypeInference.enabled': 'false'},
 'step': 'add_files'}


def test_fz_01f47531f7(spark, tmp_path):
    assert_same_rows(spark, tmp_path, CASE)
