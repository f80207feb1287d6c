"""The request handlers (Kafka's KafkaApis), one module per api family as in protocol.apis: each handler takes a
decoded request, whichever codec decoded it, with the request's context (its listener), and answers; its
dependencies are small Protocols. kafka_apis.KafkaApis registers each handler by request type and dispatches."""
