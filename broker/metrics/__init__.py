"""The broker's metrics: counters kept inline on the request paths (counters.py), read at scrape time under the
names the Prometheus JMX exporter gives Kafka's MBeans (collector.py), served over HTTP at /metrics (http.py)."""
