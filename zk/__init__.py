"""ZooKeeper, as the broker and the controller both reach it (Kafka's kafka.zk): the kazoo session bridged into asyncio
(client.py, with multiRead in multiread.py), the operations of a transaction and their size on the wire (ops.py),
Kafka's znode layout and JSON (znodes.py), topic configs and their change notifications (topic_config.py), and a
local ZooKeeper server for tests and `cluster up` (server.py)."""
