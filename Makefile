# Set-up and the two entry points a new user needs: `make demo` and `make test`.
# Installs with uv (https://docs.astral.sh/uv/): the one on PATH, else one fetched once into .venv-uv
# with the system pip; a fresh clone is installed in seconds instead of a minute, and quietly.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
UV_HOME := .venv-uv
UV ?= $(or $(shell command -v uv 2>/dev/null),$(UV_HOME)/bin/uv)
INSTALL := $(UV) pip install --quiet --python $(BIN)/python
# From uv's cache alone when it holds everything (no index round trips), else from the index.
INSTALL_FAST = $(INSTALL) --offline $(1) 2>/dev/null || $(INSTALL) $(1)

BENCH_RESULTS ?= bench-results

.PHONY: demo test bench fuzz lint typecheck clean system-packages screenshot

$(UV_HOME)/bin/uv:
	$(PYTHON) -m pip install --isolated --quiet --disable-pip-version-check --root-user-action=ignore \
	  --target $(UV_HOME) uv

$(BIN)/python: | $(UV)
	$(UV) venv --quiet --seed --python $(PYTHON) $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(call INSTALL_FAST,-e .)
	touch $@

$(TEST_STAMP): pyproject.toml | $(BIN)/python
	$(call INSTALL_FAST,-e '.[test]')
	touch $@ $(STAMP)

demo: $(STAMP)
	$(BIN)/fleet demo --scenario incident

# Debian packages the tests run for real, each FILE:PACKAGE: headless Chromium renders the HTML
# reports; Prometheus, promtool and Alertmanager scrape two shards, check the shipped rules and the
# dashboard's queries, and fire and resolve alerts; the OpenSSH server carries the real-host, OpenSSH
# config and ProxyJump tests; slurmctld, slurmd and MUNGE are a real Slurm on localhost. The tests
# start their own daemons on loopback and stop them.
SYSTEM_PACKAGES := /usr/bin/chromium:chromium /usr/bin/promtool:prometheus \
  /usr/bin/prometheus-alertmanager:prometheus-alertmanager /usr/sbin/sshd:openssh-server \
  /usr/sbin/slurmctld:slurm-wlm /usr/sbin/slurmd:slurmd /usr/sbin/munged:munge

# Installs the missing ones in one apt-get run, as root or with password-less sudo; otherwise their
# tests skip and say why. Package scripts are kept from starting services (policy-rc.d answers 101,
# "action forbidden", for the length of the install).
system-packages:
	@missing=; for entry in $(SYSTEM_PACKAGES); do test -e $${entry%%:*} || missing="$$missing $${entry#*:}"; done; \
	test -n "$$missing" || exit 0; \
	if [ "$$(id -u)" = 0 ]; then SUDO=; \
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO=sudo; \
	else echo "not installed, and no root to install them:$$missing (their tests will skip)"; exit 0; fi; \
	if ! command -v apt-get >/dev/null 2>&1; then echo "no apt-get to install$$missing (their tests will skip)"; exit 0; fi; \
	policy=/usr/sbin/policy-rc.d; own_policy=; \
	if [ ! -e $$policy ]; then printf '#!/bin/sh\nexit 101\n' | $$SUDO tee $$policy >/dev/null && $$SUDO chmod 755 $$policy && own_policy=1; fi; \
	echo "installing$$missing" >&2; \
	$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null \
	  || echo "could not install$$missing: their tests will skip"; \
	if [ -n "$$own_policy" ]; then $$SUDO rm -f $$policy; fi

# The suite runs on every core (pytest-xdist; an idle worker takes tests queued for a busy one).
# TEST_WORKERS=0 runs it in this process alone.
TEST_WORKERS ?= auto
test: $(TEST_STAMP) system-packages
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist worksteal

# Every benchmark at its full size, one after the other, each writing its JSON document to
# $(BENCH_RESULTS)/NAME.json (benchmarks/README.md says what each measures). A missed target is
# reported and kept in the document; a benchmark that could not measure fails the target.
bench: $(TEST_STAMP)
	@mkdir -p $(BENCH_RESULTS)
	@failed=; for name in $$($(BIN)/python -m benchmarks --list); do \
	  echo "== benchmarks $$name" >&2; \
	  $(BIN)/python -m benchmarks $$name --json > $(BENCH_RESULTS)/$$name.json; \
	  case $$? in \
	    0) echo "== $$name: every target met ($(BENCH_RESULTS)/$$name.json)" >&2 ;; \
	    1) echo "== $$name: some target missed ($(BENCH_RESULTS)/$$name.json)" >&2 ;; \
	    *) rm -f $(BENCH_RESULTS)/$$name.json; failed="$$failed $$name"; echo "== $$name: could not measure" >&2 ;; \
	  esac; \
	done; \
	if [ -n "$$failed" ]; then echo "benchmarks that could not measure:$$failed" >&2; exit 1; fi

# The long fuzz profile: 10,000 hostile inputs per parser kind (tests/security/test_parser_fuzz.py),
# with a fresh seed each run; `make test` runs the same suite at 200 fixed inputs per kind. Takes
# tens of minutes; per-kind counts are in the statistics Hypothesis prints at the end.
fuzz: $(TEST_STAMP)
	FLEET_FUZZ_PROFILE=long $(BIN)/pytest -q --timeout=0 --hypothesis-show-statistics tests/security/test_parser_fuzz.py

# docs/screenshot.svg, the README's picture: the real console on the simulated `incident` fleet
# once every fault has started (about two and a half minutes).
screenshot: $(STAMP)
	$(BIN)/python docs/make_screenshot.py

lint: $(TEST_STAMP)
	$(BIN)/ruff check .

typecheck: $(TEST_STAMP)
	$(BIN)/mypy

clean:
	rm -rf $(VENV) $(UV_HOME) .pytest_cache .mypy_cache .ruff_cache $(BENCH_RESULTS)
