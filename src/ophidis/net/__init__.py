"""Connections: one client (client.py, the request loop), the listening
sockets (listeners.py), the optional compiled loop (_speedups.pyx, chosen
by speedups.py)."""
