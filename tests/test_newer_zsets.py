"""The sorted-set surface Redis added after 7.0, compared byte for byte with
valkey-server 9.1 in RESP2 and RESP3: ZRANK/ZREVRANK ... WITHSCORE (7.2)."""


def test_zrank_withscore_same_as_valkey(same_as_valkey):
    same_as_valkey([
        ["ZADD", "z", "1", "a", "2.5", "b", "-inf", "c", "3", "d"],
        ["ZRANK", "z", "a", "WITHSCORE"], ["ZREVRANK", "z", "a", "withscore"],
        ["ZRANK", "z", "c", "WITHSCORE"], ["ZREVRANK", "z", "d", "WITHSCORE"],
        ["ZRANK", "z", "b"], ["ZREVRANK", "z", "b"],
        ["ZRANK", "z", "nosuch", "WITHSCORE"], ["ZRANK", "nokey", "a", "WITHSCORE"],
        ["ZRANK", "nokey", "a"], ["ZRANK", "z", "a", "WITHSCORES"],
        ["ZRANK", "z", "a", "WITHSCORE", "x"], ["ZREVRANK", "z", "a", "WITHSCORE", "x"],
        ["ZRANK", "z"], ["SET", "s", "v"], ["ZRANK", "s", "a", "WITHSCORE"],
    ])


def test_zrank_withscore_in_a_script_and_multi(r):
    r.zadd("z", {"a": 1.5})
    assert r.eval("return redis.call('ZRANK', KEYS[1], 'a', 'WITHSCORE')", 1, "z") == [0, b"1.5"]
    p = r.pipeline()
    p.execute_command("ZREVRANK", "z", "a", "WITHSCORE")
    assert p.execute() == [[0, b"1.5"]]


# -- the COUNT aggregator of ZUNION/ZINTER/ZUNIONSTORE/ZINTERSTORE (Redis 8.8) ----------------

def test_zunion_zinter_count_aggregator(r, raw, raw3):
    r.zadd("a", {"a1": 1, "a2": 1, "a3": 1})
    r.zadd("b", {"a1": 2, "a2": 2, "a3": 2})
    r.zadd("c", {"a1": 6, "a3": 5, "a4": 4})
    r.sadd("s", "a1", "a5")                     # a plain set counts as well
    # the score is how many inputs hold the member (the sum of their weights)
    assert r.execute_command("ZUNION", "3", "a", "b", "c", "AGGREGATE", "COUNT", "WITHSCORES") == [
        b"a4", b"1", b"a2", b"2", b"a1", b"3", b"a3", b"3"]
    assert r.execute_command("ZINTER", "3", "a", "b", "c", "aggregate", "count", "WITHSCORES") == [
        b"a1", b"3", b"a3", b"3"]
    assert r.execute_command("ZINTER", "3", "a", "b", "c", "WEIGHTS", "1", "2", "3", "AGGREGATE", "COUNT",
                             "WITHSCORES") == [b"a1", b"6", b"a3", b"6"]
    assert r.execute_command("ZUNIONSTORE", "d", "4", "a", "b", "c", "s", "WEIGHTS", "1", "2", "3", "0.5",
                             "AGGREGATE", "COUNT") == 5
    assert r.zrange("d", 0, -1, withscores=True) == [(b"a5", 0.5), (b"a2", 3.0), (b"a4", 3.0), (b"a3", 6.0),
                                                     (b"a1", 6.5)]
    assert r.execute_command("ZINTERSTORE", "d", "2", "a", "s", "AGGREGATE", "COUNT") == 1
    assert r.zrange("d", 0, -1, withscores=True) == [(b"a1", 2.0)]
    assert raw3.call("ZINTER", "2", "a", "b", "AGGREGATE", "COUNT", "WITHSCORES") == (
        b"*3\r\n*2\r\n$2\r\na1\r\n,2\r\n*2\r\n$2\r\na2\r\n,2\r\n*2\r\n$2\r\na3\r\n,2\r\n")
    assert raw.call("ZUNION", "1", "a", "AGGREGATE", "COUNTS") == b"-ERR syntax error\r\n"
    assert raw.call("ZDIFF", "2", "a", "b", "AGGREGATE", "COUNT") == b"-ERR syntax error\r\n"
