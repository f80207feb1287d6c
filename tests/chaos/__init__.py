"""Chaos tests: real ZooKeeper and broker processes on 127.0.0.1, broken with kill -9, SIGSTOP and SIGTERM."""
