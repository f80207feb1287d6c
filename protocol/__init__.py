"""minikafka's formats, on the wire and in files: record batches, both wire protocols and every api, TopicPartition,
endpoints, the producer history, the state-change log. Pure: no asyncio, sockets, threads or subprocesses."""
