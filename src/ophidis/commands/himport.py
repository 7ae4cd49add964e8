"""HIMPORT (Redis 8.10): many hashes of one shape, the field names sent once.
``HIMPORT PREPARE name field...`` keeps a named, ordered list of field names
on the connection (gone with the connection or RESET); ``HIMPORT SET key
name value...`` makes ``key`` a hash of those fields and the values, by
position, replacing a hash already there; ``HIMPORT DISCARD name`` and
``HIMPORT DISCARDALL`` drop fieldsets.

A replica or the AOF has no connection's fieldsets, so HIMPORT SET
propagates as the plain commands that have its effect: DEL of the hash it
replaced, then HSET of the new one."""

from __future__ import annotations

from ..cmdtable.registry import command
from ..errors import RedisError
from ..keyspace import notify
from ..protocol.resp import OK, integer
from ..replication.propagate import also_propagate, rewrite_argv
from ..types.containers import HashValue
from .hashes import set_fields

NO_SUCH_FIELDSET = RedisError("ERR no such fieldset")


@command("himport|prepare")
def himport_prepare(c, argv):
    fields = tuple(argv[3:])
    if len(set(fields)) != len(fields):
        raise RedisError("ERR duplicate field in fieldset")
    if c.fieldsets is None:
        c.fieldsets = {}
    c.fieldsets[argv[2]] = fields
    return OK


@command("himport|set")
def himport_set(c, argv):
    fields = c.fieldsets.get(argv[3]) if c.fieldsets else None
    if fields is None:
        raise NO_SUCH_FIELDSET
    values = argv[4:]
    if len(values) != len(fields):
        raise RedisError("ERR number of values does not match the fieldset")
    db = c.db
    key = argv[2]
    old = db.lookup_write_typed(key, HashValue)     # WRONGTYPE for another type
    hset = [b"HSET", key]
    for f, v in zip(fields, values):
        hset += (f, v)
    h = HashValue()
    set_fields(c, h, hset, 2)       # HSET's fill, with its encoding rule
    db.set_key(key, h)
    srv = c.server
    srv.dirty += 1
    if notify.flags:
        notify.notify(notify.HASH, b"hset", key, db.id)
    if old is not None:
        also_propagate(srv, [b"DEL", key], db)
    rewrite_argv(c, hset)
    return OK


@command("himport|discard")
def himport_discard(c, argv):
    fs = c.fieldsets
    if fs and argv[2] in fs:
        del fs[argv[2]]
        return integer(1)
    return integer(0)


@command("himport|discardall")
def himport_discardall(c, argv):
    n = len(c.fieldsets) if c.fieldsets else 0
    c.fieldsets = None
    return integer(n)
