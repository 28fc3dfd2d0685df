"""A case the differential fuzzer found (``python -m tests.fuzz``), as found: declared[p:smallint] sql exists/eq/order_limit/union dim=int.

Found as: first run: Spark 6 rows {(2, 2, '2')×1, (3, 3, '2')×1, (4, 4, '2')×1, (5, 5, '2')×1,
    (6, 6, '2')×1, (7, 0, '2')×1}
dpp   6 rows {(2, 2, 2)×1, (3, 3, 2)×1, (4, 4, 2)×1, (5, 5, 2)×1, (6, 6, 2)×1, (7, 0, 2)×1}
reports: fz_f69: none kept 4/4 (nothing to prune: read whole through dpp's listing)
"""
from tests.fuzz.check import assert_same_rows

CASE = {'dim': {'attrs': [8, 1, 6], 'key_type': 'int', 'keys': ['2', '5', '2'], 'keys2': []},
 'fact': {'col_in_file': False,
          'cols': [{'kind': 'smallint', 'name': 'p'}],
          'evolved': [],
          'files': [1, 3, 1, 3],
          'leftovers': False,
          'partitions': [['300'], ['2'], ['1'], ['45']],
          'placed': [],
          'relation': 'declared',
          'rows_per_file': 2},
 'query': {'api': 'sql',
           'dim_filter': 'order_limit',
           'extra': 'union',
           'key': 'eq',
           'lower_names': False,
           'shape': 'exists'},
 'seed': 1,
 'settings': {'spark.dpp.filterCache.enabled': 'true',
              'spark.dpp.maxDistinctValues': '1000',
              'spark.sql.adaptive.enabled': 'true',
              'spark.sql.ansi.enabled': 'true',
              'spark.sql.caseSensitive': 'true',
              'spark.sql.sources.partitionColumnTypeInference.enabled': 'false'},
 'step': None}


def test_fz_08f94bb2fc(spark, tmp_path):
    assert_same_rows(spark, tmp_path, CASE)
