"""The minikafka controller."""
