"""ACL LOG: the denials (commands, keys, channels, failed AUTHs), newest
first, with Redis's merging of similar entries (same reason, context,
object and user within 60 seconds, among the 10 newest)."""

from __future__ import annotations

import time

from ..protocol.resp import array_header, bulk, double, integer, map_header

REASONS = {1: b"command", 2: b"key", 3: b"auth", 4: b"channel"}
CONTEXTS = ("toplevel", "multi", "lua", "module")
CTX_TOPLEVEL, CTX_MULTI, CTX_LUA = 0, 1, 2

_GROUPING_MS = 60000


def _ms() -> int:
    return int(time.time() * 1000)


class Entry:
    __slots__ = ("count", "reason", "context", "object", "username", "ctime", "cinfo", "entry_id", "created")

    def __init__(self, reason, context, obj, username, cinfo):
        self.count = 1
        self.entry_id = 0
        self.reason = reason
        self.context = context
        self.object = obj
        self.username = username
        self.ctime = self.created = _ms()
        self.cinfo = cinfo


class AclLog:
    def __init__(self, max_len=128):
        self.entries = []       # newest first
        self.max_len = max_len
        # entries made since start (ACL LOG RESET keeps counting): with the
        # creation time, an entry's unique id (Redis 7.2)
        self.made = 0

    def add(self, reason, context, obj: bytes, username: bytes, cinfo: bytes):
        if self.max_len == 0:
            # Redis 7.4 keeps nothing (and counts no entry) while the log's
            # length is 0; what was logged before goes now
            self.entries = []
            return
        e = Entry(reason, context, obj, username, cinfo)
        ents = self.entries
        for i, cur in enumerate(ents[:10]):
            if (cur.reason == e.reason and cur.context == e.context and abs(cur.ctime - e.ctime) <= _GROUPING_MS
                    and cur.object == e.object and cur.username == e.username):
                del ents[i]
                ents.insert(0, cur)
                cur.cinfo = cinfo
                cur.ctime = e.ctime
                cur.count += 1
                return
        e.entry_id = self.made
        self.made += 1
        ents.insert(0, e)
        del ents[self.max_len:]

    def reset(self):
        self.entries = []

    def reply(self, resp: int, count: int) -> bytes:
        ents = self.entries[:max(0, count)]
        now = _ms()
        out = [array_header(len(ents))]
        for e in ents:
            out += [map_header(resp, 10),
                    bulk(b"count"), integer(e.count),
                    bulk(b"reason"), bulk(REASONS.get(e.reason, b"unknown")),
                    bulk(b"context"), bulk(CONTEXTS[e.context].encode()),
                    bulk(b"object"), bulk(e.object),
                    bulk(b"username"), bulk(e.username),
                    bulk(b"age-seconds"), double(resp, (now - e.ctime) / 1000),
                    bulk(b"client-info"), bulk(e.cinfo),
                    bulk(b"entry-id"), integer(e.entry_id),
                    bulk(b"timestamp-created"), integer(e.created),
                    bulk(b"timestamp-last-updated"), integer(e.ctime)]
        return b"".join(out)
