"""COMMAND INFO's and COMMAND DOCS's replies of a command, derived from the
one table (Redis 7.0's metadata plus the decorator's facts) and cached
per command and protocol; the COMMAND command itself is
commands/command_cmd.py.
"""

from __future__ import annotations

from ..protocol.resp import bulk, integer, map_header, set_header, simple
from . import keys
from .docs import summary as _summary
from .keys import legacy_range
from .registry import ACL_CATEGORIES

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


def _status_set(resp, names):
    return set_header(resp, len(names)) + b"".join(simple(n) for n in names)


def key_flags_reply(resp, flags) -> bytes:
    fs = set(flags)
    return _status_set(resp, [_KEY_FLAG_OUT[f] for f in _KEY_FLAGS if f in fs])


def command_flags(cmd):
    first, last, step, movable = legacy_range(cmd)
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
    keys.forget(cmd)


def command_info_reply(cmd, resp) -> bytes:
    if cmd is None:
        # an unknown name is a null (RESP2's null bulk string), as Redis
        return b"_\r\n" if resp >= 3 else b"$-1\r\n"
    k = (cmd, resp)
    r = _info_cache.get(k)
    if r is not None:
        return r
    first, last, step, _ = legacy_range(cmd)
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
        name = a["name"].lower()
        fields = [(b"name", bulk(name.encode())), (b"type", bulk(a["type"].encode()))]
        if a["type"] not in ("oneof", "block"):
            # Redis 7.2: how the argument is shown in a syntax line (its
            # name unless the metadata says otherwise)
            fields.append((b"display_text", bulk(a.get("display_text", name).encode())))
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
        # a newer command's entry (data/commands/) may carry its own summary
        fields.append((b"summary", bulk((m.get("summary") or _summary(cmd.fullname)).encode())))
    elif m.get("summary"):      # a module command: what its registration gave
        fields.append((b"summary", bulk(m["summary"].encode())))
    if m.get("since"):
        fields.append((b"since", bulk(m["since"].encode())))
    # the JSON spells groups as identifiers ("sorted_set"); Redis reports
    # them with dashes ("sorted-set")
    fields.append((b"group", bulk(cmd.group.replace("_", "-").encode())))
    if m.get("complexity"):
        fields.append((b"complexity", bulk(m["complexity"].encode())))
    # a loaded module's name, or the module Redis 8 reports a built-in
    # data type's command as (its entry's "module": "bf" ...)
    module = cmd.module if cmd.module is not None else m.get("module")
    if module is not None:
        fields.append((b"module", bulk(module.encode())))
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
