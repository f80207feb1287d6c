# Shared by tools/setup.sh and tools/containers.sh (sourced, from the repository's root).
# shellcheck shell=bash disable=SC2034

# Debian/Ubuntu packages, each named once (the Dockerfile repeats python3, python3-venv, the JRE and ZooKeeper's jar:
# it cannot read this file).
PREREQUISITE_PACKAGES=(git make python3 python3-venv)  # the README's, before `make setup`
JAVA_PACKAGE=default-jre-headless
ZOOKEEPER_PACKAGE=libzookeeper-java
TEST_TOOL_PACKAGES=(kcat maven)  # kcat: a stock Kafka client the tests drive; maven: fetches Kafka's jars
KAFKA_POM=tools/kafka/pom.xml
KAFKA_LIBS=build/kafka/libs
SPARK_KAFKA_POM=tools/spark-kafka/pom.xml
SPARK_KAFKA_JARS=build/spark-kafka/jars
FRANZ_GO_SOURCE=tools/franz-go  # a Go module on franz-go, built by make setup (its modules pinned by go.sum)
FRANZ_GO_BIN=build/franz-go/franz-go-client
GO_DEFAULT=/usr/local/go/bin/go  # where Go's own installer puts the toolchain
NFTABLES_PACKAGE=nftables  # nft, for network partitions between a cluster's members
BROWSER_PACKAGE=chromium  # a real browser for the tests of the console's page and the chaos report
CONTAINER_PACKAGES=(podman runc netavark aardvark-dns catatonit iptables mmdebstrap)  # netavark 1.4 drives iptables

LOGS=build/setup

say() { printf 'setup: %s\n' "$*"; }
fail() { say "$*" >&2; exit 1; }
has() { command -v "$1" >/dev/null 2>&1; }

# logged NAME CMD...: run CMD with its output in build/setup/NAME.log; on failure show the log's last lines
logged() {
  local name=$1; shift
  mkdir -p "$LOGS"
  if ! "$@" >"$LOGS/$name.log" 2>&1; then
    say "$name failed: $*" >&2
    tail -n 25 "$LOGS/$name.log" | sed 's/^/    | /' >&2
    return 1
  fi
}
