"""A case the differential fuzzer found (``python -m tests.fuzz``), shrunk: declared[p:decimal] sql comma/cast_dim/none/none dim=decimal
step=remove_partition.

after step remove_partition: Spark error AnalysisException: [UNABLE_TO_INFER_SCHEMA] Unable to
    infer schema for Parquet. It must be specified manually. SQLSTATE: 42KD9
dpp   0 rows {}
reports: fz_f192: none kept None/None (f.`p`: the build side (CAST(d.ks AS DECIMAL(10, 2)))
    filters nothing, not pruned)
"""
from tests.fuzz.check import assert_same_rows

CASE = {'dim': {'attrs': [2, 0, 1, 1],
         'key_type': 'decimal',
         'keys': ['1.50', '9.99', '1.50', None],
         'keys2': []},
 'fact': {'col_in_file': True,
          'cols': [{'kind': 'decimal', 'name': 'p'}],
          'evolved': [0],
          'files': [2],
          'leftovers': False,
          'partitions': [['1.50']],
          'placed': [],
          'relation': 'declared',
          'rows_per_file': 3},
 'query': {'api': 'sql',
           'dim_filter': 'none',
           'extra': 'none',
           'key': 'cast_dim',
           'lower_names': False,
           'shape': 'comma'},
 'seed': 7171,
 'settings': {},
 'step': 'remove_partition'}


def test_fz_sqltext_fc9d610d41(spark, tmp_path):
    assert_same_rows(spark, tmp_path, CASE, backend="sqltext")
