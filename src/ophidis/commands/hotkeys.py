"""HOTKEYS (Redis 8.6): START, STOP, GET, RESET, HELP.  The session and the
per-command accounting are server/hotkeys.py's (``server.hotkeys``)."""

from __future__ import annotations

from ..cmdtable.registry import command
from ..errors import SYNTAX, RedisError
from ..protocol.resp import OK, array_header, bulk, help_reply, integer, map_header
from ..hotkeys import CPU, NET, NSLOTS, Session, slot_ranges
from ..util import try_int

INT_MAX = 2**31 - 1


def _range(b, lo, hi, msg):
    """getRangeLongFromObjectOrReply with a message: the one error for a
    value that is not an integer or is out of range."""
    v = try_int(b)
    if v is None or v < lo or v > hi:
        raise RedisError("ERR " + msg)
    return v


@command("hotkeys|start")
def hotkeys_start(c, argv):
    hk = c.server.hotkeys
    if hk.tracking():
        raise RedisError("ERR hotkey tracking session already in progress")
    argc = len(argv)
    if argc < 4 or argv[2].lower() != b"metrics":
        raise RedisError("ERR METRICS parameter is required")
    nmetrics = _range(argv[3], 1, 2, "METRICS count must be > 0 and <= 2")
    metrics = 0
    j = 4
    parsed = valid = 0
    # as Redis: the count names the tokens that follow; one that is neither
    # CPU nor NET takes a place without adding a metric
    while j < argc and parsed < nmetrics:
        tok = argv[j].lower()
        if tok == b"cpu" or tok == b"net":
            bit = CPU if tok == b"cpu" else NET
            if metrics & bit:
                raise RedisError("ERR METRICS %s defined more than once!" % tok.decode().upper())
            metrics |= bit
            valid += 1
        parsed += 1
        j += 1
    if parsed != nmetrics:
        raise RedisError("ERR METRICS count does not match number of metric types provided")
    if not valid:
        raise RedisError("ERR METRICS no valid metrics passed. Supported: CPU|NET")
    count, duration, sample, slots = 10, 0, 1, None
    while j < argc:
        opt = argv[j].lower()
        more = j < argc - 1
        if more and opt == b"count":
            count = _range(argv[j + 1], 1, 64, "COUNT must be between 1 and 64")
            j += 2
        elif more and opt == b"duration":
            duration = _range(argv[j + 1], 1, 1000000, "DURATION must be between 1 and 1000000") * 1000
            j += 2
        elif more and opt == b"sample":
            sample = _range(argv[j + 1], 1, INT_MAX, "SAMPLE ratio must be positive")
            j += 2
        elif more and opt == b"slots":
            cl = c.server.cluster
            if cl is None:
                raise RedisError("ERR SLOTS parameter cannot be used in non-cluster mode")
            if slots is not None:
                raise RedisError("ERR SLOTS parameter already specified")
            n = _range(argv[j + 1], 1, NSLOTS, "SLOTS count must be between 1 and %d" % NSLOTS)
            if j + 1 + n >= argc:
                raise RedisError("ERR not enough slot numbers provided")
            got = []
            for a in argv[j + 2:j + 2 + n]:
                s = try_int(a)
                if s is None or not 0 <= s < NSLOTS:
                    raise RedisError("ERR Invalid or out of range slot")
                if cl.slots[s] is not cl.myself:
                    raise RedisError("ERR slot %d not handled by this node" % s)
                got.append(s)
            got.sort()
            if len(set(got)) != len(got):
                raise RedisError("ERR duplicate slot number")
            slots = got
            j += 2 + n
        else:
            raise SYNTAX
    hk.start(Session(metrics, count, duration, sample, slots))
    return OK


@command("hotkeys|stop")
def hotkeys_stop(c, argv):
    hk = c.server.hotkeys
    if not hk.tracking():
        return c.null
    hk.stop()
    return OK


@command("hotkeys|reset")
def hotkeys_reset(c, argv):
    hk = c.server.hotkeys
    if hk.tracking():
        raise RedisError("ERR hotkey tracking session in progress, stop tracking first")
    hk.reset()
    return OK


def _ranges(rs) -> bytes:
    out = [array_header(len(rs))]
    for a, b in rs:
        if a == b:
            out.append(b"*1\r\n" + integer(a))
        else:
            out.append(b"*2\r\n" + integer(a) + integer(b))
    return b"".join(out)


def _pairs(items) -> bytes:
    out = [array_header(2 * len(items))]
    for k, v in items:
        out.append(bulk(k))
        out.append(integer(v))
    return b"".join(out)


@command("hotkeys|get")
def hotkeys_get(c, argv):
    hk = c.server.hotkeys
    s = hk.session
    if s is None:
        return c.null
    fields = [
        (b"tracking-active", integer(1 if s.active else 0)),
        (b"sample-ratio", integer(s.sample)),
        (b"selected-slots", _ranges(slot_ranges(s.slots) if s.slots is not None else hk.my_slot_ranges())),
    ]
    chosen = s.slots is not None
    if chosen and s.sample > 1:
        fields.append((b"sampled-commands-selected-slots-us", integer(s.time_sampled)))
    if chosen:
        fields.append((b"all-commands-selected-slots-us", integer(s.time_sel)))
    fields.append((b"all-commands-all-slots-us", integer(s.time_all)))
    if chosen and s.sample > 1:
        fields.append((b"net-bytes-sampled-commands-selected-slots", integer(s.net_sampled)))
    if chosen:
        fields.append((b"net-bytes-all-commands-selected-slots", integer(s.net_sel)))
    fields.append((b"net-bytes-all-commands-all-slots", integer(s.net_all)))
    fields.append((b"collection-start-time-unix-ms", integer(s.start_ms)))
    fields.append((b"collection-duration-ms", integer(s.elapsed_ms())))
    if s.cpu is not None:
        user, system = s.cpu_ms()
        fields.append((b"total-cpu-time-user-ms", integer(user)))
        fields.append((b"total-cpu-time-sys-ms", integer(system)))
    if s.net is not None:
        fields.append((b"total-net-bytes", integer(s.net_total)))
    if s.cpu is not None:
        fields.append((b"by-cpu-time-us", _pairs(s.top(s.cpu))))
    if s.net is not None:
        fields.append((b"by-net-bytes", _pairs(s.top(s.net))))
    body = b"".join([bulk(k) + v for k, v in fields])
    return b"*1\r\n" + map_header(c.resp, len(fields)) + body


@command("hotkeys|help")
def hotkeys_help(c, argv):
    return help_reply(b"HOTKEYS", b"""\
START <METRICS count [CPU] [NET]> [COUNT k] [DURATION duration] [SAMPLE ratio] [SLOTS count slot...]
    Start tracking hot keys with the given metrics.
    * METRICS count [CPU] [NET]
        How many metrics follow, among:
        - CPU: the keys' share of the commands' CPU time
        - NET: the keys' share of the network bytes
    * COUNT k
        The K of the top-K lists. Default: 10
    * DURATION duration
        Stop after this many seconds. Default: 0 (until HOTKEYS STOP)
    * SAMPLE ratio
        Sample commands with probability 1/ratio. Default: 1 (every command)
    * SLOTS count slot...
        Only keys of these slots (cluster mode only). Default: every slot
STOP
    Stop tracking; GET still returns the results.
GET
    Return the results of the current or last session.
RESET
    Release the results (tracking must be stopped first).""")
