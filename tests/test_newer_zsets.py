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
