"""A case the differential fuzzer found (``python -m tests.fuzz``), shrunk: declared[p:decimal,Q:bigint] sql in/two_level/none/none dim=decimal.

first run: Spark 0 rows {}
dpp   error LayoutError: partition folder '/tmp/dpp-fuzz-jmkzseth/case-643/fact/p=1.50': value
    '1.50' of column 'p' cannot be read as int ('1.50' cannot be read as int)
reports: none
"""
from tests.fuzz.check import assert_same_rows

CASE = {'dim': {'attrs': [3, 3, 2, 3],
         'key_type': 'decimal',
         'keys': ['1.50', '1.50', None, None],
         'keys2': ['-5', '9223372036854775807', '-5', '9223372036854775807']},
 'fact': {'col_in_file': False,
          'cols': [{'kind': 'decimal', 'name': 'p'}, {'kind': 'bigint', 'name': 'Q'}],
          'evolved': [3],
          'files': [1, 0, 2, 1, 1, 1],
          'leftovers': False,
          'partitions': [['3', None],
                         ['1.50', '-5'],
                         [None, '44'],
                         [None, '9223372036854775807'],
                         [None, None],
                         ['3', '-5']],
          'placed': [],
          'relation': 'declared',
          'rows_per_file': 2},
 'query': {'api': 'sql',
           'dim_filter': 'none',
           'extra': 'none',
           'key': 'two_level',
           'lower_names': True,
           'shape': 'in'},
 'seed': 5151,
 'settings': {},
 'step': None}


def test_fz_sqltext_d0c82630ba(spark, tmp_path):
    assert_same_rows(spark, tmp_path, CASE, backend="sqltext")
