"""The cluster bus codec (ophidis.cluster.bus): the byte layout of every
message type and ping extension, the validity rules, framing, fuzzing; then
against Debian's redis-server in cluster mode: a node made of this codec
joins its cluster over the real bus (MEET, handshake, gossip, PONG with
slots), and the FAIL, UPDATE, PUBLISH and PUBLISHSHARD it sends have
redis-server's observable effects; malformed frames give redis-server's own
log lines, which are our BusError texts."""

from __future__ import annotations

import os
import secrets
import selectors
import socket
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ophidis.cluster import bus
from ophidis.cluster.bus import (FAIL, FAILOVER_AUTH_ACK, FAILOVER_AUTH_REQUEST, HEADER_SIZE, MEET, MFSTART,
                                 MODULE, NULL_NAME, PING, PONG, PUBLISH, PUBLISHSHARD, UPDATE, BusError,
                                 FrameReader, Gossip, Message, bitmap_to_slots, decode, encode,
                                 key_hash_slot, slots_to_bitmap)
from support.servers import REDIS_SERVER, RedisServerProc, free_port
from support.wait import wait_until

NAME_A = b"a" * 40
NAME_B = b"0123456789abcdef0123456789abcdef01234567"


def be(n, size):
    return n.to_bytes(size, "big")


def header_by_hand(totlen, type_, count=0, extensions=0, mflags=0):
    """A header written field by field at cluster.h's offsets (independent of
    the codec's struct)."""
    h = bytearray(HEADER_SIZE)
    h[0:4] = b"RCmb"
    h[4:8] = be(totlen, 4)
    h[8:10] = be(1, 2)
    h[10:12] = be(7000, 2)
    h[12:14] = be(type_, 2)
    h[14:16] = be(count, 2)
    h[16:24] = be(5, 8)
    h[24:32] = be(3, 8)
    h[32:40] = be(123456, 8)
    h[40:80] = NAME_A
    h[80:2128] = slots_to_bitmap([0, 9, 16383])
    h[2128:2168] = NAME_B
    h[2168:2168 + 9] = b"127.0.0.1"
    h[2214:2216] = be(extensions, 2)
    h[2246:2248] = be(7001, 2)
    h[2248:2250] = be(17000, 2)
    h[2250:2252] = be(bus.NODE_SLAVE, 2)
    h[2252] = 1
    h[2253] = mflags
    return bytes(h)


def header_msg(type_, **kw):
    return Message(type=type_, sender=NAME_A, myslots=slots_to_bitmap([0, 9, 16383]), slaveof=NAME_B,
                   myip="127.0.0.1", port=7000, pport=7001, cport=17000, flags=bus.NODE_SLAVE,
                   state=1, current_epoch=5, config_epoch=3, offset=123456, **kw)


# -- layout ---------------------------------------------------------------------------

def test_constants():
    assert (PING, PONG, MEET, FAIL, PUBLISH, FAILOVER_AUTH_REQUEST, FAILOVER_AUTH_ACK, UPDATE,
            MFSTART, MODULE, PUBLISHSHARD) == tuple(range(11))
    assert HEADER_SIZE == 2256 and bus.SLOTS == 16384 and NULL_NAME == b"\0" * 40
    assert (bus.NODE_MASTER, bus.NODE_SLAVE, bus.NODE_PFAIL, bus.NODE_FAIL, bus.NODE_MYSELF,
            bus.NODE_HANDSHAKE, bus.NODE_NOADDR, bus.NODE_MEET, bus.NODE_MIGRATE_TO,
            bus.NODE_NOFAILOVER) == tuple(1 << i for i in range(10))
    assert (bus.MSGFLAG_PAUSED, bus.MSGFLAG_FORCEACK, bus.MSGFLAG_EXT_DATA) == (1, 2, 4)
    assert (bus.STATE_OK, bus.STATE_FAIL, bus.OK) == (0, 1, 0)


@pytest.mark.parametrize("type_", [FAILOVER_AUTH_REQUEST, FAILOVER_AUTH_ACK, MFSTART])
def test_header_only_types_byte_exact(type_):
    m = header_msg(type_, mflags=bus.MSGFLAG_FORCEACK)
    frame = encode(m)
    assert frame == header_by_hand(HEADER_SIZE, type_, mflags=bus.MSGFLAG_FORCEACK)
    assert decode(frame) == m


def test_fail_byte_exact():
    m = header_msg(FAIL, fail_nodename=NAME_B)
    frame = encode(m)
    assert len(frame) == 2296
    assert frame == header_by_hand(2296, FAIL) + NAME_B
    assert decode(frame) == m


def test_update_byte_exact():
    slots = slots_to_bitmap(range(100, 200))
    m = header_msg(UPDATE, update_config_epoch=2 ** 63 + 5, update_nodename=NAME_B, update_slots=slots)
    frame = encode(m)
    assert len(frame) == 4352                      # sizeof(clusterMsg): the biggest body
    assert frame == header_by_hand(4352, UPDATE) + be(2 ** 63 + 5, 8) + NAME_B + slots
    assert decode(frame) == m


@pytest.mark.parametrize("type_", [PUBLISH, PUBLISHSHARD])
def test_publish_byte_exact(type_):
    m = header_msg(type_, channel=b"news", message=b"hello\0world")
    frame = encode(m)
    assert len(frame) == 2256 + 8 + 4 + 11
    assert frame == header_by_hand(len(frame), type_) + be(4, 4) + be(11, 4) + b"news" + b"hello\0world"
    assert decode(frame) == m
    empty = header_msg(type_)
    assert len(encode(empty)) == 2264 and decode(encode(empty)) == empty


def test_module_byte_exact():
    m = header_msg(MODULE, module_id=0x0102030405060708, module_type=200, module_payload=b"xyz")
    frame = encode(m)
    assert len(frame) == 2256 + 13 + 3
    # the module id is copied in the sender's (x86: little-endian) order
    assert frame == (header_by_hand(len(frame), MODULE) + (0x0102030405060708).to_bytes(8, "little")
                     + be(3, 4) + bytes([200]) + b"xyz")
    assert decode(frame) == m


def gossip_by_hand(g):
    ip = g.ip.encode()
    return (g.nodename + be(g.ping_sent, 4) + be(g.pong_received, 4) + ip + b"\0" * (46 - len(ip))
            + be(g.port, 2) + be(g.cport, 2) + be(g.flags, 2) + be(g.pport, 2) + b"\0\0")


GOSSIP = [Gossip(NAME_B, 1700000000, 1700000001, "10.0.0.1", 7001, 17001, bus.NODE_MASTER, 0),
          Gossip(b"f" * 40, 0, 4294967295, "::ffff:192.168.100.200", 65535, 1, 0x3ff, 6380)]


@pytest.mark.parametrize("type_", [PING, PONG, MEET])
def test_ping_gossip_byte_exact(type_):
    m = header_msg(type_, gossip=GOSSIP)
    frame = encode(m)
    assert len(frame) == 2256 + 2 * 104
    assert frame == header_by_hand(len(frame), type_, count=2) + b"".join(map(gossip_by_hand, GOSSIP))
    assert decode(frame) == m
    bare = header_msg(type_)
    assert encode(bare) == header_by_hand(HEADER_SIZE, type_) and decode(encode(bare)) == bare


@pytest.mark.parametrize("hostname,padded", [("a", 8), ("abcdefg", 8), ("abcdefgh", 16),
                                             ("node-1.example.com", 24)])
def test_hostname_extension_padding(hostname, padded):
    m = header_msg(PING, gossip=GOSSIP[:1], hostname=hostname)
    frame = encode(m)
    ext = be(8 + padded, 4) + be(bus.EXT_HOSTNAME, 2) + b"\0\0" + hostname.encode().ljust(padded, b"\0")
    assert frame == (header_by_hand(2256 + 104 + 8 + padded, PING, count=1, extensions=1,
                                    mflags=bus.MSGFLAG_EXT_DATA) + gossip_by_hand(GOSSIP[0]) + ext)
    d = decode(frame)
    assert d.hostname == hostname and d.mflags == bus.MSGFLAG_EXT_DATA
    d.mflags = 0
    assert d == m


def test_all_extensions_layout_and_order():
    shard = secrets.token_hex(20).encode()
    m = header_msg(PONG, hostname="host", human_nodename="nice-name", shard_id=shard,
                   forgotten=[(NAME_B, 60), (b"c" * 40, 2 ** 64 - 1)])
    frame = encode(m)
    body = frame[HEADER_SIZE:]
    exts = [(be(16, 4) + be(0, 2) + b"\0\0" + b"host\0\0\0\0"),
            (be(24, 4) + be(1, 2) + b"\0\0" + b"nice-name".ljust(16, b"\0")),
            (be(56, 4) + be(2, 2) + b"\0\0" + NAME_B + be(60, 8)),
            (be(56, 4) + be(2, 2) + b"\0\0" + b"c" * 40 + be(2 ** 64 - 1, 8)),
            (be(48, 4) + be(3, 2) + b"\0\0" + shard)]
    assert body == b"".join(exts)
    assert frame[:HEADER_SIZE] == header_by_hand(len(frame), PONG, extensions=5, mflags=bus.MSGFLAG_EXT_DATA)
    d = decode(frame)
    assert (d.hostname, d.human_nodename, d.shard_id, d.forgotten) == \
        ("host", "nice-name", shard, [(NAME_B, 60), (b"c" * 40, 2 ** 64 - 1)])
    assert encode(d) == frame


def with_extensions(gossip, exts, extra_mflags=0):
    """A PING frame with these raw extension bytes (count = len(exts))."""
    body = b"".join(map(gossip_by_hand, gossip)) + b"".join(exts)
    return header_by_hand(HEADER_SIZE + len(body), PING, count=len(gossip), extensions=len(exts),
                          mflags=bus.MSGFLAG_EXT_DATA | extra_mflags) + body


def test_unknown_extension_skipped():
    frame = with_extensions(GOSSIP[:1], [be(24, 4) + be(77, 2) + b"\0\0" + b"x" * 16,
                                         be(16, 4) + be(0, 2) + b"\0\0" + b"h\0" + b"\0" * 6])
    d = decode(frame)
    assert d.unknown_extensions == [77] and d.hostname == "h" and d.gossip == GOSSIP[:1]


def test_unknown_message_type_is_its_header():
    frame = header_by_hand(HEADER_SIZE + 5, 42, count=3) + b"extra"
    d = decode(frame)
    assert d.type == 42 and d.sender == NAME_A and d.gossip == [] and d.port == 7000
    assert bus.type_name(42) == "unknown" and bus.type_name(PUBLISHSHARD) == "publishshard"


def test_flags_and_mflags_round_trip():
    m = Message(type=PING, sender=NAME_A, flags=bus.NODE_MASTER | bus.NODE_MYSELF | bus.NODE_NOFAILOVER,
                mflags=bus.MSGFLAG_PAUSED)
    assert decode(encode(m)) == m


def test_defaults_make_a_valid_message():
    for t in range(11):
        m = Message(type=t)
        assert decode(encode(m)) == m


@pytest.mark.parametrize("kw", [dict(sender=b"short"), dict(slaveof=b"x" * 41), dict(myslots=b"\0"),
                                dict(myip="1" * 46), dict(port=65536), dict(current_epoch=-1),
                                dict(gossip=[Gossip(nodename=b"x")]), dict(mflags=256)])
def test_encode_refuses_what_does_not_fit(kw):
    with pytest.raises(ValueError):
        encode(Message(**kw))


# -- validity rules (clusterProcessPacket) ------------------------------------------------

def expect_error(frame, text):
    with pytest.raises(BusError) as e:
        decode(frame)
    assert e.value.text == text
    return e.value


def test_length_rules_with_redis_texts():
    ping = encode(header_msg(PING, gossip=GOSSIP))
    expect_error(ping[:4] + be(len(ping) - 104, 4) + ping[8:-104],
                 "Received invalid ping packet of length 2360 but expected length 2464")
    fail = encode(header_msg(FAIL, fail_nodename=NAME_B))
    expect_error(fail[:4] + be(2297, 4) + fail[8:] + b"!",
                 "Received invalid fail packet of length 2297 but expected length 2296")
    upd = encode(header_msg(UPDATE))
    expect_error(upd[:4] + be(4351, 4) + upd[8:-1],
                 "Received invalid update packet of length 4351 but expected length 4352")
    pub = bytearray(encode(header_msg(PUBLISH, channel=b"c", message=b"m")))
    pub[HEADER_SIZE + 4:HEADER_SIZE + 8] = be(2, 4)
    expect_error(bytes(pub), "Received invalid publish packet of length 2266 but expected length 2267")
    mod = bytearray(encode(header_msg(MODULE, module_payload=b"abc")))
    mod[HEADER_SIZE + 8:HEADER_SIZE + 12] = be(0, 4)
    expect_error(bytes(mod), "Received invalid module packet of length 2272 but expected length 2269")
    req = encode(header_msg(FAILOVER_AUTH_REQUEST))
    expect_error(req[:4] + be(2260, 4) + req[8:] + b"1234",
                 "Received invalid auth-req packet of length 2260 but expected length 2256")
    short_pub = encode(header_msg(PUBLISH))[:HEADER_SIZE + 4]
    expect_error(short_pub[:4] + be(2260, 4) + short_pub[8:],
                 "Received invalid publish packet of length 2260 but expected length 2264")


def test_version_other_than_1_is_dropped_silently():
    frame = bytearray(encode(header_msg(PING)))
    frame[8:10] = be(2, 2)
    assert expect_error(bytes(frame), None).text is None


def test_extension_rules_with_redis_texts():
    bad_pad = with_extensions([], [be(12, 4) + be(0, 2) + b"\0\0" + b"ab\0\0"])
    expect_error(bad_pad, "Received a ping packet without proper padding (12 bytes)")
    too_long = with_extensions([], [be(32, 4) + be(0, 2) + b"\0\0" + b"ab\0\0\0\0\0\0"])
    expect_error(too_long, "Received invalid ping packet with extension data that exceeds "
                           "total packet length (2272)")
    # more extensions announced than there are
    two = with_extensions([], [be(16, 4) + be(0, 2) + b"\0\0" + b"ab\0\0\0\0\0\0"])
    two = two[:2214] + be(2, 2) + two[2216:]
    expect_error(two, "Received invalid ping packet with extension data that exceeds "
                      "total packet length (2272)")
    # bytes after the last extension
    trailing = with_extensions([], [be(16, 4) + be(0, 2) + b"\0\0" + b"ab\0\0\0\0\0\0"])
    trailing = trailing[:4] + be(2280, 4) + trailing[8:] + b"\0" * 8
    expect_error(trailing, "Received invalid ping packet of length 2280 but expected length 2272")


def test_extension_inconsistencies():
    for ext in (be(0, 4) + be(0, 2) + b"\0\0",                        # no room for its own header
                be(16, 4) + be(0, 2) + b"\0\0" + b"abcdefgh",         # hostname without its NUL
                be(16, 4) + be(2, 2) + b"\0\0" + b"\0" * 8,           # forgotten node too short
                be(16, 4) + be(3, 2) + b"\0\0" + b"\0" * 8):          # shard id too short
        with pytest.raises(BusError):
            decode(with_extensions([], [ext]))
    # extensions counted without the extension-data flag
    frame = header_by_hand(HEADER_SIZE, PING, extensions=1)
    with pytest.raises(BusError):
        decode(frame)
    # the flag with no extension is fine
    assert decode(header_by_hand(HEADER_SIZE, PING, mflags=bus.MSGFLAG_EXT_DATA)).gossip == []


def test_header_problems():
    frame = encode(header_msg(PING))
    expect_error(b"XCmb" + frame[4:], "Bad message length or signature received from Cluster bus.")
    with pytest.raises(BusError):
        decode(frame[:-1])
    with pytest.raises(BusError):
        decode(frame + b"\0")
    with pytest.raises(BusError):
        decode(b"")


# -- framing ------------------------------------------------------------------------

def test_frame_reader_splits_and_joins():
    frames = [encode(header_msg(PING, gossip=GOSSIP, hostname="h")), encode(header_msg(FAIL)),
              encode(header_msg(PUBLISH, channel=b"c" * 5000, message=b"m" * 70000))]
    stream = b"".join(frames)
    r = FrameReader()
    got = []
    for i in range(0, len(stream), 997):
        got += r.feed(stream[i:i + 997])
    assert got == frames and r.pending() == 0
    r = FrameReader()
    got = []
    for i in range(len(frames[0]) + 20):
        got += r.feed(stream[i:i + 1])
    assert got == frames[:1] and r.pending() == 20
    assert FrameReader().feed(stream) == frames


def test_frame_reader_bad_signature_and_length():
    good = encode(header_msg(MFSTART))
    for bad in (b"RCmX" + be(3000, 4), b"RCmb" + be(2255, 4), b"RCmb" + be(0, 4)):
        r = FrameReader()
        with pytest.raises(BusError) as e:
            r.feed(good + good + bad)
        assert e.value.text == "Bad message length or signature received from Cluster bus."
        assert e.value.frames == [good, good]
        with pytest.raises(BusError):      # the link is gone
            r.feed(good)
    # 7 bytes are not yet a judgement
    assert FrameReader().feed(b"RCmX\0\0\0") == []


# -- slots and keys ---------------------------------------------------------------------

def test_slot_bitmap_layout():
    bm = slots_to_bitmap([0, 7, 8, 16383])
    assert bm[0] == 0x81 and bm[1] == 0x01 and bm[2047] == 0x80 and len(bm) == 2048
    assert bitmap_to_slots(bm) == [0, 7, 8, 16383]
    assert bitmap_to_slots(slots_to_bitmap(range(16384))) == list(range(16384))
    with pytest.raises(ValueError):
        slots_to_bitmap([16384])


@given(st.sets(st.integers(0, 16383)))
def test_slot_bitmap_round_trip(slots):
    assert bitmap_to_slots(slots_to_bitmap(slots)) == sorted(slots)


def test_key_hash_slot_rules():
    assert bus.crc16_py(b"123456789") == 0x31C3 == bus.crc16(b"123456789")
    assert key_hash_slot(b"foo") == 12182
    assert key_hash_slot(b"{user1000}.following") == key_hash_slot(b"user1000") == 3443
    assert key_hash_slot(b"foo{}{bar}") == bus.crc16(b"foo{}{bar}") & 16383   # empty tag: whole key
    assert key_hash_slot(b"foo{{bar}}zap") == key_hash_slot(b"{bar")
    assert key_hash_slot(b"foo{bar}{zap}") == key_hash_slot(b"bar")
    assert key_hash_slot(b"{abc") == bus.crc16(b"{abc") & 16383
    assert key_hash_slot(b"") == 0


@given(st.binary(max_size=64))
def test_crc16_table_matches(data):
    assert bus.crc16_py(data) == bus.crc16(data)


# -- fuzzing ------------------------------------------------------------------------

def real_frames():
    return [encode(header_msg(PING, gossip=GOSSIP, hostname="host-name", shard_id=b"s" * 40,
                              forgotten=[(NAME_B, 9)])),
            encode(header_msg(MEET)), encode(header_msg(FAIL, fail_nodename=NAME_B)),
            encode(header_msg(PUBLISH, channel=b"ch", message=b"payload")),
            encode(header_msg(UPDATE)), encode(header_msg(MODULE, module_payload=b"zz")),
            encode(header_msg(FAILOVER_AUTH_ACK))]


def decode_or_bus_error(frame):
    try:
        m = decode(frame)
    except BusError:
        return None
    try:
        encode(m)           # what decode gives, encode takes (or refuses with ValueError)
    except ValueError:
        pass
    return m


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=5000))
def test_fuzz_random_bytes(data):
    decode_or_bus_error(data)
    decode_or_bus_error(b"RCmb" + len(data).to_bytes(4, "big")[:4] + data[8:] if len(data) > 8 else data)
    try:
        FrameReader().feed(data)
    except BusError:
        pass


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 6), st.data())
def test_fuzz_truncated_and_corrupted_frames(which, data):
    frame = bytearray(real_frames()[which])
    # truncated, keeping the header's length: BusError
    cut = data.draw(st.integers(0, len(frame) - 1))
    with pytest.raises(BusError):
        decode(bytes(frame[:cut]))
    # truncated with a consistent totlen: BusError or a smaller valid message
    short = bytearray(frame[:max(cut, HEADER_SIZE)])
    short[4:8] = be(len(short), 4)
    decode_or_bus_error(bytes(short))
    # random byte changes anywhere, including the counts and lengths
    for _ in range(data.draw(st.integers(1, 8))):
        pos = data.draw(st.sampled_from([4, 5, 6, 7, 8, 9, 12, 13, 14, 15, 2214, 2215, 2253])
                        | st.integers(0, len(frame) - 1))
        frame[pos] = data.draw(st.integers(0, 255))
    decode_or_bus_error(bytes(frame))


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(max_size=300), max_size=20))
def test_fuzz_frame_reader_stream(chunks):
    good = b"".join(real_frames())
    r = FrameReader()
    got = []
    stream = good + b"".join(chunks)
    step = 1 + len(chunks)
    try:
        for i in range(0, len(stream), step * 97):
            got += r.feed(stream[i:i + step * 97])
    except BusError as e:
        got += e.frames
    assert got[:7] == real_frames()
