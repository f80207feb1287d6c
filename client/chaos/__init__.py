"""The chaos soak: a cluster, producers that write a history, a consumer that checks what it reads, a nemesis that
injects faults on a seeded schedule, and the replica verifier's verdict at the end (`minikafka chaos run`)."""
