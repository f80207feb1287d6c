"""The verifier's own Spark session is started with the settings it is tuned for: its Python workers on Unix domain
sockets, the generated code kept, and the driver JVM with the throughput collector and only the JIT's quick
compiler."""

from __future__ import annotations

from verifier.session import CODEGEN_CACHE_ENTRIES, DRIVER_JAVA_OPTIONS


def test_the_verifiers_session_runs_with_the_settings_it_is_tuned_for(spark):
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.python.unix.domain.socket.enabled") == "true"
    assert conf.get("spark.sql.codegen.cache.maxEntries") == str(CODEGEN_CACHE_ENTRIES)
    jvm_arguments = list(spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
                         .getInputArguments())
    assert set(DRIVER_JAVA_OPTIONS.split()) <= set(jvm_arguments), jvm_arguments
