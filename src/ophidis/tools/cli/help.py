"""Command help for ophidis-cli: HELP, completion and hints, built from the
server's COMMAND DOCS (or the bundled commands.json when it has none).
"""

from __future__ import annotations

import json
import os

from ophidis.protocol import resp as protocol
from ophidis.sysinfo import REDIS_VERSION
from ophidis.tools import resp
from ophidis.tools.cli.output import flush, out
from ophidis.tools.resp import ConnectionClosed, Reply


class HelpEntry:
    __slots__ = ("argv", "full", "is_group", "params", "summary", "since", "group")

    def __init__(self, argv, is_group=False, params="", summary="", since=None, group=""):
        self.argv = argv
        self.full = " ".join(argv)
        self.is_group = is_group
        self.params = params
        self.summary = summary
        self.since = since
        self.group = group


def _arg_flags(spec):
    flags = spec.get("flags") or []
    return ("optional" in flags or spec.get("optional") is True,
            "multiple" in flags or spec.get("multiple") is True,
            "multiple_token" in flags or spec.get("multiple_token") is True)


def _or_empty(s):
    return s if s != "" else '""'


def render_argument(spec) -> str:
    name = spec.get("name", "")
    typ = spec.get("type", "")
    token = spec.get("token")
    optional, multiple, multiple_token = _arg_flags(spec)
    token_part = _or_empty(token) if token is not None else ""
    sub = spec.get("arguments") or []
    if typ in ("key", "string", "integer", "double", "pattern", "unix-time", "token"):
        repeat = _or_empty(name)
    elif typ == "oneof":
        repeat = "|".join(render_argument(a) for a in sub)
    elif typ == "block":
        repeat = " ".join(render_argument(a) for a in sub)
    else:
        repeat = ""
    if token_part and typ != "pure-token":
        token_part += " "
    s = "[" if optional else ""
    s += token_part + repeat
    if multiple:
        s += " [" + (token_part if multiple_token else "") + repeat + " ...]"
    if optional:
        s += "]"
    return s


def _reply_to_doc(r: Reply):
    """Convert a COMMAND DOCS reply node (RESP2 arrays or RESP3 maps) to Python."""
    if r.kind in (resp.MAP,):
        v = r.value
        return {_reply_to_doc(v[i]): _reply_to_doc(v[i + 1]) for i in range(0, len(v), 2)}
    if r.kind in (resp.ARRAY, resp.SET):
        return [_reply_to_doc(e) for e in r.value]
    if r.kind in (resp.BULK, resp.STATUS, resp.VERB):
        return r.value.decode("utf-8", "replace")
    return r.value


def _pairs_to_dict(x):
    if isinstance(x, dict):
        return x
    if isinstance(x, list) and len(x) % 2 == 0 and all(isinstance(x[i], str) for i in range(0, len(x), 2)):
        return {x[i]: x[i + 1] for i in range(0, len(x), 2)}
    return {}


def _normalize_args(args):
    outl = []
    for a in args or []:
        a = _pairs_to_dict(a)
        if "arguments" in a:
            a = dict(a)
            a["arguments"] = _normalize_args(a["arguments"])
        outl.append(a)
    return outl


def build_help(docs: dict):
    """docs: {name: {summary, since, group, arguments, subcommands}} -> sorted HelpEntry list."""
    entries = []
    groups = set()

    def add(name, sub, spec):
        spec = _pairs_to_dict(spec)
        argv = [name.upper()]
        if sub:
            argv.append(sub.split("|", 1)[1].upper())
        e = HelpEntry(argv)
        e.summary = spec.get("summary", "Help not available")
        e.since = spec.get("since")
        e.group = spec.get("group", "generic")
        groups.add(e.group)
        e.params = " ".join(render_argument(a) for a in _normalize_args(spec.get("arguments")))
        entries.append(e)
        subs = _pairs_to_dict(spec.get("subcommands") or {})
        for sname, sspec in subs.items():
            add(name, sname, sspec)

    for name, spec in docs.items():
        add(name, None, spec)
    for g in groups:
        entries.append(HelpEntry(["@" + g], is_group=True))
    entries.sort(key=lambda e: e.full)
    return entries


def docs_from_bundled():
    """Fallback docs: the Redis 7.0 command metadata shipped with Ophidis."""
    path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "commands.json")
    try:
        with open(path) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return {}
    docs = {}
    for full, spec in meta.items():
        spec = dict(spec)
        spec.setdefault("summary", "Help not available")
        if "|" in full:
            parent, _sub = full.split("|", 1)
            docs.setdefault(parent.lower(), {"summary": "Help not available", "group": spec.get("group", ""),
                                             "since": spec.get("since")})
            docs[parent.lower()].setdefault("subcommands", {})[full.lower()] = spec
        else:
            docs.setdefault(full.lower(), {}).update(spec)
    return docs


def init_help(cli):
    docs = None
    if cli.conn is not None or cli.connect(quiet=True):
        try:
            r = cli.conn.command("COMMAND", "DOCS")
            if r.kind in (resp.ARRAY, resp.MAP) and not r.is_error:
                d = _reply_to_doc(r)
                docs = _pairs_to_dict(d) if isinstance(d, list) else d
        except (OSError, ConnectionClosed):
            cli.drop()
    if not docs:
        docs = docs_from_bundled()
    cli.help_entries = build_help(docs)

def output_help(cli, args):
    if not args:
        out("ophidis-cli %s\n"
            "To get help about commands type:\n"
            "      \"help @<group>\" to get a list of commands in <group>\n"
            "      \"help <command>\" for help on <command>\n"
            "      \"help <tab>\" to get a list of possible help topics\n"
            "      \"quit\" to exit\n"
            "\n"
            "To set ophidis-cli preferences:\n"
            "      \":set hints\" enable online hints\n"
            "      \":set nohints\" disable online hints\n" % REDIS_VERSION)
        flush()
        return
    if cli.help_entries is None:
        init_help(cli)
    group = args[0][1:] if args[0].startswith("@") else None
    buf = []
    for e in cli.help_entries:
        if e.is_group:
            continue
        if group is None:
            if len(args) <= len(e.argv) and all(a.lower() == b.lower() for a, b in zip(args, e.argv)):
                buf.append(_cmd_help(e, True))
        elif group.lower() == (e.group or "").lower():
            buf.append(_cmd_help(e, False))
    buf.append("\r\n")
    out("".join(buf))
    flush()

@staticmethod
def _cmd_help(e, show_group):
    s = "\r\n  \x1b[1m%s\x1b[0m \x1b[90m%s\x1b[0m\r\n" % (e.full, e.params)
    s += "  \x1b[33msummary:\x1b[0m %s\r\n" % e.summary
    if e.since:
        s += "  \x1b[33msince:\x1b[0m %s\r\n" % e.since
    if show_group:
        s += "  \x1b[33mgroup:\x1b[0m %s\r\n" % e.group
    return s

def completions(cli, buf):
    if cli.help_entries is None:
        return []
    start = 0
    allow_groups = False
    if buf[:5].lower() == "help ":
        start = 5
        while start < len(buf) and buf[start].isspace():
            start += 1
        allow_groups = True
    frag = buf[start:].lower()
    res = []
    for e in cli.help_entries:
        if e.is_group and not allow_groups:
            continue
        if e.full.lower().startswith(frag):
            res.append(buf[:start] + e.full)
    return res

def hint(cli, buf):
    if not cli.cfg.hints or cli.help_entries is None:
        return None
    argv = protocol.split_args(buf.encode("utf-8", "surrogateescape"))
    if not argv:
        return None
    argv = [a.decode("utf-8", "surrogateescape") for a in argv]
    best, matchlen = None, 0
    for e in cli.help_entries:
        if e.is_group:
            continue
        n = len(e.argv)
        if n <= len(argv) and n > matchlen and all(e.argv[j].lower() == argv[j].lower() for j in range(n)):
            best, matchlen = e, n
    if best is None:
        return None
    hint = best.params
    toremove = len(argv) - matchlen
    while toremove > 0 and hint:
        if hint[0] == "[":
            break
        if hint[0] == " ":
            toremove -= 1
        hint = hint[1:]
    if not buf[-1:].isspace():
        hint = " " + hint
    return hint
