# minikafka: `make setup` once, then `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
ZOOKEEPER_JAR := /usr/share/java/zookeeper.jar

.PHONY: setup test lint bench-log bench-produce bench-failover sim-long clean

setup: $(STAMP) $(ZOOKEEPER_JAR)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,spark]'
	touch $(STAMP)

$(ZOOKEEPER_JAR):
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends zookeeper >/dev/null; \
	else \
		echo "ZooKeeper is missing: install Debian's 'zookeeper' package (it provides $(ZOOKEEPER_JAR)), e.g. 'sudo apt-get install zookeeper'." >&2; \
		exit 1; \
	fi

lint: $(STAMP)
	$(BIN)/ruff check .

test: lint
	$(BIN)/pytest -q

sim-long: $(STAMP)
	SIM_SEEDS=$${SIM_SEEDS:-5000} $(BIN)/pytest -q tests/sim/test_simulation.py

bench-log: $(STAMP)
	$(BIN)/python -m bench.log_bench

bench-produce: $(STAMP)
	$(BIN)/python -m bench.produce_bench --runs 3

bench-failover: $(STAMP)
	$(BIN)/python -m bench.failover_bench --runs 5

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
