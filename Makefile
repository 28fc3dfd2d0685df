# Two entry points (see README): `make demo` and `make test`.
# Both create .venv on first use and install the project into it.
PY ?= python3
VENV ?= .venv
PYTHON := $(VENV)/bin/python
PYTEST_ARGS ?=
# The quick tier on two pytest workers (a module per worker): it is pure-Python CPU, 2:50 in
# one process and 2:02 on two here. `make test` stays one process with one Spark session: its
# time is the driver JVM's CPU, and two workers measured 32:56 and 39:52 against 36:21.
WORKERS ?= -n 2 --dist loadfile

.PHONY: venv system test test-all check test-compat jars docs demo fuzz fuzz-long peer bench-splits bench-collectors bench-analysis tpcds-bench clean

# (setuptools' notice that an editable install follows the working tree is silenced: that is
# what a development install is for)
$(VENV)/.installed: setup.cfg pyproject.toml constraints/dev.txt constraints/common.txt
	$(PY) -m venv $(VENV)
	$(PYTHON) -m pip install -q --upgrade pip
	PYTHONWARNINGS="ignore:Editable installation" $(PYTHON) -m pip install -q \
		-c constraints/dev.txt -e '.[test,tpcds]'
	touch $@

venv: $(VENV)/.installed

system:
	./scripts/ensure_system.sh

# Runs the whole suite; exit code 5 ("no tests collected") is a failure, like any other.
test: venv system
	$(PYTHON) -m pytest $(PYTEST_ARGS)

# `make test` with every variant: modules that set SAMPLE_VARIANTS (tests/conftest.py) run only
# a fixed sample of their matrices under `make test`, each case at least once; the property
# laws draw their full example budget and tests marked `full` run (tests/budget.py).
test-all: venv system
	DPP_ALL_VARIANTS=1 $(PYTHON) -m pytest $(PYTEST_ARGS)

# The quick tier for the edit-test loop: algebra, codec, planner, loader, reports, Redis; no
# Spark session and no TPC-DS data (tests/conftest.py marks those). Under 3 minutes.
check: venv system
	$(PYTHON) -m pytest $(WORKERS) -m "not spark and not tpcds and not connect and not slow" $(PYTEST_ARGS)

# The demo needs Java only (the embedded coordinator, no redis-server).
demo: venv
	./scripts/ensure_system.sh java
	$(PYTHON) -m tpcds.demo

# The differential fuzzer (tests/fuzz): generated cases, each with dpp and with Spark alone,
# until MINUTES are up; a mismatch is shrunk and written to tests/fuzz_regressions. Last line:
# "fuzz: <N> cases, <W> mismatches, <P> pruned"; non-zero exit on any mismatch. `make test`
# runs a fixed seed for a few minutes (tests/test_fuzz.py); `fuzz-long` is every road, longer.
# FOCUS='extra=compare_fact;relation=catalog' keeps only the cases of a shape (tests.fuzz.cli).
MINUTES ?= 5
SEED ?= 1
BACKEND ?= classic
fuzz: venv system
	$(PYTHON) -m tests.fuzz --minutes $(MINUTES) --seed $(SEED) --backend $(BACKEND) \
		$(if $(FOCUS),--focus '$(FOCUS)')

fuzz-long: venv system
	$(PYTHON) -m tests.fuzz --minutes 30 --seed $(SEED) --backend classic
	$(PYTHON) -m tests.fuzz --minutes 30 --seed $(SEED) --backend connect
	$(PYTHON) -m tests.fuzz --minutes 30 --seed $(SEED) --backend sqltext

# The peer suite (tests/peer): Spark's and Trino's dynamic pruning queries in four variants
# and three modes; last line "peer suite: <N> case runs, dpp pruned <P> ..., mismatches <M>".
peer: venv system
	$(PYTHON) -m tests.peer

# The compatibility tier: per Spark line a venv of its own (.venv-compat/<line>, pinned by
# constraints/spark-<line>.txt) and a compact suite in it (scripts/test_compat.sh: job shapes,
# examples, dpp-submit, a Connect smoke test, TPC-DS SF0.1 twelve). SPARK="3.5 4.0" picks lines.
SPARK ?= 3.5 4.0 4.1 4.2 4.3
test-compat: system
	SPARK="$(SPARK)" ./scripts/test_compat.sh

# The release step for the JVM part: the optimizer hook's jar per Spark line into dpp/jvm/jars,
# which git keeps and every install carries (tests/test_jvm_jars.py fails while a jar is older
# than its Java sources). Needs javac and PyPI (or a filled cache): scripts/build_hook_jars.py.
jars: venv
	$(PYTHON) scripts/build_hook_jars.py --out dpp/jvm/jars

# The manual: regenerates the pages drawn from the code and the kept benchmark results
# (scripts/docs_gen.py), then builds docs/ with MkDocs into site/ (gitignored). Strict: a broken
# link or a page missing from mkdocs.yml's navigation fails the build.
$(VENV)/.docs-installed: $(VENV)/.installed setup.cfg
	PYTHONWARNINGS="ignore:Editable installation" $(PYTHON) -m pip install -q \
		-c constraints/dev.txt -e '.[docs]'
	touch $@

docs: venv $(VENV)/.docs-installed
	$(PYTHON) scripts/docs_gen.py
	NO_MKDOCS_2_WARNING=1 $(PYTHON) -m mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache site
