"""JSON.SET ... FPHA (Redis 8.8+): numeric arrays stored narrowed to
FP16 / BF16 / FP32 / FP64 as ijson's typed arrays, printed with the fewest
digits that identify each value at its width; what the narrowing shows
through element reads, widening when other values are stored, persistence
(DEBUG RELOAD, DUMP/RESTORE, COPY) and JSON.DEBUG MEMORY.  Valkey has no
JSON: the replies are RedisJSON's (its FPHA tests' expectations, ijson's
serializer), RESP2 and RESP3."""

import json
import struct

import pytest

from support.modtypes import AOF, aof_base, follow, restart, rewrite_aof
from support.resp import bulk
from support.wait import wait_until


@pytest.mark.parametrize("width", ["FP32", "FP16", "BF16", "FP64", "fp16"])
def test_short_text(raw, width):
    assert raw.call("JSON.SET", "k", "$", "[0.3,0.1,0.7,1.0,2.5,100.0]", "FPHA", width) == b"+OK\r\n"
    assert raw.call("JSON.GET", "k", "$") == bulk(b"[[0.3,0.1,0.7,1.0,2.5,100.0]]")
    assert raw.call("JSON.SET", "n", "$", "[-0.3,-0.1,-1.0,-2.5,-100.0]", "FPHA", width) == b"+OK\r\n"
    assert raw.call("JSON.GET", "n") == bulk(b"[-0.3,-0.1,-1.0,-2.5,-100.0]")
    # integers become floats of the width
    assert raw.call("JSON.SET", "i", "$", "[1,2,3]", "FPHA", width) == b"+OK\r\n"
    assert raw.call("JSON.GET", "i") == bulk(b"[1.0,2.0,3.0]")


def test_narrowed_values(raw, raw3):
    doc = '{"h":[3.14159,0.123456,65504,1e-7],"s":[3.14159,0.123456789,1e38],"v":{"e":[[1.1,2.2],[]]},"t":"x"}'
    # 1e38 is beyond FP16
    assert raw.call("JSON.SET", "h", "$", doc.replace("1e38", "1"), "FPHA", "FP16") == b"+OK\r\n"
    assert raw.call("JSON.GET", "h", "$.h") == bulk(b"[[3.14,0.1235,65504.0,1e-7]]")
    # an element read alone is the stored number itself
    assert raw.call("JSON.GET", "h", "$.h[0]") == bulk(b"[3.140625]")
    assert raw.call("JSON.GET", "h", "$.h[*]") == bulk(b"[3.140625,0.12347412109375,65504.0,1.1920928955078125e-7]")
    assert raw.call("JSON.GET", "h", ".v.e") == bulk(b"[[1.1,2.2],[]]")
    assert raw3.call("JSON.GET", "h", "FORMAT", "EXPAND", "$.h[0]") == b"*1\r\n*1\r\n,3.140625\r\n"
    assert raw.call("JSON.RESP", "h", "$.h[0]") == b"*1\r\n" + bulk(b"3.140625")
    # filters compare the stored numbers
    assert raw.call("JSON.GET", "h", "$.h[?@ == 3.140625]") == bulk(b"[3.140625]")
    assert raw.call("JSON.GET", "h", "$.h[?@ == 3.14159]") == bulk(b"[]")
    assert raw.call("JSON.SET", "s", "$", doc, "FPHA", "FP32") == b"+OK\r\n"
    assert raw.call("JSON.GET", "s", "$.s") == bulk(b"[[3.14159,0.12345679,1e38]]")
    assert raw.call("JSON.SET", "b", "$", doc, "FPHA", "BF16") == b"+OK\r\n"
    assert raw.call("JSON.GET", "b", "$.s") == bulk(b"[[3.14,0.1235,9.969209968386869e37]]")
    # a value of another kind stops the narrowing (what came before stays narrowed)
    assert raw.call("JSON.SET", "m", "$", '[0.1,"x",0.2]', "FPHA", "FP16") == b"+OK\r\n"
    assert raw.call("JSON.GET", "m") == bulk(b'[0.0999755859375,"x",0.2]')
    assert raw.call("JSON.SET", "m2", "$", '["x",0.1]', "FPHA", "FP16") == b"+OK\r\n"
    assert raw.call("JSON.GET", "m2") == bulk(b'["x",0.1]')
    # at a path inside an existing document
    assert raw.call("JSON.SET", "h", "$.t", "[0.3,1]", "FPHA", "FP16") == b"+OK\r\n"
    assert raw.call("JSON.GET", "h", "$.t") == bulk(b"[[0.3,1.0]]")


def test_errors(raw):
    assert raw.call("JSON.SET", "k", "$", "[0.1, 0.2, 0.3, 1e100, 0.5]", "FPHA", "FP16") == (
        b"-value out of range for F16 at line 1 column 23\r\n")
    assert raw.call("JSON.SET", "k", "$", "[1e39]", "FPHA", "FP32") == (
        b"-value out of range for F32 at line 1 column 6\r\n")
    assert raw.call("JSON.SET", "k", "$", '{"x": [1, [2, 70000]]}', "FPHA", "FP16") == (
        b"-value out of range for F16 at line 1 column 20\r\n")
    assert raw.call("JSON.SET", "k", "$", "[1e39,\n 2]", "FPHA", "BF16") == (
        b"-value out of range for BF16 at line 2 column 1\r\n")
    assert raw.call("EXISTS", "k") == b":0\r\n"
    assert raw.call("JSON.SET", "k", "$", "[0.1]", "FPHA", "INVALID") == b"-ERR invalid FPHA type\r\n"
    assert raw.call("JSON.SET", "k", "$", "[0.1]", "FPHA") == (
        b"-ERR wrong number of arguments for 'json.set' command\r\n")
    # a number after a value of another kind is not checked
    assert raw.call("JSON.SET", "k", "$", '["a",1e100]', "FPHA", "FP16") == b"+OK\r\n"


def test_writes_into_typed_arrays(raw):
    raw.call("JSON.SET", "k", "$", '{"a":[10.0,20.5,0.3],"b":[0.3],"c":[0.3],"d":[0.5]}', "FPHA", "FP16")
    assert raw.call("JSON.GET", "k", "$.a") == bulk(b"[[10.0,20.5,0.3]]")
    # a float the width holds exactly keeps the array typed
    assert raw.call("JSON.ARRAPPEND", "k", "$.a", "1.5") == b"*1\r\n:4\r\n"
    assert raw.call("JSON.GET", "k", "$.a") == bulk(b"[[10.0,20.5,0.3,1.5]]")
    # a float that needs more widens it (here to single precision)
    assert raw.call("JSON.ARRAPPEND", "k", "$.a", "1e10") == b"*1\r\n:5\r\n"
    assert raw.call("JSON.GET", "k", "$.a") == bulk(b"[[10.0,20.5,0.30004883,1.5,10000000000.0]]")
    # an integer makes it an ordinary array: the stored numbers show whole
    assert raw.call("JSON.ARRINSERT", "k", "$.b", "0", "1") == b"*1\r\n:2\r\n"
    assert raw.call("JSON.GET", "k", "$.b") == bulk(b"[[1,0.300048828125]]")
    assert raw.call("JSON.SET", "k", "$.c[0]", '"s"') == b"+OK\r\n"
    assert raw.call("JSON.GET", "k", "$.c") == bulk(b'[["s"]]')
    assert raw.call("JSON.NUMINCRBY", "k", "$.d[0]", "0.25") == bulk(b"[0.75]")
    assert raw.call("JSON.GET", "k", "$.d") == bulk(b"[[0.75]]")
    assert raw.call("JSON.ARRPOP", "k", "$.a", "0") == b"*1\r\n" + bulk(b"10.0")
    assert raw.call("JSON.ARRINDEX", "k", "$.a", "1.5") == b"*1\r\n:2\r\n"


def test_persistence_copy_and_memory(raw, r):
    assert raw.call("JSON.SET", "k", "$", "[1.5,2.5,3.5,0.3]", "FPHA", "FP32") == b"+OK\r\n"
    raw.call("JSON.SET", "p", "$", "[1.5,2.5,3.5,0.3]")
    assert raw.call("JSON.GET", "k", "$") == bulk(b"[[1.5,2.5,3.5,0.3]]")
    # narrower items take less memory
    small = int(raw.call("JSON.DEBUG", "MEMORY", "k")[1:-2])
    plain = int(raw.call("JSON.DEBUG", "MEMORY", "p")[1:-2])
    assert small < plain
    assert raw.call("COPY", "k", "c") == b":1\r\n"
    assert raw.call("JSON.GET", "c") == bulk(b"[1.5,2.5,3.5,0.3]")
    assert raw.call("JSON.GET", "c", "$[3]") == bulk(b"[0.30000001192092896]")
    # RDB encoding 4 (Redis 8's CBOR) keeps the width: an f32 typed array
    dump = r.dump("k")
    assert b"\xd8\x55\x50" + struct.pack("<4f", 1.5, 2.5, 3.5, 0.3) in dump
    assert r.restore("k2", 0, dump) == b"OK"
    assert raw.call("JSON.GET", "k2") == bulk(b"[1.5,2.5,3.5,0.3]")
    assert raw.call("JSON.GET", "k2", "$[3]") == bulk(b"[0.30000001192092896]")
    raw.call("JSON.SET", "h", "$", '{"a":[0.3,"x"],"b":[0.1,0.2]}', "FPHA", "BF16")
    before = raw.call("JSON.GET", "h", "$..*")
    assert raw.call("DEBUG", "RELOAD") == b"+OK\r\n"
    assert raw.call("JSON.GET", "k", "$") == bulk(b"[[1.5,2.5,3.5,0.3]]")
    assert raw.call("JSON.GET", "k", "$[3]") == bulk(b"[0.30000001192092896]")
    assert raw.call("JSON.GET", "h", "$..*") == before
    assert raw.call("JSON.GET", "h") == bulk(b'{"a":[0.30078125,"x"],"b":[0.1,0.2]}')
    assert raw.call("JSON.DEBUG", "MEMORY", "k") == b":%d\r\n" % small
    assert json.loads(raw.call("JSON.GET", "c", "$")[4:-2]) == [[1.5, 2.5, 3.5, 0.3]]


def test_aof_rewrite_keeps_the_width(start_server):
    s = start_server(*AOF)
    c = s.client()
    c.execute_command("JSON.SET", "k", "$", '{"v":[0.3,1.5],"m":[0.5,"x"],"s":"t"}', "FPHA", "FP16")
    # an ordinary numeric array next to typed ones: set back as text
    c.execute_command("JSON.SET", "p", "$", '{"v":[0.3],"n":[0.3]}', "FPHA", "FP32")
    c.execute_command("JSON.SET", "p", "$.n", "[0.3]")
    before = {k: (c.execute_command("JSON.GET", k, "$..*"), c.execute_command("JSON.GET", k)) for k in ("k", "p")}
    rewrite_aof(c)
    s.stop()
    data = aof_base(s)
    assert (b"*6\r\n$8\r\nJSON.SET\r\n$1\r\nk\r\n$1\r\n$\r\n" + bulk(b'{"v":[0.3,1.5],"m":[0.5,"x"],"s":"t"}')
            + b"$4\r\nFPHA\r\n$4\r\nFP16\r\n") in data
    assert b"*4\r\n$8\r\nJSON.SET\r\n$1\r\np\r\n$1\r\n$\r\n" + bulk(b'{"v":[0.3],"n":[0.3]}') in data
    s2 = restart(start_server, s, *AOF)
    c2 = s2.client()
    assert c2.execute_command("JSON.GET", "k", "$..*") == before["k"][0]
    assert c2.execute_command("JSON.GET", "k") == before["k"][1]
    assert c2.execute_command("JSON.GET", "p") == before["p"][1]


def test_replica_full_sync_and_stream(start_server):
    master = start_server()
    m = master.client()
    m.execute_command("JSON.SET", "k", "$", "[0.3,1.5]", "FPHA", "BF16")
    s = start_server()
    rep = s.client()
    follow(rep, master)
    wait_until(lambda: rep.exists("k"), what="the payload")
    # the full sync's RDB (encoding 4) keeps the width
    assert rep.execute_command("JSON.GET", "k", "$[0]") == b"[0.30078125]"
    assert rep.execute_command("JSON.GET", "k") == b"[0.3,1.5]"
    # the stream carries JSON.SET ... FPHA as called
    m.execute_command("JSON.SET", "s", "$", '{"v":[0.1]}', "FPHA", "FP16")
    m.execute_command("JSON.NUMINCRBY", "s", "$.v[0]", "0.25")
    m.execute_command("SET", "done", "1")
    wait_until(lambda: rep.exists("done"), what="the stream")
    assert rep.execute_command("JSON.GET", "s", "$.v[0]") == m.execute_command("JSON.GET", "s", "$.v[0]")
    assert rep.execute_command("JSON.GET", "s") == m.execute_command("JSON.GET", "s") == b'{"v":[0.35]}'


def test_num_ops_on_float_arrays_without_fpha(raw, raw3):
    # ijson holds [1.5, 2.5] at half precision (FPHA or not): an increment
    # is stored at that width, answered as stored, printed short
    raw.call("JSON.SET", "a", "$", '{"h":[1.5,2.5],"d":[0.1,2.5],"o":{"x":1.5}}')
    assert raw.call("JSON.NUMINCRBY", "a", "$.h[0]", "0.1") == bulk(b"[1.599609375]")
    assert raw.call("JSON.GET", "a", "$.h") == bulk(b"[[1.6,2.5]]")
    assert raw.call("JSON.GET", "a", "$.h[0]") == bulk(b"[1.599609375]")
    # a double array and an object member keep doubles
    assert raw.call("JSON.NUMINCRBY", "a", "$.d[0]", "0.1") == bulk(b"[0.2]")
    assert raw.call("JSON.NUMINCRBY", "a", "$.o.x", "0.1") == bulk(b"[1.6]")
    assert raw3.call("JSON.NUMMULTBY", "a", "$.h[1]", "3") == b"*1\r\n,7.5\r\n"
    # overflow: a double array says numeric overflow, an object member not a number
    raw.call("JSON.SET", "b", "$", '{"d":[1.7e308,0.1],"o":{"x":1.7e308}}')
    assert raw.call("JSON.NUMMULTBY", "b", "$.d[0]", "2") == b"-ERR numeric overflow\r\n"
    assert raw.call("JSON.NUMMULTBY", "b", "$.o.x", "2") == b"-ERR result is not a number\r\n"
    # integer arrays compute up to u64
    raw.call("JSON.SET", "i", "$", "[9223372036854775807]")
    assert raw.call("JSON.NUMINCRBY", "i", "$[0]", "1") == bulk(b"[9223372036854775808]")
    assert raw.call("JSON.NUMINCRBY", "i", "$[0]", "9223372036854775807") == bulk(b"[18446744073709551615]")
    assert raw.call("JSON.NUMINCRBY", "i", "$[0]", "1") == b"-ERR numeric overflow\r\n"
    raw.call("JSON.SET", "j", "$", '{"n":9223372036854775807}')
    assert raw.call("JSON.NUMINCRBY", "j", "$.n", "1") == b"-ERR numeric overflow\r\n"
