#!/usr/bin/env bash
# What a new user meets: a fresh venv that already holds pyspark <version>, an empty pip cache,
# no JDK on PATH (java only). Installs this clone into it, then runs a DataFrame star join that
# must prune through the shipped hook jar. Fails on a pyspark download, a changed pyspark, or
# no pruning.      usage: scripts/install_check.sh 3.5.9   (work folder: $WORK, /tmp/dpp-install-check)
set -euo pipefail
ver="${1:?usage: install_check.sh <pyspark version>}"
here="$(cd "$(dirname "$0")/.." && pwd)"
work="${WORK:-/tmp/dpp-install-check}"
v="$work/venv-$ver"; cache="$work/cache-$ver"
rm -rf "$v" "$cache"; mkdir -p "$work/jre/bin" "$work/bin"
python3 -m venv "$v"
"$v/bin/pip" install -q --upgrade pip
"$v/bin/pip" install -q "pyspark==$ver"
# a PATH with java and the usual tools but no javac (nor any other JDK tool)
ln -sf "$(readlink -f "$(command -v java)")" "$work/jre/bin/java"
for f in /usr/bin/* /bin/*; do
  n="$(basename "$f")"
  case "$n" in javac|jar|jshell|javadoc|jlink|jarsigner|javap|jdeps|jmod|jpackage) continue;; esac
  [ -e "$work/bin/$n" ] || ln -s "$f" "$work/bin/$n" 2>/dev/null || true
done
start=$(date +%s.%N)
"$v/bin/pip" install --cache-dir "$cache" "$here" > "$work/install-$ver.log" 2>&1
end=$(date +%s.%N)
grep "Downloading" "$work/install-$ver.log" | sed 's/^ */install-check: downloaded /' || true
echo "install-check: pip install took $(python3 -c "print(round($end - $start, 1))") s (dependencies included)"
start=$(date +%s.%N)
"$v/bin/pip" install -q --cache-dir "$cache" --no-deps --force-reinstall "$here" > /dev/null 2>&1
end=$(date +%s.%N)
echo "install-check: the project alone (--no-deps --force-reinstall) took $(python3 -c "print(round($end - $start, 1))") s"
if grep -q "Downloading pyspark" "$work/install-$ver.log"; then
  echo "install-check: FAILED: the install downloaded pyspark" >&2; exit 1
fi
after="$("$v/bin/python" -c 'import pyspark; print(pyspark.__version__)')"
[ "$after" = "$ver" ] || { echo "install-check: FAILED: pyspark is now $after" >&2; exit 1; }
out="$(cd /tmp && env -i HOME="$HOME" PATH="$work/jre/bin:$work/bin" JAVA_HOME="$work/jre" \
  "$v/bin/python" "$here/scripts/install_check_job.py" 2>/dev/null)"
echo "$out" | sed 's/^/install-check: /'
echo "$out" | grep -q "^rows \[0, 0, 1, 10\] kept 2 of 10 applied$" \
  || { echo "install-check: FAILED: the job did not prune through the shipped jar" >&2; exit 1; }
env -i HOME="$HOME" PATH="$work/jre/bin:$work/bin" JAVA_HOME="$work/jre" \
  "$v/bin/dpp" doctor 2>/dev/null | sed 's/^/install-check: /'
echo "install-check: pyspark $ver: ok"
