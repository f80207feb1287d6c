"""The group coordinator, Kafka's classic group protocol: a pure state machine (no I/O, no clock of its own) that a
shell drives with requests, timer expirations and append completions, and whose effects it carries out.

- ``coordinator``: the entry point (ownership of __consumer_offsets partitions, each request, timers, appends);
- ``join``, ``membership`` (SyncGroup, Heartbeat, LeaveGroup), ``offsets``, ``admin`` (DescribeGroups, ListGroups,
  DeleteGroups): the rules of each request;
- ``rebalance``: the mechanics they share (preparing and completing a rebalance, sessions, removing members);
- ``group``, ``member``, ``states``, ``protocol_choice``: a group's state, its members, the state table, the choice
  of protocol;
- ``records``, ``loading``: a group as records of __consumer_offsets, and back;
- ``requests``, ``results``, ``effects``, ``context``, ``config``: what goes in and out, and what the rules share.
"""
