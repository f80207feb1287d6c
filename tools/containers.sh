#!/usr/bin/env bash
# The container side of `make setup` (tools/setup.sh runs `tools/containers.sh prepare` once podman is there).
# Everything a container test needs is downloaded here, so that the tests themselves download nothing:
#   conf        build/containers/containers.conf: runc, and ulimits within this machine's hard limits
#   base        debian:bookworm-slim, made with mmdebstrap from Debian's archive (build/containers/bookworm-slim.tar),
#               or pulled where there is no mmdebstrap
#   images      docker-compose.yml's images (localhost/minikafka, localhost/minikafka-verifier), so that their
#               dependency layers are cached and a test's build, offline, only adds the project's code
#   fresh       what the fresh-machine test installs offline (build/fresh-machine/): the .deb files and package
#               lists of the README's prerequisites and of make setup's packages, the wheels of dev.lock, and a
#               Maven repository with Kafka's jars
# Each is skipped when it is in place: the images when they build offline, the fresh-machine cache while the
# packages and the lock it was made from are unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=tools/common.sh
. tools/common.sh

CACHE=build/containers
FRESH=build/fresh-machine
BASE_IMAGE=docker.io/library/debian:bookworm-slim
IMAGES=(localhost/minikafka:latest localhost/minikafka-verifier:latest localhost/minikafka-prometheus:latest)
MIRROR=${MK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${MK_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
export CONTAINERS_CONF=$PWD/$CACHE/containers.conf

digest() { cat "$@" | sha256sum | cut -d' ' -f1; }

prepare_conf() {
  mkdir -p "$LOGS"
  local nofile
  nofile=$(ulimit -Hn)
  [ "$nofile" != unlimited ] || nofile=1048576
  mkdir -p "$CACHE"
  # crun refuses hybrid cgroups, rootful podman's default ulimits exceed what root may set here, and netavark
  # (not CNI) gives the compose network its DNS
  cat >"$CONTAINERS_CONF.tmp" <<CONF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=32768:32768"]
[engine]
runtime = "runc"
[network]
network_backend = "netavark"
CONF
  mv "$CONTAINERS_CONF.tmp" "$CONTAINERS_CONF"
  say "containers: ok ($CONTAINERS_CONF)"
}

base_works() { podman image exists "$BASE_IMAGE" && podman run --rm --network=none "$BASE_IMAGE" true >/dev/null 2>&1; }

prepare_base() {
  if base_works; then say "base image: ok ($BASE_IMAGE)"; return; fi
  if has mmdebstrap; then
    local tar=$CACHE/bookworm-slim.tar partial=$CACHE/bookworm-slim.partial.tar  # mmdebstrap reads the suffix
    if ! tar -tf "$tar" >/dev/null 2>&1; then
      say "base image: making $tar with mmdebstrap"
      logged mmdebstrap mmdebstrap --variant=minbase --mode=root \
        --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
        --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*' \
        --aptopt='Acquire::Check-Valid-Until "false"' bookworm "$partial" \
        "deb $MIRROR bookworm main" "deb $MIRROR bookworm-updates main" \
        "deb $SECURITY_MIRROR bookworm-security main"
      mv "$partial" "$tar"
    fi
    say "base image: importing $tar as $BASE_IMAGE"
    logged base-import podman import --change 'CMD ["bash"]' "$tar" "$BASE_IMAGE"
  else
    say "base image: pulling $BASE_IMAGE"
    logged base-pull podman pull "$BASE_IMAGE"
  fi
  base_works || fail "base image: $BASE_IMAGE does not run ('podman run --rm $BASE_IMAGE true')"
}

prepare_images() {
  # Done when they build offline: then every dependency layer is cached and a test's build downloads nothing.
  # One build at a time: parallel builds would each make the shared base stage, and a later build's cache could
  # then pick the other one.
  if env MK_IMAGE_TAG=latest tools/compose --parallel 1 --podman-build-args=--network=none --profile verify --profile monitoring build \
      >"$LOGS/images-offline.log" 2>&1; then
    say "images: ok (${IMAGES[*]} build offline)"
    return
  fi
  say "images: building ${IMAGES[*]}"
  logged images-build env MK_IMAGE_TAG=latest tools/compose --parallel 1 --profile verify --profile monitoring build
}

prepare_fresh() {
  local wanted have packages
  packages=("${PREREQUISITE_PACKAGES[@]}" "$JAVA_PACKAGE" "$ZOOKEEPER_PACKAGE" "${TEST_TOOL_PACKAGES[@]}"
            "$NFTABLES_PACKAGE" "$BROWSER_PACKAGE")
  wanted=$(echo "${packages[*]}" | digest - requirements/dev.lock "$KAFKA_POM" "$SPARK_KAFKA_POM")
  have=$(cat "$FRESH/digest" 2>/dev/null || true)
  if [ "$wanted" = "$have" ]; then say "fresh-machine cache: ok ($FRESH)"; return; fi
  say "fresh-machine cache: downloading ${packages[*]} and the wheels of requirements/dev.lock into $FRESH"
  rm -rf "$FRESH"
  mkdir -p "$FRESH/apt-archives/partial" "$FRESH/apt-lists/partial" "$FRESH/wheels"
  logged fresh-apt podman run --rm -v "$PWD/$FRESH/apt-archives:/var/cache/apt/archives" \
    -v "$PWD/$FRESH/apt-lists:/var/lib/apt/lists" "$BASE_IMAGE" sh -c \
    "apt-get update && apt-get install -y --download-only --no-install-recommends ${packages[*]}"
  # pyspark comes as an sdist: pip builds it with setuptools and wheel, which must be there offline too
  logged fresh-wheels .venv/bin/python -m pip download --disable-pip-version-check --require-hashes --no-deps \
    -r requirements/dev.lock -d "$FRESH/wheels"
  logged fresh-build-wheels .venv/bin/python -m pip download --disable-pip-version-check --no-deps \
    -d "$FRESH/wheels" wheel
  # Maven's local repository with what the kafka and spark-kafka steps need (the plugin, Kafka's jars and Spark's
  # connector), read offline
  logged fresh-maven mvn -B -q -f "$KAFKA_POM" -Dmaven.repo.local="$PWD/$FRESH/m2" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$PWD/$FRESH/kafka-libs-check"
  logged fresh-maven-spark mvn -B -q -f "$SPARK_KAFKA_POM" -Dmaven.repo.local="$PWD/$FRESH/m2" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$PWD/$FRESH/kafka-libs-check"
  rm -rf "$FRESH/kafka-libs-check"
  printf '<settings><offline>true</offline></settings>\n' >"$FRESH/maven-settings.xml"
  echo "$wanted" >"$FRESH/digest"
}

case ${1:-} in
  prepare) prepare_conf; prepare_base; prepare_images; prepare_fresh ;;
  *) fail "usage: tools/containers.sh prepare" ;;
esac
