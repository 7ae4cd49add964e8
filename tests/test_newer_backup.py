"""BACKUP (Redis 8.10): online backups of the multi-part AOF (a BASE from a
rewrite, the INCR of the writes after it, a manifest of their own) in
``backupdirname``.  Valkey has no BACKUP: the assertions follow Redis's
command pages and its own tests of the feature; a backup is proved by
starting a server on a copy of its files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import pytest
import redis

from support.servers import server_env
from support.wait import wait_until


def status(c):
    v = c.execute_command("BACKUP", "STATUS")
    if isinstance(v, list):
        v = dict(zip(v[::2], v[1::2]))
    return {k.decode(): x.decode() for k, x in v.items()}


def state(c):
    return status(c)["state"]


def wait_state(c, want):
    wait_until(lambda: state(c) == want, timeout=30)


def info(c, field):
    return c.info("persistence")[field]


def files(c):
    return [p.decode() for p in c.execute_command("BACKUP", "LIST")]


def restored(start_server, backup_files):
    """A server started on a copy of the backup (its appendonlydir)."""
    d = tempfile.mkdtemp(prefix="ophidis-restore-")
    os.mkdir(os.path.join(d, "appendonlydir"))
    for f in backup_files:
        shutil.copy(f, os.path.join(d, "appendonlydir"))
    s = start_server("--appendonly", "yes", cwd=d)
    return s.client()


def test_status_and_errors_without_a_backup(start_server):
    s = start_server()
    c = s.client()
    assert status(c) == {"state": "idle", "error": "", "start_time": "0", "end_time": "0"}
    assert info(c, "backup_in_progress") == 0
    assert c.config_get("backup*") == {"backup-sealed-ttl": "0", "backupdirname": "backupdir"}
    raw = s.conn()
    assert raw.call("BACKUP") == b"-ERR wrong number of arguments for 'backup' command\r\n"
    assert raw.call("BACKUP", "ABORT") == b"-ERR No backup in progress\r\n"
    assert raw.call("BACKUP", "SEAL") == b"-ERR No backup ready to seal\r\n"
    assert raw.call("BACKUP", "CLEANUP") == b"+OK\r\n"
    assert raw.call("BACKUP", "LIST") == b"*0\r\n"
    assert raw.call("BACKUP", "STATUS") == (b"*8\r\n$5\r\nstate\r\n$4\r\nidle\r\n$5\r\nerror\r\n$0\r\n\r\n"
                                            b"$10\r\nstart_time\r\n$1\r\n0\r\n$8\r\nend_time\r\n$1\r\n0\r\n")
    r3 = s.conn(resp3=True)
    assert r3.call("BACKUP", "STATUS").startswith(b"%4\r\n$5\r\nstate\r\n$4\r\nidle\r\n")
    assert raw.call("CONFIG", "SET", "backupdirname", "x").startswith(b"-ERR CONFIG SET failed")
    help_ = raw.call_value("BACKUP", "HELP")
    assert help_[0] == b"BACKUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    # a non-empty backup directory is never reused
    os.makedirs(os.path.join(s.dir, "backupdir"))
    with open(os.path.join(s.dir, "backupdir", "stale"), "w") as f:
        f.write("x")
    assert b"not empty" in raw.call("BACKUP", "START")
    assert state(c) == "idle"


def test_backupdirname_must_be_a_dirname(start_server):
    for bad in ("/tmp/b", "a/b"):
        with pytest.raises(Exception):
            start_server("--backupdirname", bad)


def test_lifecycle_with_appendonly_no(start_server):
    s = start_server()
    c = s.client()
    c.set("k1", "v1")
    c.set("k2", "v2")
    assert c.execute_command("BACKUP", "START") == b"OK"
    wait_state(c, "incrementing")
    assert info(c, "backup_in_progress") == 1
    assert c.config_get("appendonly") == {"appendonly": "no"}      # the configuration stays
    assert raw_call(c, "BACKUP", "START") == "A backup is already in progress"
    c.set("k3", "v3")
    pinned = files(c)
    bdir = os.path.join(s.dir, "backupdir")
    assert len(pinned) == 1 and os.path.dirname(pinned[0]) == bdir
    assert os.path.basename(pinned[0]).startswith("appendonly.aof.") and pinned[0].endswith(".base.rdb")
    assert c.execute_command("BACKUP", "SEAL") == b"OK"
    st = status(c)
    assert st["state"] == "sealed" and st["error"] == ""
    assert int(st["end_time"]) >= int(st["start_time"]) > 0
    assert info(c, "backup_in_progress") == 0
    pinned = files(c)
    assert [os.path.basename(p) for p in pinned][1:] == ["appendonly.aof.1.incr.aof", "appendonly.aof.manifest"]
    assert all(os.path.exists(p) for p in pinned)
    # the temporary AOF is gone (appendonlydir did not exist before), the INCR frozen
    assert info(c, "aof_enabled") == 0
    assert not os.path.exists(os.path.join(s.dir, "appendonlydir"))
    size = os.path.getsize(pinned[1])
    c.set("k4", "v4")
    assert os.path.getsize(pinned[1]) == size
    r = restored(start_server, pinned)
    assert r.dbsize() == 3
    assert r.mget("k1", "k2", "k3", "k4") == [b"v1", b"v2", b"v3", None]
    assert c.execute_command("BACKUP", "CLEANUP") == b"OK"
    assert state(c) == "idle"
    assert os.listdir(bdir) == []
    assert files(c) == []


def raw_call(c, *args):
    try:
        return c.execute_command(*args)
    except redis.ResponseError as e:
        return str(e)


def test_lifecycle_with_appendonly_yes(start_server):
    s = start_server("--appendonly", "yes", "--auto-aof-rewrite-percentage", "0", "--enable-debug-command", "yes")
    c = s.client()
    wait_until(lambda: info(c, "aof_rewrite_in_progress") == 0, timeout=30)
    c.set("a", 1)
    c.set("b", 2)
    c.execute_command("BACKUP", "START")
    wait_state(c, "incrementing")
    c.set("c", 3)
    # no rewrite while the INCR is pinned: BGREWRITEAOF waits for SEAL
    rewrites = info(c, "aof_rewrites")
    assert c.bgrewriteaof() is True and info(c, "aof_rewrite_scheduled") == 1
    assert c.execute_command("BACKUP", "SEAL") == b"OK"
    pinned = files(c)
    assert len(pinned) == 3
    wait_until(lambda: info(c, "aof_rewrites") > rewrites and info(c, "aof_rewrite_in_progress") == 0, timeout=30)
    assert info(c, "aof_enabled") == 1
    size = os.path.getsize(pinned[1])
    c.set("d", 4)
    assert os.path.getsize(pinned[1]) == size
    r = restored(start_server, pinned)
    assert r.dbsize() == 3 and r.get("c") == b"3" and r.exists("d") == 0
    # the live AOF still has everything
    c.execute_command("DEBUG", "LOADAOF")
    assert c.dbsize() == 4
    assert c.execute_command("BACKUP", "CLEANUP") == b"OK"


def test_abort_and_appendonly_off_fail_the_backup(start_server):
    s = start_server("--auto-aof-rewrite-percentage", "0")
    c = s.client()
    c.set("k", "v")
    bdir = os.path.join(s.dir, "backupdir")
    c.execute_command("BACKUP", "START")
    wait_state(c, "incrementing")
    assert c.execute_command("BACKUP", "ABORT") == b"OK"
    assert status(c)["state"] == "failed" and status(c)["error"] == "aborted by user"
    assert os.listdir(bdir) == []
    assert info(c, "aof_enabled") == 0
    assert raw_call(c, "BACKUP", "ABORT") == "No backup in progress"
    # a failed backup gives way to a new one
    c.config_set("appendonly", "yes")
    wait_until(lambda: info(c, "aof_rewrite_in_progress") == 0 and info(c, "aof_enabled") == 1, timeout=30)
    c.execute_command("BACKUP", "START")
    wait_state(c, "incrementing")
    c.config_set("appendonly", "no")
    st = status(c)
    assert st["state"] == "failed" and st["error"] == "appendonly is stopped"
    assert os.listdir(bdir) == []
    assert c.execute_command("BACKUP", "CLEANUP") == b"OK"
    assert state(c) == "idle"


def test_enabling_aof_during_an_appendonly_no_backup_keeps_it(start_server):
    s = start_server("--auto-aof-rewrite-percentage", "0")
    c = s.client()
    c.set("k", "v")
    c.execute_command("BACKUP", "START")
    wait_state(c, "incrementing")
    c.config_set("appendonly", "yes")
    c.execute_command("BACKUP", "SEAL")
    assert info(c, "aof_enabled") == 1
    c.execute_command("BACKUP", "CLEANUP")
    assert os.path.exists(os.path.join(s.dir, "appendonlydir", "appendonly.aof.manifest"))


def test_pending_until_a_rewrite_can_start_and_sealed_ttl(start_server):
    s = start_server("--auto-aof-rewrite-percentage", "0")
    c = s.client()
    for i in range(3):
        c.set("key:%d" % i, i)
    c.config_set("rdb-key-save-delay", 2000000)
    c.bgsave()
    wait_until(lambda: info(c, "rdb_bgsave_in_progress") == 1, timeout=30)
    assert c.execute_command("BACKUP", "START") == b"OK"
    assert state(c) == "pending"
    assert files(c) == []
    assert info(c, "backup_in_progress") == 1
    c.config_set("rdb-key-save-delay", 0)
    wait_state(c, "incrementing")
    c.config_set("backup-sealed-ttl", 1)
    c.execute_command("BACKUP", "SEAL")
    wait_state(c, "idle")
    assert os.listdir(os.path.join(s.dir, "backupdir")) == []


def test_start_in_a_transaction_snapshots_the_whole_transaction(start_server):
    s = start_server("--auto-aof-rewrite-percentage", "0")
    c = s.client()
    p = c.pipeline(transaction=True)
    p.set("before", "1")
    p.execute_command("BACKUP", "START")
    p.set("after", "2")
    assert p.execute() == [True, b"OK", True]
    wait_state(c, "incrementing")
    c.execute_command("BACKUP", "SEAL")
    r = restored(start_server, files(c))
    assert r.mget("before", "after") == [b"1", b"2"]


# -- preload-file (8.10): restoring a backup -----------------------------------------------------

def _sealed_backup(start_server):
    s = start_server("--auto-aof-rewrite-percentage", "0")
    c = s.client()
    c.set("k1", "v1")
    c.execute_command("BACKUP", "START")
    wait_state(c, "incrementing")
    c.set("k2", "v2")
    c.execute_command("BACKUP", "SEAL")
    c.set("k3", "v3")                 # after the seal: not in the backup
    return s, c, os.path.join(s.dir, "backupdir", "appendonly.aof.manifest")


def test_preload_a_sealed_backup(start_server):
    _, _, manifest = _sealed_backup(start_server)
    r = start_server("--preload-file", "aof:" + manifest).client()
    assert sorted(r.keys()) == [b"k1", b"k2"]
    assert r.info("persistence")["aof_enabled"] == 0
    # appendonly yes: the local AOF (another dataset's) is rewritten from the preloaded one
    d = tempfile.mkdtemp(prefix="ophidis-preload-")
    old = start_server("--appendonly", "yes", cwd=d).client()
    old.set("local-aof-key", "x")
    old.shutdown(nosave=True)
    s = start_server("--appendonly", "yes", "--preload-file", "aof:" + manifest, cwd=d)
    r = s.client()
    assert sorted(r.keys()) == [b"k1", b"k2"]
    wait_until(lambda: r.info("persistence")["aof_rewrites"] == 1
               and r.info("persistence")["aof_rewrite_in_progress"] == 0, timeout=30)
    r.set("after-preload", "v")
    r.shutdown(nosave=True)
    s.stop()
    r = start_server("--appendonly", "yes", cwd=d).client()
    assert sorted(r.keys()) == [b"after-preload", b"k1", b"k2"]


def test_preload_an_rdb_file_instead_of_dump_rdb(start_server):
    src = start_server().client()
    src.set("preload-rdb-key", "value")
    src.sadd("preload-rdb-set", "one", "two")
    src.save()
    rdb = os.path.join(src.config_get("dir")["dir"], "dump.rdb")
    d = tempfile.mkdtemp(prefix="ophidis-preload-")
    local = start_server(cwd=d).client()
    local.set("local-rdb-key", "no")
    local.save()
    for aof in ("no", "yes"):
        r = start_server("--preload-file", "rdb:" + rdb, "--appendonly", aof, cwd=d).client()
        assert sorted(r.keys()) == [b"preload-rdb-key", b"preload-rdb-set"]
        # (with appendonly yes, no exit before the first AOF is written)
        wait_until(lambda: r.info("persistence")["aof_rewrite_in_progress"] == 0, timeout=30)
        r.shutdown(nosave=True)


def test_preload_of_the_local_manifest_loads_as_usual(start_server):
    d = tempfile.mkdtemp(prefix="ophidis-preload-")
    c = start_server("--appendonly", "yes", cwd=d).client()
    c.set("local-aof-key", "value")
    c.shutdown(nosave=True)
    manifest = os.path.join(d, "appendonlydir", "appendonly.aof.manifest")
    r = start_server("--appendonly", "yes", "--preload-file", "aof:" + manifest, cwd=d).client()
    assert r.get("local-aof-key") == b"value"
    assert r.info("persistence")["aof_rewrites"] == 0


@pytest.mark.parametrize("value,msg", [
    ("aof:/tmp/foo", "preload-file must end with an extension"),
    ("rdb:/tmp/foo", "preload-file must end with an extension"),
    ("invalid:/tmp/foo.rdb", "argument must be in the format"),
])
def test_preload_file_is_validated(value, msg):
    p = subprocess.run([sys.executable, "-m", "ophidis", "--port", "0", "--preload-file", value],
                       capture_output=True, text=True, timeout=60, env=server_env(None))
    assert p.returncode != 0
    assert msg in p.stdout + p.stderr


def test_an_appendonly_no_backup_neither_blocks_shutdown_nor_stops_on_appendonly_no(start_server):
    s = start_server("--auto-aof-rewrite-percentage", "0")
    c = s.client()
    for i in range(3):
        c.set("k%d" % i, i)
    c.config_set("rdb-key-save-delay", 1000000)
    c.execute_command("BACKUP", "START")
    assert state(c) == "snapshotting"
    c.config_set("appendonly", "no")             # already no: the backup's AOF carries on
    assert state(c) == "snapshotting"
    c.config_set("rdb-key-save-delay", 0)
    wait_state(c, "incrementing")
    c.config_set("appendonly", "no")
    assert state(c) == "incrementing"
    c.execute_command("BACKUP", "ABORT")
    c.config_set("rdb-key-save-delay", 1000000)
    c.execute_command("BACKUP", "START")
    assert state(c) == "snapshotting"
    c.shutdown(nosave=True)                      # not refused ("Writing initial AOF")
    wait_until(lambda: s.proc.poll() is not None, timeout=30)


def test_a_full_sync_fails_the_backup(start_server):
    m = start_server()
    m.client().set("from-master", "1")
    s = start_server("--auto-aof-rewrite-percentage", "0")
    c = s.client()
    c.set("k", "v")
    c.execute_command("BACKUP", "START")
    wait_state(c, "incrementing")
    c.replicaof("127.0.0.1", m.port)
    wait_until(lambda: c.info("replication")["master_link_status"] == "up", timeout=30)
    assert c.get("from-master") == b"1"
    st = status(c)
    assert st["state"] == "failed" and st["error"] == "appendonly is stopped"
    assert os.listdir(os.path.join(s.dir, "backupdir")) == []
