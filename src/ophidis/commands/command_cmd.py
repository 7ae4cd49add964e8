"""COMMAND and its subcommands, plus key extraction from key specs.

Everything is derived from the one command table (``commands.ALL``): the
interface facts come from Redis 7.0's metadata (``data/commands.json``), so
COMMAND INFO / DOCS describe exactly the commands this server implements.

``get_keys(cmd, argv)`` is the key extractor shared with cluster and ACL
code: it follows Redis's getKeysFromCommandWithSpecs (key specs first,
command-specific extractors for movable or variable-flag commands).
"""

from __future__ import annotations

from ..errors import SYNTAX, RedisError
from ..protocol.resp import bulk, integer, map_header, set_header, simple
from ..util import atoi, stringmatch
from . import ALL, TABLE, command
from .docs import summary as _summary

# -- flag tables (output order is Redis's) -------------------------------------------

_CMD_FLAGS = ("write", "readonly", "denyoom", "module", "admin", "pubsub", "noscript",
              "blocking", "loading", "stale", "skip_monitor", "skip_slowlog", "asking",
              "fast", "no_auth", "no_mandatory_keys", "no_async_loading", "no_multi",
              "movablekeys", "allow_busy")

_KEY_FLAGS = ("RO", "RW", "OW", "RM", "ACCESS", "UPDATE", "INSERT", "DELETE", "NOT_KEY",
              "INCOMPLETE", "VARIABLE_FLAGS")
_KEY_FLAG_OUT = {"RO": b"RO", "RW": b"RW", "OW": b"OW", "RM": b"RM", "ACCESS": b"access",
                 "UPDATE": b"update", "INSERT": b"insert", "DELETE": b"delete",
                 "NOT_KEY": b"not_key", "INCOMPLETE": b"incomplete",
                 "VARIABLE_FLAGS": b"variable_flags"}

ACL_CATEGORIES = ("keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
                  "bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow",
                  "blocking", "dangerous", "connection", "transaction", "scripting")


def _status_set(resp, names):
    return set_header(resp, len(names)) + b"".join(simple(n) for n in names)


def key_flags_reply(resp, flags) -> bytes:
    fs = set(flags)
    return _status_set(resp, [_KEY_FLAG_OUT[f] for f in _KEY_FLAGS if f in fs])


# -- legacy (first, last, step) and movablekeys ------------------------------------------

def _legacy_range(cmd):
    """Redis's populateCommandLegacyRangeSpec: returns (first, last, step, movable)."""
    specs = cmd.key_specs
    if not specs:
        return 0, 0, 0, False
    movable = False
    if len(specs) == 1 and "index" in specs[0]["begin_search"] and "range" in specs[0]["find_keys"]:
        s = specs[0]
        first = s["begin_search"]["index"]["pos"]
        rng = s["find_keys"]["range"]
        last = rng["lastkey"]
        if last >= 0:
            last += first
        return first, last, rng["step"], "INCOMPLETE" in s.get("flags", ())
    U32 = 0xFFFFFFFF
    first = None
    last = 0
    prev_last = 0
    for s in specs:
        bs, fk = s["begin_search"], s["find_keys"]
        if "index" not in bs or "range" not in fk:
            movable = True
            continue
        pos = bs["index"]["pos"]
        rng = fk["range"]
        if rng["step"] != 1 or (prev_last and prev_last != pos - 1):
            movable = True
            continue
        if "INCOMPLETE" in s.get("flags", ()):
            movable = True
        first = pos if first is None else min(first, pos)
        abs_last = rng["lastkey"]
        if abs_last >= 0:
            abs_last += pos
        # unsigned comparison, as in Redis: negative values win
        if (abs_last & U32) > (last & U32):
            last = abs_last
        prev_last = last
    if first is None:
        return 0, 0, 0, True
    return first, last, 1, movable


def command_flags(cmd):
    first, last, step, movable = _legacy_range(cmd)
    fs = cmd.flags
    out = []
    for f in _CMD_FLAGS:
        if f == "movablekeys":
            if movable:
                out.append(b"movablekeys")
        elif f in fs:
            out.append(f.encode())
    return out


def acl_categories(cmd):
    cats = set(cmd.acl)
    return [b"@" + c.encode() for c in ACL_CATEGORIES if c in cats]


# -- COMMAND INFO ----------------------------------------------------------------------------

def _key_spec_reply(resp, s) -> bytes:
    out = []
    n = 3
    if s.get("notes"):
        n += 1
    out.append(map_header(resp, n))
    if s.get("notes"):
        out.append(bulk(b"notes"))
        out.append(bulk(s["notes"].encode()))
    out.append(bulk(b"flags"))
    out.append(key_flags_reply(resp, s.get("flags", ())))
    out.append(bulk(b"begin_search"))
    bs = s["begin_search"]
    if "index" in bs:
        out += [map_header(resp, 2), bulk(b"type"), bulk(b"index"), bulk(b"spec"),
                map_header(resp, 1), bulk(b"index"), integer(bs["index"]["pos"])]
    elif "keyword" in bs:
        kw = bs["keyword"]
        out += [map_header(resp, 2), bulk(b"type"), bulk(b"keyword"), bulk(b"spec"),
                map_header(resp, 2), bulk(b"keyword"), bulk(kw["keyword"].encode()),
                bulk(b"startfrom"), integer(kw["startfrom"])]
    else:
        out += [map_header(resp, 2), bulk(b"type"), bulk(b"unknown"), bulk(b"spec"), map_header(resp, 0)]
    out.append(bulk(b"find_keys"))
    fk = s["find_keys"]
    if "range" in fk:
        r = fk["range"]
        out += [map_header(resp, 2), bulk(b"type"), bulk(b"range"), bulk(b"spec"),
                map_header(resp, 3), bulk(b"lastkey"), integer(r["lastkey"]),
                bulk(b"keystep"), integer(r["step"]), bulk(b"limit"), integer(r["limit"])]
    elif "keynum" in fk:
        r = fk["keynum"]
        out += [map_header(resp, 2), bulk(b"type"), bulk(b"keynum"), bulk(b"spec"),
                map_header(resp, 3), bulk(b"keynumidx"), integer(r["keynumidx"]),
                bulk(b"firstkey"), integer(r["firstkey"]), bulk(b"keystep"), integer(r["step"])]
    else:
        out += [map_header(resp, 2), bulk(b"type"), bulk(b"unknown"), bulk(b"spec"), map_header(resp, 0)]
    return b"".join(out)


_info_cache: dict = {}     # (Command, resp) -> COMMAND INFO's reply
_docs_cache: dict = {}     # (Command, resp) -> COMMAND DOCS's reply


def forget(cmd):
    """Drop what is cached about a command taken out of the table (MODULE UNLOAD)."""
    for resp in (2, 3):
        _info_cache.pop((cmd, resp), None)
        _docs_cache.pop((cmd, resp), None)
    _SPEC_KINDS.pop(cmd, None)


def command_info_reply(cmd, resp) -> bytes:
    if cmd is None:
        return b"_\r\n" if resp >= 3 else b"*-1\r\n"
    k = (cmd, resp)
    r = _info_cache.get(k)
    if r is not None:
        return r
    first, last, step, _ = _legacy_range(cmd)
    tips = [t.lower().encode() for t in cmd.meta.get("command_tips", ())]
    out = [b"*10\r\n", bulk(cmd.fullname.encode()), integer(cmd.arity) if cmd.arity >= 0 else b":%d\r\n" % cmd.arity,
           _status_set(resp, command_flags(cmd)),
           b":%d\r\n" % first, b":%d\r\n" % last, b":%d\r\n" % step,
           _status_set(resp, acl_categories(cmd)),
           set_header(resp, len(tips)) + b"".join(bulk(t) for t in tips),
           set_header(resp, len(cmd.key_specs)) + b"".join(_key_spec_reply(resp, s) for s in cmd.key_specs)]
    if cmd.subcommands:
        subs = list(cmd.subcommands.values())
        out.append(b"*%d\r\n" % len(subs) + b"".join(command_info_reply(s, resp) for s in subs))
    else:
        out.append(set_header(resp, 0))
    r = b"".join(out)
    _info_cache[k] = r
    return r


# -- COMMAND DOCS ------------------------------------------------------------------------------

def _args_reply(resp, args) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        # names are reported lower case and tokens upper case, as Redis's
        # generated command table has them
        fields = [(b"name", bulk(a["name"].lower().encode())), (b"type", bulk(a["type"].encode()))]
        if "key_spec_index" in a:
            fields.append((b"key_spec_index", integer(a["key_spec_index"])))
        if "token" in a:
            # Redis's generator pastes the token into a C string literal:
            # MIGRATE's token '""' becomes """" there, the empty string
            tok = a["token"]
            fields.append((b"token", bulk(b"" if tok == '""' else tok.upper().encode())))
        if "summary" in a:
            fields.append((b"summary", bulk(a["summary"].encode())))
        if "since" in a:
            fields.append((b"since", bulk(a["since"].encode())))
        if "deprecated_since" in a:
            fields.append((b"deprecated_since", bulk(a["deprecated_since"].encode())))
        flags = [f for f in ("optional", "multiple", "multiple_token") if a.get(f)]
        if flags:
            fields.append((b"flags", _status_set(resp, [f.encode() for f in flags])))
        if a["type"] in ("oneof", "block"):
            fields.append((b"arguments", _args_reply(resp, a.get("arguments", []))))
        out.append(map_header(resp, len(fields)))
        for k, v in fields:
            out.append(bulk(k))
            out.append(v)
    return b"".join(out)


def command_docs_reply(cmd, resp) -> bytes:
    k = (cmd, resp)
    r = _docs_cache.get(k)
    if r is not None:
        return r
    m = cmd.meta
    fields = []
    if cmd.module is None:
        fields.append((b"summary", bulk(_summary(cmd.fullname).encode())))
    elif m.get("summary"):      # a module command: what its registration gave
        fields.append((b"summary", bulk(m["summary"].encode())))
    if m.get("since"):
        fields.append((b"since", bulk(m["since"].encode())))
    # the JSON spells groups as identifiers ("sorted_set"); Redis reports
    # them with dashes ("sorted-set")
    fields.append((b"group", bulk(cmd.group.replace("_", "-").encode())))
    if m.get("complexity"):
        fields.append((b"complexity", bulk(m["complexity"].encode())))
    if cmd.module is not None:
        fields.append((b"module", bulk(cmd.module.encode())))
    doc_flags = []
    if m.get("deprecated_since"):
        doc_flags.append(b"deprecated")
    if "syscmd" in cmd.flags:     # Redis's doc flag: an internal command
        doc_flags.append(b"syscmd")
    if doc_flags:
        fields.append((b"doc_flags", _status_set(resp, doc_flags)))
    if m.get("deprecated_since"):
        fields.append((b"deprecated_since", bulk(m["deprecated_since"].encode())))
    if m.get("replaced_by"):
        fields.append((b"replaced_by", bulk(m["replaced_by"].encode())))
    if m.get("arguments"):
        fields.append((b"arguments", _args_reply(resp, m["arguments"])))
    if cmd.subcommands:
        subs = list(cmd.subcommands.values())
        fields.append((b"subcommands", map_header(resp, len(subs)) + b"".join(
            bulk(s.fullname.encode()) + command_docs_reply(s, resp) for s in subs)))
    out = [map_header(resp, len(fields))]
    for key, v in fields:
        out.append(bulk(key))
        out.append(v)
    r = b"".join(out)
    _docs_cache[k] = r
    return r


# -- lookup -----------------------------------------------------------------------------------

def top_level():
    return [c for name, c in ALL.items() if "|" not in name]


def lookup_by_name(name: bytes):
    """Redis's lookupCommandBySds: "get" or "config|get" (strict)."""
    parts = name.split(b"|")
    if len(parts) > 2:
        return None
    cmd = TABLE.get(parts[0]) or TABLE.get(parts[0].lower())
    if cmd is None:
        return None
    if len(parts) == 1:
        return cmd
    if not cmd.subcommands:
        return None
    return cmd.subcommands.get(parts[1].lower())


def lookup_argv(argv):
    """Redis's lookupCommand (non strict) over a command line."""
    cmd = TABLE.get(argv[0]) or TABLE.get(argv[0].lower())
    if cmd is None or len(argv) == 1 or not cmd.subcommands:
        return cmd
    return cmd.subcommands.get(argv[1].lower())


# -- key extraction -----------------------------------------------------------------------------

def _atoi(b: bytes) -> int:
    """C atoi, wrapped to an int of 32 bits."""
    return ((atoi(b) + 2**31) % 2**32) - 2**31


def _string2ll(b: bytes):
    if not b or len(b) > 20:
        return None
    if b == b"0":
        return 0
    s = b[1:] if b[:1] == b"-" else b
    if not s.isdigit() or s[:1] == b"0":
        return None
    v = int(b)
    if v < -(2**63) or v > 2**63 - 1:
        return None
    return v


def range_last(first, lastkey, limit, argc) -> int:
    """The position of the last key of a find_keys ``range`` spec whose
    first key is at ``first`` (getKeysUsingKeySpecs)."""
    if lastkey >= 0:
        return first + lastkey
    if not limit:
        return argc + lastkey
    return first + ((argc - first) // limit + lastkey)


def keys_from_specs(cmd, argv):
    """getKeysUsingKeySpecs: list of (pos, flags) or None on an invalid spec."""
    argc = len(argv)
    keys = []
    for spec in cmd.key_specs:
        flags = spec.get("flags", ())
        if "NOT_KEY" in flags:
            continue
        bs = spec["begin_search"]
        if "index" in bs:
            first = bs["index"]["pos"]
        elif "keyword" in bs:
            kw = bs["keyword"]["keyword"].lower().encode()
            sf = bs["keyword"]["startfrom"]
            start = sf if sf > 0 else argc + sf
            end = argc - 1 if sf > 0 else 1
            first = 0
            i = start
            while True:
                if i == end:
                    break
                if i >= argc or i < 1:
                    break
                if argv[i].lower() == kw:
                    first = i + 1
                    break
                i = i + 1 if start <= end else i - 1
            if not first:
                continue
        else:
            return None
        fk = spec["find_keys"]
        if "range" in fk:
            r = fk["range"]
            step = r["step"]
            last = range_last(first, r["lastkey"], r["limit"], argc)
        elif "keynum" in fk:
            r = fk["keynum"]
            step = r["step"]
            if r["keynumidx"] >= argc or first + r["keynumidx"] >= argc:
                return None
            n = _string2ll(argv[first + r["keynumidx"]])
            if n is None or n < 0:
                return None
            first += r["firstkey"]
            last = first + n - 1
        else:
            return None
        if last >= argc or last < first or first >= argc:
            return None
        for i in range(first, last + 1, step):
            keys.append((i, flags))
        if "INCOMPLETE" in flags:
            return None
    return keys


def _generic(store, count_ofs, first_ofs, step):
    def fn(cmd, argv):
        argc = len(argv)
        if count_ofs >= argc:
            return []
        num = _atoi(argv[count_ofs])
        if num < 1 or num > (argc - first_ofs) // step:
            return []
        keys = [(first_ofs + i * step, ()) for i in range(num)]
        if store:
            keys.append((store, ()))
        return keys
    return fn


def _sort_ro_keys(cmd, argv):
    return [(1, ("RO", "ACCESS"))]


def _sort_keys(cmd, argv):
    keys = [(1, ("RO", "ACCESS"))]
    store = None
    argc = len(argv)
    skips = {b"limit": 2, b"get": 1, b"by": 1}
    i = 2
    while i < argc:
        a = argv[i].lower()
        # Redis's scan: a skip-list keyword is checked first, STORE only
        # matches when it is followed by an argument.
        if a in skips:
            i += skips[a]
        elif a == b"store" and i + 1 < argc:
            store = i + 1
        i += 1
    if store is not None:
        keys.append((store, ("OW", "UPDATE")))
    return keys


def _migrate_keys(cmd, argv):
    argc = len(argv)
    first, num = 3, 1
    if argc > 6:
        skips = {b"copy": 0, b"replace": 0, b"auth": 1, b"auth2": 2}
        i = 6
        while i < argc:
            a = argv[i].lower()
            if a == b"keys":
                if len(argv[3]) > 0:
                    num = 0
                else:
                    first = i + 1
                    num = argc - first
                break
            i += skips.get(a, 0)
            i += 1
    return [(first + i, ("RW", "ACCESS", "DELETE")) for i in range(num)]


def _georadius_keys(cmd, argv):
    stored = -1
    i = 5
    while i < len(argv):
        a = argv[i].lower()
        if a in (b"store", b"storedist") and i + 1 < len(argv):
            stored = i + 1
            i += 1
        i += 1
    keys = [(1, ())]
    if stored != -1:
        keys.append((stored, ()))
    return keys


def _xread_keys(cmd, argv):
    argc = len(argv)
    streams = -1
    i = 1
    while i < argc:
        a = argv[i].lower()
        if a in (b"block", b"count"):
            i += 1
        elif a == b"group":
            i += 2
        elif a == b"noack":
            pass
        elif a == b"streams":
            streams = i
            break
        else:
            break
        i += 1
    num = argc - streams - 1 if streams != -1 else 0
    if streams == -1 or num == 0 or num % 2:
        return []
    num //= 2
    return [(i, ()) for i in range(streams + 1, argc - num)]


def _set_keys(cmd, argv):
    for a in argv[3:]:
        if a.lower() == b"get":
            return [(1, ("RW", "ACCESS", "UPDATE"))]
    return [(1, ("OW", "UPDATE"))]


def _bitfield_keys(cmd, argv):
    readonly = True
    argc = len(argv)
    i = 2
    while i < argc:
        rem = argc - i - 1
        a = argv[i].lower()
        if a == b"get" and rem >= 2:
            i += 2
        elif a in (b"set", b"incrby") and rem >= 3:
            readonly = False
            break
        elif a == b"overflow" and rem >= 1:
            i += 1
        else:
            readonly = False
            break
        i += 1
    return [(1, ("RO", "ACCESS") if readonly else ("RW", "ACCESS", "UPDATE"))]


# Redis's command-specific key extractors (getkeys_proc), by command name.
GETKEYS_PROCS = {
    "bitfield": _bitfield_keys,
    "blmpop": _generic(0, 2, 3, 1), "bzmpop": _generic(0, 2, 3, 1),
    "lmpop": _generic(0, 1, 2, 1), "zmpop": _generic(0, 1, 2, 1),
    "sintercard": _generic(0, 1, 2, 1),
    "eval": _generic(0, 2, 3, 1), "evalsha": _generic(0, 2, 3, 1),
    "eval_ro": _generic(0, 2, 3, 1), "evalsha_ro": _generic(0, 2, 3, 1),
    "fcall": _generic(0, 2, 3, 1), "fcall_ro": _generic(0, 2, 3, 1),
    "georadius": _georadius_keys, "georadiusbymember": _georadius_keys,
    "migrate": _migrate_keys, "set": _set_keys,
    "sort": _sort_keys, "sort_ro": _sort_ro_keys,
    "xread": _xread_keys, "xreadgroup": _xread_keys,
    "zunion": _generic(0, 1, 2, 1), "zinter": _generic(0, 1, 2, 1),
    "zdiff": _generic(0, 1, 2, 1), "zintercard": _generic(0, 1, 2, 1),
    "zunionstore": _generic(1, 2, 3, 1), "zinterstore": _generic(1, 2, 3, 1),
    "zdiffstore": _generic(1, 2, 3, 1),
}


def key_extractor(cmd):
    """The command's key extractor (Redis's getkeys_proc), or None."""
    return cmd.getkeys_proc or GETKEYS_PROCS.get(cmd.fullname)


_SPEC_KINDS = {}     # command -> (its key specs, has a key spec, has VARIABLE_FLAGS)


def spec_kinds(cmd):
    """(has a key spec that is not NOT_KEY, has a VARIABLE_FLAGS spec),
    computed once per command (again if its key specs are replaced)."""
    kinds = _SPEC_KINDS.get(cmd)
    if kinds is None or kinds[0] is not cmd.key_specs:
        specs = cmd.key_specs
        kinds = _SPEC_KINDS[cmd] = (specs, any("NOT_KEY" not in s.get("flags", ()) for s in specs),
                                    any("VARIABLE_FLAGS" in s.get("flags", ()) for s in specs))
    return kinds[1], kinds[2]


def has_keys(cmd) -> bool:
    """doesCommandHaveKeys."""
    return key_extractor(cmd) is not None or spec_kinds(cmd)[0]


def get_keys_with_flags(cmd, argv):
    """Keys of a command line as [(pos, flags)], or None when the arguments
    are invalid for the key specs and no extractor applies (Redis then
    returns no keys)."""
    has_keyspec, varflags = spec_kinds(cmd)
    if has_keyspec and not varflags:
        r = keys_from_specs(cmd, argv)
        if r is not None:
            return r
    proc = key_extractor(cmd)
    if proc is not None:
        return proc(cmd, argv)
    return None


def cluster_keys(cmd, argv) -> list:
    """The keys getKeysFromCommand gives (what cluster routing hashes):
    the command's key extractor, else its legacy (first, last, step)
    range, which also counts channel arguments (SPUBLISH, SSUBSCRIBE)."""
    proc = key_extractor(cmd)
    if proc is not None:
        r = proc(cmd, argv)
        return [argv[p] for p, _ in r] if r else []
    first, last, step, _ = _legacy_range(cmd)
    if not first or not step:
        return []
    argc = len(argv)
    if last < 0:
        last = argc + last
    if last >= argc:
        return []
    return argv[first:last + 1:step]


def get_keys(cmd, argv):
    """Key names (bytes) in argv for cmd (an empty list when none)."""
    r = get_keys_with_flags(cmd, argv)
    if not r:
        return []
    return [argv[p] for p, _ in r]


# -- the commands -------------------------------------------------------------------------------

@command("command")
def command_(c, argv):
    cmds = top_level()
    return b"*%d\r\n" % len(cmds) + b"".join(command_info_reply(x, c.resp) for x in cmds)


@command("command|count")
def command_count(c, argv):
    return integer(len(top_level()))


@command("command|info")
def command_info(c, argv):
    if len(argv) == 2:
        return command_(c, argv)
    return b"*%d\r\n" % (len(argv) - 2) + b"".join(
        command_info_reply(lookup_by_name(n), c.resp) for n in argv[2:])


@command("command|docs")
def command_docs(c, argv):
    if len(argv) == 2:
        cmds = top_level()
    else:
        cmds = [x for x in (lookup_by_name(n) for n in argv[2:]) if x is not None]
    return map_header(c.resp, len(cmds)) + b"".join(
        bulk(x.fullname.encode()) + command_docs_reply(x, c.resp) for x in cmds)


def _all_with_subs():
    for x in top_level():
        yield x
        for s in x.subcommands.values():
            yield s


@command("command|list")
def command_list(c, argv):
    filt = None
    i = 2
    n = len(argv)
    while i < n:
        more = n - 1 - i
        if argv[i].lower() == b"filterby" and more == 2:
            kind = argv[i + 1].lower()
            if kind not in (b"module", b"aclcat", b"pattern"):
                raise SYNTAX
            filt = (kind, argv[i + 2])
            i += 3
        else:
            raise SYNTAX
    names = []
    for x in _all_with_subs():
        name = x.fullname.encode()
        if filt is not None:
            kind, arg = filt
            if kind == b"module":
                if x.module is None or x.module.lower().encode() != arg.lower():
                    continue
            elif kind == b"aclcat":
                cat = arg.lower().decode("latin-1")
                if cat not in ACL_CATEGORIES or cat not in x.acl:
                    continue
            elif not stringmatch(arg, name, True):
                continue
        names.append(name)
    return b"*%d\r\n" % len(names) + b"".join(bulk(x) for x in names)


def _getkeys_impl(c, argv, with_flags):
    args = argv[2:]
    cmd = lookup_argv(args)
    if cmd is None:
        raise RedisError("ERR Invalid command specified")
    if not has_keys(cmd):
        raise RedisError("ERR The command has no key arguments")
    a = cmd.arity
    n = len(args)
    if (a > 0 and a != n) or n < -a:
        raise RedisError("ERR Invalid number of arguments specified for command")
    keys = get_keys_with_flags(cmd, args)
    if keys is None or (not keys and not key_extractor(cmd)):
        # keyspecs failed and no extractor: Redis's "0 keys" result
        keys = keys or []
    if not keys:
        if "no_mandatory_keys" in cmd.flags:
            return b"*0\r\n"
        raise RedisError("ERR Invalid arguments specified for command")
    out = [b"*%d\r\n" % len(keys)]
    for pos, flags in keys:
        if with_flags:
            out.append(b"*2\r\n" + bulk(args[pos]) + key_flags_reply(c.resp, flags))
        else:
            out.append(bulk(args[pos]))
    return b"".join(out)


@command("command|getkeys")
def command_getkeys(c, argv):
    return _getkeys_impl(c, argv, False)


@command("command|getkeysandflags")
def command_getkeysandflags(c, argv):
    return _getkeys_impl(c, argv, True)


@command("command|help")
def command_help(c, argv):
    lines = [
        "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "(no subcommand)",
        "    Describe every command of this server.",
        "COUNT",
        "    Number of commands of this server.",
        "LIST [FILTERBY (MODULE <name>|ACLCAT <category>|PATTERN <pattern>)]",
        "    Names of the commands, optionally filtered.",
        "INFO [<command-name> ...]",
        "    Describe the given commands (all commands without names).",
        "DOCS [<command-name> ...]",
        "    Documentation of the given commands (all commands without names).",
        "GETKEYS <full-command>",
        "    Key names in a full command line.",
        "GETKEYSANDFLAGS <full-command>",
        "    Key names and their access flags in a full command line.",
        "HELP",
        "    Prints this help.",
    ]
    return b"*%d\r\n" % len(lines) + b"".join(simple(x.encode()) for x in lines)
