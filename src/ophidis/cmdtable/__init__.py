"""The command table, the lowest floor of the commands: it imports none of
the command families (``ophidis.commands``, whose ``load_all()`` imports them
and so fills the table).

registry.py: Command, ``@command``, register/unregister, TABLE/ALL, the
lookups, rename-command and the command wrappers; keys.py: key extraction
from key specs (cluster routing, ACL, CLIENT TRACKING ...); describe.py:
COMMAND INFO's and COMMAND DOCS's replies, derived from the table; docs.py:
our help texts.

This __init__ imports nothing, so that a module importing one of these does
not import the others.
"""
