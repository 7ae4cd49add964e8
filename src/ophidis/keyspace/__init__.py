"""The keyspace: databases and expiry (db.py), keyspace events (notify.py),
clients blocked on keys (blocking.py), WATCH (watch.py), client-side
caching (tracking.py)."""
