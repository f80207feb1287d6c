#!/usr/bin/env bash
# `make setup`: everything this checkout needs, on a fresh machine too, in one go. Each step first checks whether
# its work is done by running what it provides (never by a file's presence alone) and works only if not; a second
# run prints "ok" for every step and changes nothing. A failing tool's own last lines are shown.
#   python      .venv with exactly requirements/dev.lock, and minikafka itself (editable)
#   java        a headless JRE (default-jre-headless on Debian/Ubuntu)
#   spark-classes  the class data sharing archive of the verifier's Spark driver JVM (in .venv/share/minikafka),
#               which maps Spark's classes from it at start-up instead of loading them from the jars
#   zookeeper   ZooKeeper's jar from Debian (libzookeeper-java), without the desktop JRE of the `zookeeper` package
#   test-tools  kcat (a stock Kafka client the tests drive) and Maven (to fetch Kafka's jars)
#   kafka       Apache Kafka 3.9.1's jars from tools/kafka/pom.xml in build/kafka/libs, an oracle for the tests
#   spark-kafka Spark's Kafka connector (source and sink) from tools/spark-kafka/pom.xml in build/spark-kafka/jars,
#               for the Structured Streaming pipelines of examples/
#   nftables    nft, for network partitions between a cluster's members (which need root too)
#   browser     Debian's chromium, headless, for the tests of `minikafka console`'s page and the chaos report
#   containers  podman, runc, netavark, aardvark-dns, catatonit, mmdebstrap; then tools/containers.sh prepares the
#               base image, the images' dependency layers and the fresh-machine caches (as root on Debian/Ubuntu;
#               elsewhere it says what is missing, and the container tests skip: with CI=true it fails instead)
#   franz-go    tools/franz-go (a program on franz-go, a stock Go client) built into build/franz-go with the Go
#               toolchain on PATH or in /usr/local/go, its modules fetched as go.sum pins them; without Go it says so
#               and the franz-go test fails, saying so (with CI=true setup fails instead)
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=.venv
LOCK=requirements/dev.lock
STAMP=$VENV/.installed
ZOOKEEPER_JAR=/usr/share/java/zookeeper.jar
NFT=/usr/sbin/nft
# shellcheck source=tools/common.sh
. tools/common.sh

can_apt() { [ "$(id -u)" = 0 ] && has apt-get && has dpkg-query; }
installed() { [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]; }
# dpkg knows the package but it is not fully installed (an earlier install broke in its postinst)
half_installed() { has dpkg-query && dpkg-query -W "$1" >/dev/null 2>&1 && ! installed "$1" &&
  [ "$(dpkg-query -W -f='${db:Status-Status}' "$1")" != not-installed ]; }
# podman marks its containers so (a /.dockerenv proves nothing: some VM images carry one)
in_container() { [ -e /run/.containerenv ]; }

# apt_install [--with-recommends] PACKAGE...: package lists are fetched when there are none, or again when an
# install from the existing ones fails
apt_install() {
  local options=(--no-install-recommends)
  if [ "$1" = --with-recommends ]; then options=(); shift; fi
  export DEBIAN_FRONTEND=noninteractive
  if ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null; then logged apt-update apt-get update; fi
  if ! logged apt-install apt-get install -y "${options[@]}" "$@"; then
    say "retrying with fresh package lists"
    logged apt-update apt-get update
    logged apt-install apt-get install -y "${options[@]}" "$@"
  fi
}

lock_digest() { cat "$LOCK" pyproject.toml | sha256sum | cut -d' ' -f1; }
venv_works() {
  "$VENV/bin/python" -m pip --version >/dev/null 2>&1 && [ "$(cat "$STAMP" 2>/dev/null)" = "$(lock_digest)" ] &&
    "$VENV/bin/minikafka" --help >/dev/null 2>&1 && "$VENV/bin/python" -m pip check >/dev/null 2>&1
}

step_python() {
  if venv_works; then say "python: ok ($VENV has $LOCK)"; return; fi
  say "python: making $VENV from $LOCK"
  rm -rf "$VENV"  # half-made, or made from another lock: start clean
  if ! "$PYTHON" -m venv "$VENV" >/dev/null 2>&1; then
    rm -rf "$VENV"
    if can_apt; then
      say "python: installing python3-venv"
      apt_install python3-venv
    fi
    logged venv "$PYTHON" -m venv "$VENV" || {
      rm -rf "$VENV"; fail "python: '$PYTHON -m venv' failed (on Debian/Ubuntu: apt-get install python3-venv)"; }
  fi
  if ! logged pip-install "$VENV/bin/python" -m pip install --disable-pip-version-check --require-hashes --no-deps \
         -r "$LOCK" || ! logged pip-install-project "$VENV/bin/python" -m pip install --disable-pip-version-check \
         --no-index --no-deps --no-build-isolation -e .; then
    rm -rf "$VENV"
    fail "python: installing into $VENV failed; it was removed, so the next make setup starts clean"
  fi
  lock_digest >"$STAMP"
  venv_works || fail "python: $VENV was installed but does not work ('$VENV/bin/python -m pip check' says why)"
}

java_works() { java -version >/dev/null 2>&1 && ! half_installed "$JAVA_PACKAGE"; }

step_java() {
  if java_works; then say "java: ok ($(java -version 2>&1 | head -n 1))"; return; fi
  can_apt || fail "java: no working 'java': install a Java 17 runtime (Debian/Ubuntu: $JAVA_PACKAGE), or run this as root"
  say "java: installing $JAVA_PACKAGE"
  mkdir -p /usr/share/man/man1  # slim images have no man directories; the JRE's postinst needs this one
  logged dpkg-configure dpkg --configure -a  # finish a JRE whose postinst failed earlier
  apt_install "$JAVA_PACKAGE"
  java_works || fail "java: $JAVA_PACKAGE is installed but 'java -version' does not run"
}

spark_classes_works() { logged spark-classes-check "$VENV/bin/python" -m verifier.class_archive --check; }

step_spark_classes() {
  if spark_classes_works 2>/dev/null; then
    say "spark-classes: ok (the verifier's driver JVM maps its class archive)"
    return
  fi
  say "spark-classes: making the class archive of the verifier's driver JVM (a verification in Spark, about 40 s)"
  logged spark-classes "$VENV/bin/python" -m verifier.class_archive ||
    fail "spark-classes: the archive could not be made"
  spark_classes_works || fail "spark-classes: the archive was made, but the driver JVM does not map it"
}

zookeeper_works() {
  java -cp "$ZOOKEEPER_JAR" org.apache.zookeeper.version.VersionInfoMain >/dev/null 2>&1 &&
    { ! has dpkg-query || installed "$ZOOKEEPER_PACKAGE"; }
}

step_zookeeper() {
  if zookeeper_works; then
    say "zookeeper: ok ($(java -cp "$ZOOKEEPER_JAR" org.apache.zookeeper.version.VersionInfoMain | head -n 1))"
    return
  fi
  can_apt || fail "zookeeper: $ZOOKEEPER_JAR is missing: install Debian's $ZOOKEEPER_PACKAGE (or Apache ZooKeeper's jar there)"
  say "zookeeper: installing $ZOOKEEPER_PACKAGE"
  apt_install "$ZOOKEEPER_PACKAGE"
  zookeeper_works || fail "zookeeper: $ZOOKEEPER_PACKAGE is installed but ZooKeeper's jar does not run"
}

step_test_tools() {
  local missing=() package
  for package in "${TEST_TOOL_PACKAGES[@]}"; do
    if has dpkg-query; then installed "$package" || missing+=("$package")
    else has "${package/maven/mvn}" || missing+=("$package"); fi
  done
  if [ ${#missing[@]} -eq 0 ]; then say "test-tools: ok (${TEST_TOOL_PACKAGES[*]})"; return; fi
  can_apt || fail "test-tools: ${missing[*]} missing: install them (Debian/Ubuntu: apt-get install ${missing[*]})"
  say "test-tools: installing ${missing[*]}"
  apt_install "${missing[@]}"
  has kcat && has mvn || fail "test-tools: ${missing[*]} installed, but kcat or mvn does not run"
}

kafka_version() { java -cp "$KAFKA_LIBS/*" kafka.Kafka --version 2>/dev/null | head -n 1; }
kafka_works() {
  [ "$(cat "$KAFKA_LIBS/.pom-digest" 2>/dev/null)" = "$(sha256sum <"$KAFKA_POM" | cut -d' ' -f1)" ] &&
    [ -n "$(kafka_version)" ]
}

step_kafka() {
  if kafka_works; then say "kafka: ok (Apache Kafka $(kafka_version) in $KAFKA_LIBS)"; return; fi
  has mvn || fail "kafka: Maven (mvn) is missing; run the test-tools step (apt-get install maven)"
  say "kafka: fetching the jars of $KAFKA_POM into $KAFKA_LIBS"
  rm -rf "$KAFKA_LIBS"
  logged kafka-jars mvn -B -q -f "$KAFKA_POM" dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory="$PWD/$KAFKA_LIBS" || fail "kafka: Maven could not fetch Kafka's jars"
  sha256sum <"$KAFKA_POM" | cut -d' ' -f1 >"$KAFKA_LIBS/.pom-digest"
  kafka_works || fail "kafka: the jars are in $KAFKA_LIBS, but 'java -cp \"$KAFKA_LIBS/*\" kafka.Kafka --version' fails"
}

# The jars of the pom, and the connector's provider class in them
spark_kafka_works() {
  [ "$(cat "$SPARK_KAFKA_JARS/.pom-digest" 2>/dev/null)" = "$(sha256sum <"$SPARK_KAFKA_POM" | cut -d' ' -f1)" ] &&
    "$PYTHON" - "$SPARK_KAFKA_JARS" <<'PY' 2>/dev/null
import pathlib, sys, zipfile
[jar] = pathlib.Path(sys.argv[1]).glob("spark-sql-kafka-0-10_*.jar")
zipfile.ZipFile(jar).getinfo("org/apache/spark/sql/kafka010/KafkaSourceProvider.class")
PY
}

step_spark_kafka() {
  if spark_kafka_works; then say "spark-kafka: ok ($(cd "$SPARK_KAFKA_JARS" && echo *.jar))"; return; fi
  has mvn || fail "spark-kafka: Maven (mvn) is missing; run the test-tools step (apt-get install maven)"
  say "spark-kafka: fetching the jars of $SPARK_KAFKA_POM into $SPARK_KAFKA_JARS"
  rm -rf "$SPARK_KAFKA_JARS"
  logged spark-kafka-jars mvn -B -q -f "$SPARK_KAFKA_POM" dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory="$PWD/$SPARK_KAFKA_JARS" || fail "spark-kafka: Maven could not fetch the connector's jars"
  sha256sum <"$SPARK_KAFKA_POM" | cut -d' ' -f1 >"$SPARK_KAFKA_JARS/.pom-digest"
  spark_kafka_works || fail "spark-kafka: the jars are in $SPARK_KAFKA_JARS, but the connector's classes are not"
}

nftables_works() { "$NFT" --version >/dev/null 2>&1; }

step_nftables() {
  if nftables_works; then say "nftables: ok ($("$NFT" --version))"; return; fi
  can_apt || fail "nftables: $NFT is missing: install Debian's $NFTABLES_PACKAGE as root (network partitions need root too)"
  say "nftables: installing $NFTABLES_PACKAGE"
  apt_install "$NFTABLES_PACKAGE"
  nftables_works || fail "nftables: $NFTABLES_PACKAGE is installed but '$NFT --version' does not run"
}

# The flags the tests start it with: as root it needs --no-sandbox, and the closed network refuses its own connections
browser_works() {
  local profile dom
  profile=$(mktemp -d) || return 1
  dom=$(timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$profile" \
    --dump-dom 'data:text/html,<p>ok</p>' 2>/dev/null) || true
  rm -rf "$profile"
  [[ $dom == *'<p>ok</p>'* ]]
}

step_browser() {
  if has chromium && browser_works; then say "browser: ok ($(chromium --version 2>/dev/null))"; return; fi
  can_apt || fail "browser: chromium is missing or does not run headless: install Debian's $BROWSER_PACKAGE"
  say "browser: installing $BROWSER_PACKAGE"
  apt_install "$BROWSER_PACKAGE"
  browser_works || fail "browser: $BROWSER_PACKAGE is installed but 'chromium --headless --dump-dom' does not run"
}

# Without the container tools the container tests skip, except on CI, where they must run.
containers_missing() {
  if [ "${CI:-}" = true ]; then fail "containers: $* (CI=true: the container tests must run)"; fi
  say "containers: $*; the container tests will be skipped"
}

step_containers() {
  if in_container; then
    containers_missing "this is a podman container, where podman does not run nested"
    return
  fi
  if can_apt; then
    local missing=() package
    for package in "${CONTAINER_PACKAGES[@]}"; do installed "$package" || missing+=("$package"); done
    if [ ${#missing[@]} -gt 0 ]; then
      say "containers: installing ${missing[*]}"
      apt_install --with-recommends "${missing[@]}"  # as tested: with podman's recommended packages
    fi
  fi
  if ! has podman; then
    containers_missing "podman is missing (Debian/Ubuntu, as root: apt-get install ${CONTAINER_PACKAGES[*]})"
    return
  fi
  tools/containers.sh prepare
}

go_tool() { if has go; then command -v go; elif [ -x "$GO_DEFAULT" ]; then echo "$GO_DEFAULT"; fi; }
franz_go_digest() {
  cat "$FRANZ_GO_SOURCE"/go.mod "$FRANZ_GO_SOURCE"/go.sum "$FRANZ_GO_SOURCE"/*.go | sha256sum | cut -d' ' -f1
}
franz_go_works() {
  [ "$(cat "$FRANZ_GO_BIN.digest" 2>/dev/null)" = "$(franz_go_digest)" ] &&
    { "$FRANZ_GO_BIN" 2>&1 || true; } | grep -q "usage: franz-go-client"
}

step_franz_go() {
  if franz_go_works; then say "franz-go: ok ($FRANZ_GO_BIN)"; return; fi
  local go
  go=$(go_tool)
  if [ -z "$go" ]; then
    if [ "${CI:-}" = true ]; then fail "franz-go: no Go toolchain (CI=true: the franz-go test must run)"; fi
    say "franz-go: no Go toolchain (go on PATH or $GO_DEFAULT); the franz-go test will fail"
    return
  fi
  say "franz-go: building $FRANZ_GO_BIN from $FRANZ_GO_SOURCE ($("$go" version | cut -d' ' -f3))"
  rm -f "$FRANZ_GO_BIN.digest"
  logged franz-go-build "$go" -C "$FRANZ_GO_SOURCE" build -mod=readonly -trimpath -o "$PWD/$FRANZ_GO_BIN" . ||
    fail "franz-go: the build failed"
  franz_go_digest >"$FRANZ_GO_BIN.digest"
  franz_go_works || fail "franz-go: $FRANZ_GO_BIN was built but does not run"
}

steps=("$@")
[ ${#steps[@]} -gt 0 ] ||
  steps=(python java spark-classes zookeeper test-tools kafka spark-kafka nftables browser containers franz-go)
for step in "${steps[@]}"; do
  case $step in
    python | java | spark-classes | zookeeper | test-tools | kafka | spark-kafka | nftables | browser | containers \
      | franz-go)
      "step_${step//-/_}" ;;
    *) fail "unknown step $step (python, java, spark-classes, zookeeper, test-tools, kafka, spark-kafka, nftables," \
            "browser, containers, franz-go)" ;;
  esac
done
