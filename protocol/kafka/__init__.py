"""Apache Kafka's own wire protocol (non-flexible versions), so that stock Kafka clients can talk to a broker.

A frame is the same 4-byte length prefix as minikafka's own protocol (protocol.framing); its payload is a Kafka
request header (v1) and body, or a response header (v0) and body (header.py). Messages follow Kafka's JSON message
specs, trimmed into specs.json; schema.py reads them, codec.py encodes and decodes any message from them, api.py
makes an api's codec from them (or from code written by hand, with hot_paths.py's helpers: Produce and Fetch pass
record batches through as bytes) and lists what is advertised. Each api family of protocol.apis holds its own
codec: how Kafka's messages map to and from the request and response objects the broker's handlers take.
"""
