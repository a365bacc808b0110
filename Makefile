# Set-up and the two entry points a new user needs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: demo test lint typecheck clean chromium prometheus screenshot

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(TEST_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@ $(STAMP)

demo: $(STAMP)
	$(BIN)/fleet demo --scenario incident

# Headless Chromium renders the HTML reports in tests/console/test_report_html.py. Installed from
# Debian's packages when missing and possible (root or password-less sudo, apt-get); otherwise those
# tests skip and say why.
chromium:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; \
	  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO=sudo; \
	  else echo "chromium: not installed, and no root to install it: the HTML report tests will skip"; exit 0; fi; \
	  if ! command -v apt-get >/dev/null 2>&1; then echo "chromium: no apt-get: the HTML report tests will skip"; exit 0; fi; \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q chromium \
	    || echo "chromium: could not be installed: the HTML report tests will skip"; }

# Prometheus (with promtool) and Alertmanager run in tests/deploy and tests/scaleout: the shipped rules,
# the dashboard's queries, two shards scraped, alerts fired and resolved, the console reading Prometheus.
# Installed from Debian's packages like Chromium; otherwise those tests skip. The tests start their own on
# spare loopback ports, whatever services the packages start.
prometheus:
	@{ command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 && \
	   { command -v prometheus-alertmanager >/dev/null 2>&1 || command -v alertmanager >/dev/null 2>&1; }; } || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; \
	  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO=sudo; \
	  else echo "prometheus: not installed, and no root to install it: the Prometheus tests will skip"; exit 0; fi; \
	  if ! command -v apt-get >/dev/null 2>&1; then echo "prometheus: no apt-get: the Prometheus tests will skip"; exit 0; fi; \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends \
	    prometheus prometheus-alertmanager \
	    || echo "prometheus: could not be installed: the Prometheus tests will skip"; }

test: $(TEST_STAMP) chromium prometheus
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/pytest -q

# docs/screenshot.svg, the README's picture: the real console on the simulated `incident` fleet
# once every fault has started (about two and a half minutes).
screenshot: $(STAMP)
	$(BIN)/python docs/make_screenshot.py

lint: $(TEST_STAMP)
	$(BIN)/ruff check .

typecheck: $(TEST_STAMP)
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
