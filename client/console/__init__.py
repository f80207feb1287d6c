"""`minikafka console`: a web page that draws the cluster's replication as the seeds do, live."""
