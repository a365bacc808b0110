# Set-up and the two entry points a new user needs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: demo test lint typecheck clean chromium sshd slurm screenshot

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

# $(call apt_install,FILE,PACKAGES,WHAT): install Debian PACKAGES unless FILE exists, as root or with
# password-less sudo; otherwise say that WHAT will skip. Package scripts are kept from starting
# services (policy-rc.d answers 101, "action forbidden", for the length of the install).
define apt_install
test -e $(1) || { \
  if [ "$$(id -u)" = 0 ]; then SUDO=; \
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO=sudo; \
  else echo "$(2): not installed, and no root to install it: $(3) will skip"; exit 0; fi; \
  if ! command -v apt-get >/dev/null 2>&1; then echo "$(2): no apt-get: $(3) will skip"; exit 0; fi; \
  policy=/usr/sbin/policy-rc.d; own_policy=; \
  if [ ! -e $$policy ]; then printf '#!/bin/sh\nexit 101\n' | $$SUDO tee $$policy >/dev/null && $$SUDO chmod 755 $$policy && own_policy=1; fi; \
  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends $(2) \
    || echo "$(2): could not be installed: $(3) will skip"; \
  if [ -n "$$own_policy" ]; then $$SUDO rm -f $$policy; fi; }
endef

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

# The system's OpenSSH server, started on 127.0.0.1 by tests/real/ (a real agent on this real host,
# ProxyJump through it), and a real Slurm controller, daemon and MUNGE, started on localhost in a
# temporary directory by the Slurm tests. Installed from Debian's packages when missing and possible;
# otherwise those tests skip and say why. Installing never leaves a daemon running: the tests start
# their own, on loopback, and stop them.
sshd:
	@$(call apt_install,/usr/sbin/sshd,openssh-server,the real OpenSSH server tests)

slurm:
	@$(call apt_install,/usr/sbin/slurmctld,slurm-wlm munge,the real Slurm tests)

test: $(TEST_STAMP) chromium sshd slurm
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
