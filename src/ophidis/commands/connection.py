"""Connection commands: PING ECHO QUIT RESET SELECT HELLO AUTH CLIENT."""

from __future__ import annotations

import time

from .. import sysinfo
from ..cmdtable.registry import REDACTED, command
from ..errors import SYNTAX, RedisError
from ..keyspace.tracking import TrackState
from ..keyspace.watch import unwatch_all
from ..net.client import client_class
from ..protocol.resp import OK, ONE, PONG, ZERO, bulk, bulk_array, help_reply, integer, map_header, verbatim
from ..util import parse_int, parse_keyword


@command("ping", flags=("pubsub_context",))
def ping(c, argv):
    if len(argv) > 2:
        raise RedisError("ERR wrong number of arguments for 'ping' command")
    if c.resp == 2 and (c.pubsub_channels or c.pubsub_patterns or c.pubsub_shard):
        msg = argv[1] if len(argv) == 2 else b""
        return b"*2\r\n$4\r\npong\r\n" + bulk(msg)
    if len(argv) == 2:
        return bulk(argv[1])
    return PONG


@command("echo")
def echo(c, argv):
    return bulk(argv[1])


@command("quit", flags=("pubsub_context", "no_queue", "ends_multi"))
def quit_(c, argv):
    c.close_after_reply = True
    c.update_slow()
    return OK


def clear_client_state(c):
    srv = c.server
    if c.multi is not None:
        c.multi = None
        c.multi_error = False
    if c.watched:
        unwatch_all(c)
    c.dirty_cas = False
    c.db = srv.dbs[0]
    c.resp = 2
    c.name = None
    if srv.pubsub is not None:
        srv.pubsub.unsubscribe_all(c, notify=False)
    if c.monitor:
        c.monitor = False
        try:
            srv.monitors.remove(c)
        except ValueError:
            pass
        srv.update_server_slow()
    c.reply_mode = 0
    if c.tracking:
        srv.tracking.disable(c)
    c.no_evict = False
    c.no_touch = False
    # lib-name and lib-ver stay: the library behind the connection is the same
    c.fieldsets = None
    c.user = srv.acl.default
    c.authenticated = srv.acl.auth_free
    c.update_slow()


@command("reset", flags=("pubsub_context", "no_queue", "ends_multi"))
def reset(c, argv):
    clear_client_state(c)
    return b"+RESET\r\n"


@command("select")
def select(c, argv):
    try:
        idx = parse_int(argv[1], RedisError("ERR value is not an integer or out of range"))
    except RedisError:
        raise
    if idx < -(2**31) or idx > 2**31 - 1:
        raise RedisError("ERR value is out of range")
    if c.server.config["cluster-enabled"] and idx != 0:
        raise RedisError("ERR SELECT is not allowed in cluster mode")
    if idx < 0 or idx >= len(c.server.dbs):
        raise RedisError("ERR DB index is out of range")
    c.db = c.server.dbs[idx]
    return OK


# SLOWLOG and MONITOR never show passwords (Redis's redactClientCommandArgument).
def redact_auth(argv):
    return [argv[0]] + [REDACTED] * (len(argv) - 1)


def redact_hello(argv):
    out = list(argv)
    n = len(out)
    i = 2
    while i < n:
        opt = out[i].lower()
        if opt == b"auth" and i + 2 < n:
            out[i + 1] = out[i + 2] = REDACTED
            i += 3
        elif opt == b"setname" and i + 1 < n:
            i += 2
        else:
            i += 1
    return out


@command("auth", redact=redact_auth)
def auth(c, argv):
    if len(argv) > 3:
        raise SYNTAX
    acl = c.server.acl
    if len(argv) == 2:
        if acl.default.nopass:
            raise RedisError("ERR AUTH <password> called without any password configured for the default "
                             "user. Are you sure your configuration is correct?")
        user, password = b"default", argv[1]
    else:
        user, password = argv[1], argv[2]
    if acl.authenticate(c, user, password, argv[0]):
        return OK
    raise RedisError("WRONGPASS invalid username-password pair or user is disabled.")


def valid_client_name(name: bytes) -> bool:
    return all(33 <= ch <= 126 for ch in name)


@command("hello", redact=redact_hello)
def hello(c, argv):
    ver = 0
    j = 1
    n = len(argv)
    if n >= 2:
        ver = parse_int(argv[1], RedisError("ERR Protocol version is not an integer or out of range"))
        j = 2
        if ver < 2 or ver > 3:
            raise RedisError("NOPROTO unsupported protocol version")
    # Redis 7.2+: every option is checked first, then the credentials, and
    # the name is set only once the client is authenticated
    auth = name = None
    while j < n:
        more = n - 1 - j
        opt = argv[j].lower()
        if opt == b"auth" and more >= 2:
            auth = (argv[j + 1], argv[j + 2])
            j += 3
        elif opt == b"setname" and more:
            if not valid_client_name(argv[j + 1]):
                raise RedisError("ERR Client names cannot contain spaces, newlines or special characters.")
            name = argv[j + 1]
            j += 2
        else:
            raise RedisError("ERR Syntax error in HELLO option '%s'" % argv[j].decode("utf-8", "replace"))
    if auth is not None and not c.server.acl.authenticate(c, auth[0], auth[1], argv[0]):
        raise RedisError("WRONGPASS invalid username-password pair or user is disabled.")
    if not c.authenticated:
        raise RedisError("NOAUTH HELLO must be called with the client already authenticated, otherwise the "
                         "HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select "
                         "the RESP protocol version at the same time")
    if name is not None:
        c.name = name or None
    if ver:
        c.resp = ver
        c.update_slow()
    srv = c.server
    parts = [map_header(c.resp, 7),
             bulk(b"server"), bulk(b"redis"),
             bulk(b"version"), bulk(sysinfo.REDIS_VERSION_BYTES),
             bulk(b"proto"), integer(c.resp),
             bulk(b"id"), integer(c.id),
             bulk(b"mode"), bulk(b"cluster" if srv.config["cluster-enabled"] else b"standalone"),
             bulk(b"role"), bulk(b"replica" if srv.is_replica else b"master"),
             bulk(b"modules"), srv.modules.list_reply(c.resp)]
    return b"".join(parts)


# -- CLIENT -------------------------------------------------------------------

_CLIENT_TYPES = {b"normal", b"master", b"replica", b"slave", b"pubsub"}
_YES_NO = {b"yes": True, b"no": False}
_ON_OFF = {b"on": True, b"off": False}


def _client_type(c) -> bytes:
    """CLIENT LIST / CLIENT KILL's TYPE of a client (net.client.client_class)."""
    t = client_class(c)
    return b"replica" if t == "slave" else t.encode()


@command("client|id")
def client_id(c, argv):
    return integer(c.id)


@command("client|info")
def client_info(c, argv):
    return verbatim(c.resp, (c.info_string(argv) + "\n").encode())


@command("client|list")
def client_list(c, argv):
    # a client being closed (evicted, over its output limit) is gone for
    # Redis already: it frees such clients before the next command runs
    clients = [x for x in c.server.clients.values() if not x.closing]
    n = len(argv)
    if n == 4 and argv[2].lower() == b"type":
        t = argv[3].lower()
        if t not in _CLIENT_TYPES:
            raise RedisError("ERR Unknown client type '%s'" % argv[3].decode("utf-8", "replace"))
        if t == b"slave":
            t = b"replica"
        clients = [x for x in clients if _client_type(x) == t]
    elif n > 3 and argv[2].lower() == b"id":
        ids = set()
        for a in argv[3:]:
            v = parse_int(a, RedisError("ERR Invalid client ID"))
            if v <= 0:
                raise RedisError("ERR Invalid client ID")
            ids.add(v)
        clients = [x for x in clients if x.id in ids]
    elif n != 2:
        raise SYNTAX
    clients.sort(key=lambda x: x.id)
    text = "".join(x.info_string(argv if x is c else None) + "\n" for x in clients)
    return verbatim(c.resp, text.encode())


@command("client|reply")
def client_reply(c, argv):
    mode = argv[2].lower()
    if mode == b"on":
        c.reply_mode = 0
        c.update_slow()
        return OK
    if mode == b"off":
        c.reply_mode = 1
        c.update_slow()
        return None
    if mode == b"skip":
        if c.reply_mode == 0:
            c.reply_mode = 2
        c.update_slow()
        return None
    raise SYNTAX


@command("client|no-evict")
def client_no_evict(c, argv):
    c.no_evict = parse_keyword(argv[2], _ON_OFF)
    return OK


@command("client|no-touch")
def client_no_touch(c, argv):
    c.no_touch = parse_keyword(argv[2], _ON_OFF)
    return OK


@command("client|setinfo")
def client_setinfo(c, argv):
    attr = argv[2].lower()
    if attr not in (b"lib-name", b"lib-ver"):
        raise RedisError(b"ERR Unrecognized option '%s'" % argv[2])
    val = argv[3]
    if not valid_client_name(val):
        raise RedisError(b"ERR %s cannot contain spaces, newlines or special characters." % argv[2])
    if attr == b"lib-name":
        c.lib_name = val or None
    else:
        c.lib_ver = val or None
    return OK


@command("client|kill")
def client_kill(c, argv):
    srv = c.server
    n = len(argv)
    if n == 3:
        addr = argv[2].decode("utf-8", "replace")
        for x in list(srv.clients.values()):
            if x.addr == addr:
                _kill(c, x)
                return OK
        raise RedisError("ERR No such client")
    cid = None
    ctype = None
    max_age = 0
    addr = laddr = user = None
    skipme = True
    i = 2
    while i < n:
        more = n - i - 1
        opt = argv[i].lower()
        if not more:
            raise SYNTAX
        val = argv[i + 1]
        if opt == b"id":
            cid = parse_int(val, RedisError("ERR client-id should be greater than 0"))
            if cid <= 0:
                raise RedisError("ERR client-id should be greater than 0")
        elif opt == b"maxage":
            max_age = parse_int(val, RedisError("ERR maxage is not an integer or out of range"))
            if max_age <= 0:
                raise RedisError("ERR maxage should be greater than 0")
        elif opt == b"type":
            t = val.lower()
            if t not in _CLIENT_TYPES:
                raise RedisError("ERR Unknown client type '%s'" % val.decode("utf-8", "replace"))
            ctype = b"replica" if t == b"slave" else t
        elif opt == b"addr":
            addr = val.decode("utf-8", "replace")
        elif opt == b"laddr":
            laddr = val.decode("utf-8", "replace")
        elif opt == b"user":
            user = srv.acl.get(val)
            if user is None:
                raise RedisError("ERR No such user '%s'" % val.decode("utf-8", "replace"))
        elif opt == b"skipme":
            skipme = parse_keyword(val, _YES_NO)
        else:
            raise SYNTAX
        i += 2
    killed = 0
    now = time.monotonic()
    for x in list(srv.clients.values()):
        if cid is not None and x.id != cid:
            continue
        if ctype is not None and _client_type(x) != ctype:
            continue
        if addr is not None and x.addr != addr:
            continue
        if laddr is not None and x.laddr != laddr:
            continue
        if user is not None and x.user is not user:
            continue
        if x is c and skipme:
            continue
        if max_age and int(now - x.ctime) < max_age:
            continue
        _kill(c, x)
        killed += 1
    return integer(killed)


def _kill(me, target):
    if target is me:
        me.close_after_reply = True
        me.update_slow()
    else:
        target.killed = True
        target.drop()


@command("client|unblock")
def client_unblock(c, argv):
    err = False
    if len(argv) == 4:
        err = parse_keyword(argv[3], {b"timeout": False, b"error": True},
                            RedisError("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"))
    cid = parse_int(argv[2])
    target = c.server.clients.get(cid)
    h = c.server.blocking_handler
    if target is not None and target.blocked and h is not None:
        h.unblock(target, error=err)
        return ONE
    return ZERO


@command("client|setname")
def client_setname(c, argv):
    name = argv[2]
    if not valid_client_name(name):
        raise RedisError("ERR Client names cannot contain spaces, newlines or special characters.")
    c.name = name or None
    return OK


@command("client|getname")
def client_getname(c, argv):
    if c.name:
        return bulk(c.name)
    return c.null


@command("client|unpause")
def client_unpause(c, argv):
    c.server.unpause()
    return OK


@command("client|pause")
def client_pause(c, argv):
    kind = "all"
    if len(argv) == 4:
        kind = parse_keyword(argv[3], {b"write": "write", b"all": "all"},
                             RedisError("ERR CLIENT PAUSE mode must be WRITE or ALL"))
    ms = parse_timeout_ms(argv[2])
    c.server.pause(kind, time.monotonic() + ms / 1000.0)
    return OK


def parse_timeout_ms(b) -> int:
    v = parse_int(b, RedisError("ERR timeout is not an integer or out of range"))
    if v < 0:
        raise RedisError("ERR timeout is negative")
    return v


@command("client|trackinginfo")
def client_trackinginfo(c, argv):
    st = c.tracking
    if st:
        flags = [b"on"] + [name for on, name in (
            (st.bcast, b"bcast"), (st.optin, b"optin"), (st.optin and st.caching, b"caching-yes"),
            (st.optout, b"optout"), (st.optout and st.caching, b"caching-no"), (st.noloop, b"noloop"),
            (st.broken, b"broken_redirect")) if on]
    else:
        flags = [b"off"]
    prefixes = st.prefixes if st else []
    set_hdr = b"~%d\r\n" if c.resp > 2 else b"*%d\r\n"
    return b"".join([map_header(c.resp, 3),
                     bulk(b"flags"), set_hdr % len(flags), b"".join(bulk(f) for f in flags),
                     bulk(b"redirect"), integer(st.redirect if st else -1),
                     bulk(b"prefixes"), b"*%d\r\n" % len(prefixes), b"".join(bulk(p) for p in prefixes)])


@command("client|getredir")
def client_getredir(c, argv):
    st = c.tracking
    return integer(st.redirect if st else -1)


def _prefix_overlap(a, b) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


@command("client|tracking")
def client_tracking(c, argv):
    srv = c.server
    redirect = 0
    bcast = optin = optout = noloop = False
    prefixes = []
    j = 3
    n = len(argv)
    while j < n:
        opt = argv[j].lower()
        more = j + 1 < n
        if opt == b"redirect" and more:
            j += 1
            if redirect:
                raise RedisError("ERR A client can only redirect to a single other client")
            redirect = parse_int(argv[j], RedisError("ERR value is not an integer or out of range"))
            if redirect not in srv.clients:
                raise RedisError("ERR The client ID you want redirect to does not exist")
        elif opt == b"bcast":
            bcast = True
        elif opt == b"optin":
            optin = True
        elif opt == b"optout":
            optout = True
        elif opt == b"noloop":
            noloop = True
        elif opt == b"prefix" and more:
            j += 1
            prefixes.append(argv[j])
        else:
            raise SYNTAX
        j += 1
    mode = argv[2].lower()
    if mode == b"on":
        st = c.tracking
        if not bcast and prefixes:
            raise RedisError("ERR PREFIX option requires BCAST mode to be enabled")
        if st and st.bcast != bcast:
            raise RedisError("ERR You can't switch BCAST mode on/off before disabling tracking for this "
                             "client, and then re-enabling it with a different mode.")
        if bcast and (optin or optout):
            raise RedisError("ERR OPTIN and OPTOUT are not compatible with BCAST")
        if optin and optout:
            raise RedisError("ERR You can't specify both OPTIN mode and OPTOUT mode")
        if st and ((optin and st.optout) or (optout and st.optin)):
            raise RedisError("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this "
                             "client, and then re-enabling it with a different mode.")
        if bcast:
            for i, p in enumerate(prefixes):
                for others, what in ((st.prefixes if st else [], "an existing"),
                                     (prefixes[i + 1:], "another provided")):
                    for q in others:
                        if _prefix_overlap(p, q):
                            raise RedisError(
                                "ERR Prefix '%s' overlaps with %s prefix '%s'. Prefixes for a single "
                                "client must not overlap." % (p.decode("utf-8", "replace"), what,
                                                              q.decode("utf-8", "replace")))
        new = st if st else TrackState()
        new.redirect = redirect
        new.broken = False
        new.bcast = bcast
        new.optin = optin
        new.optout = optout
        new.noloop = noloop
        srv.tracking.enable(c, new, prefixes)
        return OK
    if mode == b"off":
        srv.tracking.disable(c)
        return OK
    raise SYNTAX


@command("client|caching")
def client_caching(c, argv):
    st = c.tracking
    if not st:
        raise RedisError("ERR CLIENT CACHING can be called only when the client is in tracking mode with "
                         "OPTIN or OPTOUT mode enabled")
    opt = argv[2].lower()
    if opt == b"yes":
        if not st.optin:
            raise RedisError("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
    elif opt == b"no":
        if not st.optout:
            raise RedisError("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
    else:
        raise SYNTAX
    st.caching = True
    return OK


@command("client|help")
def client_help(c, argv):
    return help_reply(b"CLIENT", b"""\
CACHING (YES|NO)
    Enable/disable tracking of keys for the next command (OPTIN/OPTOUT).
GETREDIR
    Return the ID tracking notifications are redirected to.
GETNAME
    Return the name of this connection.
ID
    Return the ID of this connection.
INFO
    Return information about this connection.
KILL <ip:port>
    Kill the connection from <ip:port>.
KILL <option> <value> [<option> <value> [...]]
    Kill connections by ID, TYPE, ADDR, LADDR, USER, SKIPME, MAXAGE (older
    than <maxage> seconds).
LIST [options ...]
    Return information about connections (TYPE or ID filters).
UNPAUSE
    Stop a pause started by CLIENT PAUSE.
PAUSE <timeout> [WRITE|ALL]
    Suspend clients for <timeout> milliseconds.
REPLY (ON|OFF|SKIP)
    Control the replies sent to this connection.
SETNAME <name>
    Name this connection.
SETINFO <option> <value>
    Record the client library of this connection: LIB-NAME <name> or
    LIB-VER <version>.
UNBLOCK <clientid> [TIMEOUT|ERROR]
    Unblock a client blocked in a blocking command.
TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]
         [OPTIN] [OPTOUT] [NOLOOP]
    Control server assisted client side caching.
TRACKINGINFO
    Report tracking status for this connection.
NO-EVICT (ON|OFF)
    Protect this connection from client eviction.
NO-TOUCH (ON|OFF)
    While on, the commands of this connection (but TOUCH) leave the keys'
    LRU/LFU information alone.
""")


_ = bulk_array
