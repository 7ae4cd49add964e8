"""Configuration: file loading (the seed config verbatim), errors, CONFIG GET/SET/REWRITE,
process options (daemonize, pidfile, logfile, stdin), shutdown."""

import os
import re
import signal
import subprocess
import sys
import time

import pytest
import redis
from redis.exceptions import ResponseError
from support.servers import REDIS_SERVER, ServerProc, free_port, server_env
from support.wait import wait_port

from ophidis.main import build_options
from ophidis.sysinfo import REDIS_VERSION

SEED = """# seed configuration
daemonize yes
pidfile {dir}/ophidis.pid
port {port}
maxclients 6000
timeout 0
tcp-keepalive 0
loglevel notice
logfile {dir}/ophidis.log
databases 16
save 900 1
save 300 10
save 60 10000
stop-writes-on-bgsave-error yes
rdbcompression yes
rdbchecksum yes
dbfilename dump.rdb
dir {dir}
slave-serve-stale-data yes
slave-read-only yes
repl-disable-tcp-nodelay no
slave-priority 100
appendonly no
appendfilename "appendonly.aof"
appendfsync everysec
no-appendfsync-on-rewrite no
auto-aof-rewrite-percentage 100
auto-aof-rewrite-min-size 64mb
lua-time-limit 5000
slowlog-log-slower-than 10000
slowlog-max-len 128
notify-keyspace-events ""
hash-max-ziplist-entries 512
hash-max-ziplist-value 64
list-max-ziplist-entries 512
list-max-ziplist-value 64
set-max-intset-entries 512
zset-max-ziplist-entries 128
zset-max-ziplist-value 64
activerehashing yes
client-output-buffer-limit normal 0 0 0
client-output-buffer-limit slave 256mb 64mb 60
client-output-buffer-limit pubsub 32mb 8mb 60
hz 10
aof-rewrite-incremental-fsync yes
tcp-backlog 511
maxmemory 6442450944
maxmemory-policy allkeys-lru
bind 127.0.0.1
protected-mode yes
cluster-enabled no
cluster-config-file nodes-6379.conf
cluster-node-timeout 15000
cluster-announce-ip 10.1.1.5
cluster-announce-port 6379
cluster-announce-bus-port 16379
"""


def run_server(args, stdin=None, timeout=10):
    env = server_env()
    return subprocess.run([sys.executable, "-m", "ophidis"] + args, input=stdin, capture_output=True,
                          text=True, timeout=timeout, env=env)


def test_seed_config_loads_and_daemonizes(tmp_path):
    port = free_port()
    conf = tmp_path / "redis.conf"
    conf.write_text(SEED.format(dir=tmp_path, port=port))
    env = server_env()
    p = subprocess.run([sys.executable, "-m", "ophidis", str(conf)], env=env, timeout=20,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    wait_port(port)
    c = redis.Redis(port=port)
    try:
        pid = int((tmp_path / "ophidis.pid").read_text())
        assert c.info("server")["process_id"] == pid
        cfg = c.config_get("*")
        assert cfg["maxclients"] == "6000"
        assert cfg["save"] == "900 1 300 10 60 10000"
        assert cfg["maxmemory"] == "6442450944"
        assert cfg["maxmemory-policy"] == "allkeys-lru"
        assert cfg["replica-read-only"] == "yes"
        assert cfg["slave-priority"] == "100"
        assert cfg["hash-max-ziplist-entries"] == "512"
        assert cfg["hash-max-listpack-entries"] == "512"
        assert cfg["client-output-buffer-limit"] == \
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
        assert cfg["cluster-announce-ip"] == "10.1.1.5"
        assert cfg["appendfilename"] == "appendonly.aof"
        assert cfg["notify-keyspace-events"] == ""
        assert cfg["dir"] == str(tmp_path)
        assert cfg["busy-reply-threshold"] == "5000"
        assert c.info("server")["config_file"] == str(conf)
        log = (tmp_path / "ophidis.log").read_text()
        assert "Ready to accept connections" in log
        line = [l for l in log.splitlines() if "Ready to accept" in l][0]
        assert re.match(r"^\d+:M \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d\.\d{3} \* Ready to accept connections$",
                        line), line
    finally:
        try:
            c.shutdown(nosave=True)
        except Exception:
            pass
    deadline = time.time() + 10
    while (tmp_path / "ophidis.pid").exists() and time.time() < deadline:
        time.sleep(0.1)
    assert not (tmp_path / "ophidis.pid").exists()


@pytest.mark.parametrize("line,msg", [
    ("foo bar", "Bad directive or wrong number of arguments"),
    ("port abc", "argument couldn't be parsed into an integer"),
    ("port 70000", "argument must be between 0 and 65535 inclusive"),
    ("appendonly maybe", "argument must be 'yes' or 'no'"),
    ("maxmemory 10zb", "argument must be a memory value"),
    ("maxmemory-policy foo", "argument(s) must be one of the following: volatile-lru, volatile-lfu, "
                             "volatile-random, volatile-ttl, volatile-lrm, allkeys-lru, allkeys-lfu, "
                             "allkeys-random, allkeys-lrm, noeviction"),
    ("save 10", "Invalid save parameters"),
    ("port 1 2", "wrong number of arguments"),
    ('dbfilename "unbalanced', "Unbalanced quotes in configuration line"),
    ("notify-keyspace-events Q", "Invalid event class character. Use 'Ag$lshzxeKEtmdnocaSTIV'."),
])
def test_fatal_config_errors(tmp_path, line, msg):
    conf = tmp_path / "bad.conf"
    conf.write_text("# comment\nport 0\n%s\n" % line)
    p = run_server([str(conf)])
    assert p.returncode == 1
    assert "*** FATAL CONFIG FILE ERROR (Redis %s) ***" % REDIS_VERSION in p.stderr
    assert "Reading the configuration file, at line 3" in p.stderr
    assert ">>> '%s'" % line in p.stderr
    assert p.stderr.rstrip().endswith(msg)


def test_command_line_options_and_stdin(tmp_path):
    port = free_port()
    env = server_env()
    proc = subprocess.Popen([sys.executable, "-m", "ophidis", "-", "--maxclients", "77", "--save", ""],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env, cwd=tmp_path)
    proc.stdin.write(("port %d\nmaxclients 5\n" % port).encode())
    proc.stdin.close()
    try:
        wait_port(port, proc)
        c = redis.Redis(port=port)
        assert c.config_get("maxclients") == {"maxclients": "77"}
        assert c.config_get("save") == {"save": ""}
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize("args,line", [
    (["--port", "--loglevel", "verbose"], 'port "--loglevel" "verbose"'),
    (["--port", "--bla", "--loglevel", "verbose"], 'port "--bla"'),
    # (appendfsync: an enum whose values Redis 7.2+ did not change, loglevel got "nothing")
    (["--logfile", "--my--log--file", "--appendfsync", "--bla"], 'appendfsync "--bla"'),
    (["--shutdown-on-sigint", "now force", "--shutdown-on-sigterm"], "shutdown-on-sigterm"),
])
def test_command_line_values_starting_with_dashes(args, line):
    """An option name alone takes the next argument as its value, even one
    starting with --: the same fatal error as redis-server's."""
    p = run_server(args)
    assert p.returncode == 1
    assert ">>> '%s'" % line in p.stderr
    if REDIS_SERVER is not None:
        ref = subprocess.run([REDIS_SERVER] + args, capture_output=True, text=True, timeout=10)
        assert p.stderr.strip().splitlines()[-3:] == (ref.stdout + ref.stderr).strip().splitlines()[-3:]


def test_command_line_options_as_config_lines():
    assert build_options(["--save", "--loglevel", "verbose"]) == 'save ""\nloglevel "verbose" '
    assert build_options(["--loglevel", "verbose", "--save"]) == 'loglevel "verbose" \nsave ""'
    assert build_options(["--proc-title-template", "--save", "--save", "", "--loglevel", "verbose"]) == \
        'proc-title-template "--save" \nsave "" \nloglevel "verbose" '
    assert build_options(["--port 6380", "--save 900 1"]) == "port 6380 \nsave 900 1 "
    assert build_options(["--port", "6379", "6380"]) == 'port "6379" "6380" '


def test_rename_command_survives_config_rewrite(tmp_path):
    port = free_port()
    conf = tmp_path / "r.conf"
    conf.write_text("port %d\nsave \"\"\nrename-command flushdb badger\n" % port)
    for _ in range(2):      # once as written, once as CONFIG REWRITE wrote it
        proc = subprocess.Popen([sys.executable, "-m", "ophidis", str(conf)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=server_env(), cwd=tmp_path)
        try:
            wait_port(port, proc)
            c = redis.Redis(port=port)
            with pytest.raises(ResponseError, match="unknown command"):
                c.flushdb()
            assert c.execute_command("BADGER") in (b"OK", True)
            assert c.config_rewrite()
            c.close()
        finally:
            proc.terminate()
            proc.wait(10)
    p = run_server(["--port", "0", "--rename-command", "nosuch", "x"])
    assert p.stderr.rstrip().endswith("No such command in rename-command")


def test_version_flag():
    p = run_server(["--version"])
    assert p.returncode == 0
    assert "Redis %s" % REDIS_VERSION in p.stdout


def test_config_get_patterns(r):
    res = r.config_get("maxmemory*")
    assert set(res) >= {"maxmemory", "maxmemory-policy", "maxmemory-samples"}
    res = r.execute_command("CONFIG", "GET", "port", "hz", "nosuch")
    assert set(res[::2]) == {b"port", b"hz"}
    assert r.config_get("slave-read-only") == {"slave-read-only": "yes"}


def test_config_set_atomic_and_errors(r, config):
    config.keep(r, "hz", "maxmemory-samples", "slowlog-max-len", "maxmemory", "save")
    assert r.config_set("hz", 20) is True
    assert r.config_get("hz") == {"hz": "20"}
    r.execute_command("CONFIG", "SET", "maxmemory-samples", "7", "slowlog-max-len", "99")
    assert r.config_get("maxmemory-samples") == {"maxmemory-samples": "7"}
    with pytest.raises(ResponseError) as e:
        r.execute_command("CONFIG", "SET", "hz", "30", "port", "abc")
    assert str(e.value) == ("CONFIG SET failed (possibly related to argument 'port') - "
                            "argument couldn't be parsed into an integer")
    assert r.config_get("hz") == {"hz": "20"}  # atomic: nothing changed
    with pytest.raises(ResponseError) as e:
        r.execute_command("CONFIG", "SET", "nosuch", "1")
    assert str(e.value) == "Unknown option or number of arguments for CONFIG SET - 'nosuch'"
    with pytest.raises(ResponseError) as e:
        r.execute_command("CONFIG", "SET", "daemonize", "yes")
    assert str(e.value) == "CONFIG SET failed (possibly related to argument 'daemonize') - can't set immutable config"
    with pytest.raises(ResponseError) as e:
        r.execute_command("CONFIG", "SET", "hz", "1", "hz", "2")
    assert str(e.value) == "CONFIG SET failed (possibly related to argument 'hz') - duplicate parameter"
    with pytest.raises(ResponseError) as e:
        r.execute_command("CONFIG", "SET", "hz")
    assert str(e.value) == "wrong number of arguments for 'config|set' command"
    r.config_set("maxmemory", "100mb")
    assert r.config_get("maxmemory") == {"maxmemory": "104857600"}
    r.config_set("save", "100 10 200 20")
    assert r.config_get("save") == {"save": "100 10 200 20"}


def test_config_rewrite_round_trip(tmp_path):
    port = free_port()
    conf = tmp_path / "redis.conf"
    conf.write_text("# my comment\nport %d\n\n# another comment\nmaxclients 100\nhz 10\n"
                    "slave-read-only yes\nsave 900 1\nsave 300 10\n" % port)
    s = ServerProc([], cwd=str(tmp_path), config_text=None, wait=False)
    s.proc.terminate()
    s.proc.wait()
    env = server_env()
    proc = subprocess.Popen([sys.executable, "-m", "ophidis", str(conf), "--dir", str(tmp_path)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, proc)
        c = redis.Redis(port=port)
        c.config_set("maxclients", 200)
        c.config_set("slowlog-max-len", 1000)
        c.config_set("maxmemory", "64mb")
        c.config_set("replica-read-only", "no")
        assert c.config_rewrite() in (True, b"OK")
        text = conf.read_text()
        lines = text.splitlines()
        assert lines[0] == "# my comment"
        assert lines[1] == "port %d" % port
        assert "# another comment" in lines
        assert "maxclients 200" in lines
        assert lines.index("maxclients 200") == 4
        assert "replica-read-only no" in lines
        assert "# Generated by CONFIG REWRITE" in lines
        assert "slowlog-max-len 1000" in lines
        assert "maxmemory 64mb" in lines
        assert "save 900 1" in lines and "save 300 10" in lines
        try:
            c.shutdown(nosave=True)
        except Exception:
            pass
    finally:
        proc.wait(10)
    # The rewritten file loads and gives the same values
    proc = subprocess.Popen([sys.executable, "-m", "ophidis", str(conf)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, proc)
        c = redis.Redis(port=port)
        assert c.config_get("maxclients") == {"maxclients": "200"}
        assert c.config_get("maxmemory") == {"maxmemory": "67108864"}
        # A second rewrite changes nothing (Redis 7.2+: the default user, as
        # every user, has sanitize-payload from the start, so the ``user``
        # line the first rewrite wrote loads back as it was)
        before = conf.read_text()
        assert "user default on nopass sanitize-payload ~* &* +@all" in before.splitlines()
        c.config_rewrite()
        assert conf.read_text() == before
    finally:
        proc.terminate()
        proc.wait(10)


def test_config_rewrite_without_file(r):
    with pytest.raises(ResponseError) as e:
        r.config_rewrite()
    assert str(e.value) == "The server is running without a config file"


def test_sigterm_clean_shutdown(start_server, tmp_path):
    sock = str(tmp_path / "s.sock")
    pidfile = str(tmp_path / "p.pid")
    s = start_server("--unixsocket", sock, "--pidfile", pidfile)
    assert os.path.exists(sock) and os.path.exists(pidfile)
    s.proc.send_signal(signal.SIGTERM)
    assert s.proc.wait(10) == 0
    assert not os.path.exists(sock)
    assert not os.path.exists(pidfile)
    out = s.output()
    assert "Received SIGTERM scheduling shutdown..." in out
    assert "ready to exit, bye bye" in out


def test_shutdown_command(start_server):
    s = start_server()
    c = s.client()
    try:
        c.shutdown(nosave=True)
    except Exception:
        pass
    assert s.proc.wait(10) == 0
    assert "User requested shutdown..." in s.output()


def test_shutdown_errors(r):
    with pytest.raises(ResponseError) as e:
        r.execute_command("SHUTDOWN", "SAVE", "NOSAVE")
    assert str(e.value) == "syntax error"
    with pytest.raises(ResponseError) as e:
        r.execute_command("SHUTDOWN", "ABORT")
    assert str(e.value) == "No shutdown in progress."


def test_port_zero_unix_only(start_server, tmp_path):
    sock = str(tmp_path / "only.sock")
    s = ServerProc(["--port", "0", "--unixsocket", sock], wait=False)
    try:
        wait_port(None, s.proc, 10, unix=sock)
        c = redis.Redis(unix_socket_path=sock)
        assert c.ping()
        assert c.config_get("port") == {"port": "0"}
    finally:
        s.stop()
