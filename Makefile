# minikafka: `make setup` once (a bare Debian/Ubuntu machine needs only git, make, python3 and python3-venv), then
# `make test`. tools/setup.sh says what each step does; running it again changes nothing.
PYTHON ?= python3
BIN := .venv/bin
# Apache Kafka's jars (tools/kafka/pom.xml): a real broker and Kafka's tools, as oracles.
KAFKA_LIBS := build/kafka/libs
KAFKA_READY := $(KAFKA_LIBS)/.ready

.PHONY: setup venv lock kafka-clients test lint bench-log bench-produce bench-failover bench-kafka bench-verify sim-long clean

setup: kafka-clients $(KAFKA_READY)
	@PYTHON=$(PYTHON) tools/setup.sh

# kcat (Debian's package), the stock Kafka client the tests drive besides the Python ones in requirements/dev.lock
kafka-clients:
	@if command -v kcat >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends kcat >/dev/null || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends kcat >/dev/null; }; \
	else \
		echo "kafka-clients: kcat is missing: install Debian's kcat package (apt-get install kcat)" >&2; exit 1; \
	fi

# Done only when the jars are there and Kafka runs from them.
$(KAFKA_READY): tools/kafka/pom.xml
	@command -v mvn >/dev/null || { echo "Maven (mvn) is missing: install Debian's 'maven' package to fetch Apache Kafka's jars." >&2; exit 1; }
	rm -rf $(KAFKA_LIBS)
	mvn -q -f tools/kafka/pom.xml dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=$(CURDIR)/$(KAFKA_LIBS)
	java -Dlog4j.configuration=file:tools/kafka/log4j.properties -cp '$(KAFKA_LIBS)/*' kafka.Kafka --version
	touch $@

# just the .venv step of setup (what the targets below need)
venv:
	@PYTHON=$(PYTHON) tools/setup.sh python

# refresh requirements/*.lock from pyproject.toml's ranges (UPGRADE=1: every pin to the newest), then make setup
lock: venv
	@tools/lock.sh

lint: venv
	$(BIN)/ruff check .

test: lint
	$(BIN)/pytest -q

sim-long: venv
	SIM_SEEDS=$${SIM_SEEDS:-5000} $(BIN)/pytest -q tests/sim/test_simulation.py

bench-log: venv
	$(BIN)/python -m bench.log_bench

bench-produce: venv
	$(BIN)/python -m bench.produce_bench --runs 3

bench-failover: venv
	$(BIN)/python -m bench.failover_bench --runs 5

bench-kafka: venv
	$(BIN)/python -m bench.kafka_client_bench --runs 3

bench-verify: venv
	$(BIN)/python -m bench.verify_bench --runs 3

clean:
	rm -rf .venv .pytest_cache .ruff_cache .hypothesis
