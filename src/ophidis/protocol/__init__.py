"""RESP, sans-IO: encoders and Redis's request parser (resp.py), one
connection's input state machine (reader.py).  No I/O in this package."""
