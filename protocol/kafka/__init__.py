"""Apache Kafka's own wire protocol (non-flexible versions), so that stock Kafka clients can talk to a broker.

A frame is the same 4-byte length prefix as minikafka's own protocol (protocol.framing); its payload is a Kafka
request header (v1) and body, or a response header (v0) and body. Messages follow Kafka's JSON message specs,
trimmed into specs.json; schema.py reads them, codec.py encodes and decodes any message from them, hot_paths.py
does the Produce and Fetch paths by hand (record batches pass through as bytes), adapters.py converts between
Kafka's messages and the request and response objects the broker's handlers take, and apis.py is the table of
what is served.
"""
