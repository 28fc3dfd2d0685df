#!/usr/bin/env bash
# A virtual environment for one Spark line: .venv-compat/<line>, the project installed
# (editable, with its test and tpcds extras) with that line's pyspark and the pins of
# constraints/spark-<line>.txt. Used by `make test-compat`; idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
line="$1"
py="${PY:-python3}"
venv=".venv-compat/$line"
cons="constraints/spark-$line.txt"
[ -f "$cons" ] || { echo "compat_venv: no $cons (known lines: $(ls constraints | sed -n 's/^spark-\(.*\)\.txt$/\1/p' | tr '\n' ' '))" >&2; exit 2; }
stamp="$venv/.installed"
if [ -f "$stamp" ] && [ "$stamp" -nt "$cons" ] && [ "$stamp" -nt constraints/common.txt ] && [ "$stamp" -nt setup.cfg ]; then
  exit 0
fi
rm -rf "$venv"
"$py" -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
PYTHONWARNINGS="ignore:Editable installation" "$venv/bin/python" -m pip install -q -c "$cons" -e '.[test,tpcds]'
touch "$stamp"
