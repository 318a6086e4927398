# gamed: `make run` starts the daemon in the foreground, `make test` runs the whole suite.
# Both create .venv, install the project into it and regenerate Twisted's plugin cache when the
# packaging files change.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
ARGS   ?=
# LOG_FORMAT=json makes `make run` write one JSON object per log line.
LOG_FORMAT ?= text
PYTEST_ARGS ?=

ifeq ($(LOG_FORMAT),json)
LOGGER := --logger=gamed.logs.json_observer
else
LOGGER := --logger=gamed.logs.text_observer
endif

.PHONY: all run test unit integration bench bench-clocks examples check-python clean distclean
all: $(VENV)/.installed examples

# Everything written in C: the Stratego example AI (used by the benchmark), the example hosted bots,
# the hosted programs' native reaper (gamed/hosting/gamed-reaper, else gamed.reaper is used), and the Connect Four
# example engine and perfect-play solver, installed in the engines folder (engines/<name>/engine.so),
# the solver with its opening book from the bitbully-databases package installed in .venv.
examples: $(VENV)/.installed
	$(MAKE) --no-print-directory -C examples/stratego
	$(MAKE) --no-print-directory -C examples/bots
	$(MAKE) --no-print-directory gamed/hosting/gamed-reaper
	$(MAKE) --no-print-directory -C gamed/connect4/native install ENGINES_DIR=$(CURDIR)/engines PYTHON=$(CURDIR)/$(BIN)/python

check-python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "gamed needs Python >= 3.11 (set PYTHON=...)")'

$(VENV)/.installed: setup.cfg pyproject.toml twisted/plugins/gamed_plugin.py | check-python
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet '.[test]'
	$(MAKE) --no-print-directory plugin-cache
	touch $@

# A regular (non-editable) install is what twistd runs, so reinstall the package whenever its
# sources change; cheap, and it keeps `make run` honest.
$(VENV)/.package: $(VENV)/.installed gamed/hosting/gamed-reaper $(shell find gamed -name '*.py' -o -name '*.md' -o -name '*.map' -o -name '*.txt' -o -name '*.html' -o -name '*.js' -o -name '*.css' -o -name '*.ico' 2>/dev/null)
	$(BIN)/python -m pip install --quiet --no-deps --force-reinstall .
	$(MAKE) --no-print-directory plugin-cache
	touch $@

# Installed with the package (setup.cfg package_data) so that twistd's hosted programs use it;
# without a C compiler it is left out and gamed.reaper does its work.
gamed/hosting/gamed-reaper: gamed/hosting/reaper.c
	-$(CC) -O2 -Wall -Wextra -o $@ gamed/hosting/reaper.c

.PHONY: plugin-cache
plugin-cache:
	$(BIN)/python -c 'from twisted.plugin import IPlugin, getPlugins; list(getPlugins(IPlugin))'
	PYTHONPATH=. $(BIN)/python -c 'from twisted.plugin import IPlugin, getPlugins; list(getPlugins(IPlugin))'

run: $(VENV)/.package
	@$(MAKE) --no-print-directory examples >/dev/null || echo "gamed: the C engines and AIs were not built (no C compiler?); Connect Four offers its built-in engines only" >&2
	$(BIN)/twistd --nodaemon --pidfile= $(LOGGER) gamed $(ARGS)

test: $(VENV)/.package
	$(BIN)/python -m pytest $(PYTEST_ARGS)

unit: $(VENV)/.package
	$(BIN)/python -m pytest -m 'not integration' $(PYTEST_ARGS)

integration: $(VENV)/.package
	$(BIN)/python -m pytest -m integration $(PYTEST_ARGS)

bench: $(VENV)/.package examples
	$(BIN)/python bench/kalaha_load.py
	$(BIN)/python bench/fight_load.py
	$(BIN)/python bench/stratego_referee.py
	$(BIN)/python bench/combat_load.py
	$(BIN)/python bench/combat_flood.py
	$(BIN)/python bench/connect4_solver.py --max-seconds 150
	$(BIN)/python bench/connect4_perfect.py
	$(BIN)/python bench/connect4_load.py
	$(BIN)/python bench/web_load.py
	$(BIN)/python bench/textline_held.py
	$(BIN)/python bench/attack_load.py --short
	$(BIN)/python bench/accounts_verify.py
	$(BIN)/python bench/confidence_ranking.py
	$(BIN)/python bench/hosted_games.py
	$(BIN)/python bench/generic_load.py

# What the clocks cost (issue 15): plain vs clock side by side, about 2.5 minutes; not in `make bench`.
# It runs the work tree's gamed (PYTHONPATH), so the venv need not hold the newest install.
bench-clocks: $(VENV)/.installed
	$(BIN)/python bench/clock_cost.py

clean:
	rm -rf build *.egg-info twisted/plugins/dropin.cache .hypothesis
	find . -name __pycache__ -prune -exec rm -rf {} +
	$(MAKE) --no-print-directory -C examples/stratego clean
	$(MAKE) --no-print-directory -C gamed/connect4/native clean

distclean: clean
	rm -rf $(VENV)
