"""A case the differential fuzzer found (``python -m tests.fuzz``), as found: catalog[p:bigint] sql left/data_col/none/view dim=string step=add_files.

Found as: after step add_files: Spark 11 rows {(0, 0, 44, None, None)×1, (1, 1, 44, None,
    None)×1, (2, 2, 44, None, None)×1, (3, 3, 44, None, None)×1, (4, 4, 3000000000, 4, '44')×1,
    (4, 4, 3000000000, 4, 'zz')×1} …5 more
dpp   14 rows {(0, 0, 44, None, None)×1, (1, 1, 44, None, None)×1, (10000, 4, 44, 4, '44')×1,
    (10000, 4, 44, 4, 'zz')×1, (10001, 5, 44, 5, '3000000000')×1, (2, 2, 44, None, None)×1} …8
    more
reports: fz_f48: none kept 2/2 (nothing to prune: read whole through dpp's listing)
"""
from tests.fuzz.check import assert_same_rows

CASE = {'dim': {'attrs': [9, 9, 4, 5, 4],
         'key_type': 'string',
         'keys': ['44', None, 'zz', '3000000000', '44'],
         'keys2': []},
 'fact': {'col_in_file': False,
          'cols': [{'kind': 'bigint', 'name': 'p'}],
          'evolved': [],
          'files': [2, 3],
          'leftovers': True,
          'partitions': [['44'], ['3000000000']],
          'placed': [],
          'relation': 'catalog',
          'rows_per_file': 2},
 'query': {'api': 'sql',
           'dim_filter': 'none',
           'extra': 'view',
           'key': 'data_col',
           'lower_names': False,
           'shape': 'left'},
 'seed': 3,
 'settings': {'spark.dpp.filterCache.enabled': 'true',
              'spark.dpp.maxDistinctValues': '2',
              'spark.sql.adaptive.enabled': 'false',
              'spark.sql.ansi.enabled': 'false',
              'spark.sql.caseSensitive': 'false'},
 'step': 'add_files'}


def test_fz_1961850066(spark, tmp_path):
    assert_same_rows(spark, tmp_path, CASE)
