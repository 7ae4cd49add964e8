"""Key extraction from the command table's key specs (db.c's
getKeysFromCommandWithSpecs and the command-specific extractors).

``get_keys(cmd, argv)`` is the extractor shared by cluster routing, ACL's
key checks, CLIENT TRACKING, a replica's and memory accounting's key
lists: key specs first, a command-specific extractor (Redis's getkeys_proc)
for movable or variable-flag commands.  ``cluster_keys`` is
getKeysFromCommand as cluster routing reads it (the legacy range counts
channel arguments too).
"""

from __future__ import annotations

from ..util import atoi, try_int

# -- legacy (first, last, step) and movablekeys ------------------------------------------

def legacy_range(cmd):
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


# -- key extraction from argv -----------------------------------------------------------------------------

def _atoi(b: bytes) -> int:
    """C atoi, wrapped to an int of 32 bits."""
    return ((atoi(b) + 2**31) % 2**32) - 2**31


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
            n = try_int(argv[first + r["keynumidx"]])
            if n is None or n < 0:
                return None
            first += r["firstkey"]
            # numkeys keys, step apart (Redis 8.6's fix: with a step of 2,
            # MSETEX's, 7.x's "first + n - 1" gave half of them)
            last = first + (n - 1) * step
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


def forget(cmd):
    """Drop what is computed about a command taken out of the table."""
    _SPEC_KINDS.pop(cmd, None)


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
    first, last, step, _ = legacy_range(cmd)
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
