"""LOLWUT: the version line, and the art of versions 5 and 6, through
redis-py and byte-exact connections (RESP2 bulk, RESP3 verbatim)."""

import re

import redis

import pytest

from ophidis.sysinfo import REDIS_VERSION


def test_default_is_the_version_line(r, raw, raw3):
    ver = r.info("server")["redis_version"]
    assert r.execute_command("LOLWUT") == b"Redis ver. %s\n" % ver.encode()
    line = b"Redis ver. %s\n" % ver.encode()
    assert raw.call("LOLWUT") == b"$%d\r\n%s\r\n" % (len(line), line)
    assert raw3.call("LOLWUT") == b"=%d\r\ntxt:%s\r\n" % (len(line) + 4, line)
    # a version without art
    assert r.execute_command("LOLWUT", "VERSION", "7") == line
    assert r.execute_command("LOLWUT", "VERSION", "4") == line


def test_version_5_schotter(r):
    out = r.execute_command("LOLWUT", "VERSION", "5").decode()
    art, caption = out.rsplit("\n", 2)[0], out.rsplit("\n", 2)[1]
    assert caption.startswith("Georg Nees - schotter, plotter on paper, 1968. Redis ver. ")
    rows = [x for x in art.split("\n") if x]
    # 66 columns of Braille cells; 12 squares of (132-4)/8 pixels, 4 pixel rows a line
    assert {len(x) for x in rows} == {66}
    assert all(0x2800 <= ord(ch) <= 0x28FF for x in rows for ch in x)
    assert len(rows) == -(-int(128 / 8 * 12 + 4) // 4)
    assert any(ord(ch) != 0x2800 for ch in rows[2])
    small = r.execute_command("LOLWUT", "VERSION", "5", "6", "7", "8").decode()
    assert {len(x) for x in small.split("\n")[:-2] if x} == {6}
    # clamped sizes, not errors
    assert r.execute_command("LOLWUT", "VERSION", "5", "0", "0", "0")
    assert r.lolwut(5, 6, 7, 8)


def test_version_6_skyline(r):
    out = r.execute_command("LOLWUT", "VERSION", "6", "20", "5").decode()
    lines = out.split("\n")
    assert len(lines) == 5 + 3
    assert all(x.count("\033[0m") == 20 for x in lines[:5])
    assert lines[5] == "Dedicated to the 8 bit game developers of past and present."
    assert lines[6].startswith("Original 8 bit image from Plaguemon by hikikomori. Redis ver. ")


def test_errors(r):
    for args in (("VERSION", "x"), ("VERSION", "5", "x"), ("VERSION", "6", "10", "1.5")):
        with pytest.raises(redis.ResponseError, match="^value is not an integer or out of range$"):
            r.execute_command("LOLWUT", *args)
    # VERSION without a number is an argument of the default version's art
    assert r.execute_command("LOLWUT", "VERSION").startswith(b"Redis ver. ")


def _any_version(reply: bytes) -> bytes:
    # the servers' versions differ (redis-server 7.0.15, ours 8.10.x): the
    # version text and the bulk length that includes it are left out
    return re.sub(rb"Redis ver\. [0-9.]+", b"Redis ver. V", re.sub(rb"^([$=])\d+\r\n", rb"\1?\r\n", reply))


def test_same_as_redis(same_as_redis):
    same_as_redis([(["LOLWUT"], _any_version), ["LOLWUT", "VERSION", "x"],
                   (["LOLWUT", "VERSION", "7"], _any_version),
                   ["LOLWUT", "VERSION", "5", "x"], ["LOLWUT", "VERSION", "6", "1", "x"],
                   (["LOLWUT", "VERSION", "-1"], _any_version), (["LOLWUT", "1", "2"], _any_version)])


def test_default_is_redis_8s_plain_line(r):
    # Redis 8.x has no art of its own: LOLWUT without VERSION prints the line
    assert r.execute_command("LOLWUT") == b"Redis ver. %s\n" % REDIS_VERSION.encode()
    assert REDIS_VERSION.startswith("8.")
