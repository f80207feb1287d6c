"""Apache Kafka's own wire protocol, so that stock Kafka clients can talk to a broker, and Kafka's data formats.

A frame is the same 4-byte length prefix as minikafka's own protocol (protocol.framing); its payload is a Kafka
request header and body, or a response header and body (header.py: v1/v0, or v2/v1 for flexible versions).
Messages follow Kafka's JSON message specs, trimmed into specs.json; schema.py reads them, codec.py encodes and
decodes any message from them with primitives.py's fields (classic, or compact with tagged fields in flexible
versions), api.py makes an api's codec from them (or from code written by hand, with hot_paths.py's helpers:
Produce and Fetch pass record batches through as bytes) and lists what is served and advertised. Each api family
of protocol.apis holds its own codec: how Kafka's messages map to and from the request and response objects the
broker's handlers take. data.py writes and reads the data formats (version-prefixed structs in records and in
other messages' bytes) with the same codec.
"""
