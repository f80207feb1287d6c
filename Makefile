# minikafka: `make setup` once (a bare Debian/Ubuntu machine needs only git, make, python3 and python3-venv), then
# `make test`. tools/setup.sh says what each step does; running it again changes nothing.
PYTHON ?= python3
BIN := .venv/bin

.PHONY: setup venv lock test lint bench-log bench-produce bench-failover bench-kafka bench-compression bench-verify bench-scale bench-groups bench-cleaner bench-pipeline sim-long chaos clean

setup:
	@PYTHON=$(PYTHON) tools/setup.sh

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

# produce MB/s with each codec (librdkafka and minikafka's producer) and the brokers' CPU per MB, against none
bench-compression: venv
	$(BIN)/python -m bench.compression_bench --runs 3

bench-verify: venv
	$(BIN)/python -m bench.verify_bench --runs 3

# 10,000 partitions (RF 3) on 3 brokers: creation, kill -9 of a broker and of the controller, controlled shutdown,
# restart, memory and descriptors
bench-cleaner: venv
	$(BIN)/python -m bench.cleaner_bench --runs 3

bench-scale: venv
	$(BIN)/python -m bench.scale_bench --runs 3

# 10 consumers forming a group on 30 partitions, commits per second (acks=all), and librdkafka consuming through a
# group against assigned partitions
bench-groups: venv
	$(BIN)/python -m bench.groups_bench --runs 3

# Records per second through the example Spark pipeline (Kafka source, windowed counts, Parquet) on minikafka and, in
# the same run, on three Apache Kafka brokers from build/kafka/libs (same topics, same input, same query)
bench-pipeline: venv
	$(BIN)/python -m bench.pipeline_bench --runs 3

# Ten minutes of faults on a 3-broker cluster, ending in the verifier's verdict (root: partitions are nftables
# rules). CHAOS_SEED=N replays a run; CHAOS_WORKLOAD=spark-pipeline adds the example Spark pipeline, whose Parquet
# output must count every acknowledged record exactly once. The summary is in minikafka-chaos/chaos-summary.json.
CHAOS_SEED ?= $(shell od -An -N2 -tu2 /dev/urandom | tr -d ' ')
CHAOS_WORKLOAD ?= producers
chaos: venv
	$(BIN)/minikafka chaos run --dir minikafka-chaos --duration 600 --seed $(CHAOS_SEED) --workload $(CHAOS_WORKLOAD)

clean:
	rm -rf .venv .pytest_cache .ruff_cache .hypothesis
