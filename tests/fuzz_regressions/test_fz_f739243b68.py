"""A case the differential fuzzer found (``python -m tests.fuzz``), reduced by hand: declared[p:int] sql inner/eq/lt/none dim=int.

Found as (a reduced variant of what the fuzzer met): first run: Spark types p as int (the empty
    folder p=x holds no file and is not a partition to it), dpp typed it as a string: Spark 3
    rows {(0, 0, 1, 1, '1')...}, dpp 3 rows {(0, 0, '1', 1, '1')...}
"""
from tests.fuzz.check import assert_same_rows

CASE = {'dim': {'attrs': [1, 7], 'key_type': 'int', 'keys': ['1', '2'], 'keys2': []},
 'fact': {'col_in_file': False,
          'cols': [{'kind': 'int', 'name': 'p'}],
          'evolved': [],
          'files': [1, 0, 1],
          'leftovers': False,
          'partitions': [['1'], ['x'], ['2']],
          'placed': [],
          'relation': 'declared',
          'rows_per_file': 3},
 'query': {'api': 'sql',
           'dim_filter': 'lt',
           'extra': 'none',
           'key': 'eq',
           'lower_names': False,
           'shape': 'inner'},
 'seed': 0,
 'settings': {},
 'step': None}


def test_fz_f739243b68(spark, tmp_path):
    assert_same_rows(spark, tmp_path, CASE)
