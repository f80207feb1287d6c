"""Clients and the minikafka command line."""
