# minikafka in containers, built FROM debian:bookworm-slim alone: everything else comes from Debian's archive and
# PyPI, pinned by requirements/*.lock. Targets:
#   broker    ZooKeeper (Debian's) and the minikafka broker and CLI: Python 3.11, a headless JRE, the runtime lock
#   verifier  the broker image plus PySpark, for `minikafka verify`
#   prometheus  Debian's Prometheus, scraping every broker's /metrics, with minikafka's alert rules
# pip behind a TLS-intercepting proxy: pass its CA bundle as the optional build secret `pip_ca` (docker-compose.yml
# does, from $PIP_CA_BUNDLE); without it the secret is empty and pip uses the image's CAs.

FROM debian:bookworm-slim AS base
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    VIRTUAL_ENV=/opt/minikafka PATH=/opt/minikafka/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# Slim images have no /usr/share/man/man1, without which the JRE's postinst fails. libzookeeper-java is
# ZooKeeper's jar without the `zookeeper` package's dependency on a desktop JRE.
RUN mkdir -p /usr/share/man/man1 \
 && apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv default-jre-headless libzookeeper-java \
 && apt-get clean && rm -rf /var/lib/apt/lists/* \
 && useradd --system --user-group --home-dir /var/lib/minikafka --shell /usr/sbin/nologin minikafka \
 && install -d -o minikafka -g minikafka /var/lib/minikafka /var/lib/minikafka/data /var/lib/minikafka/zookeeper
COPY requirements/broker.lock /tmp/requirements.lock
RUN --mount=type=secret,id=pip_ca \
    if [ -s /run/secrets/pip_ca ]; then export PIP_CERT=/run/secrets/pip_ca; fi; \
    python3 -m venv "$VIRTUAL_ENV" \
 && pip install --no-cache-dir --disable-pip-version-check --require-hashes --no-deps -r /tmp/requirements.lock \
 && rm /tmp/requirements.lock

FROM base AS verifier-dependencies
COPY requirements/verifier.lock /tmp/requirements.lock
RUN --mount=type=secret,id=pip_ca \
    if [ -s /run/secrets/pip_ca ]; then export PIP_CERT=/run/secrets/pip_ca; fi; \
    pip install --no-cache-dir --disable-pip-version-check --require-hashes --no-deps -r /tmp/requirements.lock \
 && rm /tmp/requirements.lock

# The project itself last, so that a change of code rebuilds only this layer (offline: no dependency to fetch).
FROM base AS broker
COPY . /tmp/minikafka
RUN pip install --no-cache-dir --disable-pip-version-check --no-index --no-deps --no-build-isolation /tmp/minikafka \
 && rm -rf /tmp/minikafka
COPY docker/server.properties docker/zoo.cfg /etc/minikafka/
# where docker-compose.yml's `security` service writes the brokers' server.properties (and, secured, their keystore)
RUN install -d -o minikafka -g minikafka /var/lib/minikafka/security
USER minikafka
WORKDIR /var/lib/minikafka
EXPOSE 9092 29092 2181
CMD ["minikafka", "broker", "--config", "/etc/minikafka/server.properties"]

FROM verifier-dependencies AS verifier
COPY . /tmp/minikafka
RUN pip install --no-cache-dir --disable-pip-version-check --no-index --no-deps --no-build-isolation /tmp/minikafka \
 && rm -rf /tmp/minikafka
USER minikafka
WORKDIR /var/lib/minikafka
CMD ["minikafka", "--help"]

FROM debian:bookworm-slim AS prometheus
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8
RUN apt-get update \
 && apt-get install -y --no-install-recommends prometheus \
 && apt-get clean && rm -rf /var/lib/apt/lists/* \
 && install -d -o prometheus -g prometheus /var/lib/prometheus/data
COPY docker/prometheus.yml docker/alerts.yml /etc/prometheus/
USER prometheus
EXPOSE 9090
CMD ["prometheus", "--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/var/lib/prometheus/data", \
     "--web.listen-address=:9090"]
