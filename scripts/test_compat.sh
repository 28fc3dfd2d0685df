#!/usr/bin/env bash
# The compatibility tier (`make test-compat`, `make test-compat SPARK="3.5 4.0"`): for each
# Spark line a virtual environment of its own (scripts/compat_venv.sh: that line's pyspark with
# the pins of constraints/spark-<line>.txt) and a compact suite in it:
#   - the job shapes on a path table and a catalog table (tests/test_job_shapes.py, one time
#     zone), each against Spark's own rows with pruning off;
#   - a Hive catalog table's kept partitions fetched in one metastore call (the client's
#     private Hive object, reached by reflection, differs by line);
#   - the examples through spark-submit, and dpp-submit / dpp run on a job without a dpp line;
#   - Spark Connect smoke tests (a local Connect server of that line; dpp connect-server);
#   - TPC-DS SF0.1, twelve queries, mode dpp, every answer checked against DuckDB (Spark's own
#     mode is the full suite's and the benchmarks' business: here it would only add minutes).
# The generated layouts of tests/test_kept_listing.py are sampled (DPP_LAYOUT_SEEDS) per line.
# Each line's wall time is appended to bench-out/compat/times.txt and printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
LINES="${SPARK:-3.5 4.0 4.1 4.2 4.3}"
DATA="${TPCDS_DATA:-data/tpcds-sf0.1}"
QUERIES="q3,q7,q19,q27,q42,q43,q52,q55,q68,q72,q96,q98"
OUT=bench-out/compat
COMPACT=(
  "tests/test_job_shapes.py::test_job_shape_prunes_with_sparks_rows"
  "tests/test_catalog_by_name.py::test_the_kept_partitions_cost_one_hive_client_call_however_many"
  tests/test_examples.py
  tests/test_dpp_submit.py
  tests/test_kept_listing.py
)
# the client road (dpp.enable on a Connect client) and the server road (dpp connect-server)
CONNECT_SMOKE=("tests/test_connect.py::test_enable_prunes_path_table_declared_by_conf"
               "tests/test_connect_server.py::test_a_client_process_that_never_imports_dpp")
mkdir -p "$OUT"
summary=()
for line in $LINES; do
  start=$(date +%s)
  scripts/compat_venv.sh "$line"
  py=".venv-compat/$line/bin/python"
  "$py" -c "import pyspark, pyarrow, pandas; print('test-compat: Spark line $line: pyspark', pyspark.__version__, 'pyarrow', pyarrow.__version__, 'pandas', pandas.__version__)"
  if [ ! -f "$DATA/manifest.json" ]; then
    "$py" -m tpcds.cli generate --sf 0.1 --out "$DATA"
  fi
  tests=("${COMPACT[@]}")
  # pip's pyspark 3.5 carries no Connect server (spark-connect_2.12 comes from Maven with
  # --packages): the smoke test needs a line whose package has it
  if "$py" -c "import glob, os, pyspark, sys; sys.exit(not glob.glob(os.path.join(os.path.dirname(pyspark.__file__), 'jars', 'spark-connect_*.jar')))"; then
    tests+=("${CONNECT_SMOKE[@]}")
  else
    echo "test-compat: Spark line $line: no Spark Connect server jar in its pyspark package; Connect smoke test not run"
  fi
  DPP_LAYOUT_SEEDS="${DPP_LAYOUT_SEEDS:-6}" \
    "$py" -m pytest -p no:cacheprovider -q "${tests[@]}" -k "not America"
  "$py" -m tpcds.cli bench --data "$DATA" --modes dpp --queries "$QUERIES" \
      --table-kind path --no-warmup --out "$OUT/$line" > "$OUT/$line.log"
  tail -n 3 "$OUT/$line.log"
  secs=$(( $(date +%s) - start ))
  pyspark_version=$("$py" -c "import pyspark; print(pyspark.__version__)")
  msg="Spark $line (pyspark $pyspark_version): $((secs / 60)) min $((secs % 60)) s"
  echo "$(date -u +%Y-%m-%dT%H:%MZ) $msg" >> "$OUT/times.txt"
  summary+=("$msg")
done
echo "test-compat: green on: ${LINES}"
printf '  %s\n' "${summary[@]}"
