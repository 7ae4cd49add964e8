"""The cluster bus codec (ophidis.cluster.bus): the byte layout of every
message type and ping extension, the validity rules, framing, fuzzing; then
against Debian's redis-server in cluster mode: a node made of this codec
joins its cluster over the real bus (MEET, handshake, gossip, PONG with
slots), and the FAIL, UPDATE, PUBLISH and PUBLISHSHARD it sends have
redis-server's observable effects; malformed frames give redis-server's own
log lines, which are our BusError texts."""

from __future__ import annotations

import random
import secrets
import selectors
import socket
import threading
import time

from binascii import crc_hqx

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ophidis.cluster import bus
from ophidis.cluster.bus import (FAIL, FAILOVER_AUTH_ACK, FAILOVER_AUTH_REQUEST, HEADER_SIZE, MEET, MFSTART,
                                 MODULE, NULL_NAME, PING, PONG, PUBLISH, PUBLISHSHARD, UPDATE, BusError,
                                 FrameReader, Gossip, Message, bitmap_to_slots, decode, encode,
                                 slots_to_bitmap)
from ophidis.cluster.slots import PySlotKeys, key_hash_slot
from ophidis import compiled
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
                 "Received invalid ping packet with gossip count 2 that exceeds total packet length (2360)")
    expect_error(ping[:4] + be(len(ping) + 8, 4) + ping[8:] + b"12345678",
                 "Received invalid ping packet of length 2472 but expected length 2464")
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
    expect_error(with_extensions([], [be(0, 4) + be(0, 2) + b"\0\0"]),
                 "Received a ping packet without proper padding (0 bytes)")
    # a hostname must end with its NUL (the last byte of the extension)
    for payload in (b"", b"abcdefgh", b"ab\0cdefg"):
        expect_error(with_extensions([], [be(8 + len(payload), 4) + be(0, 2) + b"\0\0" + payload]),
                     "Received ping packet with missing null terminator in extension type 0")
    assert decode(with_extensions([], [be(16, 4) + be(0, 2) + b"\0\0" + b"abcdefg\0"])).hostname == "abcdefg"
    # a length over 16 bits: Redis checks its low 16 bits only; refused
    with pytest.raises(BusError):
        decode(with_extensions([], [be(65536 + 16, 4) + be(0, 2) + b"\0\0" + b"ab" + b"\0" * 6]))
    # 7.2's extensions when malformed are skipped, as a 7.0 node skips them
    d = decode(with_extensions([], [be(16, 4) + be(2, 2) + b"\0\0" + b"\0" * 8,
                                    be(16, 4) + be(3, 2) + b"\0\0" + b"\0" * 8,
                                    be(16, 4) + be(1, 2) + b"\0\0" + b"abcdefgh"]))
    assert d.unknown_extensions == [2, 3, 1] and d.forgotten == [] and d.shard_id is None
    assert d.human_nodename is None
    # extensions counted without the extension-data flag: none is read
    m = decode(header_by_hand(HEADER_SIZE, PING, extensions=1))
    assert m.hostname is None and m.unknown_extensions == []
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
    assert crc_hqx(b"123456789", 0) == 0x31C3
    assert key_hash_slot(b"foo") == 12182
    assert key_hash_slot(b"{user1000}.following") == key_hash_slot(b"user1000") == 3443
    assert key_hash_slot(b"foo{}{bar}") == crc_hqx(b"foo{}{bar}", 0) & 16383   # empty tag: whole key
    assert key_hash_slot(b"foo{{bar}}zap") == key_hash_slot(b"{bar")
    assert key_hash_slot(b"foo{bar}{zap}") == key_hash_slot(b"bar")
    assert key_hash_slot(b"{abc") == crc_hqx(b"{abc", 0) & 16383
    assert key_hash_slot(b"") == 0


@given(st.binary(max_size=64))
def test_compiled_key_slot_matches(data):
    """The compiled loop's hash (its fast path in cluster mode) is the same."""
    native = compiled.load("cluster._slots")
    if native is None:
        pytest.skip("the compiled loop is not built")
    assert native.key_slot(data) == key_hash_slot(data)


_OPS = st.lists(st.tuples(st.sampled_from(["set", "del", "pop", "popitem", "setdefault", "update", "clear"]),
                          st.sampled_from([b"a", b"b", b"{a}c", b"{b}a", b"x{a}", b"k1", b"k2"])), max_size=40)


@given(_OPS)
def test_slot_key_index_classes_agree(ops):
    """The compiled SlotKeys and the Python one keep the same per-slot index
    (newest key first) through every way a key enters or leaves the dict."""
    native = compiled.load("cluster._slots")
    if native is None:
        pytest.skip("the compiled loop is not built")
    ds = [native.SlotKeys({b"seed": 0}), PySlotKeys({b"seed": 0})]
    for i, (op, key) in enumerate(ops):
        outs = []
        for d in ds:
            try:
                if op == "set":
                    d[key] = i
                    outs.append(None)
                elif op == "del":
                    del d[key]
                    outs.append(None)
                elif op == "pop":
                    outs.append(d.pop(key, -1))
                elif op == "popitem":
                    outs.append(d.popitem())
                elif op == "setdefault":
                    outs.append(d.setdefault(key, i))
                elif op == "update":
                    outs.append(d.update({key: i, b"k2": i}))
                else:
                    outs.append(d.clear())
            except KeyError as e:
                outs.append(("KeyError", e.args))
        assert outs[0] == outs[1], (op, key)
    a, b = ds
    assert dict(a) == dict(b)
    for key in (b"a", b"b", b"k1", b"k2", b"seed"):
        s = key_hash_slot(key)
        assert a.count_in_slot(s) == b.count_in_slot(s) == sum(key_hash_slot(k) == s for k in b)
        assert a.keys_in_slot(s, 3) == b.keys_in_slot(s, 3)
    assert [x is None for x in a.by_slot] == [x is None for x in b.by_slot]


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


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=5000))
def test_fuzz_random_bytes(data):
    decode_or_bus_error(data)
    decode_or_bus_error(b"RCmb" + len(data).to_bytes(4, "big")[:4] + data[8:] if len(data) > 8 else data)
    try:
        FrameReader().feed(data)
    except BusError:
        pass


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
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


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
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


# -- against redis-server: a node made of this codec in a real cluster ------------------

needs_redis = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")


class FakeNode:
    """A cluster node made of the codec: a bus listener (its cport), links
    served by one thread that decodes every frame and answers PING and MEET
    with a PONG of its current state, as a node does.  Nothing is mocked:
    real sockets, redis-server on the other side."""

    def __init__(self, hostname=None, shard_id=None, slots=range(1000, 1100), flags=bus.NODE_MASTER,
                 slaveof=NULL_NAME, epoch=10):
        self.name = secrets.token_hex(20).encode()
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.cport = self.listener.getsockname()[1]
        self.port = free_port()
        self.slots = set(slots)
        self.flags = flags
        self.slaveof = slaveof
        self.current_epoch = self.config_epoch = epoch
        self.hostname = hostname
        self.shard_id = shard_id
        self.frames = []            # (socket, Message, frame) in arrival order
        self.errors = []            # what the codec refused (redis-server must never send it)
        self.lock = threading.Lock()
        self.readers = {}
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.listener, selectors.EVENT_READ)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def message(self, type_, **kw) -> Message:
        with self.lock:
            return Message(type=type_, sender=self.name, myslots=slots_to_bitmap(self.slots),
                           slaveof=self.slaveof, port=self.port, cport=self.cport, flags=self.flags,
                           current_epoch=self.current_epoch, config_epoch=self.config_epoch,
                           hostname=self.hostname, shard_id=self.shard_id, **kw)

    def connect(self, port) -> socket.socket:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        with self.lock:
            self.readers[s] = FrameReader()
        self.sel.register(s, selectors.EVENT_READ)
        return s

    def send(self, sock, msg_or_bytes):
        data = msg_or_bytes if isinstance(msg_or_bytes, bytes) else encode(msg_or_bytes)
        with self.lock:
            sock.sendall(data)

    def _serve(self):
        while not self.stopping.is_set():
            for key, _ in self.sel.select(0.05):
                s = key.fileobj
                if s is self.listener:
                    conn, _ = s.accept()
                    conn.settimeout(10)
                    with self.lock:
                        self.readers[conn] = FrameReader()
                    self.sel.register(conn, selectors.EVENT_READ)
                    continue
                try:
                    data = s.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    self.sel.unregister(s)
                    s.close()
                    continue
                try:
                    frames = self.readers[s].feed(data)
                except BusError as e:
                    self.errors.append(e)
                    frames = e.frames
                for f in frames:
                    try:
                        m = decode(f)
                    except BusError as e:
                        self.errors.append(e)
                        continue
                    with self.lock:
                        self.frames.append((s, m, f))
                    if m.type in (PING, MEET):
                        self.send(s, self.message(PONG))

    def wait_frame(self, pred, what, timeout=30):
        def found():
            with self.lock:
                return next((m for _, m, _ in self.frames if pred(m)), None)
        return wait_until(found, timeout, what=what)

    def close(self):
        self.stopping.set()
        self.thread.join(10)
        for key in list(self.sel.get_map().values()):
            key.fileobj.close()
        self.sel.close()


def cluster_node(hostname=None):
    args = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
            "--cluster-port", str(free_port()), "--cluster-node-timeout", "15000"]
    if hostname:
        args += ["--cluster-announce-hostname", hostname]
    node = RedisServerProc(args)
    node.cport = int(node.client().config_get("cluster-port")["cluster-port"])
    return node


def nodes_of(proc) -> dict:
    """CLUSTER NODES of proc: {id: fields}, fields as cluster.c writes them."""
    text = proc.client().execute_command("CLUSTER NODES")
    if isinstance(text, dict):          # redis-py's parsed form: ask again raw
        text = proc.conn().call_value("CLUSTER", "NODES")
    if isinstance(text, bytes):
        text = text.decode()
    out = {}
    for line in text.splitlines():
        f = line.split(" ")
        addr, _, hostname = f[1].partition(",")
        hostport, _, cport = addr.partition("@")
        out[f[0].encode()] = dict(ip=hostport.rsplit(":", 1)[0], port=int(hostport.rsplit(":", 1)[1]),
                                  cport=int(cport), hostname=hostname, flags=f[2].split(","),
                                  master=f[3], ping_sent=int(f[4]), pong_recv=int(f[5]),
                                  config_epoch=int(f[6]), link=f[7], slots=f[8:])
    return out


def slot_ranges(slots) -> list:
    """Sorted slots as CLUSTER NODES writes them: "a-b" or "a"."""
    out = []
    slots = sorted(slots)
    i = 0
    while i < len(slots):
        j = i
        while j + 1 < len(slots) and slots[j + 1] == slots[j] + 1:
            j += 1
        out.append("%d-%d" % (slots[i], slots[j]) if j > i else str(slots[i]))
        i = j + 1
    return out


def cluster_info(proc) -> dict:
    text = proc.conn().call_value("CLUSTER", "INFO").decode()
    return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)


def current_epoch(proc) -> int:
    return int(cluster_info(proc)["cluster_current_epoch"])


SHARD_CHANNEL = b"shardnews"


@pytest.fixture(scope="module")
def cluster():
    """redis-server A (with an announced hostname) and B in one cluster, A
    with slots 0-99 and SHARD_CHANNEL's, B with 200-299; then the codec's
    node X joined to A by a MEET."""
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed")
    a = b = x = None
    try:
        a = cluster_node("node-a.test")
        b = cluster_node()
        ra, rb = a.client(), b.client()
        ra.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 99)
        ra.execute_command("CLUSTER", "ADDSLOTS", key_hash_slot(SHARD_CHANNEL))
        rb.execute_command("CLUSTER", "ADDSLOTSRANGE", 200, 299)
        a.id = ra.execute_command("CLUSTER", "MYID")
        b.id = rb.execute_command("CLUSTER", "MYID")
        ra.execute_command("CLUSTER", "MEET", "127.0.0.1", b.port, b.cport)

        def joined():
            na, nb = nodes_of(a), nodes_of(b)
            return (b.id in na and a.id in nb and "handshake" not in na[b.id]["flags"]
                    and na[b.id]["link"] == nb[a.id]["link"] == "connected"
                    and na[a.id]["config_epoch"] != na[b.id]["config_epoch"])   # collision solved
        wait_until(joined, 30, what="A and B in one cluster")
        # A's view before X: X's epochs (10) raise A's current epoch once X is known
        a.before = dict(nodes=nodes_of(a), info=cluster_info(a),
                        offset=a.client().info("replication")["master_repl_offset"])
        x = FakeNode(hostname="fake-x.test", shard_id=secrets.token_hex(20).encode())
        x.out = x.connect(a.cport)
        x.send(x.out, x.message(MEET))
        yield a, b, x
    finally:
        if x is not None:
            x.close()
        for p in (a, b):
            if p is not None:
                p.stop(remove=True)


@needs_redis
def test_redis_pong_to_our_meet(cluster):
    """redis-server answers our MEET with a PONG on our link; every header
    field is what its CLUSTER MYID / NODES / INFO say."""
    a, b, x = cluster
    pong = x.wait_frame(lambda m: m.type == PONG and m.sender == a.id, "A's PONG")
    assert not x.errors
    me = a.before["nodes"][a.id]
    info = a.before["info"]
    assert pong.myip == ""                          # no cluster-announce-ip: receivers use the socket's
    assert (pong.port, pong.cport, pong.pport) == (a.port, a.cport, 0)
    assert pong.flags == bus.NODE_MYSELF | bus.NODE_MASTER and me["flags"] == ["myself", "master"]
    assert pong.slaveof == NULL_NAME
    assert slot_ranges(bitmap_to_slots(pong.myslots)) == me["slots"] == nodes_of(a)[a.id]["slots"]
    assert pong.config_epoch == me["config_epoch"]
    assert pong.current_epoch == int(info["cluster_current_epoch"])
    assert pong.state == (bus.STATE_OK if info["cluster_state"] == "ok" else bus.STATE_FAIL)
    assert pong.offset == a.before["offset"]
    # 7.0's one extension: the announced hostname, padded to 8 bytes
    assert pong.hostname == "node-a.test" == me["hostname"]
    assert pong.mflags & bus.MSGFLAG_EXT_DATA and pong.unknown_extensions == []
    assert pong.shard_id is None and pong.forgotten == []     # 7.2's, not sent by 7.0


@needs_redis
def test_redis_links_to_us_and_takes_our_pong(cluster):
    """redis-server opens its own link to the cport we announced, PINGs; our
    PONGs finish the handshake: CLUSTER NODES shows X connected, a master,
    with the slots, epoch and hostname our PONG claims."""
    a, b, x = cluster
    ping = x.wait_frame(lambda m: m.type == PING and m.sender == a.id, "A's PING on its own link")
    assert ping.hostname == "node-a.test"

    def seen():
        n = nodes_of(a).get(x.name)
        return n if n and n["slots"] == ["1000-1099"] and n["hostname"] else None
    n = wait_until(seen, 30, what="X with its slots in A's CLUSTER NODES")
    assert n["flags"] == ["master"] and n["link"] == "connected"
    assert (n["ip"], n["port"], n["cport"]) == ("127.0.0.1", x.port, x.cport)
    assert n["config_epoch"] == 10 and n["hostname"] == "fake-x.test"
    assert n["master"] == "-"
    # CLUSTER SHARDS: the same, from the shard's side
    shards = a.client().execute_command("CLUSTER", "SHARDS")
    ours = [s for s in shards if any(nd[b"id"] == x.name for nd in _nodes_of_shard(s))]
    assert len(ours) == 1
    shard = _as_dict(ours[0])
    assert shard[b"slots"] == [1000, 1099]
    node = _as_dict(_nodes_of_shard(ours[0])[0])
    assert (node[b"port"], node[b"ip"], node[b"hostname"]) == (x.port, b"127.0.0.1", b"fake-x.test")
    # 7.0 skips 7.2's shard id extension, logging its type
    wait_until(lambda: "Received unknown extension type 3" in a.output(), 20, what="A's log line")
    assert not x.errors
    # what redis-server wrote, our encoder writes byte for byte
    with x.lock:
        frames = list(x.frames)
    assert {m.type for _, m, _ in frames} >= {PING, PONG}
    for _, m, raw in frames:
        assert encode(m) == raw


def _as_dict(flat):
    if isinstance(flat, dict):
        return flat
    return {flat[i]: flat[i + 1] for i in range(0, len(flat), 2)}


def _nodes_of_shard(shard):
    return [_as_dict(n) for n in _as_dict(shard)[b"nodes"]]


@needs_redis
def test_redis_gossip_matches_its_view(cluster):
    """The gossip entries of redis-server's PING/PONG about B (and X) are what
    its CLUSTER NODES says of them."""
    a, b, x = cluster
    about_b = x.wait_frame(lambda m: m.sender == a.id and any(g.nodename == b.id for g in m.gossip),
                           "a gossip entry about B", timeout=60)
    g = next(g for g in about_b.gossip if g.nodename == b.id)
    nb = nodes_of(a)[b.id]
    assert (g.ip, g.port, g.cport, g.pport) == (nb["ip"], b.port, b.cport, 0) == ("127.0.0.1", b.port,
                                                                                    b.cport, 0)
    assert g.flags == bus.NODE_MASTER and nb["flags"] == ["master"]
    now = time.time()
    assert now - 60 < g.pong_received <= nb["pong_recv"] / 1000 + 1
    assert g.ping_sent == 0 or now - 60 < g.ping_sent <= now + 1
    for m in [m for _, m, _ in list(x.frames) if m.sender == a.id]:
        for g in m.gossip:
            if g.nodename == x.name:
                assert (g.ip, g.port, g.cport) == ("127.0.0.1", x.port, x.cport)
    assert not x.errors


@needs_redis
def test_key_hash_slot_matches_cluster_keyslot(cluster):
    a, b, x = cluster
    rnd = random.Random(15)
    keys = [b"", b"{", b"}", b"{}", b"{}{a}", b"a{b}c{d}", b"{{a}}", b"}{a}", b"\xff{\x00}", b"foo"]
    keys += [bytes(rnd.choice(b"ab{}\x00\xff") for _ in range(rnd.randrange(12))) for _ in range(300)]
    r = a.client()
    with r.pipeline(transaction=False) as p:
        for k in keys:
            p.execute_command("CLUSTER", "KEYSLOT", k)
        assert p.execute() == [key_hash_slot(k) for k in keys]


@needs_redis
def test_our_publish_reaches_redis_subscribers(cluster):
    a, b, x = cluster
    wait_until(lambda: x.name in nodes_of(a) and "handshake" not in nodes_of(a)[x.name]["flags"],
               30, what="X known to A")
    sub = a.client().pubsub()
    try:
        sub.subscribe("news")
        sub.ssubscribe(SHARD_CHANNEL)
        for _ in range(2):
            assert sub.get_message(timeout=5)["type"] in ("subscribe", "ssubscribe")
        x.send(x.out, x.message(PUBLISH, channel=b"news", message=b"hello \0 bus"))
        x.send(x.out, x.message(PUBLISHSHARD, channel=SHARD_CHANNEL, message=b"sharded"))
        got = []
        deadline = time.monotonic() + 20
        while len(got) < 2 and time.monotonic() < deadline:
            m = sub.get_message(timeout=1)
            if m:
                got.append((m["type"], m["channel"], m["data"]))
        assert got == [("message", b"news", b"hello \0 bus"), ("smessage", SHARD_CHANNEL, b"sharded")]
    finally:
        sub.close()


@needs_redis
def test_our_update_moves_slots_on_redis(cluster):
    """An UPDATE about X with a newer config epoch: redis-server takes its
    slot bitmap and epoch."""
    a, b, x = cluster
    wait_until(lambda: nodes_of(a).get(x.name, {}).get("slots") == ["1000-1099"], 30,
               what="X's slots on A")
    with x.lock:       # our PONGs from now on say the same
        x.slots = set(range(1000, 1200)) | {5000}
        x.config_epoch = x.current_epoch = 20
    x.send(x.out, x.message(UPDATE, update_config_epoch=20, update_nodename=x.name,
                            update_slots=slots_to_bitmap(x.slots)))
    n = wait_until(lambda: (lambda n: n if n["slots"] == ["1000-1199", "5000"] else None)(nodes_of(a)[x.name]),
                   20, what="the UPDATE applied")
    assert n["config_epoch"] == 20


@needs_redis
def test_our_fail_marks_the_node_failed_on_redis(cluster):
    """A FAIL about B from X: redis-server flags B as failed (B has slots, so
    the flag stays for 2 node timeouts) and logs it."""
    a, b, x = cluster
    wait_until(lambda: x.name in nodes_of(a) and "handshake" not in nodes_of(a)[x.name]["flags"],
               30, what="X known to A")
    x.send(x.out, x.message(FAIL, fail_nodename=b.id))
    wait_until(lambda: "fail" in nodes_of(a)[b.id]["flags"], 20, what="B flagged fail")
    line = "FAIL message received from %s about %s" % (x.name.decode(), b.id.decode())
    wait_until(lambda: line in a.output(), 20, what="redis-server's log line")


@needs_redis
def test_redis_votes_for_our_replica(cluster):
    """A second codec node Y, a replica of B (failed by our FAIL), asks for a
    failover vote: redis-server grants it with a FAILOVER_AUTH_ACK on its
    link to Y."""
    a, b, x = cluster
    x.send(x.out, x.message(FAIL, fail_nodename=b.id))
    wait_until(lambda: "fail" in nodes_of(a)[b.id]["flags"], 20, what="B flagged fail")
    b_epoch = nodes_of(a)[b.id]["config_epoch"]
    y = FakeNode(slots=range(200, 300), flags=bus.NODE_SLAVE, slaveof=b.id, epoch=b_epoch)
    try:
        y.out = y.connect(a.cport)
        y.send(y.out, y.message(MEET))
        wait_until(lambda: (lambda n: n and n["flags"] == ["slave"] and n["master"] == b.id.decode()
                            and n["link"] == "connected")(nodes_of(a).get(y.name)),
                   30, what="Y a replica of B on A")
        epoch = current_epoch(a) + 1
        with y.lock:
            y.current_epoch = epoch
        # B failed again if its flag was cleared meanwhile (2 node timeouts)
        y.send(y.out, y.message(FAIL, fail_nodename=b.id))     # same link: before the request
        y.send(y.out, y.message(FAILOVER_AUTH_REQUEST))
        ack = y.wait_frame(lambda m: m.type == FAILOVER_AUTH_ACK, "A's vote", timeout=20)
        assert ack.sender == a.id and ack.current_epoch == epoch
        line = "Failover auth granted to %s for epoch %d" % (y.name.decode(), epoch)
        wait_until(lambda: line in a.output(), 20, what="redis-server's log line")
        assert not y.errors
    finally:
        y.close()


@needs_redis
def test_malformed_frames_give_redis_log_lines(cluster):
    """What decode refuses with a text, redis-server refuses with the same log
    line (and stays up; the link is kept, as Redis keeps it); a bad signature
    closes the link."""
    a, b, x = cluster
    stranger = dict(sender=secrets.token_hex(20).encode(), port=1, cport=1)
    good_ping = encode(Message(type=PING, **stranger, gossip=GOSSIP))
    cases = [good_ping[:4] + be(len(good_ping) - 104, 4) + good_ping[8:14] + be(3, 2)
             + good_ping[16:-104],
             with_extensions([], [be(12, 4) + be(0, 2) + b"\0\0" + b"ab\0\0"]),
             with_extensions([], [be(32, 4) + be(0, 2) + b"\0\0" + b"ab\0\0\0\0\0\0"]),
             with_extensions([], [b"\0\0\0\x10"]),
             with_extensions([], [be(0, 4) + be(0, 2) + b"\0\0"]),
             with_extensions([], [be(16, 4) + be(0, 2) + b"\0\0" + b"ab\0cdefg"]),
             header_by_hand(HEADER_SIZE + 16, PING, extensions=1) + be(16, 4) + be(0, 2) + b"\0" * 10,
             encode(Message(type=FAIL, **stranger)) + b"xx",
             encode(Message(type=PUBLISH, **stranger, channel=b"c", message=b"m")) + b"!",
             encode(Message(type=MODULE, **stranger, module_payload=b"abc"))[:-1],
             encode(Message(type=UPDATE, **stranger))[:-8],
             encode(Message(type=FAILOVER_AUTH_REQUEST, **stranger)) + b"12345678"]
    s = x.connect(a.cport)
    for frame in cases:
        frame = frame[:4] + be(len(frame), 4) + frame[8:]     # consistent framing
        frame = frame[:40] + stranger["sender"] + frame[80:]  # an unknown sender: no effect
        with pytest.raises(BusError) as e:
            decode(frame)
        text = e.value.text
        before = a.output().count(text)
        x.send(s, frame)
        wait_until(lambda: a.output().count(text) > before, 20, what="redis-server's log line " + text)
    assert a.client().ping()
    bad = socket.create_connection(("127.0.0.1", a.cport), timeout=10)
    try:
        bad.sendall(b"RCmb" + be(100, 4) + b"\0" * 100)
        try:
            assert bad.recv(100) == b""            # redis-server closed the link
        except ConnectionResetError:               # ... with our bytes unread
            pass
    finally:
        bad.close()
    wait_until(lambda: "Bad message length or signature received from Cluster bus." in a.output(), 20)
    assert a.client().ping()
