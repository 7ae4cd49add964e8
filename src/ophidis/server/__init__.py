"""The server: server.py holds the Server (the contract of declared state
and subsystems, see docs/ARCHITECTURE.md) and the mixins beside it what it
does; _core.pyx its C fields.  This __init__ imports nothing, so that the
compiled modules that read those fields import it without the server."""
