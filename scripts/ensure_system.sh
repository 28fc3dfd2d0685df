#!/usr/bin/env bash
# Checks (and where it can, installs) what the tests need outside Python:
# Java 17+ for Spark and redis-server for the Redis coordinator tests.
# `ensure_system.sh java` checks Java only (what the demo needs).
set -euo pipefail
only="${1:-all}"

need_root_install() {
  local pkg="$1" why="$2"
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "ensure_system: installing $pkg with apt-get ($why)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$pkg" >/dev/null 2>&1 || {
      DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null 2>&1 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$pkg" >/dev/null 2>&1; } || {
      echo "ensure_system: 'apt-get install $pkg' failed; install it by hand ($why)" >&2; exit 1; }
  else
    echo "ensure_system: $why is missing. Install it and re-run, e.g.: sudo apt-get install $pkg" >&2
    exit 1
  fi
}

# Java 17+
java_major() {
  java -version 2>&1 | awk -F'"' '/version/ {split($2, v, "."); print (v[1] == "1" ? v[2] : v[1]); exit}'
}
if ! command -v java >/dev/null 2>&1 || [ "$(java_major)" -lt 17 ]; then
  need_root_install openjdk-17-jre-headless "Java 17 or newer (Spark 4 needs it)"
fi
if [ "$(java_major)" -lt 17 ]; then
  echo "ensure_system: java on PATH is version $(java_major); Spark 4 needs Java 17+. Set JAVA_HOME/PATH to a JDK 17+." >&2
  exit 1
fi

if [ "$only" = "java" ]; then
  echo "ensure_system: java $(java_major)" >&2
  exit 0
fi

# redis-server (real server for the coordinator tests; no fakes)
if ! command -v redis-server >/dev/null 2>&1; then
  need_root_install redis-server "redis-server (the Redis coordinator tests start a real one)"
fi
echo "ensure_system: java $(java_major), $(redis-server --version | awk '{print $3}')" >&2
