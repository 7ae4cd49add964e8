"""The cluster bus codec: Redis 7.0's binary node-to-node messages.

Pure functions over bytes, as protocol/resp.py: no sockets, no server.  The
layout is cluster.h's ``clusterMsg`` (all integers big-endian, "network
order"): a fixed 2256-byte header (``HEADER_SIZE``, Redis's
CLUSTERMSG_MIN_LEN) then the body of the message type:

- PING / PONG / MEET: ``count`` gossip entries of 104 bytes, then, when
  mflags[0] has ``MSGFLAG_EXT_DATA``, ``extensions`` ping extensions, each an
  8-byte header (length including itself, type, 2 unused bytes) and a body
  padded with zeros to a multiple of 8.  Redis 7.0.15 knows one extension,
  the hostname (type 0, a NUL-terminated string).  Types 1-3 are Redis
  7.2's (human node name, forgotten node: name + TTL in seconds, shard id);
  this codec reads and writes them, and a 7.0 node skips them (it logs
  "Received unknown extension type N").  Other types are skipped and listed
  in ``Message.unknown_extensions``.
- FAIL: the failing node's name.
- PUBLISH / PUBLISHSHARD: channel and message lengths, then both.
- UPDATE: a config epoch, a node name, a slot bitmap.
- MODULE: module id (8 bytes in the sender's byte order: Redis copies it
  unconverted, so it is little-endian on every x86 node; this codec reads
  and writes it little-endian), payload length, type byte, payload.
- FAILOVER_AUTH_REQUEST / FAILOVER_AUTH_ACK / MFSTART: the header only.
- Any other type: Redis ignores the body; ``decode`` returns the header.

``decode`` raises ``BusError`` for what clusterProcessPacket's length and
version checks refuse (as Debian's 7.0.15 package does them: its security
fixes add the gossip count and hostname terminator checks and their log
lines), and for anything truncated or inconsistent that Redis would read
past the buffer for.  Redis drops such a packet and keeps the
link; ``BusError.text`` is its log line where Redis logs one (``None`` where
it drops the packet silently: a protocol version other than 1).
``FrameReader`` splits a link's byte stream into frames as
clusterReadHandler does; its ``BusError`` (bad signature, or a length below
the header's) means Redis closes the link.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

# -- constants (cluster.h) ------------------------------------------------------------

SLOTS = 16384
NAMELEN = 40
NULL_NAME = b"\0" * NAMELEN
EMPTY_SLOTS = b"\0" * (SLOTS // 8)
PROTO_VER = 1
SIGNATURE = b"RCmb"
PORT_INCR = 10000

# message types
PING = 0
PONG = 1
MEET = 2
FAIL = 3
PUBLISH = 4
FAILOVER_AUTH_REQUEST = 5
FAILOVER_AUTH_ACK = 6
UPDATE = 7
MFSTART = 8
MODULE = 9
PUBLISHSHARD = 10
TYPE_COUNT = 11

TYPE_NAMES = ("ping", "pong", "meet", "fail", "publish", "auth-req", "auth-ack",
              "update", "mfstart", "module", "publishshard")

# node flags
NODE_MASTER = 1
NODE_SLAVE = 2
NODE_PFAIL = 4
NODE_FAIL = 8
NODE_MYSELF = 16
NODE_HANDSHAKE = 32
NODE_NOADDR = 64
NODE_MEET = 128
NODE_MIGRATE_TO = 256
NODE_NOFAILOVER = 512

# message flags (mflags[0])
MSGFLAG_PAUSED = 1
MSGFLAG_FORCEACK = 2
MSGFLAG_EXT_DATA = 4

# cluster states (CLUSTER_OK, CLUSTER_FAIL; FAIL is the message type's name)
STATE_OK = OK = 0
STATE_FAIL = 1

# ping extension types (0 is 7.0's; 1-3 are 7.2's)
EXT_HOSTNAME = 0
EXT_HUMAN_NODENAME = 1
EXT_FORGOTTEN_NODE = 2
EXT_SHARDID = 3

IP_LEN = 46         # NET_IP_STR_LEN

# -- layouts ----------------------------------------------------------------------------

# sig totlen ver port type count currentEpoch configEpoch offset sender myslots
# slaveof myip extensions notused1[30] pport cport flags state mflags[3]
HEADER = struct.Struct(">4sIHHHHQQQ40s2048s40s46sH30xHHHBB2x")
HEADER_SIZE = HEADER.size
assert HEADER_SIZE == 2256
# nodename ping_sent pong_received ip port cport flags pport notused1
GOSSIP = struct.Struct(">40sII46sHHHH2x")
GOSSIP_SIZE = GOSSIP.size
assert GOSSIP_SIZE == 104
EXT_HEADER = struct.Struct(">IHH")
EXT_HEADER_SIZE = EXT_HEADER.size
FORGOTTEN = struct.Struct(">40sQ")
FAIL_BODY_SIZE = NAMELEN
PUBLISH_HEAD = struct.Struct(">II")
UPDATE_BODY = struct.Struct(">Q40s2048s")
MODULE_HEAD = struct.Struct("<Q")           # module id: sender's order (see above)
MODULE_LEN = struct.Struct(">IB")
MODULE_HEAD_SIZE = MODULE_HEAD.size + MODULE_LEN.size    # 13: Redis's sizeof - 3
_SIG_LEN = struct.Struct(">4sI")


class BusError(ValueError):
    """A frame Redis would not process.  ``text`` is Redis's log line for it
    (None where Redis drops it silently); ``frames`` (FrameReader only) are
    the complete frames that preceded the bad bytes, to process before
    closing the link as Redis does."""

    def __init__(self, text, frames=None):
        super().__init__(text or "unsupported cluster bus protocol version")
        self.text = text
        self.frames = frames or []


@dataclass(slots=True)
class Gossip:
    """One clusterMsgDataGossip: what the sender knows of another node.
    ping_sent and pong_received are in seconds (Redis sends ms / 1000)."""
    nodename: bytes = NULL_NAME
    ping_sent: int = 0
    pong_received: int = 0
    ip: str = ""
    port: int = 0
    cport: int = 0
    flags: int = 0
    pport: int = 0


@dataclass(slots=True)
class Message:
    """One cluster bus message: the header fields, then the body fields of
    each type (only those of ``type`` are written and read)."""
    type: int = PING
    sender: bytes = NULL_NAME
    myslots: bytes = field(default=EMPTY_SLOTS, repr=False)
    slaveof: bytes = NULL_NAME
    myip: str = ""
    port: int = 0
    pport: int = 0
    cport: int = 0
    flags: int = NODE_MASTER
    state: int = OK
    mflags: int = 0
    current_epoch: int = 0
    config_epoch: int = 0
    offset: int = 0
    # PING / PONG / MEET
    gossip: list = field(default_factory=list)
    hostname: str | None = None
    human_nodename: str | None = None
    forgotten: list = field(default_factory=list)       # [(nodename, ttl seconds)]
    shard_id: bytes | None = None
    unknown_extensions: list = field(default_factory=list)   # types skipped by decode
    # FAIL
    fail_nodename: bytes = NULL_NAME
    # PUBLISH / PUBLISHSHARD
    channel: bytes = b""
    message: bytes = b""
    # UPDATE
    update_config_epoch: int = 0
    update_nodename: bytes = NULL_NAME
    update_slots: bytes = field(default=EMPTY_SLOTS, repr=False)
    # MODULE
    module_id: int = 0
    module_type: int = 0
    module_payload: bytes = b""


def type_name(t: int) -> str:
    """clusterGetMessageTypeString: the name Redis's log lines use."""
    return TYPE_NAMES[t] if 0 <= t < TYPE_COUNT else "unknown"


# -- encoding ---------------------------------------------------------------------------

def _name(value: bytes, what: str) -> bytes:
    if len(value) != NAMELEN:
        raise ValueError("%s must be %d bytes, got %d" % (what, NAMELEN, len(value)))
    return value


def _ip(value: str, what: str) -> bytes:
    b = value.encode("utf-8", "surrogateescape")
    if len(b) >= IP_LEN:
        raise ValueError("%s is longer than %d bytes" % (what, IP_LEN - 1))
    return b


def _string_ext(ext_type: int, text: str) -> bytes:
    data = text.encode("utf-8", "surrogateescape") + b"\0"
    padded = (len(data) + 7) // 8 * 8
    return EXT_HEADER.pack(EXT_HEADER_SIZE + padded, ext_type, 0) + data.ljust(padded, b"\0")


def _extensions(msg: Message) -> list:
    """The ping extensions of msg in the order Redis 7.2 writes them
    (hostname, human node name, forgotten nodes, shard id); a 7.0 node
    sends only the hostname, and only when it is set."""
    exts = []
    if msg.hostname:
        exts.append(_string_ext(EXT_HOSTNAME, msg.hostname))
    if msg.human_nodename:
        exts.append(_string_ext(EXT_HUMAN_NODENAME, msg.human_nodename))
    for name, ttl in msg.forgotten:
        exts.append(EXT_HEADER.pack(EXT_HEADER_SIZE + FORGOTTEN.size, EXT_FORGOTTEN_NODE, 0)
                    + FORGOTTEN.pack(_name(name, "forgotten node name"), ttl))
    if msg.shard_id is not None:
        exts.append(EXT_HEADER.pack(EXT_HEADER_SIZE + NAMELEN, EXT_SHARDID, 0)
                    + _name(msg.shard_id, "shard_id"))
    return exts


def _encode_gossip(g: Gossip) -> bytes:
    return GOSSIP.pack(_name(g.nodename, "gossip nodename"), g.ping_sent, g.pong_received,
                       _ip(g.ip, "gossip ip"), g.port, g.cport, g.flags, g.pport)


def encode(msg: Message) -> bytes:
    """The frame Redis 7.0 writes for msg: totlen, count and extensions
    computed, version 1, the unused fields zero.  ValueError when a field
    does not fit (a name not 40 bytes, a bitmap not 2048, an ip of 46 bytes
    or more, a number out of range)."""
    t = msg.type
    count = 0
    extensions = 0
    mflags = msg.mflags
    if t == PING or t == PONG or t == MEET:
        gossip = msg.gossip
        count = len(gossip)
        parts = [_encode_gossip(g) for g in gossip]
        exts = _extensions(msg)
        if exts:
            extensions = len(exts)
            mflags |= MSGFLAG_EXT_DATA
            parts += exts
        body = b"".join(parts)
    elif t == FAIL:
        body = _name(msg.fail_nodename, "fail_nodename")
    elif t == PUBLISH or t == PUBLISHSHARD:
        body = PUBLISH_HEAD.pack(len(msg.channel), len(msg.message)) + msg.channel + msg.message
    elif t == UPDATE:
        if len(msg.update_slots) != SLOTS // 8:
            raise ValueError("update_slots must be %d bytes" % (SLOTS // 8))
        body = UPDATE_BODY.pack(msg.update_config_epoch,
                                _name(msg.update_nodename, "update_nodename"), msg.update_slots)
    elif t == MODULE:
        body = (MODULE_HEAD.pack(msg.module_id)
                + MODULE_LEN.pack(len(msg.module_payload), msg.module_type) + msg.module_payload)
    else:
        body = b""
    if len(msg.myslots) != SLOTS // 8:
        raise ValueError("myslots must be %d bytes" % (SLOTS // 8))
    try:
        head = HEADER.pack(SIGNATURE, HEADER_SIZE + len(body), PROTO_VER, msg.port, t, count,
                           msg.current_epoch, msg.config_epoch, msg.offset,
                           _name(msg.sender, "sender"), msg.myslots,
                           _name(msg.slaveof, "slaveof"), _ip(msg.myip, "myip"), extensions,
                           msg.pport, msg.cport, msg.flags, msg.state, mflags)
    except struct.error as e:
        raise ValueError(str(e)) from None
    return head + body


# -- decoding ---------------------------------------------------------------------------

def _cstr(raw: bytes) -> str:
    end = raw.find(b"\0")
    if end >= 0:
        raw = raw[:end]
    return raw.decode("utf-8", "surrogateescape")


def _length_error(t: int, totlen: int, explen: int) -> BusError:
    return BusError("Received invalid %s packet of length %d but expected length %d"
                    % (type_name(t), totlen, explen))


def _decode_extensions(msg: Message, frame: bytes, pos: int, n: int, totlen: int) -> int:
    """Read n ping extensions from pos (the validation of clusterProcessPacket
    as Debian's 7.0.15 does it, then clusterProcessPingExtensions); the
    position after them."""
    t = msg.type
    for _ in range(n):
        if totlen - pos < EXT_HEADER_SIZE:
            raise BusError("Received invalid %s packet with extension data that exceeds "
                           "total packet length (%d)" % (type_name(t), totlen))
        length, ext_type, _unused = EXT_HEADER.unpack_from(frame, pos)
        # Redis checks the length as a 16-bit number (so do its log lines)
        short = length & 0xFFFF
        if short % 8 != 0 or short < EXT_HEADER_SIZE:
            raise BusError("Received a %s packet without proper padding (%d bytes)"
                           % (type_name(t), short))
        if totlen - pos < short:
            raise BusError("Received invalid %s packet with extension data that exceeds "
                           "total packet length (%d)" % (type_name(t), totlen))
        if ext_type == EXT_HOSTNAME and (short == EXT_HEADER_SIZE or frame[pos + short - 1] != 0):
            raise BusError("Received %s packet with missing null terminator in extension type %d"
                           % (type_name(t), ext_type))
        if length != short:
            raise BusError("Received a %s packet with an extension of %d bytes"
                           % (type_name(t), length))
        body = frame[pos + EXT_HEADER_SIZE:pos + length]
        # 7.2's types, read when well formed; a 7.0 node skips them (so do we
        # when they are not)
        if ext_type == EXT_HOSTNAME:
            msg.hostname = _cstr(body)
        elif ext_type == EXT_HUMAN_NODENAME and body[-1:] == b"\0":
            msg.human_nodename = _cstr(body)
        elif ext_type == EXT_FORGOTTEN_NODE and len(body) >= FORGOTTEN.size:
            msg.forgotten.append(FORGOTTEN.unpack_from(body))
        elif ext_type == EXT_SHARDID and len(body) >= NAMELEN:
            msg.shard_id = body[:NAMELEN]
        else:
            msg.unknown_extensions.append(ext_type)
        pos += length
    return pos


def decode(frame: bytes) -> Message:
    """The Message in one complete frame (as FrameReader returns them).
    BusError for a frame Redis 7.0 would drop (see the module docstring)."""
    n = len(frame)
    if n < HEADER_SIZE:
        raise BusError("Received a cluster bus packet of %d bytes, shorter than its header" % n)
    (sig, totlen, ver, port, t, count, current_epoch, config_epoch, offset, sender, myslots,
     slaveof, myip, extensions, pport, cport, flags, state, mflags) = HEADER.unpack_from(frame)
    if sig != SIGNATURE:
        raise BusError("Bad message length or signature received from Cluster bus.")
    if totlen != n:
        raise BusError("Received a %s packet of %d bytes whose header says %d"
                       % (type_name(t), n, totlen))
    if ver != PROTO_VER:
        raise BusError(None)
    msg = Message(t, sender, myslots, slaveof, _cstr(myip[:IP_LEN - 1]), port, pport, cport,
                  flags, state, mflags, current_epoch, config_epoch, offset)
    pos = HEADER_SIZE
    if t == PING or t == PONG or t == MEET:
        end = pos + GOSSIP_SIZE * count
        if end > totlen:
            raise BusError("Received invalid %s packet with gossip count %d that exceeds total "
                           "packet length (%d)" % (type_name(t), count, totlen))
        msg.gossip = [Gossip(name, ps, pr, _cstr(ip), p, cp, fl, pp)
                      for name, ps, pr, ip, p, cp, fl, pp in GOSSIP.iter_unpack(frame[pos:end])]
        # without the extension data flag there is no extension, whatever
        # the count says (Redis validates and reads them only with the flag)
        if mflags & MSGFLAG_EXT_DATA:
            end = _decode_extensions(msg, frame, end, extensions, totlen)
        explen = end
    elif t == FAIL:
        explen = HEADER_SIZE + FAIL_BODY_SIZE
        if totlen == explen:
            msg.fail_nodename = frame[pos:explen]
    elif t == PUBLISH or t == PUBLISHSHARD:
        if totlen < pos + PUBLISH_HEAD.size:
            raise _length_error(t, totlen, pos + PUBLISH_HEAD.size)
        channel_len, message_len = PUBLISH_HEAD.unpack_from(frame, pos)
        pos += PUBLISH_HEAD.size
        explen = pos + channel_len + message_len
        if totlen == explen:
            msg.channel = frame[pos:pos + channel_len]
            msg.message = frame[pos + channel_len:explen]
    elif t == FAILOVER_AUTH_REQUEST or t == FAILOVER_AUTH_ACK or t == MFSTART:
        explen = HEADER_SIZE
    elif t == UPDATE:
        explen = HEADER_SIZE + UPDATE_BODY.size
        if totlen == explen:
            msg.update_config_epoch, msg.update_nodename, msg.update_slots = \
                UPDATE_BODY.unpack_from(frame, pos)
    elif t == MODULE:
        if totlen < pos + MODULE_HEAD_SIZE:
            raise _length_error(t, totlen, pos + MODULE_HEAD_SIZE)
        (msg.module_id,) = MODULE_HEAD.unpack_from(frame, pos)
        length, msg.module_type = MODULE_LEN.unpack_from(frame, pos + MODULE_HEAD.size)
        pos += MODULE_HEAD_SIZE
        explen = pos + length
        if totlen == explen:
            msg.module_payload = frame[pos:explen]
    else:
        explen = totlen     # unknown type: Redis assumes it is well formed
    if totlen != explen:
        raise _length_error(t, totlen, explen)
    return msg


# -- framing ----------------------------------------------------------------------------

class FrameReader:
    """One link's input, sans-IO: ``feed(data)`` returns the complete frames
    (bytes) now buffered.  As clusterReadHandler: the first 8 bytes of a
    frame give the signature and the total length, which must be at least
    HEADER_SIZE; otherwise BusError (Redis closes the link), carrying the
    frames completed before the bad bytes; the reader then stays failed."""

    __slots__ = ("buf", "error")

    def __init__(self):
        self.buf = bytearray()
        self.error = None

    def feed(self, data) -> list:
        if self.error is not None:
            raise self.error
        buf = self.buf
        buf += data
        frames = []
        pos = 0
        size = len(buf)
        while size - pos >= 8:
            sig, totlen = _SIG_LEN.unpack_from(buf, pos)
            if sig != SIGNATURE or totlen < HEADER_SIZE:
                del buf[:]
                self.error = BusError("Bad message length or signature received from Cluster bus.")
                self.error.frames = frames
                raise self.error
            if size - pos < totlen:
                break
            frames.append(bytes(buf[pos:pos + totlen]))
            pos += totlen
        if pos:
            del buf[:pos]
        return frames

    def pending(self) -> int:
        """Bytes buffered towards the next frame."""
        return len(self.buf)


# -- slots and keys ---------------------------------------------------------------------

def slots_to_bitmap(slots) -> bytes:
    """The 2048-byte bitmap of slots (slot s: byte s >> 3, bit s & 7)."""
    bm = bytearray(SLOTS // 8)
    for s in slots:
        if not 0 <= s < SLOTS:
            raise ValueError("slot %r out of range" % (s,))
        bm[s >> 3] |= 1 << (s & 7)
    return bytes(bm)


_BITS = [tuple(bit for bit in range(8) if byte >> bit & 1) for byte in range(256)]


_NONZERO = re.compile(rb"[^\x00]+")
_FULL = re.compile(rb"\xff+")


def bitmap_to_slots(bitmap: bytes) -> list:
    """The slots set in a bitmap, in increasing order (runs of zero and of
    full bytes are taken whole: a node's slots are mostly ranges)."""
    out = []
    for a, b in bitmap_ranges(bitmap):
        out.extend(range(a, b + 1))
    return out


def bitmap_ranges(bitmap: bytes) -> list:
    """[(first, last)] of the runs of set bits in a slot bitmap."""
    out = []
    bits = _BITS
    for m in _NONZERO.finditer(bitmap):
        seg_start = m.start()
        pos = seg_start
        seg = m.group()
        for f in _FULL.finditer(seg):
            for i in range(pos, seg_start + f.start()):
                _add_bits(out, i << 3, bits[bitmap[i]])
            _add_range(out, (seg_start + f.start()) << 3, ((seg_start + f.end()) << 3) - 1)
            pos = seg_start + f.end()
        for i in range(pos, m.end()):
            _add_bits(out, i << 3, bits[bitmap[i]])
    return out


def _add_range(out, a, b):
    if out and out[-1][1] == a - 1:
        out[-1] = (out[-1][0], b)
    else:
        out.append((a, b))


def _add_bits(out, base, bits):
    for bit in bits:
        _add_range(out, base + bit, base + bit)
