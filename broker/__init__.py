"""The minikafka broker process."""
