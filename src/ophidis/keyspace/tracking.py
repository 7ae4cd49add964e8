"""Server-assisted client-side caching: CLIENT TRACKING (Redis 7.0 semantics).

Default mode: the keys a tracking client reads (read-only commands, and the
read-only commands a script of its runs) are remembered in ``table`` (key
name -> ids of the clients that may cache it, across databases as in
Redis).  When a key is modified (a write command that changed the dataset,
expiry, eviction) its entry is dropped and each client gets one
invalidation message.  BCAST mode: no table; clients register prefixes and
get, once per event-loop iteration, the modified keys under each prefix.
FLUSHALL/FLUSHDB invalidate everything (a null message).

Messages go to the client itself (RESP3 ``>2 invalidate [keys]`` push) or to
the client named by REDIRECT (a RESP3 push, or for a RESP2 client subscribed
to ``__redis__:invalidate`` a pub/sub message).  Invalidations for the
client whose command is running are held until that command's reply is
written (Redis's pending key invalidations), so they never interleave with
a reply.

While at least one client tracks, every command is wrapped (see
``cmdtable.registry.rewrap``): nothing runs per command otherwise.
"""

from __future__ import annotations

from itertools import islice

from ..cmdtable.registry import WRAPPERS, rewrap
from ..memory.sizes import keys_of

INVALIDATE = b">2\r\n$10\r\ninvalidate\r\n"
PUBSUB_MSG = b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n"


class TrackState:
    """A tracking client's options (``Client.tracking`` while on)."""
    __slots__ = ("redirect", "bcast", "optin", "optout", "noloop", "caching", "broken",
                 "prefixes")

    def __init__(self):
        self.redirect = 0
        self.bcast = self.optin = self.optout = self.noloop = self.caching = self.broken = False
        self.prefixes = []


class Tracking:
    def __init__(self, srv):
        self.srv = srv
        self.table = {}          # key -> set of client ids
        self.items = 0
        self.prefixes = {}       # prefix -> (set of clients, {key: modifying client})
        self.nclients = 0
        self.current = None      # client whose (outermost) command is running
        self.pending = []        # invalidations for ``current``: keys, None = flush
        self.bcast_scheduled = False
        self.wrap_active = False
        self.max_keys = srv.config["tracking-table-max-keys"]
        srv.cron_hooks.append(self.cron)
        srv.config.on_change("tracking-table-max-keys", self._set_max)
        WRAPPERS.append(self)

    # -- client state ---------------------------------------------------------------------
    def enable(self, c, st: TrackState, prefixes):
        if not c.tracking:
            self.nclients += 1
        c.tracking = st
        if st.bcast:
            for p in prefixes or [b""]:
                ent = self.prefixes.get(p)
                if ent is None:
                    ent = self.prefixes[p] = (set(), {})
                if c not in ent[0]:
                    ent[0].add(c)
                    st.prefixes.append(p)
        self._activate()

    def disable(self, c):
        st = c.tracking
        if not st:
            return
        for p in st.prefixes:
            ent = self.prefixes.get(p)
            if ent is not None:
                ent[0].discard(c)
                if not ent[0]:
                    del self.prefixes[p]
        c.tracking = False
        self.nclients -= 1
        self._activate()

    def _activate(self):
        on = self.nclients > 0
        if on != self.wrap_active:
            self.wrap_active = on
            rewrap()

    # -- the per-command wrapper ------------------------------------------------------------
    def wrap(self, cmd, proc):
        t = self
        srv = self.srv
        write = cmd.write
        remember = cmd.readonly and not cmd.pubsub and "not_tracked" not in cmd.flags
        keyed = bool(cmd.key_specs) or cmd.getkeys_proc is not None
        is_client_cmd = cmd.parent is not None and cmd.parent.name == "client"

        def tracked(c, argv):
            outer = t.current is None
            if outer:
                if t.max_keys and len(t.table) > t.max_keys:
                    t.limit()      # before each command, as processCommand does
                t.current = c
            try:
                dirty = srv.dirty
                r = proc(c, argv)
                if keyed:
                    if write:
                        if srv.dirty != dirty:
                            for k in keys_of(cmd, argv):
                                t.invalidate(k)
                    elif remember:
                        # a script's read-only command: the keys it reads,
                        # for the client running the script (Redis 7.2+;
                        # 7.0 took the keys the script declared)
                        if c.in_script:
                            owner = c.script_caller[0] if c.script_caller is not None else None
                        else:
                            owner = c
                        st = owner.tracking if owner is not None else None
                        if st and not st.bcast and not (
                                (st.optin and not st.caching) or (st.optout and st.caching)):
                            t.remember(owner, keys_of(cmd, argv))
            finally:
                if outer:
                    t.current = None
                    st = c.tracking
                    if st and st.caching and not is_client_cmd and c.multi is None:
                        st.caching = False     # CLIENT CACHING covers one command
            if outer and t.pending:
                extra = t.take_pending(c)
                if extra:
                    if r is None:
                        c.push(extra)
                    else:
                        r = r + extra
            return r
        return tracked

    # -- keys -------------------------------------------------------------------------------
    def _set_max(self, v):
        self.max_keys = v      # applied by the next cron tick, as in Redis

    def remember(self, c, keys):
        table = self.table
        cid = c.id
        for k in keys:
            ids = table.get(k)
            if ids is None:
                table[k] = {cid}
                self.items += 1
            elif cid not in ids:
                ids.add(cid)
                self.items += 1
        if self.max_keys and len(table) > self.max_keys:
            self.limit()

    def invalidate(self, key, by_command=True):
        """key was modified by the running command (or, by_command False,
        deleted by expiry or eviction: no client modified it, so NOLOOP
        does not hide it in BCAST mode)."""
        if self.prefixes:
            self._bcast_remember(key, self.current if by_command else None)
        ids = self.table.pop(key, None)
        if not ids:
            return
        self.items -= len(ids)
        clients = self.srv.clients
        cur = self.current
        for cid in ids:
            target = clients.get(cid)
            if target is None:
                continue
            st = target.tracking
            if not st or st.bcast:
                continue
            if st.noloop and target is cur:
                continue
            if target is cur:
                self.pending.append(key)
            else:
                self.send(target, b"*1\r\n$%d\r\n%s\r\n" % (len(key), key))

    def take_pending(self, c) -> bytes:
        """The held invalidations of c's command, as c's output."""
        pend = self.pending
        self.pending = []
        out = []
        for key in pend:
            if key is None:
                payload = b"_\r\n" if c.resp > 2 else b"$-1\r\n"
            else:
                payload = b"*1\r\n$%d\r\n%s\r\n" % (len(key), key)
            m = self.message(c, payload)
            if m:
                out.append(m)
        return b"".join(out)

    def push_pending(self):
        """Invalidations caused before the running command itself (eviction)
        go out before its reply."""
        c = self.current
        if c is not None and self.pending:
            data = self.take_pending(c)
            if data:
                c.push(data)

    def on_flush(self):
        """FLUSHALL / FLUSHDB: every tracking client drops everything."""
        if self.nclients:
            cur = self.current
            for c in list(self.srv.clients.values()):
                if c.tracking:
                    if c is cur:
                        self.pending.append(None)
                    else:
                        self.send(c, b"_\r\n" if c.resp > 2 else b"$-1\r\n")
        self.table = {}
        self.items = 0

    # -- delivery -------------------------------------------------------------------------
    def message(self, c, payload) -> bytes | None:
        """The bytes to add to c's own output for an invalidation of c's
        cache (None when it goes elsewhere or nowhere)."""
        st = c.tracking
        if st and st.redirect:
            self.send(c, payload)
            return None
        if c.resp > 2:
            return INVALIDATE + payload
        return None

    def send(self, c, payload):
        st = c.tracking
        to = c
        redirected = False
        if st and st.redirect:
            to = self.srv.clients.get(st.redirect)
            if to is None or to.closing:
                st.broken = True
                if c.resp > 2:
                    c.push(b">2\r\n$21\r\ntracking-redir-broken\r\n:%d\r\n" % st.redirect)
                return
            redirected = True
        if to.resp > 2:
            to.push(INVALIDATE + payload)
        elif redirected and (to.pubsub_channels or to.pubsub_patterns or to.pubsub_shard):
            to.push(PUBSUB_MSG + payload)

    # -- BCAST ------------------------------------------------------------------------------
    def _bcast_remember(self, key, who):
        for p, (clients, keys) in self.prefixes.items():
            if key.startswith(p):
                keys[key] = who
                if not self.bcast_scheduled:
                    self.bcast_scheduled = True
                    loop = self.srv.loop
                    if loop is not None:
                        loop.call_soon(self.broadcast)

    def broadcast(self):
        """Send each prefix's modified keys to its clients (once per loop
        iteration, as Redis does in beforeSleep)."""
        self.bcast_scheduled = False
        for p, (clients, keys) in list(self.prefixes.items()):
            if not keys:
                continue
            items = list(keys.items())
            keys.clear()
            proto = None
            for c in list(clients):
                st = c.tracking
                if not st or c.closing:
                    continue
                if st.noloop:
                    own = [k for k, who in items if who is not c]
                    if not own:
                        continue
                    payload = _array(own)
                else:
                    if proto is None:
                        proto = _array([k for k, _ in items])
                    payload = proto
                self.send(c, payload)

    # -- housekeeping -----------------------------------------------------------------------
    def cron(self):
        self.limit()

    def limit(self):
        """tracking-table-max-keys: forget (and invalidate) the oldest
        remembered keys until the table is within the limit."""
        limit = self.max_keys
        table = self.table
        if not limit or len(table) <= limit:
            return
        for k in list(islice(table, len(table) - limit)):
            self.invalidate(k)

    def client_gone(self, c):
        if c.tracking:
            self.disable(c)


def _array(keys) -> bytes:
    return b"*%d\r\n" % len(keys) + b"".join(b"$%d\r\n%s\r\n" % (len(k), k) for k in keys)
