"""BACKUP (Redis 8.10): START, SEAL, LIST, STATUS, ABORT, CLEANUP, HELP.
The state machine is persistence/aof/backup.py's (``server.aof.backup``)."""

from __future__ import annotations

from ..cmdtable.registry import command
from ..errors import RedisError
from ..persistence.aof.backup import BackupError
from ..protocol.resp import OK, bulk, bulk_array, help_reply, map_header


def _run(fn, *args):
    try:
        fn(*args)
    except BackupError as e:
        raise RedisError(str(e))
    return OK


@command("backup|start")
def backup_start(c, argv):
    return _run(c.server.aof.backup.start, c.in_exec)


@command("backup|seal")
def backup_seal(c, argv):
    return _run(c.server.aof.backup.seal)


@command("backup|abort")
def backup_abort(c, argv):
    return _run(c.server.aof.backup.abort)


@command("backup|cleanup")
def backup_cleanup(c, argv):
    return _run(c.server.aof.backup.cleanup)


@command("backup|list")
def backup_list(c, argv):
    return bulk_array([p.encode() for p in c.server.aof.backup.pinned])


@command("backup|status")
def backup_status(c, argv):
    b = c.server.aof.backup
    fields = ((b"state", b.state.encode()), (b"error", b.error.encode()),
              (b"start_time", b"%d" % b.start_time), (b"end_time", b"%d" % b.end_time))
    return map_header(c.resp, len(fields)) + b"".join([bulk(k) + bulk(v) for k, v in fields])


@command("backup|help")
def backup_help(c, argv):
    return help_reply(b"BACKUP", b"""\
START
    Start a backup in 'backupdirname': an AOF rewrite makes its BASE, the
    writes after it go to its INCR file.
SEAL
    Complete the backup: its INCR file and a manifest join the BASE.
LIST
    The absolute paths of the backup's files pinned so far.
STATUS
    The backup's state, error, start and seal times.
ABORT
    Cancel a backup that is not sealed yet.
CLEANUP
    Remove a sealed or failed backup's files.""")
