"""A case the differential fuzzer found (``python -m tests.fuzz``), as found: catalog[p:string,q:boolean] df anti/func/lt/none dim=string step=reuse_df.

Found as: after step reuse_df: Spark 10 rows {(0, 0, 'c:d', False)×1, (1, 1, 'c:d', False)×1,
    (2, 2, 'a/b', True)×1, (3, 3, 'a/b', True)×1, (4, 4, '%41', True)×1, (5, 5, '%41', True)×1}
    …4 more
dpp   12 rows {(0, 0, 'c:d', False)×1, (1, 1, 'c:d', False)×1, (10000, 4, 'c:d', False)×1,
    (10001, 5, 'c:d', False)×1, (2, 2, 'a/b', True)×1, (3, 3, 'a/b', True)×1} …6 more
reports: fz_f29: none kept 4/4 (nothing to prune: read whole through dpp's listing)
"""
from tests.fuzz.check import assert_same_rows

CASE = {'dim': {'attrs': [9, 1, 7, 9, 7],
         'key_type': 'string',
         'keys': ['A', 'ab c', '%41', 'c:d', '%41'],
         'keys2': ['true', 'false', 'true', 'false', 'true']},
 'fact': {'col_in_file': False,
          'cols': [{'kind': 'string', 'name': 'p'}, {'kind': 'boolean', 'name': 'q'}],
          'evolved': [],
          'files': [1, 1, 0, 3],
          'leftovers': False,
          'partitions': [['c:d', 'false'],
                         ['a/b', 'true'],
                         ['ab c', 'false'],
                         ['%41', 'true']],
          'placed': [],
          'relation': 'catalog',
          'rows_per_file': 2},
 'query': {'api': 'df',
           'dim_filter': 'lt',
           'extra': 'none',
           'key': 'func',
           'lower_names': False,
           'shape': 'anti'},
 'seed': 3,
 'settings': {'spark.dpp.maxDistinctValues': '1000',
              'spark.sql.ansi.enabled': 'false',
              'spark.sql.session.timeZone': 'Asia/Kolkata'},
 'step': 'reuse_df'}


def test_fz_593452d63e(spark, tmp_path):
    assert_same_rows(spark, tmp_path, CASE)
