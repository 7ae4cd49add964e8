"""Redis 8's JSON type (RedisJSON built in): the JSON.* commands' replies in
RESP2 and RESP3 byte for byte as RedisJSON builds them (valkey has no JSON),
JSONPath and legacy paths, errors, keyspace events, MULTI and scripts,
TYPE / OBJECT ENCODING / MEMORY USAGE, DUMP/RESTORE as RedisJSON's module
record, RDB (DEBUG RELOAD) and AOF rewrite round trips, MODULE LIST, the
@json ACL category and key specs."""

import struct

import pytest
import redis
from redis.exceptions import ResponseError

from ophidis.persistence.rdbcodec import crc64, enc_len, enc_string
from support.modtypes import AOF, aof_base, follow, module_id, rdb_restart, restart, rewrite_aof
from support.resp import bulk
from support.wait import wait_until

DOC = '{"a":1,"b":[1,2.5,"x",null,true],"c":{"a":"two","d":{"a":[3]}}}'


# ---------------------------------------------------------------------------
# JSON.SET / JSON.GET
# ---------------------------------------------------------------------------

def test_set_get_legacy_and_jsonpath(raw):
    assert raw.call("JSON.SET", "d", "$", DOC) == b"+OK\r\n"
    assert raw.call("JSON.GET", "d") == bulk(DOC.encode())
    assert raw.call("JSON.GET", "d", ".") == bulk(DOC.encode())
    assert raw.call("JSON.GET", "d", "$") == bulk(b"[" + DOC.encode() + b"]")
    assert raw.call("JSON.GET", "d", ".a") == bulk(b"1")
    assert raw.call("JSON.GET", "d", "a") == bulk(b"1")
    assert raw.call("JSON.GET", "d", "$.a") == bulk(b"[1]")
    assert raw.call("JSON.GET", "d", "$..a") == bulk(b'[1,"two",[3]]')
    assert raw.call("JSON.GET", "d", "..a") == bulk(b"1")              # legacy: the first match
    assert raw.call("JSON.GET", "d", "$.b[1]") == bulk(b"[2.5]")
    assert raw.call("JSON.GET", "d", "$.b[-1]") == bulk(b"[true]")
    assert raw.call("JSON.GET", "d", "$.b[0:2]") == bulk(b"[1,2.5]")
    assert raw.call("JSON.GET", "d", "$.b[0,2]") == bulk(b'[1,"x"]')
    assert raw.call("JSON.GET", "d", "$.b[*]") == bulk(b'[1,2.5,"x",null,true]')
    assert raw.call("JSON.GET", "d", "$.c.*") == bulk(b'["two",{"a":[3]}]')
    assert raw.call("JSON.GET", "d", "$['c']['a']") == bulk(b'["two"]')
    assert raw.call("JSON.GET", "d", "$.nosuch") == bulk(b"[]")
    assert raw.call("JSON.GET", "d", ".nosuch") == b"-ERR Path does not exist\r\n"
    assert raw.call("JSON.GET", "nokey") == b"$-1\r\n"
    assert raw.call("JSON.GET", "nokey", "$") == b"$-1\r\n"
    # several paths: an object keyed by the paths as given
    assert raw.call("JSON.GET", "d", ".a", "c.a") == bulk(b'{".a":1,"c.a":"two"}')
    assert raw.call("JSON.GET", "d", "$.a", ".c.a") == bulk(b'{"$.a":[1],".c.a":["two"]}')
    assert raw.call("JSON.GET", "d", ".a", ".zz") == b"-ERR Path does not exist\r\n"
    assert raw.call("JSON.GET", "d", "$.a", "$.zz") == bulk(b'{"$.a":[1],"$.zz":[]}')


def test_get_formatting(raw):
    raw.call("JSON.SET", "d", "$", '{"a":[1,{}],"b":{"c":[]}}')
    assert raw.call("JSON.GET", "d", "INDENT", "\t", "NEWLINE", "\n", "SPACE", " ") == bulk(
        b'{\n\t"a": [\n\t\t1,\n\t\t{}\n\t],\n\t"b": {\n\t\t"c": []\n\t}\n}')
    assert raw.call("JSON.GET", "d", "SPACE", " ", "$.b") == bulk(b'[{"c": []}]')
    assert raw.call("JSON.GET", "d", "newline", "|", ".b") == bulk(b'{|"c":[]|}')


def test_set_conditions_and_paths(raw):
    assert raw.call("JSON.SET", "d", "$", '{"a":{"b":1},"l":[1,2]}') == b"+OK\r\n"
    assert raw.call("JSON.SET", "d", "$.a.b", "2", "NX") == b"$-1\r\n"
    assert raw.call("JSON.SET", "d", "$.a.c", "3", "XX") == b"$-1\r\n"
    assert raw.call("JSON.SET", "d", "$.a.c", "3", "NX") == b"+OK\r\n"
    assert raw.call("JSON.SET", "d", "$.a.b", "4", "xx") == b"+OK\r\n"
    assert raw.call("JSON.SET", "d", ".a.e", '"new"') == b"+OK\r\n"
    assert raw.call("JSON.SET", "d", "$.l[1]", "9") == b"+OK\r\n"
    assert raw.call("JSON.GET", "d") == bulk(b'{"a":{"b":4,"c":3,"e":"new"},"l":[1,9]}')
    assert raw.call("JSON.SET", "d", "$", "1", "NX") == b"$-1\r\n"
    assert raw.call("JSON.SET", "nokey", "$", "1", "XX") == b"$-1\r\n"
    assert raw.call("JSON.SET", "nokey", "$.a", "1") == b"-ERR new objects must be created at the root\r\n"
    assert raw.call("JSON.SET", "d", "$.l[5]", "1") == b"-ERR array index out of range\r\n"
    assert raw.call("JSON.SET", "d", "$..x", "1") == b"-Err wrong static path\r\n"
    assert raw.call("JSON.SET", "d", "$.zz.y", "1") == b"$-1\r\n"        # no parent: nothing set
    assert raw.call("JSON.SET", "d", "$", "1", "NX", "XX") == b"-ERR syntax error\r\n"
    assert raw.call("JSON.SET", "d", "$", "1", "BOGUS") == b"-ERR syntax error\r\n"
    # FPHA (Redis 8.8): the types are checked, case-insensitively
    assert raw.call("JSON.SET", "f", "$", "[1.5,2.5]", "FPHA", "fp32") == b"+OK\r\n"
    assert raw.call("JSON.SET", "f", "$", "[1.5]", "FPHA", "FP8") == b"-ERR invalid FPHA type\r\n"
    # every match of a JSONPath is set
    raw.call("JSON.SET", "m", "$", '{"a":{"x":1},"b":{"x":2}}')
    assert raw.call("JSON.SET", "m", "$..x", '"y"') == b"+OK\r\n"
    assert raw.call("JSON.GET", "m") == bulk(b'{"a":{"x":"y"},"b":{"x":"y"}}')


def test_number_and_string_text(raw):
    raw.call("JSON.SET", "n", "$", '[1.0,1e20,1.5e-7,0.00001,-0,12345678901234567890,"\\u00e9\\n\\u0001",'
                                  '"\\ud83d\\ude00"]')
    assert raw.call("JSON.GET", "n") == bulk(
        '[1.0,1e20,1.5e-7,0.00001,0,12345678901234567890,"é\\n\\u0001","😀"]'.encode())
    assert raw.call("JSON.TYPE", "n", "$[*]") == (
        b"*8\r\n$6\r\nnumber\r\n$6\r\nnumber\r\n$6\r\nnumber\r\n$6\r\nnumber\r\n$7\r\ninteger\r\n"
        b"$7\r\ninteger\r\n$6\r\nstring\r\n$6\r\nstring\r\n")


def test_mget_mset(raw, raw3):
    raw.call("JSON.SET", "a", "$", '{"x":1,"y":{"x":2}}')
    raw.call("JSON.SET", "b", "$", '{"x":"s"}')
    raw.call("SET", "str", "v")
    assert raw.call("JSON.MGET", "a", "b", "nokey", "str", "$..x") == (
        b"*4\r\n" + bulk(b"[1,2]") + bulk(b'["s"]') + b"$-1\r\n$-1\r\n")
    assert raw.call("JSON.MGET", "a", "b", ".y.x") == b"*2\r\n" + bulk(b"2") + b"$-1\r\n"
    assert raw3.call("JSON.MGET", "a", "nokey", ".x") == b"*2\r\n" + bulk(b"1") + b"_\r\n"
    assert raw.call("JSON.MSET", "a", "$.x", "10", "c", "$", "[]") == b"+OK\r\n"
    assert raw.call("JSON.GET", "a", "$.x") == bulk(b"[10]")
    assert raw.call("JSON.GET", "c") == bulk(b"[]")
    assert raw.call("JSON.MSET", "a", "$") == b"-ERR wrong number of arguments for 'json.mset' command\r\n"
    # all or nothing: a bad triple changes no key
    assert raw.call("JSON.MSET", "a", "$", "5", "new", "$.q", "1") == (
        b"-ERR new objects must be created at the root\r\n")
    assert raw.call("JSON.MSET", "a", "$", "5", "c", "$", "{bad") == b"-key must be a string at line 1 column 2\r\n"
    assert raw.call("JSON.GET", "a", "$.x") == bulk(b"[10]")


def test_merge(raw):
    raw.call("JSON.SET", "d", "$", '{"a":{"b":1,"c":2},"l":[1]}')
    assert raw.call("JSON.MERGE", "d", "$", '{"a":{"b":null,"n":{"z":1}},"l":[2,3]}') == b"+OK\r\n"
    assert raw.call("JSON.GET", "d") == bulk(b'{"a":{"c":2,"n":{"z":1}},"l":[2,3]}')
    assert raw.call("JSON.MERGE", "d", "$.a.c", "7") == b"+OK\r\n"
    assert raw.call("JSON.MERGE", "d", "$.a.new", '{"k":true}') == b"+OK\r\n"
    assert raw.call("JSON.GET", "d", "$.a") == bulk(b'[{"c":7,"n":{"z":1},"new":{"k":true}}]')
    assert raw.call("JSON.MERGE", "nokey", "$.a", "1") == b"-ERR new objects must be created at the root\r\n"
    # a new document is stored as given; a null patch at a path sets null
    assert raw.call("JSON.MERGE", "new", "$", '{"a":null,"b":1}') == b"+OK\r\n"
    assert raw.call("JSON.GET", "new") == bulk(b'{"a":null,"b":1}')
    assert raw.call("JSON.MERGE", "new", "$.b", "null") == b"+OK\r\n"
    assert raw.call("JSON.MERGE", "new", "$.c", '{"x":null}') == b"+OK\r\n"
    assert raw.call("JSON.GET", "new") == bulk(b'{"a":null,"b":null,"c":{"x":null}}')
    assert raw.call("JSON.MERGE", "new", "$", '{"c":{"x":null}}') == b"+OK\r\n"
    assert raw.call("JSON.GET", "new") == bulk(b'{"a":null,"b":null,"c":{}}')


# ---------------------------------------------------------------------------
# the other commands, RESP2 and RESP3
# ---------------------------------------------------------------------------

def test_type_and_numbers(raw, raw3):
    raw.call("JSON.SET", "d", "$", '{"i":1,"f":1.5,"s":"x","n":{"i":2}}')
    assert raw.call("JSON.TYPE", "d") == bulk(b"object")
    assert raw.call("JSON.TYPE", "d", ".i") == bulk(b"integer")
    assert raw.call("JSON.TYPE", "d", ".zz") == b"$-1\r\n"
    assert raw.call("JSON.TYPE", "d", "$..i") == b"*2\r\n" + bulk(b"integer") * 2
    assert raw.call("JSON.TYPE", "nokey") == b"$-1\r\n"
    assert raw3.call("JSON.TYPE", "d", ".i") == b"*1\r\n" + bulk(b"integer")
    assert raw3.call("JSON.TYPE", "d", "$.s") == b"*1\r\n*1\r\n" + bulk(b"string")
    assert raw.call("JSON.NUMINCRBY", "d", ".i", "2") == bulk(b"3")
    assert raw.call("JSON.NUMINCRBY", "d", ".i", "0.5") == bulk(b"3.5")
    assert raw.call("JSON.NUMINCRBY", "d", "$..i", "1") == bulk(b"[4.5,3]")
    assert raw.call("JSON.NUMINCRBY", "d", "$.*", "1") == bulk(b"[5.5,2.5,null,null]")
    assert raw.call("JSON.NUMMULTBY", "d", "$.f", "2") == bulk(b"[5.0]")
    assert raw3.call("JSON.NUMINCRBY", "d", "$.*", "1") == b"*4\r\n,6.5\r\n,6\r\n_\r\n_\r\n"
    assert raw3.call("JSON.NUMINCRBY", "d", ".n.i", "1") == b"*1\r\n:4\r\n"
    assert raw.call("JSON.NUMINCRBY", "d", ".s", "1") == (
        b"-ERR Path does not exist or does not contains a number\r\n")
    assert raw.call("JSON.NUMINCRBY", "d", "$.i", "x") == b"-expected value at line 1 column 1\r\n"
    assert raw.call("JSON.NUMINCRBY", "d", "$.i", '"1"') == b"-bad input number\r\n"
    raw.call("JSON.SET", "p", "$", '{"a":"b","b":[{"a":2},{"a":5},{"a":"c"}],"f":2,"z":0}')
    assert raw.call("JSON.NUMPOWBY", "p", "$..a", "2") == bulk(b"[null,4,25,null]")
    assert raw.call("JSON.NUMPOWBY", "p", ".f", "-1.0") == bulk(b"0.5")
    assert raw.call("JSON.NUMPOWBY", "p", "$.b[0].a", "-1") == b"-ERR numeric overflow\r\n"
    assert raw.call("JSON.NUMPOWBY", "p", "$.b[0].a", "100") == b"-ERR numeric overflow\r\n"
    assert raw.call("JSON.NUMPOWBY", "p", "$.z", "-1.0") == b"-ERR result is not a number\r\n"
    assert raw.call("JSON.GET", "p", "$..a") == bulk(b'["b",4,25,"c"]')           # failures change nothing
    raw.call("JSON.SET", "big", "$", str(2**63 - 1))
    assert raw.call("JSON.NUMINCRBY", "big", "$", "1") == b"-ERR numeric overflow\r\n"
    raw.call("JSON.SET", "fl", "$", "1e308")
    assert raw.call("JSON.NUMMULTBY", "fl", "$", "10") == b"-ERR result is not a number\r\n"
    assert raw.call("JSON.NUMINCRBY", "nokey", "$", "1") == (
        b"-ERR could not perform this operation on a key that doesn't exist\r\n")


def test_strings_bools_clear(raw):
    raw.call("JSON.SET", "d", "$", '{"s":"ab","t":true,"n":{"s":"é","t":false},"l":[1,2],"num":5}')
    assert raw.call("JSON.STRAPPEND", "d", ".s", '"cd"') == b":4\r\n"
    assert raw.call("JSON.STRAPPEND", "d", "$..s", '"!"') == b"*2\r\n:5\r\n:3\r\n"
    assert raw.call("JSON.STRLEN", "d", "$..s") == b"*2\r\n:5\r\n:3\r\n"
    assert raw.call("JSON.STRLEN", "d", "$.*") == b"*5\r\n:5\r\n$-1\r\n$-1\r\n$-1\r\n$-1\r\n"
    assert raw.call("JSON.STRLEN", "d", ".t") == b"-WRONGTYPE wrong type of path value - expected string\r\n"
    assert raw.call("JSON.STRLEN", "nokey") == b"$-1\r\n"
    assert raw.call("JSON.STRAPPEND", "d", ".t", '"x"') == b"-ERR Path does not exist or not a string\r\n"
    assert raw.call("JSON.STRAPPEND", "d", ".s", "1") == (
        b"-WRONGTYPE wrong type of path value - expected string\r\n")
    assert raw.call("JSON.TOGGLE", "d", ".t") == bulk(b"false")
    assert raw.call("JSON.TOGGLE", "d", "$..t") == b"*2\r\n:1\r\n:1\r\n"
    assert raw.call("JSON.TOGGLE", "d", "$.s") == b"*1\r\n$-1\r\n"
    assert raw.call("JSON.TOGGLE", "d", ".s") == b"-ERR Path does not exist or not a bool\r\n"
    assert raw.call("JSON.CLEAR", "d", "$.*") == b":3\r\n"                   # l, n and num
    assert raw.call("JSON.GET", "d") == bulk(b'{"s":"abcd!","t":true,"n":{},"l":[],"num":0}')
    assert raw.call("JSON.CLEAR", "d") == b":1\r\n"
    assert raw.call("JSON.GET", "d") == bulk(b"{}")
    assert raw.call("JSON.CLEAR", "nokey") == (
        b"-ERR could not perform this operation on a key that doesn't exist\r\n")


def test_arrays(raw, raw3):
    raw.call("JSON.SET", "d", "$", '{"a":[1,2,3],"n":{"a":[]},"s":"x"}')
    assert raw.call("JSON.ARRAPPEND", "d", ".a", "4", '"five"') == b":5\r\n"
    assert raw.call("JSON.ARRAPPEND", "d", "$..a", "0") == b"*2\r\n:6\r\n:1\r\n"
    assert raw.call("JSON.ARRAPPEND", "d", "$.s", "0") == b"*1\r\n$-1\r\n"
    assert raw.call("JSON.ARRAPPEND", "d", ".s", "0") == b"-ERR Path does not exist or not an array\r\n"
    assert raw.call("JSON.ARRINDEX", "d", ".a", '"five"') == b":4\r\n"
    assert raw.call("JSON.ARRINDEX", "d", "$..a", "0") == b"*2\r\n:5\r\n:0\r\n"
    assert raw.call("JSON.ARRINDEX", "d", ".a", "3.0") == b":-1\r\n"          # 3 is an integer
    assert raw.call("JSON.ARRINDEX", "d", ".a", "1", "1", "-1") == b":-1\r\n"
    assert raw.call("JSON.ARRINDEX", "d", "$.a", "2", "1", "3") == b"*1\r\n:1\r\n"
    assert raw.call("JSON.ARRINDEX", "d", ".s", "1") == (
        b"-WRONGTYPE wrong type of path value - expected array\r\n")
    assert raw.call("JSON.ARRINSERT", "d", ".a", "0", '"first"') == b":7\r\n"
    assert raw.call("JSON.ARRINSERT", "d", "$.a", "-1", "9", "10") == b"*1\r\n:9\r\n"
    assert raw.call("JSON.ARRINSERT", "d", ".a", "99", "1") == b"-ERR index out of bounds\r\n"
    assert raw.call("JSON.GET", "d", ".a") == bulk(b'["first",1,2,3,4,"five",9,10,0]')
    assert raw.call("JSON.ARRLEN", "d") == b"-ERR Path does not exist or not an array\r\n"
    assert raw.call("JSON.ARRLEN", "d", "$..a") == b"*2\r\n:9\r\n:1\r\n"
    assert raw.call("JSON.ARRLEN", "nokey") == b"$-1\r\n"
    assert raw.call("JSON.ARRPOP", "d", ".a") == bulk(b"0")
    assert raw.call("JSON.ARRPOP", "d", ".a", "0") == bulk(b'"first"')
    assert raw.call("JSON.ARRPOP", "d", "$..a", "99") == b"*2\r\n" + bulk(b"10") + bulk(b"0")
    assert raw.call("JSON.ARRPOP", "d", "$..a") == b"*2\r\n" + bulk(b"9") + b"$-1\r\n"
    assert raw3.call("JSON.ARRPOP", "d", "$.s") == b"*1\r\n_\r\n"
    assert raw.call("JSON.ARRTRIM", "d", ".a", "1", "2") == b":2\r\n"
    assert raw.call("JSON.GET", "d", ".a") == bulk(b"[2,3]")
    assert raw.call("JSON.ARRTRIM", "d", "$..a", "5", "9") == b"*2\r\n:0\r\n:0\r\n"
    assert raw.call("JSON.ARRTRIM", "d", ".a", "x", "1") == b"-Couldn't parse as integer\r\n"
    assert raw.call("JSON.ARRAPPEND", "nokey", "$", "1") == (
        b"-ERR could not perform this operation on a key that doesn't exist\r\n")
    assert raw.call("JSON.ARRAPPEND", "d", "$.a", "[1") == b"-EOF while parsing a list at line 1 column 2\r\n"


def test_objects_resp_debug(raw, raw3):
    raw.call("JSON.SET", "d", "$", '{"o":{"k1":1,"k2":[true,null,1.5]},"s":"x"}')
    assert raw.call("JSON.OBJKEYS", "d") == b"*2\r\n" + bulk(b"o") + bulk(b"s")
    # $..*: the root's members, then o's, then k2's (RedisJSON's order)
    assert raw.call("JSON.GET", "d", "$..*") == bulk(
        b'[{"k1":1,"k2":[true,null,1.5]},"x",1,[true,null,1.5],true,null,1.5]')
    assert raw.call("JSON.OBJKEYS", "d", "$..*") == (
        b"*7\r\n*2\r\n" + bulk(b"k1") + bulk(b"k2") + b"$-1\r\n" * 6)
    assert raw.call("JSON.OBJKEYS", "d", ".s") == b"-ERR Path does not exist or not an object\r\n"
    assert raw.call("JSON.OBJKEYS", "nokey") == b"$-1\r\n"
    assert raw.call("JSON.OBJLEN", "d", ".o") == b":2\r\n"
    assert raw.call("JSON.OBJLEN", "d", "$.*") == b"*2\r\n:2\r\n$-1\r\n"
    assert raw.call("JSON.OBJLEN", "d", ".s") == b"-WRONGTYPE wrong type of path value - expected object\r\n"
    assert raw.call("JSON.RESP", "d", ".o") == (
        b"*5\r\n+{\r\n" + bulk(b"k1") + b":1\r\n" + bulk(b"k2") + b"*4\r\n+[\r\n+true\r\n$-1\r\n"
        + bulk(b"1.5"))
    assert raw3.call("JSON.RESP", "d", "$.o.k2") == b"*1\r\n*4\r\n+[\r\n+true\r\n_\r\n,1.5\r\n"
    assert raw.call("JSON.RESP", "nokey") == b"$-1\r\n"
    assert raw.call("JSON.DEBUG", "MEMORY", "d", "$.s").startswith(b"*1\r\n:")
    assert raw.call("JSON.DEBUG", "MEMORY", "d").startswith(b":")
    assert raw.call("JSON.DEBUG", "MEMORY", "nokey") == b":0\r\n"
    assert raw.call("JSON.DEBUG", "HELP") == (
        b"*2\r\n" + bulk(b"MEMORY <key> [path] - reports memory usage") + bulk(b"HELP                - this message"))
    assert raw.call("JSON.DEBUG", "FOO") == b"-ERR unknown subcommand - try `JSON.DEBUG HELP`\r\n"
    info = bulk(b"defrag_started") + b":0\r\n" + bulk(b"defrag_ended") + b":0\r\n" + bulk(b"keys_defrag") + b":0\r\n"
    assert raw.call("JSON.DEBUG", "DEFRAG_INFO") == b"*6\r\n" + info
    assert raw3.call("JSON.DEBUG", "DEFRAG_INFO") == b"%3\r\n" + info


def test_del_forget(raw):
    raw.call("JSON.SET", "d", "$", '{"a":1,"n":{"a":2,"b":[1,2,3]},"l":[{"a":3}]}')
    assert raw.call("JSON.DEL", "d", "$..a") == b":3\r\n"
    # ijson removes a member by moving the object's last member into its place
    assert raw.call("JSON.GET", "d") == bulk(b'{"l":[{}],"n":{"b":[1,2,3]}}')
    assert raw.call("JSON.DEL", "d", "$.n.b[0,2]") == b":2\r\n"
    assert raw.call("JSON.FORGET", "d", ".n.b[0]") == b":1\r\n"
    assert raw.call("JSON.DEL", "d", "$.zz") == b":0\r\n"
    assert raw.call("JSON.DEL", "nokey") == b":0\r\n"
    assert raw.call("JSON.DEL", "d", "$") == b":1\r\n"
    assert raw.call("EXISTS", "d") == b":0\r\n"
    # deleting the last member of the root takes the key with it (as RedisJSON)
    raw.call("JSON.SET", "e", "$", '{"a":1}')
    assert raw.call("JSON.DEL", "e", "$.a") == b":1\r\n"
    assert raw.call("EXISTS", "e") == b":0\r\n"


def test_filters(raw):
    raw.call("JSON.SET", "s", "$", '{"books":[{"t":"A","p":8.95,"tags":["x"]},{"t":"B","p":12,"isbn":"1"},'
                                  '{"t":"C","p":8.99,"isbn":"2"}],"max":10}')
    assert raw.call("JSON.GET", "s", "$.books[?(@.p<10)].t") == bulk(b'["A","C"]')
    assert raw.call("JSON.GET", "s", "$.books[?(@.p < $.max && @.isbn)].t") == bulk(b'["C"]')
    assert raw.call("JSON.GET", "s", "$.books[?(@.t=='B' || @.p>8.98)].t") == bulk(b'["B","C"]')
    assert raw.call("JSON.GET", "s", "$.books[?(!(@.isbn))].t") == bulk(b'["A"]')
    assert raw.call("JSON.GET", "s", '$.books[?(@.t =~ "^[AB]$")].p') == bulk(b"[8.95,12]")
    assert raw.call("JSON.GET", "s", "$..books[?(@.p>100)]") == bulk(b"[]")
    assert raw.call("JSON.NUMINCRBY", "s", "$.books[?(@.p<9)].p", "1") == bulk(b"[9.95,9.99]")
    assert raw.call("JSON.GET", "s", "$.books[").startswith(b"-Error occurred at position")


# ---------------------------------------------------------------------------
# errors, types
# ---------------------------------------------------------------------------

def test_bad_input_and_wrong_types(raw):
    for doc, msg in (("{", "EOF while parsing an object at line 1 column 1"),
                     ("", "EOF while parsing a value at line 1 column 0"),
                     ("[1 2]", "expected `,` or `]` at line 1 column 4"),
                     ("1 2", "trailing characters at line 1 column 3"),
                     ("NaN", "expected value at line 1 column 1"),
                     ('{"a":1,}', "trailing comma at line 1 column 8")):
        assert raw.call("JSON.SET", "d", "$", doc) == b"-%s\r\n" % msg.encode(), doc
    assert raw.call("JSON.SET", "d", "$", "[" * 129 + "]" * 129) == b"-recursion limit exceeded\r\n"
    assert raw.call("JSON.SET", "d", "$", b'"\xff"') == b"-Couldn't parse as UTF-8 string\r\n"
    assert raw.call("JSON.GET", "nokey", b"$.\xff") == b"-Couldn't parse as UTF-8 string\r\n"
    raw.call("JSON.SET", "deep", "$", "[" * 100 + "]" * 100)
    assert raw.call("JSON.ARRAPPEND", "deep", "$" + "[0]" * 99, "[" * 40 + "]" * 40) == (
        b"-ERR recursion limit exceeded\r\n")
    raw.call("SET", "str", "v")
    wrong = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    for cmd in (("JSON.GET", "str"), ("JSON.SET", "str", "$", "1"), ("JSON.DEL", "str"),
                ("JSON.ARRAPPEND", "str", "$", "1"), ("JSON.TYPE", "str")):
        assert raw.call(*cmd) == wrong, cmd
    raw.call("JSON.SET", "j", "$", "1")
    assert raw.call("GET", "j") == wrong
    assert raw.call("JSON.GET") == b"-ERR wrong number of arguments for 'json.get' command\r\n"
    assert raw.call("JSON.SET", "j", "$") == b"-ERR wrong number of arguments for 'json.set' command\r\n"
    assert raw.call("JSON.ARRINSERT", "j", "$", "x", "1") == b"-Couldn't parse as integer\r\n"


def test_type_encoding_memory_copy(r):
    r.execute_command("JSON.SET", "d", "$", DOC)
    assert r.type("d") == b"ReJSON-RL"
    assert r.object("encoding", "d") == b"raw"
    assert r.memory_usage("d") > 0
    assert r.copy("d", "e")
    r.execute_command("JSON.ARRAPPEND", "e", "$.b", "1")
    assert r.execute_command("JSON.ARRLEN", "d", ".b") == 5             # a deep copy
    r.rename("e", "f")
    assert r.execute_command("JSON.ARRLEN", "f", ".b") == 6
    assert r.execute_command("DEBUG", "DIGEST-VALUE", "d") != r.execute_command("DEBUG", "DIGEST-VALUE", "f")


def test_keyspace_events(r):
    r.config_set("notify-keyspace-events", "KEA")
    p = r.pubsub()
    p.psubscribe("__keyevent@*")
    wait_until(lambda: p.get_message(timeout=0.1) is not None)
    r.execute_command("JSON.SET", "a", "$", '{"n":1,"s":"x","l":[1],"b":true}')
    r.execute_command("JSON.NUMINCRBY", "a", "$.n", "1")
    r.execute_command("JSON.STRAPPEND", "a", "$.s", '"y"')
    r.execute_command("JSON.ARRAPPEND", "a", "$.l", "2")
    r.execute_command("JSON.ARRPOP", "a", "$.l")
    r.execute_command("JSON.TOGGLE", "a", "$.b")
    r.execute_command("JSON.MERGE", "a", "$", '{"m":1}')
    r.execute_command("JSON.CLEAR", "a", "$.l")
    r.execute_command("JSON.DEL", "a", "$.zz")                 # nothing deleted: no event
    r.execute_command("JSON.DEL", "a")
    events = []
    wait_until(lambda: events.append(p.get_message(timeout=0.1)) or
               [e for e in events if e and e["channel"].endswith(b":json.del")])
    names = [e["channel"].split(b":", 1)[1] for e in events if e]
    assert names == [b"json.set", b"json.numincrby", b"json.strappend", b"json.arrappend", b"json.arrpop",
                     b"json.toggle", b"json.merge", b"json.clear", b"json.del"]
    p.close()
    # the module class "d" alone enables them
    r.config_set("notify-keyspace-events", "Ed")
    p = r.pubsub()
    p.subscribe("__keyevent@0__:json.set")
    wait_until(lambda: p.get_message(timeout=0.1) is not None)
    r.execute_command("JSON.SET", "b", "$", "1")
    msgs = []
    wait_until(lambda: msgs.append(p.get_message(timeout=0.1)) or [m for m in msgs if m])
    assert [m["data"] for m in msgs if m] == [b"b"]
    p.close()


def test_multi_and_scripts(r):
    p = r.pipeline()
    p.execute_command("JSON.SET", "a", "$", '{"x":[1]}')
    p.execute_command("JSON.ARRAPPEND", "a", "$.x", "2")
    p.execute_command("JSON.GET", "a", "$.x")
    assert p.execute() == [b"OK", [2], b"[[1,2]]"]
    assert r.eval("return redis.call('JSON.GET', KEYS[1], '.x[1]')", 1, "a") == b"2"
    assert r.eval("return redis.call('JSON.TYPE', KEYS[1], '$.x')", 1, "a") == [b"array"]
    with pytest.raises(ResponseError, match="Path does not exist"):
        r.eval("return redis.call('JSON.GET', KEYS[1], '.zz')", 1, "a")


def test_acl_category_module_list_and_command_info(r, raw):
    assert b"json" in r.execute_command("ACL", "CAT")
    cmds = set(r.execute_command("ACL", "CAT", "json"))
    assert {b"json.set", b"json.get", b"json.mget", b"json.debug", b"json.resp"} <= cmds and len(cmds) == 25
    info = raw.call("COMMAND", "INFO", "json.set")
    assert info.startswith(b"*1\r\n*10\r\n$8\r\njson.set\r\n:-4\r\n*3\r\n+write\r\n+denyoom\r\n+module\r\n"
                           b":1\r\n:1\r\n:1\r\n*3\r\n+@write\r\n+@slow\r\n+@json\r\n")
    assert raw.call("COMMAND", "GETKEYS", "JSON.MSET", "k1", "$", "1", "k2", "$", "2") == (
        b"*2\r\n$2\r\nk1\r\n$2\r\nk2\r\n")
    assert raw.call("COMMAND", "GETKEYS", "JSON.MGET", "k1", "k2", "$") == b"*2\r\n$2\r\nk1\r\n$2\r\nk2\r\n"
    mods = r.execute_command("MODULE", "LIST")
    assert [b"name", b"ReJSON", b"ver", 81000] == mods[0][:4]
    assert r.info("modules")["modules"][0]["name"] == "ReJSON"
    r.execute_command("ACL", "SETUSER", "u", "on", "nopass", "~*", "+@all", "-@json")
    kw = r.connection_pool.connection_kwargs
    u = redis.Redis(host=kw["host"], port=kw["port"], username="u", password="x")
    try:
        assert u.get("nokey") is None
        with pytest.raises(ResponseError, match="no permissions to run the 'json.get' command"):
            u.execute_command("JSON.GET", "a")
    finally:
        u.close()
        r.execute_command("ACL", "DELUSER", "u")


# ---------------------------------------------------------------------------
# persistence
# ---------------------------------------------------------------------------

def _fill(r):
    r.execute_command("JSON.SET", "d", "$", DOC)
    r.execute_command("JSON.SET", "n", "$", '[1.5,-0.0,12345678901234567890,"\\u00e9"]')
    r.execute_command("JSON.SET", "s", "$", '"plain"')


def _snapshot(r):
    return {k: r.execute_command("JSON.GET", k) for k in ("d", "n", "s")}


def test_dump_restore_layout(r):
    _fill(r)
    payload = r.dump("d")
    assert payload[0] == 7                                   # RDB_TYPE_MODULE_2
    # the module id as a 64-bit RDB length (0x81 then 8 bytes big endian)
    assert payload[1:10] == b"\x81" + module_id("ReJSON-RL", 4).to_bytes(8, "big")
    # RDB_MODULE_OPCODE_STRING, the document as ijson's CBOR (encoding
    # version 4, as Redis 8 writes it), RDB_MODULE_OPCODE_EOF: floats in
    # the shortest CBOR width that holds them, [3] an i8 typed array
    cbor = (b"\xa3" + b"\x61a\x01" + b"\x61b\x85\x01\xf9\x41\x00\x61x\xf6\xf5"
            + b"\x61c\xa2\x61a\x63two\x61d\xa1\x61a" + b"\xd8\x48\x41\x03")
    assert payload[10:-10] == b"\x05" + enc_string(cbor, False) + b"\x00"
    r.restore("d2", 0, payload)
    assert r.execute_command("JSON.GET", "d2") == DOC.encode()
    assert r.type("d2") == b"ReJSON-RL"
    # integer arrays take ijson's kinds (i8, then i16 for 200, ...), typed
    # float arrays keep their width
    r.execute_command("JSON.SET", "t", "$", '[[1,200],[-1,70000],[0.5,1e10],[1,1.5]]')
    payload = r.dump("t")
    r.restore("t2", 0, payload)
    assert r.execute_command("JSON.GET", "t2") == r.execute_command("JSON.GET", "t")
    assert (b"\xd8\x4d\x44\x01\x00\xc8\x00" in payload            # i16 [1, 200]
            and b"\xd8\x4e\x48" + struct.pack("<ii", -1, 70000) in payload
            and b"\xd8\x55\x48" + struct.pack("<ff", 0.5, 1e10) in payload
            and b"\x82\x01\xf9\x3e\x00" in payload)                # [1, 1.5] mixed


def _module_payload(encver: int, body: bytes) -> bytes:
    data = (b"\x07" + enc_len(module_id("ReJSON-RL", encver)) + enc_len(5) + enc_string(body, False)
            + enc_len(0) + (10).to_bytes(2, "little"))
    return data + crc64(data).to_bytes(8, "little")


def test_restore_redis8_cbor_and_older_encodings(r):
    # encoding version 4 (Redis 8): the document as CBOR, numeric arrays as
    # RFC 8746 typed arrays (here an i16 array and a BF16 one)
    cbor = (bytes([0xa3, 0x61]) + b"a" + bytes([0x85, 0x01, 0x20, 0xfb]) + struct.pack(">d", 0.1)
            + bytes([0x62]) + "é".encode() + bytes([0xf6])
            + bytes([0x61]) + b"i" + bytes([0xd8, 77, 0x44]) + struct.pack("<hh", -5, 300)
            + bytes([0x61]) + b"b" + bytes([0xda, 0, 1, 0, 0, 0x42]) + struct.pack("<f", 1.5)[2:])
    r.restore("v4", 0, _module_payload(4, cbor))
    assert r.execute_command("JSON.GET", "v4") == '{"a":[1,-1,0.1,"é",null],"i":[-5,300],"b":[1.5]}'.encode()
    r.restore("v3", 0, _module_payload(3, b'{"x":[true]}'))
    assert r.execute_command("JSON.GET", "v3") == b'{"x":[true]}'
    # corrupt documents are refused, not loaded
    for bad in (_module_payload(4, b"\xff"), _module_payload(4, cbor[:-1]), _module_payload(3, b"{bad")):
        with pytest.raises(ResponseError, match="Bad data format"):
            r.restore("bad", 0, bad)
    assert not r.exists("bad")


def test_debug_reload(r):
    _fill(r)
    before = _snapshot(r)
    d1 = r.execute_command("DEBUG", "DIGEST-VALUE", "d")
    assert r.execute_command("DEBUG", "RELOAD") == b"OK"
    assert _snapshot(r) == before
    assert r.execute_command("DEBUG", "DIGEST-VALUE", "d") == d1
    assert r.execute_command("JSON.TYPE", "n", "$[*]") == [b"number", b"number", b"integer", b"string"]


def test_aof_rewrite_and_restart(start_server):
    s = start_server(*AOF)
    c = s.client()
    _fill(c)
    before = _snapshot(c)
    rewrite_aof(c)
    c.execute_command("JSON.ARRAPPEND", "d", "$.b", '"after"')      # in the incr file
    before[b"d" if isinstance(next(iter(before)), bytes) else "d"] = c.execute_command("JSON.GET", "d")
    s.stop()
    data = aof_base(s)
    assert b"*4\r\n$8\r\nJSON.SET\r\n$1\r\nd\r\n$1\r\n$\r\n" + bulk(DOC.encode()) in data
    s2 = restart(start_server, s, *AOF)
    assert _snapshot(s2.client()) == before


def test_rdb_restart(start_server):
    def fill(c):
        _fill(c)
        c.expire("d", 1000)
    s2 = rdb_restart(start_server, fill, _snapshot)
    assert 0 < s2.client().ttl("d") <= 1000


def test_replica_stream(start_server):
    master = start_server()
    m = master.client()
    m.execute_command("JSON.SET", "d", "$", '{"l":[]}')
    s = start_server()
    rep = s.client()
    follow(rep, master)
    wait_until(lambda: rep.exists("d"), what="the payload")
    m.execute_command("JSON.ARRAPPEND", "d", "$.l", "1", "2")
    m.execute_command("JSON.NUMINCRBY", "d", "$.l[0]", "5")
    m.execute_command("JSON.SET", "e", "$", "true")
    wait_until(lambda: rep.exists("e"), what="the stream")
    assert rep.execute_command("JSON.GET", "d") == b'{"l":[6,2]}'
    assert rep.type("e") == b"ReJSON-RL"


def test_format_expand_resp3(raw, raw3):
    raw3.call("JSON.SET", "d", "$", '{"a":[1,{"b":null,"t":true}],"f":1.5}')
    assert raw3.call("JSON.GET", "d", "FORMAT", "EXPAND", "$.a", "$.f") == (
        b"*2\r\n*1\r\n*2\r\n:1\r\n%2\r\n$1\r\nb\r\n_\r\n$1\r\nt\r\n#t\r\n*1\r\n,1.5\r\n")
    assert raw3.call("JSON.GET", "d", "FORMAT", "EXPAND1", "$.a", ".f") == (
        b"*2\r\n*1\r\n" + bulk(b'[1,{"b":null,"t":true}]') + b"*1\r\n,1.5\r\n")
    assert raw3.call("JSON.GET", "d", "FORMAT", "STRING", "$.f") == bulk(b"[1.5]")
    assert raw3.call("JSON.GET", "d", "FORMAT", "BOGUS", "$.f") == b"-ERR wrong reply format\r\n"
    assert raw.call("JSON.GET", "d", "FORMAT", "EXPAND", "$.f") == (
        b"-ERR FORMAT argument is not supported on RESP2\r\n")
    assert raw.call("JSON.GET", "d", "$.f", "FORMAT", "EXPAND") == bulk(b"[1.5]")   # after a path: ignored
    assert raw3.call("JSON.ARRPOP", "d", "FORMAT", "EXPAND", "$.a") == b"*1\r\n%2\r\n$1\r\nb\r\n_\r\n$1\r\nt\r\n#t\r\n"
    assert raw3.call("JSON.ARRPOP", "d", "FORMAT", "EXPAND", ".a") == (
        b"-Legacy paths are supported only with FORMAT STRINGS\r\n")
    assert raw.call("JSON.ARRPOP", "d", "FORMAT", "EXPAND", "$.a") == (
        b"-ERR FORMAT argument is not supported on RESP2\r\n")
    assert raw3.call("JSON.ARRPOP", "d", "FORMAT", "STRING", "$.a") == b"-ERR wrong reply format\r\n"
    assert raw3.call("JSON.ARRPOP", "d", "FORMAT", "EXPAND1", "$.a") == b"*1\r\n:1\r\n"


def test_nested_array_writes_in_mutation_order(raw):
    # the inner array is written before the outer one, so the outer
    # insertion does not move it
    raw.call("JSON.SET", "d", "$", '[[1,2],[3]]')
    assert raw.call("JSON.ARRINSERT", "d", "$..*", "0", '"x"') == b"*5\r\n:3\r\n:2\r\n" + b"$-1\r\n" * 3
    assert raw.call("JSON.GET", "d") == bulk(b'[["x",1,2],["x",3]]')
    raw.call("JSON.SET", "n", "$", '[[0,[1,2]]]')
    assert raw.call("JSON.ARRINSERT", "n", "$..*", "0", "9") == b"*5\r\n:3\r\n$-1\r\n:3\r\n$-1\r\n$-1\r\n"
    assert raw.call("JSON.GET", "n") == bulk(b"[[9,0,[9,1,2]]]")
    raw.call("JSON.SET", "p", "$", '[[0,[1,2]]]')
    assert raw.call("JSON.ARRPOP", "p", "$..*", "0") == (
        b"*5\r\n" + bulk(b"0") + b"$-1\r\n" + bulk(b"1") + b"$-1\r\n$-1\r\n")
    assert raw.call("JSON.GET", "p") == bulk(b"[[[2]]]")
    raw.call("JSON.SET", "q", "$", '{"a":[1,[2,3]],"b":{"a":[4]}}')
    assert raw.call("JSON.DEL", "q", "$..a[0]") == b":2\r\n"
    assert raw.call("JSON.GET", "q") == bulk(b'{"a":[[2,3]],"b":{"a":[]}}')


def test_overlapping_matches(raw):
    """Matches inside other matches: no internal error, RedisJSON's results."""
    raw.call("JSON.SET", "d", "$", '{"a":{"a":1}}')
    assert raw.call("JSON.SET", "d", "$..a", "5") == b"+OK\r\n"            # the outer one, replaced
    assert raw.call("JSON.GET", "d") == bulk(b'{"a":5}')
    raw.call("JSON.SET", "d", "$", '{"a":{"b":5,"c":[1]}}')
    assert raw.call("JSON.CLEAR", "d", "$..*") == b":1\r\n"
    assert raw.call("JSON.GET", "d") == bulk(b'{"a":{}}')
    raw.call("JSON.SET", "d", "$", '{"a":{"a":{"x":1}}}')
    assert raw.call("JSON.MERGE", "d", "$..a", '{"y":2}') == b"+OK\r\n"
    assert raw.call("JSON.GET", "d") == bulk(b'{"a":{"a":{"x":1,"y":2},"y":2}}')
    raw.call("JSON.SET", "d", "$", '{"a":{"a":[1]}}')
    assert raw.call("JSON.DEL", "d", "$..a") == b":1\r\n"
    assert raw.call("EXISTS", "d") == b":0\r\n"                           # emptied: the key goes


def test_command_docs_name_the_module(r, raw):
    # Redis 8 reports its built-in types' commands as module commands:
    # group "module" and the module's name (ReJSON, bf)
    for cmd, module in ((b"json.get", b"ReJSON"), (b"json.set", b"ReJSON"), (b"bf.add", b"bf"),
                        (b"cf.add", b"bf"), (b"cms.query", b"bf")):
        doc = raw.call("COMMAND", "DOCS", cmd)
        assert b"$5\r\ngroup\r\n$6\r\nmodule\r\n" in doc, doc
        assert b"$6\r\nmodule\r\n$%d\r\n%s\r\n" % (len(module), module) in doc, doc
    listed = raw.call("COMMAND", "LIST", "FILTERBY", "MODULE", "ReJSON")
    n = int(listed[1:listed.index(b"\r\n")])
    assert n >= 25 and listed.count(b"\r\njson.") == n and b"\r\njson.get\r\n" in listed
