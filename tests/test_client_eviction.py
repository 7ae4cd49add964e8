"""maxmemory-clients as Redis 7.0: a client's memory (query buffer, argv,
MULTI queue, output buffer ...), CLIENT LIST's memory fields, the INFO
figures, eviction of the biggest clients first (log2 buckets), CLIENT
NO-EVICT.  The scenarios run against ophidis-server and Debian's
redis-server alike; the log lines and DEBUG CLIENT-EVICTION are compared
with redis-server's."""

from __future__ import annotations

import re
import time

import pytest

from support.resp import RespConn, slow_reader
from support.servers import REDIS_SERVER, RedisServerProc
from support.wait import wait_until

KB = 1024
MB = 1024 * 1024


@pytest.fixture
def c(each_server):
    """The control client: never evicted."""
    c = each_server.client()
    c.flushall()
    c.execute_command("CLIENT", "NO-EVICT", "on")
    yield c
    c.config_set("maxmemory-clients", "0")
    c.config_set("maxmemory", "0")
    c.close()


def conn(each_server, name) -> RespConn:
    return slow_reader(each_server.port, name)


def field(c, name, f):
    for fields in c.client_list():
        if fields["name"] == name:
            return int(fields[f])
    return None


def send(x, data):
    """Send data on a connection the server may evict meanwhile: a server
    that closes a connection with unread input resets it, and that may
    happen before sendall is done (the data is then what got it evicted)."""
    try:
        x.send_raw(data)
    except (ConnectionResetError, BrokenPipeError):
        pass


def partial(n) -> bytes:
    """A request whose only argument announces n bytes and sends them all
    but its final CRLF: n bytes of query buffer."""
    return b"*1\r\n$%d\r\n" % n + b"v" * n


def test_client_list_memory_fields_as_redis(each_server, c):
    """The big argument of an incomplete request is qbuf (its header is
    consumed); tot-mem counts it; the fields are Redis's, in its order."""
    qb = conn(each_server, "qb")
    qb.send_raw(b"*2\r\n$3\r\nset\r\n$%d\r\n" % (200 * KB) + b"v" * (100 * KB))
    wait_until(lambda: field(c, "qb", "qbuf") == 100 * KB, 10)
    assert field(c, "qb", "argv-mem") == 3
    assert field(c, "qb", "tot-mem") >= 200 * KB     # the argument's whole length is reserved
    line = c.execute_command("CLIENT", "INFO")
    line = line.decode() if isinstance(line, bytes) else line
    v70 = ["id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "db", "sub", "psub", "ssub", "multi",
           "qbuf", "qbuf-free", "argv-mem", "multi-mem", "rbs", "rbp", "obl", "oll", "omem", "tot-mem",
           "events", "cmd", "user", "redir", "resp"]
    # ours is Redis 8's line: watch (7.4) after multi, then lib-name/lib-ver
    # (7.2), io-thread and the per-client totals at the end, then 8.8's read
    # and parse-batch counters
    v8 = v70[:13] + ["watch"] + v70[13:] + ["lib-name", "lib-ver", "io-thread", "tot-net-in", "tot-net-out",
                                            "tot-cmds", "read-events", "parse-batch-cmd-sum", "parse-batch-cnt"]
    names = [f.split("=")[0] for f in line.split()]
    assert names == (v70 if isinstance(each_server, RedisServerProc) else v8)
    qb.close()


def test_multi_mem_counts_the_queued_commands(each_server, c):
    m = conn(each_server, "tx")
    assert m.call("MULTI") == b"+OK\r\n"
    assert m.call("SET", "k", b"v" * 100000) == b"+QUEUED\r\n"
    assert field(c, "tx", "multi-mem") >= 100000
    assert field(c, "tx", "tot-mem") >= 100000
    assert m.call("EXEC") == b"*1\r\n+OK\r\n"
    assert field(c, "tx", "multi-mem") < 1000
    m.close()


def test_info_fields(each_server, c):
    clients = c.info("clients")
    for f in ("client_recent_max_input_buffer", "client_recent_max_output_buffer"):
        assert isinstance(clients[f], int)
    mem = c.info("memory")
    assert mem["mem_clients_slaves"] == 0
    assert isinstance(mem["mem_clients_normal"], int)
    assert isinstance(c.info("stats")["evicted_clients"], int)


def test_big_query_buffer_is_evicted_not_the_no_evict_one(each_server, c):
    c.config_set("maxmemory-clients", 3 * MB)
    before = c.info("stats")["evicted_clients"]
    keep = conn(each_server, "keep")
    assert keep.call("CLIENT", "NO-EVICT", "on") == b"+OK\r\n"
    keep.send_raw(partial(2 * MB))
    wait_until(lambda: field(c, "keep", "qbuf") == 2 * MB, 10)
    hog = conn(each_server, "hog")
    send(hog, partial(2 * MB))
    assert hog.read_until_closed(10) == b""
    assert field(c, "hog", "qbuf") is None
    assert field(c, "keep", "qbuf") == 2 * MB          # over the limit alone, but exempt
    assert c.info("stats")["evicted_clients"] == before + 1
    small = conn(each_server, "small")
    assert small.call("PING") == b"+PONG\r\n"
    keep.send_raw(b"\r\n")
    assert keep.read().startswith(b"-ERR unknown command")
    for x in (keep, hog, small):
        x.close()


def test_percentage_of_maxmemory(each_server, c):
    c.config_set("maxmemory", 10 * MB)
    c.config_set("maxmemory-clients", "10%")        # 1 MB
    a = conn(each_server, "under")
    a.send_raw(partial(500 * KB))
    wait_until(lambda: field(c, "under", "qbuf") == 500 * KB, 10)
    b = conn(each_server, "over")
    send(b, partial(MB))
    assert b.read_until_closed(10) == b""
    assert field(c, "under", "qbuf") == 500 * KB
    a.close()
    b.close()


def test_output_buffer_counts(each_server, c):
    """A client that never reads its GETs grows until evicted, never much
    beyond the limit."""
    c.config_set("maxmemory-clients", 2 * MB)
    c.set("k", b"x" * (100 * KB))
    out = conn(each_server, "out")
    deadline = time.monotonic() + 30
    while True:
        assert time.monotonic() < deadline, "never evicted"
        try:
            out.send("GET", "k")
        except OSError:
            break
        mem = field(c, "out", "tot-mem")
        if mem is None:
            break
        assert mem < 2 * MB
    assert field(c, "out", "tot-mem") is None
    out.close()


def test_biggest_clients_go_first(each_server, c):
    sizes = [64 * KB, 512 * KB, 2 * MB]
    conns = []
    for i, size in enumerate(sizes):
        for j in range(2):
            x = conn(each_server, "c%d-%d" % (i, j))
            x.send_raw(partial(size))
            wait_until(lambda: field(c, "c%d-%d" % (i, j), "qbuf") == size, 10)
            conns.append(x)
    mems = {x["name"]: int(x["tot-mem"]) for x in c.client_list() if x["name"].startswith("c")}
    control = field(c, "", "tot-mem") or 0
    total = sum(mems.values())
    # room for everything but the two biggest
    c.config_set("maxmemory-clients", total - mems["c2-0"] - mems["c2-1"] + control + 64 * KB)
    left = sorted(x["name"] for x in c.client_list() if x["name"].startswith("c"))
    assert left == ["c0-0", "c0-1", "c1-0", "c1-1"]
    # room for the smallest only
    c.config_set("maxmemory-clients", mems["c0-0"] + mems["c0-1"] + control + 64 * KB)
    left = sorted(x["name"] for x in c.client_list() if x["name"].startswith("c"))
    assert left == ["c0-0", "c0-1"]
    for x in conns:
        x.close()


def test_no_evict_off_evicts(each_server, c):
    """A CLIENT NO-EVICT client keeps growing over the limit; once it turns
    NO-EVICT off it is evicted."""
    c.config_set("maxmemory-clients", 1)                  # taken as 128 KB
    c.set("k", b"x" * (100 * KB))
    x = conn(each_server, "flip")
    assert x.call("CLIENT", "NO-EVICT", "on") == b"+OK\r\n"
    deadline = time.monotonic() + 30
    while field(c, "flip", "tot-mem") < MB:
        assert time.monotonic() < deadline, "the output buffer never grew"
        x.send("GET", "k")
        time.sleep(0.01)
    assert field(c, "flip", "tot-mem") >= MB
    x.send("CLIENT", "NO-EVICT", "off")
    x.read_until_closed(10)
    assert field(c, "flip", "tot-mem") is None
    x.close()


def test_debug_client_eviction_and_logs(start_server):
    """DEBUG CLIENT-EVICTION and the log line, against redis-server's."""
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed")
    outputs = []
    for make in (lambda: start_server("--enable-debug-command", "yes"), RedisServerProc):
        s = make()
        try:
            c = s.client()
            with pytest.raises(Exception, match="maxmemory-clients is disabled"):
                c.execute_command("DEBUG", "CLIENT-EVICTION")
            c.config_set("maxmemory-clients", MB)
            c.execute_command("CLIENT", "NO-EVICT", "on")
            x = conn(s, "victim")
            send(x, partial(2 * MB))
            assert x.read_until_closed(10) == b""
            text = c.execute_command("DEBUG", "CLIENT-EVICTION")
            text = text.decode() if isinstance(text, bytes) else text
            wait_until(lambda: "Evicting client: id=" in s.output(), 10)
            line = [y for y in s.output().splitlines() if "Evicting client: " in y][0]
            outputs.append((re.sub(r"\d+", "N", text), re.sub(r"\d+", "N", re.sub(r"^\d+:M [^*]*\* ", "", line))[:40]))
            x.close()
        finally:
            s.stop()
    assert outputs[0] == outputs[1]


def test_keys_are_not_evicted_for_clients_that_left(each_server, c):
    """A client's memory is free once it has gone (maxmemory-clients off):
    keys written right after big clients leave are not evicted for them
    (7.4.1's unit/maxmemory "eviction due to ..." tests start so; here
    the dataset budget kept the clients' figure from before they left
    until the next measure of all clients)."""
    c.config_set("maxmemory-policy", "allkeys-lru")
    c.config_set("maxmemory", 11 * MB)
    try:
        hogs = [conn(each_server, "hog%d" % i) for i in range(30)]
        for h in hogs:
            send(h, partial(250 * KB))
        wait_until(lambda: c.info("memory")["mem_clients_normal"] > 7 * MB, 10)
        # keys evicted for the clients while they are there
        for j in range(50):
            c.setrange(str(j), 100_000, "x")
        assert c.dbsize() < 50
        for h in hogs:
            h.close()
        # (CLIENT LIST measures no memory anew: nothing but their going frees it)
        wait_until(lambda: not any(f["name"].startswith("hog") for f in c.client_list()), 10)
        x = RespConn(each_server.port)
        try:
            burst = [("FLUSHDB",)] + [("SETRANGE", str(j), "100000", "x") for j in range(50)] + [("DBSIZE",)]
            x.send_raw(b"".join(b"*%d\r\n" % len(a) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p.encode())
                                                                 for p in a) for a in burst))
            replies = [x.read_value() for _ in burst]
        finally:
            x.close()
        assert replies[-1] == 50
    finally:
        c.config_set("maxmemory", "0")
        c.config_set("maxmemory-policy", "noeviction")
