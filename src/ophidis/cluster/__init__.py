"""Redis Cluster."""
