# stratamem — the two commands a newcomer needs:
#   make run    start the stratamem server (REST + MCP) on the embedded default (a local DuckDB file)
#   make test   install everything and run the whole test suite (what CI runs)
PY     ?= python3
PIP    ?= $(PY) -m pip
DB     ?= data/stratamem.duckdb
EXTRAS ?= local,onnx,server,postgres,redis,s3,dev

.PHONY: install run demo test pytest lint services bench clean

install:
	$(PIP) install -q --disable-pip-version-check torch==2.13.0
	$(PIP) install -q --disable-pip-version-check -e '.[$(EXTRAS)]'

HOST   ?= 127.0.0.1
PORT   ?= 8080

run: install
	$(PY) -m stratamem serve --db $(DB) --host $(HOST) --port $(PORT)

demo: install
	$(PY) -m stratamem demo --db $(DB)

services:
	bash scripts/services.sh

lint:
	$(PY) -m ruff check src tests benchmarks
	$(PY) -m mypy

pytest:
	$(PY) -m pytest

test: install services lint pytest

bench: install
	$(PY) benchmarks/core_latency.py

clean:
	rm -rf data .pytest_cache .mypy_cache .ruff_cache
