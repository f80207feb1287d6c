"""minikafka wire and disk formats: no I/O, no asyncio."""
