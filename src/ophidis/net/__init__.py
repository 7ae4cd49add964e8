"""Connections: one client (client.py, the request loop), the listening
sockets (listeners.py); the compiled twins of the client (_core.pyx: its C
fields; _client.pyx: the request loop and per-read path), picked by
client.py through ophidis.compiled."""
