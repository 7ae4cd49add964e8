# Ophidis: `make run` serves on 127.0.0.1:6379, `make test` runs the suite.
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test test-pythons bench bench-quick deps venv clean lint

# The editable install also compiles the Cython modules in place (the
# compiled layer: each concept's _*.pyx/.pxd beside its pure twin, listed in
# src/ophidis/compiled.py; persistence/_lzf.pyx): editing one re-runs the install.
$(STAMP): pyproject.toml setup.py src/ophidis/compiled.py $(wildcard src/ophidis/*/_*.pyx src/ophidis/*/_*.pxd src/ophidis/_*.pxd)
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install -q -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

# Debian's redis-server / redis-tools are the reference and the real clients in
# tests; openssl makes the TLS tests' certificates.
deps:
	@if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1 || ! command -v redis-benchmark >/dev/null 2>&1 || ! command -v openssl >/dev/null 2>&1; then \
		echo "Installing Debian's redis-server, redis-tools and openssl..."; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server redis-tools openssl >/dev/null; \
	fi

run: $(STAMP)
	$(VENV)/bin/ophidis-server --bind 127.0.0.1 --port 6379 --dir .

# The suite runs twice: with the compiled request loop, and with its
# pure-Python twin (OPHIDIS_PURE=1), which must behave the same (multi-process
# scenarios that do not depend on the loop run once: support.servers.compiled_run_only).
test: $(STAMP) deps
	$(VPY) -m pytest -n 2 --dist loadfile tests
	OPHIDIS_PURE=1 $(VPY) -m pytest -n 2 --dist loadfile tests

# Every CPython 3.11+ here (~/.pyenv/versions, or PYTHONS="path ..."), as
# users install it: a wheel built from the sdist, installed in a fresh
# virtualenv, runs the smoke selection of the suite (-m smoke) with the
# compiled loop and with OPHIDIS_PURE=1; the sdist installed without a C
# compiler runs as pure Python (tests/pythons.py).
test-pythons: $(STAMP) deps
	$(VPY) tests/pythons.py

# All suites (redis-benchmark rps, memory, collections, scripting, pubsub,
# persistence); pick some with `make bench BENCH_ARGS="--suites pubsub"`.
bench: $(STAMP) deps
	$(VPY) bench/run.py $(BENCH_ARGS)

# Smoke run: every suite at reduced size.
bench-quick: $(STAMP) deps
	$(VPY) bench/run.py --quick $(BENCH_ARGS)

# The tree's structure (tools/structure.py, standard library only): import
# cycles, imports inside functions, getattr/hasattr probes on the server, the
# largest modules (.pyx and .pxd included) and upward imports into the
# command families; fails on a module-level cycle, an upward import or a probe.
lint:
	$(PY) tools/structure.py src/ophidis --check

clean:
	rm -rf $(VENV) build dist *.egg-info src/*.egg-info .pytest_cache src/ophidis/*/_*.c src/ophidis/*/_*.*.so
