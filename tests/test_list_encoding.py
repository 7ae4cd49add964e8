"""Lists' encodings as Redis 7.2+ keeps them: a listpack while small, a
quicklist past list-max-listpack-size, converted both ways (growing: the
listpack's bytes plus the new elements' raw lengths against the limit;
shrinking: within half the limits), the best encoding for a list built
whole (SORT STORE, RDB load, RESTORE).  Every sequence runs on Ophidis and
on valkey-server 9.1 (which keeps Redis 7.2's list encodings) and the
encodings must agree at every step (types/containers.py's "Lists'
encodings" has the rules)."""

from __future__ import annotations

import pytest


def _steps(clients, fill, steps):
    """Run steps (a list of (command tuple | None, key to check | None)) on
    each client after setting list-max-listpack-size; returns, per client,
    the replies (errors as their class name) and the encodings checked."""
    out = []
    for c in clients:
        c.flushall()
        c.config_set("list-max-listpack-size", fill)
        got = []
        try:
            for cmd, key in steps:
                if cmd is not None:
                    try:
                        got.append(c.execute_command(*cmd))
                    except Exception as e:      # noqa: BLE001 - compared as a name
                        got.append(type(e).__name__)
                if key is not None:
                    got.append((key, c.object("encoding", key)))
        finally:
            c.config_set("list-max-listpack-size", -2)
        out.append(got)
    return out


def _same(r, vk, fill, steps, expect=None):
    mine, ref = _steps((r, vk), fill, steps)
    assert mine == ref
    if expect is not None:
        assert [x[1] for x in mine if isinstance(x, tuple)] == expect
    return mine


def test_byte_limit_counts_raw_lengths_before_adding(r, vk):
    # -2: 8 KB.  7 header bytes + 8185 raw bytes is the limit exactly: a
    # listpack (whose real size is then 8199 bytes), and any push after it
    # converts, an empty element too
    _same(r, vk, -2, [
        (("RPUSH", "l", b"x" * 8185), "l"),
        (("RPUSH", "l", b""), "l"),
        (("RPUSH", "m", b"x" * 8186), "m"),
    ], [b"listpack", b"quicklist", b"quicklist"])


@pytest.mark.parametrize("fill,size", [(-1, 4096), (-3, 16384), (-5, 65536), (-6, 65536)])
def test_each_byte_level(r, vk, fill, size):
    n = size - 7 - 3
    _same(r, vk, fill, [
        (("RPUSH", "l", b"ab", b"y" * n), "l"),     # 2 + n raw bytes: at the limit
        (("RPUSH", "l", b"z"), "l"),
        (("RPOP", "l"), "l"),                       # still past half the limit
        (("RPOP", "l"), "l"),                       # "ab" alone: a listpack again
    ], [b"listpack", b"quicklist", b"quicklist", b"listpack"])


def test_count_limit_and_its_half(r, vk):
    _same(r, vk, 5, [
        (("RPUSH", "l", "1", "2", "3", "4", "5"), "l"),
        (("LPUSH", "l", "0"), "l"),
        (("RPOP", "l", "3"), "l"),      # 3 left: more than 5 // 2
        (("LPOP", "l"), "l"),           # 2 left: a listpack
        (("RPUSH", "l", "a", "b", "c"), "l"),
        (("RPUSH", "l", "d"), "l"),
    ], [b"listpack", b"quicklist", b"quicklist", b"listpack", b"listpack", b"quicklist"])


def test_count_limit_keeps_the_8k_byte_cap(r, vk):
    _same(r, vk, 100, [
        (("RPUSH", "l", b"x" * 4000, b"y" * 4000), "l"),
        (("RPUSH", "l", b"z" * 200), "l"),
    ], [b"listpack", b"quicklist"])


def test_fill_zero_counts_as_one(r, vk):
    _same(r, vk, 0, [
        (("RPUSH", "l", "a"), "l"),
        (("RPUSH", "l", "b"), "l"),
        (("RPOP", "l"), "l"),           # 1 > 1 // 2: stays
    ], [b"listpack", b"quicklist", b"quicklist"])


def test_integer_elements_take_their_packed_size(r, vk):
    # integers of one or two digits take 2 bytes each in a listpack (the
    # growth check counts their raw lengths); 2044 of them are 4095 bytes
    # with the header, within half of 8 KB, 2045 are not
    items = [b"%d" % (i % 100) for i in range(4000)]
    _same(r, vk, -2, [
        (("RPUSH", "l", *items), "l"),
        (("RPUSH", "l", *items[:200]), "l"),
        (("LTRIM", "l", 0, 2044), "l"),
        (("LTRIM", "l", 0, 2043), "l"),
    ], [b"listpack", b"quicklist", b"quicklist", b"listpack"])


def test_conversions_by_every_command(r, vk):
    big = b"v" * 5000
    _same(r, vk, -1, [
        (("RPUSH", "a", "1", "2", "3"), None),
        (("LINSERT", "a", "AFTER", "2", big), "a"),
        (("RPUSH", "b", "1", "2", "3"), None),
        (("LINSERT", "b", "AFTER", "nope", big), "b"),     # no pivot: converted anyway
        (("RPUSH", "c", "1", "2", "3"), None),
        (("LSET", "c", 0, big), "c"),
        (("LSET", "c", 0, "x"), "c"),                      # back under half: a listpack
        (("RPUSH", "d", "1", "2", "3"), None),
        (("LSET", "d", 10, big), "d"),                     # out of range: converted anyway
        (("RPUSH", "s", "a", "b", big), None),
        (("RPUSH", "t", "d", "e"), None),
        (("LMOVE", "s", "t", "RIGHT", "RIGHT"), "t"),
        (None, "s"),
        (("LREM", "t", 1, big), "t"),
        (("RPUSH", "u", "a", big, "b"), "u"),
        (("LTRIM", "u", 2, 2), "u"),
        (("RPUSH", "w", big, "a", "b"), "w"),
        (("BLPOP", "w", 0), "w"),
        (("LMOVE", "w", "w", "LEFT", "RIGHT"), "w"),
        (("RPUSH", "x", big, "x"), None),
        (("LMPOP", 1, "x", "LEFT"), "x"),
        (("RPUSH", "y", big, "y"), None),
        (("RPOPLPUSH", "y", "new"), "y"),
        (None, "new"),
        (("LMOVE", "y", "new2", "LEFT", "LEFT"), "new2"),
    ])


def test_sort_store_gets_the_best_encoding(r, vk):
    _same(r, vk, 4, [
        (("RPUSH", "src", "3", "1", "2", "5"), None),
        (("SORT", "src", "STORE", "d4"), "d4"),
        (("RPUSH", "src", "4"), None),
        (("SORT", "src", "STORE", "d5"), "d5"),
        (("SORT", "src", "LIMIT", 0, 2, "STORE", "d2"), "d2"),
    ], [b"listpack", b"quicklist", b"listpack"])


def test_reload_dump_restore_and_copy(r, vk):
    _same(r, vk, 3, [
        (("RPUSH", "l", "a", "b", "c"), None),
        (("DEBUG", "RELOAD"), "l"),
        (("RPUSH", "l", "d"), None),
        (("DEBUG", "RELOAD"), "l"),                     # two nodes: a quicklist
        (("RPOP", "l"), "l"),                           # 3 > 3 // 2: stays
        (("COPY", "l", "l2"), "l2"),                    # COPY keeps it
        (("DEBUG", "RELOAD"), "l"),                     # one node: a listpack
        (None, "l2"),
        (("RPUSH", "p", "a", "b"), None),
        (("COPY", "p", "p2"), "p2"),
    ], [b"listpack", b"quicklist", b"quicklist", b"quicklist", b"listpack", b"listpack", b"listpack"])
    for c in (r, vk):
        c.config_set("list-max-listpack-size", 3)
        try:
            c.delete("p", "q")
            c.rpush("p", "a", "b")
            c.restore("q", 0, c.dump("p"))
            assert c.object("encoding", "q") == b"listpack"
            c.rpush("p", "c", "d")
            c.restore("q", 0, c.dump("p"), replace=True)
            assert c.object("encoding", "q") == b"quicklist"
            assert c.lrange("q", 0, -1) == [b"a", b"b", b"c", b"d"]
        finally:
            c.config_set("list-max-listpack-size", -2)


def test_packed_threshold_leaves_the_listpack_alone(r, vk):
    # (the elements the listpack held stay one packed node when it
    # converts; Ophidis follows no plain nodes at all: types/containers.py)
    for c in (r, vk):
        c.execute_command("DEBUG", "QUICKLIST-PACKED-THRESHOLD", "1b")
    try:
        _same(r, vk, 4, [
            (("RPUSH", "l", "aa", "bb", "cc"), "l"),    # a listpack ignores it
            (("RPUSH", "l", "dd", "ee"), "l"),
            (("RPOP", "l", "3"), "l"),                  # the packed node alone
            (("RPOP", "l"), "l"),
        ], [b"listpack", b"quicklist", b"listpack", b"listpack"])
    finally:
        for c in (r, vk):
            c.execute_command("DEBUG", "QUICKLIST-PACKED-THRESHOLD", "0")


def test_debug_listpack_and_quicklist_follow_the_encoding(r, vk):
    for c in (r, vk):
        c.delete("l")
        c.rpush("l", "a")
        assert c.execute_command("DEBUG", "LISTPACK", "l")
        with pytest.raises(Exception, match="Not a quicklist encoded object"):
            c.execute_command("DEBUG", "QUICKLIST", "l")
        c.rpush("l", b"x" * 9000)
        assert c.execute_command("DEBUG", "QUICKLIST", "l")
        assert b"encoding:quicklist" in c.execute_command("DEBUG", "OBJECT", "l") or \
            "encoding:quicklist" in str(c.execute_command("DEBUG", "OBJECT", "l"))


def test_lmovem_converts_both_ends(r):
    # Redis 8.10's LMOVEM (no valkey-server twin): the destination grows as
    # a push of the moved block does, the source shrinks as a pop does
    r.config_set("list-max-listpack-size", 4)
    try:
        r.delete("src", "dst", "new")
        r.rpush("src", "a", "b", "c", "d", "e", "f")
        r.rpush("dst", "x", "y")
        assert r.object("encoding", "src") == b"quicklist"
        assert r.execute_command("LMOVEM", "src", "dst", "LEFT", "RIGHT", "COUNT", "3", "BULK") == \
            [b"a", b"b", b"c"]
        assert r.object("encoding", "dst") == b"quicklist"      # 2 + 3 > 4
        assert r.object("encoding", "src") == b"quicklist"      # 3 > 4 // 2
        assert r.execute_command("LMOVEM", "src", "new", "LEFT", "LEFT", "COUNT", "1", "OBO") == [b"d"]
        assert r.object("encoding", "src") == b"listpack"       # 2: a listpack again
        assert r.object("encoding", "new") == b"listpack"
        assert r.execute_command("LMOVEM", "dst", "new2", "LEFT", "LEFT", "EXACTLY", "5", "BULK") == \
            [b"x", b"y", b"a", b"b", b"c"]
        assert r.object("encoding", "new2") == b"quicklist"     # a new list of 5
    finally:
        r.config_set("list-max-listpack-size", -2)
