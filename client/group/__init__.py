"""A consumer's group, from the client's side: finding the coordinator, being a member (join, sync, heartbeats,
leave), the consumer protocol on top (assignment, rebalance callbacks, commits), committed offsets, and what the
admin client reads of groups."""
