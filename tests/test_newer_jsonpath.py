"""RedisJSON 8.10's JSONPath extensions: filter operators (negation, JSON
literals, arithmetic, in / nin, subsetof / anyof / noneof, size / empty),
filter functions, and projections (computed expressions) that only JSON.GET,
JSON.MGET and JSON.RESP accept.  Valkey has no JSON: the replies asserted
are RedisJSON's, from its command pages and its own test suite's
expectations, byte for byte in RESP2 and RESP3."""

import json

import pytest
from support.resp import bulk

PROJ_ERR = (b"-ERR computed/projection expressions are only supported by "
            b"JSON.GET/JSON.MGET/JSON.RESP\r\n")


def setj(raw, key, doc):
    assert raw.call("JSON.SET", key, "$", json.dumps(doc)) == b"+OK\r\n"


def get(raw, key, *paths):
    r = raw.call("JSON.GET", key, *paths)
    assert r.startswith(b"$"), r
    return r.split(b"\r\n", 1)[1][:-2].decode()


def test_negation_and_literals(raw):
    setj(raw, "d", [{"a": 1, "b": 1}, {"b": 2}, {"a": 1}, {"c": 3}])
    assert get(raw, "d", "$[?!@.a]") == '[{"b":2},{"c":3}]'
    assert get(raw, "d", "$[?!!@.a]") == '[{"a":1,"b":1},{"a":1}]'
    assert get(raw, "d", "$[?!(@.a==1)]") == '[{"b":2},{"c":3}]'
    assert get(raw, "d", "$[?!@.a==1]") == '[{"b":2},{"c":3}]'
    assert get(raw, "d", "$[?!@.a && @.b]") == '[{"b":2}]'
    assert get(raw, "d", "$[?!(@.a || @.b)]") == '[{"c":3}]'
    # && binds tighter than ||
    assert get(raw, "d", "$[?@.c || @.a && @.b]") == '[{"a":1,"b":1},{"c":3}]'
    # array and object literals compare deeply, types kept apart
    setj(raw, "l", {"arrs": [[1], [1.0], [2], {"k": [1]}]})
    assert get(raw, "l", "$.arrs[?(@ == [1])]") == "[[1]]"
    assert get(raw, "l", "$.arrs[?(@ != [1])]") == '[[1.0],[2],{"k":[1]}]'
    assert get(raw, "l", '$.arrs[?(@ == {"k":[1]})]') == '[{"k":[1]}]'
    assert get(raw, "l", "$.arrs[?(@ > [1])]") == "[]"
    # scalars: numbers by value, bools ordered, no match across types
    setj(raw, "s", {"v": [1, 1.0, True, False, "1", None]})
    assert get(raw, "s", "$.v[?@ == 1]") == "[1,1.0]"
    assert get(raw, "s", "$.v[?@ > false]") == "[true]"
    assert get(raw, "s", "$.v[?@ == null]") == "[null]"
    assert get(raw, "s", "$.v[?@ != 1]") == '[true,false,"1",null]'


def test_arithmetic_in_filters(raw):
    setj(raw, "d", [{"a": 2, "b": 3}, {"a": 5, "b": 2}])
    assert get(raw, "d", "$[?@.a + 1 == 3]") == '[{"a":2,"b":3}]'
    assert get(raw, "d", "$[?@.a - 1 == 4]") == '[{"a":5,"b":2}]'
    assert get(raw, "d", "$[?@.a + @.b * 2 == 8]") == '[{"a":2,"b":3}]'
    assert get(raw, "d", "$[?(@.a + @.b) * 2 == 10]") == '[{"a":2,"b":3}]'
    setj(raw, "e", [{"a": 8}, {"a": 3}, {"a": -7}, {"a": "x"}])
    assert get(raw, "e", "$[?@.a / 2 == 4]") == '[{"a":8}]'
    assert get(raw, "e", "$[?@.a % 2 == 0]") == '[{"a":8}]'
    # the remainder keeps the dividend's sign
    assert get(raw, "e", "$[?@.a % 2 == -1]") == '[{"a":-7}]'
    assert get(raw, "e", "$[?-@.a == -3]") == '[{"a":3}]'
    # division by zero and arithmetic on a string are Nothing: no match
    assert get(raw, "e", "$[?@.a / 0 == 0]") == "[]"
    assert get(raw, "e", "$[?@.a * 2 != 0]") == '[{"a":8},{"a":3},{"a":-7},{"a":"x"}]'
    # unspaced, + - / % belong to the field name
    setj(raw, "f", [{"a+1": 7, "a": 2}])
    assert get(raw, "f", "$[?@.a+1 == 7]") == '[{"a+1":7,"a":2}]'


def test_membership_and_set_relations(raw):
    setj(raw, "d", {"a": [1, 2, 3, 4], "allow": [2, 3]})
    assert get(raw, "d", "$.a[?@ in [2,4]]") == "[2,4]"
    assert get(raw, "d", "$.a[?@ nin [2,4]]") == "[1,3]"
    assert get(raw, "d", "$.a[?@ in $.allow]") == "[2,3]"
    # nin of something that is not an array: everything
    assert get(raw, "d", "$.a[?@ nin 2]") == "[1,2,3,4]"
    setj(raw, "n", {"a": [[1], [2], [3]], "f": [1.0, 2.0, 3.0]})
    assert get(raw, "n", "$.a[?@ in [[1],[2]]]") == "[[1],[2]]"
    assert get(raw, "n", "$.f[?@ in [1,2]]") == "[1.0,2.0]"
    setj(raw, "i", {"items": [{"val": 2, "vals": [1, 2, 3]}, {"val": 9, "vals": [1, 2, [4]]}]})
    assert get(raw, "i", "$.items[?@.val in @.vals]") == '[{"val":2,"vals":[1,2,3]}]'
    assert get(raw, "i", "$.items[?[4] in @.vals].val") == "[9]"
    setj(raw, "s", {"a": [[1, 2], [1, 5], []], "b": [[1, 9], [8, 9], []], "c": [[4, 5], [1, 9], []]})
    assert get(raw, "s", "$.a[?@ subsetof [1,2,3]]") == "[[1,2],[]]"
    assert get(raw, "s", "$.b[?@ anyof [1,2,3]]") == "[[1,9]]"
    assert get(raw, "s", "$.c[?@ noneof [1,2,3]]") == "[[4,5],[]]"
    setj(raw, "p", {"items": [{"val": [1, 2], "vals": [1, 2, 3]}, {"val": [1, 9], "vals": [1, 2, 3]}]})
    assert get(raw, "p", "$.items[?@.val subsetof @.vals].val") == "[[1,2]]"


def test_size_and_empty(raw):
    setj(raw, "d", {"a": [[4, 5], [1], [7, 8, 9]], "s": ["ab", "abc", "xy", "é!"],
                    "o": [{"x": 1, "y": 2}, {"x": 1}], "e": [[], [1], "", [2, 3], {}, {"k": 1}, 0]})
    assert get(raw, "d", "$.a[?@ sizeof 2]") == "[[4,5]]"
    assert get(raw, "d", "$.a[?@ size 2]") == "[[4,5]]"
    assert get(raw, "d", "$.a[?@ size 2.9]") == "[[4,5]]"
    # strings count characters, not bytes
    assert get(raw, "d", "$.s[?@ sizeof 2]") == '["ab","xy","é!"]'
    assert get(raw, "d", "$.o[?@ sizeof 2]") == '[{"x":1,"y":2}]'
    assert get(raw, "d", "$.e[?@ empty true]") == '[[],"",{}]'
    assert get(raw, "d", "$.e[?@ empty false]") == '[[1],[2,3],{"k":1}]'
    assert get(raw, "d", "$.e[?@ empty 1]") == "[]"


def test_filter_functions(raw):
    setj(raw, "d", {"a": [[1, 2, 3], [1], "abcd", "x"]})
    assert get(raw, "d", "$.a[?length(@) > 2]") == '[[1,2,3],"abcd"]'
    assert get(raw, "d", "$.a[?@.length() > 2]") == '[[1,2,3],"abcd"]'
    setj(raw, "c", [{"a": 1, "b": 2, "c": 3}, {"a": 1}])
    assert get(raw, "c", "$[?count(@.*) == 3]") == '[{"a":1,"b":2,"c":3}]'
    assert get(raw, "c", "$[?value(@.a) == 1]") == '[{"a":1,"b":2,"c":3},{"a":1}]'
    setj(raw, "m", {"a": ["abc", "xabc", "a", "b"]})
    assert get(raw, "m", '$.a[?match(@, "a.*")]') == '["abc","a"]'
    assert get(raw, "m", '$.a[?search(@, "b")]') == '["abc","xabc","b"]'
    assert get(raw, "m", "$.a[?@ =~ 'b']") == '["abc","xabc","b"]'
    setj(raw, "n", {"a": [2.1, 3.9, 1.0, 2.9], "o": [{"n": -5}, {"n": 5}, {"n": -3}],
                    "s": [{"x": "a", "y": "b"}, {"x": "a", "y": "c"}, {"x": "a", "y": 1}]})
    assert get(raw, "n", "$.a[?ceiling(@) == 3]") == "[2.1,2.9]"
    assert get(raw, "n", "$.a[?floor(@) == 2]") == "[2.1,2.9]"
    assert get(raw, "n", "$.o[?abs(@.n) == 5]") == '[{"n":-5},{"n":5}]'
    assert get(raw, "n", '$.s[?concat(@.x, @.y) == "ab"]') == '[{"x":"a","y":"b"}]'
    setj(raw, "g", {"a": [{"n": [3, 1, 2]}, {"n": [5, 6]}, {"n": [1, "x"]}, {"n": []}]})
    assert get(raw, "g", "$.a[?sum(@.n) == 6].n") == "[[3,1,2]]"
    assert get(raw, "g", "$.a[?min(@.n) == 1].n") == "[[3,1,2]]"
    assert get(raw, "g", "$.a[?max(@.n) == 6].n") == "[[5,6]]"
    assert get(raw, "g", "$.a[?avg(@.n) == 5.5].n") == "[[5,6]]"
    assert get(raw, "g", "$.a[?@.n.first() == 5].n") == "[[5,6]]"
    assert get(raw, "g", "$.a[?last(@.n) == 2].n") == "[[3,1,2]]"
    assert get(raw, "g", "$.a[?index(@.n, -2) == 1].n") == '[[3,1,2],[1,"x"]]'
    setj(raw, "sd", {"a": [{"n": [2, 4, 4, 4, 5, 5, 7, 9]}, {"n": [1, 2]}]})
    assert get(raw, "sd", "$.a[?stddev(@.n) == 2.0].n") == "[[2,4,4,4,5,5,7,9]]"
    # keys: a computed list is true when not empty and compares any-of
    setj(raw, "k", [{"o": {"id": 1}}, {"o": {}}, {"o": {"name": 2}}])
    assert get(raw, "k", "$[?@.o.keys()]") == '[{"o":{"id":1}},{"o":{"name":2}}]'
    assert get(raw, "k", '$[?@.o~ anyof ["id","x"]]') == '[{"o":{"id":1}}]'
    assert get(raw, "k", '$[?@.o~ == "name"]') == '[{"o":{"name":2}}]'


def test_projections_get(raw, raw3):
    setj(raw, "d", {"a": 2, "b": 4, "arr": [1, 2, 3], "s": "hé", "nums": [3, 1, 2],
                    "obj": {"x": 1, "y": 2}, "big": 1e308, "-$x": 111})
    for path, reply in (("$.a + 1", "[3]"), ("$.a * $.b", "[8]"), ("($.a + $.b) / 2", "[3.0]"),
                        ("-$.a", "[-2]"), ("- $.a", "[-2]"), ("$.a + $.b * 2", "[10]"),
                        ("$.b % $.a", "[0]"), ("$.arr.length()", "[3]"), ("$.s.length()", "[2]"),
                        ("$.nums.min()", "[1.0]"), ("$.nums.sum()", "[6.0]"), ("$.arr.index(1)", "[2]"),
                        ("$.arr.first()", "[1]"), ("length($.arr)", "[3]"), ("length ( $.arr )", "[3]"),
                        ("$.a / 0", "[]"), ("$.s * 2", "[]"), ("$.missing + 1", "[]"),
                        ("$.big * $.big", "[]"), ("$.a.bogus()", "[]"), ("$.a.length()", "[]"),
                        ("$.arr.length(99)", "[]"), ("$.length($.arr)", "[]"),
                        ("$.obj~", '["x","y"]'), ("$.obj.keys()", '["x","y"]'),
                        ("$.obj.keys().count()", "[2]"), ("$.obj.keys().index(1)", '["y"]'),
                        ("$.arr~", "[]"), ("$.arr.append(9)", "[1,2,3,9]"),
                        ("$.arr[*].append(9)", "[1,2,3,9]"), ("$.arr.append($.obj)", '[1,2,3,{"x":1,"y":2}]'),
                        ("$.arr.append($.missing)", "[]"), ("$.arr.append($.arr[0:2])", "[1,2,3,[1,2]]"),
                        ("value($.obj)", '[{"x":1,"y":2}]'), ("$.a - -1", "[3]"),
                        # a lone path in parentheses is a path
                        ("($.arr[*])", "[1,2,3]"), ("(($.a))", "[2]"),
                        # legacy paths: unspaced signs name fields; spaced, they compute
                        ("-$x", "111"), ("a + 1", "[3]")):
        assert get(raw, "d", path) == reply, path
    assert get(raw, "d", "$~") == '["a","b","arr","s","nums","obj","big","-$x"]'
    # several paths: each its entry
    assert json.loads(get(raw, "d", "$.a + 1", "$.b", "$.nope.length()")) == {
        "$.a + 1": [3], "$.b": [4], "$.nope.length()": []}
    assert json.loads(get(raw, "d", "a + 1", "b")) == {"a + 1": [3], "b": 4}
    assert get(raw, "d", "$.arr.append(9)", "INDENT", " ", "NEWLINE", "\n") == "[\n 1,\n 2,\n 3,\n 9\n]"
    # RESP3: the default reply is the same JSON text; FORMAT EXPAND gives values
    assert raw3.call("JSON.GET", "d", "$.a + 1") == bulk(b"[3]")
    assert raw3.call("JSON.GET", "d", "FORMAT", "EXPAND", "$.nums.max()", "$.obj~") == (
        b"*2\r\n*1\r\n,3\r\n*2\r\n" + bulk(b"x") + bulk(b"y"))
    assert raw3.call("JSON.GET", "d", "FORMAT", "EXPAND1", "value($.obj)") == (
        b"*1\r\n*1\r\n" + bulk(b'{"x":1,"y":2}'))
    assert raw3.call("JSON.GET", "d", "FORMAT", "EXPAND", "value($.obj)") == (
        b"*1\r\n*1\r\n%2\r\n" + bulk(b"x") + b":1\r\n" + bulk(b"y") + b":2\r\n")


def test_projections_mget_resp(raw, raw3):
    setj(raw, "d1", {"a": 2, "arr": [1, 2, 3], "nums": [3, 1, 2], "obj": {"k": 1}})
    setj(raw, "d2", {"a": 10})
    setj(raw, "d3", {"x": 1})
    raw.call("SET", "str", "v")
    assert raw.call("JSON.MGET", "d1", "d2", "d3", "nokey", "str", "$.a + 1") == (
        b"*5\r\n" + bulk(b"[3]") + bulk(b"[11]") + bulk(b"[]") + b"$-1\r\n$-1\r\n")
    assert raw3.call("JSON.MGET", "d1", "d2", "$.arr.length()") == b"*2\r\n" + bulk(b"[3]") + bulk(b"[]")
    # a path that does not parse: nil for each key
    assert raw.call("JSON.MGET", "d1", "d2", "$.a +") == b"*2\r\n$-1\r\n$-1\r\n"
    assert raw3.call("JSON.MGET", "d1", "$.[") == b"*1\r\n_\r\n"
    assert raw.call("JSON.RESP", "d1", "$.a + 1") == b"*1\r\n:3\r\n"
    assert raw.call("JSON.RESP", "d1", "$.a / 0") == b"*0\r\n"
    assert raw.call("JSON.RESP", "d1", "$.nums.min()") == b"*1\r\n" + bulk(b"1")
    assert raw3.call("JSON.RESP", "d1", "$.nums.min()") == b"*1\r\n,1\r\n"
    assert raw.call("JSON.RESP", "d1", "value($.arr)") == b"*1\r\n*4\r\n+[\r\n:1\r\n:2\r\n:3\r\n"
    assert raw.call("JSON.RESP", "d1", "value($.obj)") == b"*1\r\n*3\r\n+{\r\n" + bulk(b"k") + b":1\r\n"
    assert raw.call("JSON.RESP", "d1", "$.obj~") == b"*1\r\n" + bulk(b"k")
    assert raw.call("JSON.RESP", "d1", "a + 1") == b"*1\r\n:3\r\n"
    assert raw.call("JSON.RESP", "nokey", "$.a + 1") == b"$-1\r\n"


def test_projections_rejected_elsewhere(raw, raw3):
    doc = {"a": 2, "arr": [1, 2, 3], "s": "hi", "b": True}
    setj(raw, "d", doc)
    p = "$.a + 1"
    for cmd in (("JSON.SET", "d", p, "5"), ("JSON.SET", "d", p, "5", "NX"), ("JSON.SET", "d", p, "5", "XX"),
                ("JSON.DEL", "d", p), ("JSON.FORGET", "d", p), ("JSON.MSET", "d", p, "5"),
                ("JSON.MERGE", "d", p, "5"), ("JSON.CLEAR", "d", p), ("JSON.TOGGLE", "d", p),
                ("JSON.NUMINCRBY", "d", p, "1"), ("JSON.NUMMULTBY", "d", "$.arr.length()", "2"),
                ("JSON.NUMPOWBY", "d", p, "2"), ("JSON.STRAPPEND", "d", "-$.a", '"x"'),
                ("JSON.ARRAPPEND", "d", "$.a * 2", "1"), ("JSON.ARRINSERT", "d", p, "0", "1"),
                ("JSON.ARRPOP", "d", p), ("JSON.ARRTRIM", "d", p, "0", "1"), ("JSON.TYPE", "d", p),
                ("JSON.STRLEN", "d", "$.s.length()"), ("JSON.OBJLEN", "d", p), ("JSON.OBJKEYS", "d", p),
                ("JSON.ARRLEN", "d", p), ("JSON.ARRINDEX", "d", p, "1"),
                ("JSON.DEBUG", "MEMORY", "d", "length($.arr)"), ("JSON.SET", "d", "a + 1", "9"),
                ("JSON.TYPE", "d", "x + 1"), ("JSON.OBJLEN", "d", "x + 1"), ("JSON.OBJKEYS", "d", "x + 1"),
                ("JSON.SET", "d", "$.arr~", "5"), ("JSON.TYPE", "d", "$.arr.keys()")):
        assert raw.call(*cmd) == PROJ_ERR, cmd
        assert raw3.call(*cmd) == PROJ_ERR, cmd
    # a legacy projection is refused by JSON.TYPE even without the key
    assert raw.call("JSON.TYPE", "nokey", "x + 1") == PROJ_ERR
    assert json.loads(get(raw, "d", "$")) == [doc]


def test_grammar_changes_and_errors(raw):
    setj(raw, "d", {"a~b": 5, "in": 1, "size": [1, 2], "o": {"length": 3}, "a": {"x": 1}})
    # ~ selects keys now: a field with ~ in its name needs brackets
    assert get(raw, "d", '$["a~b"]') == "[5]"
    assert raw.call("JSON.GET", "d", "$.a~b").startswith(b"-Error occurred at position")
    assert raw.call("JSON.GET", "d", "$.a.keys()~").startswith(b"-Error occurred at position")
    # a field named like a method, without parentheses, is a field
    assert get(raw, "d", "$.o.length") == "[3]"
    # operator words are fields after a dot
    assert get(raw, "d", "$.in") == "[1]"
    setj(raw, "l", [{"size": [1, 2]}, {"size": [1]}, {"in": 1}])
    assert get(raw, "l", "$[?@.size sizeof 2]") == '[{"size":[1,2]}]'
    assert get(raw, "l", "$[?@.in]") == '[{"in":1}]'
    # a bare first segment may not be an operator word: @in is @ followed by in
    assert get(raw, "l", "$[?@in [1]]") == "[]"
    for bad in ("$.a +", "$.arr.length(", "($.a", "$.a * * 2", "$[::0]", "$[?@.a == 1e3]",
                '$["\\n"]', "$.é"):
        assert raw.call("JSON.GET", "d", bad).startswith(b"-Error occurred at position"), bad
    deep = "(" * 5000 + "$.a" + ")" * 5000
    assert raw.call("JSON.GET", "d", deep) == (
        b"-Error occurred at position 0, JSONPath nesting too deep (max depth 128)\r\n")
    assert get(raw, "d", "(" * 128 + "$.a" + ")" * 128) == '[{"x":1}]'
    assert raw.call("PING") == b"+PONG\r\n"
    # escapes in quoted names: only the quote and the backslash
    setj(raw, "q", {'d"q': 1, "s'q": 2, "b\\s": 3})
    assert get(raw, "q", '$["d\\"q"]') == "[1]"
    assert get(raw, "q", "$['s\\'q']") == "[2]"
    assert get(raw, "q", '$["b\\\\s"]') == "[3]"


@pytest.mark.parametrize("path", ["$.a + 1", "$..x", "$[?@.v in [1,2]]"])
def test_projection_in_multi_and_scripts(raw, path):
    setj(raw, "d", [{"a": 1, "v": 1, "x": 0}])
    direct = raw.call("JSON.GET", "d", path)
    assert raw.call("MULTI") == b"+OK\r\n"
    assert raw.call("JSON.GET", "d", path) == b"+QUEUED\r\n"
    assert raw.call("EXEC") == b"*1\r\n" + direct
    assert raw.call("EVAL", "return redis.call('JSON.GET', KEYS[1], ARGV[1])", "1", "d", path) == direct
