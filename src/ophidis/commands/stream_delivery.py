"""What a consumer group hands its readers (t_stream.c's
streamReplyWithRange with a group): consumers made on first use, new
entries delivered and put in the PEL, XREADGROUP ... CLAIM's idle pending
entries (8.4), a consumer's own history, and MAXCOUNT / MAXSIZE's budget
across streams (8.10).  XREAD / XREADGROUP themselves are in streams.py,
the group commands in stream_groups.py.
"""

from __future__ import annotations

from ..keyspace import notify
from ..keyspace.db import mstime
from ..protocol.resp import EMPTY_ARRAY, bulk_items, integer
from ..types.stream import INVALID_READ, MAX_ID, NACK, Consumer, id_bytes
from .stream_args import entries_reply, entry_reply, id_reply, setid_op, xclaim_op

_STREAM = notify.STREAM
_NEW_ENTRY_TAIL = b":0\r\n:0\r\n"


def create_consumer(c, g, name, key, db):
    """streamCreateConsumer (notifies, dirty++)."""
    cons = Consumer(name, mstime())
    g.consumers[name] = cons
    c.server.dirty += 1
    notify.notify(_STREAM, b"xgroup-createconsumer", key, db.id)
    return cons


def consumer_for(c, g, gname, name, key, db, ops=None):
    """The consumer name of group g for a read or a claim: created when
    missing (then, with ``ops``, an XGROUP CREATECONSUMER to propagate),
    its seen time updated otherwise."""
    cons = g.consumers.get(name)
    if cons is None:
        cons = create_consumer(c, g, name, key, db)
        if ops is not None:
            ops.append([b"XGROUP", b"CREATECONSUMER", key, gname, name])
    else:
        cons.seen_time = mstime()
    return cons


class Budget:
    """XREAD/XREADGROUP ... MAXCOUNT n MAXSIZE bytes (8.10): what the whole
    reply may still hold, across its streams.  The first entry always
    goes; after it an entry goes while the entries' reply bytes stay
    within MAXSIZE."""
    __slots__ = ("count", "size", "used", "n")

    def __init__(self, count, size):
        self.count = count          # 0: no MAXCOUNT
        self.size = size            # 0: no MAXSIZE
        self.used = 0               # reply bytes of the entries so far
        self.n = 0                  # entries so far

    def left(self, count):
        """The per-stream COUNT narrowed to what MAXCOUNT leaves."""
        if not self.count:
            return count
        rest = self.count - self.n
        return rest if not count or rest < count else count

    def done(self) -> bool:
        return bool(self.count) and self.n >= self.count

    def fits(self, i, fv) -> bool:
        """Take entry (i, fv) if the budget has room for it."""
        if self.done():
            return False
        if self.size:
            size = len(entry_reply(i, fv))
            if self.n and self.used + size > self.size:
                return False
            self.used += size
        self.n += 1
        return True

    def take(self, items):
        out = []
        for i, fv in items:
            if not self.fits(i, fv):
                break
            out.append((i, fv))
        return out


def _claimable(s, g, min_idle, now):
    """XREADGROUP ... CLAIM (8.4): the group's pending entries idle for
    min_idle ms or more (whoever holds them) whose entry is still in the
    stream, the longest idle first: (delivery time, id, nack)."""
    pel = g.pel
    first = []                          # released by XNACK (8.8): first, in release order
    for i in g.nacked:
        nack = pel.get(i)
        if nack is not None and nack.consumer is None and s.get(i) is not None:
            first.append((nack.delivery_time, i, nack))
    taken = {t[1] for t in first}
    out = [(nack.delivery_time, i, nack) for i, nack in pel.items()
           if i not in taken and now - nack.delivery_time >= min_idle and s.get(i) is not None]
    out.sort(key=lambda t: (t[0], t[1]))
    return first + out


def _claim_entries(s, key, gname, g, cons, cands, now, ops):
    """Give the candidates to cons as XCLAIM would (a delivery more);
    each reply item carries the idle time and the delivery count it had
    before: [id, fields, idle, count]."""
    parts = []
    for t, i, nack in cands:
        before = nack.delivery_count
        if nack.consumer is not cons:
            if nack.consumer is not None:
                del nack.consumer.pel[i]
            nack.consumer = cons
            cons.pel[i] = nack
        nack.delivery_time = now
        nack.delivery_count = before + 1
        cons.active_time = now
        if ops is not None:
            ops.append(xclaim_op(key, gname, g, id_bytes(i), nack))
        parts.append(b"*4\r\n" + id_reply(i) + bulk_items(s.get(i)) + integer(now - t) + integer(before))
    return parts


def group_body(s, key, gname, g, cons, count, noack, ops, claim, budget=None):
    """What XREADGROUP ... > serves from one stream: with CLAIM the
    pending entries idle long enough first, then new entries (each with
    0 0 for idle time and delivery count), COUNT covering both.  None
    when there is nothing to serve."""
    if claim is None:
        if not s.length or s.last_valid_id() <= g.last_id:
            return None
        return _serve_group(s, key, gname, g, cons, g.last_id + 1, count, noack, ops, None, budget)
    now = mstime()
    cands = _claimable(s, g, claim, now)
    if count:
        cands = cands[:count]
    if budget is not None:
        taken = budget.take([(i, s.get(i)) for _, i, _ in cands])
        cands = cands[:len(taken)]
        if budget.done():
            count = len(cands)
    fresh = s.length and s.last_valid_id() > g.last_id and not (count and len(cands) >= count)
    if not cands and not fresh:
        return None
    parts = _claim_entries(s, key, gname, g, cons, cands, now, ops)
    if not fresh:
        return b"*%d\r\n" % len(parts) + b"".join(parts)
    return _serve_group(s, key, gname, g, cons, g.last_id + 1, count - len(parts) if count else 0,
                        noack, ops, parts, budget)


def _serve_group(s, key, gname, g, cons, start, count, noack, ops, claimed=None, budget=None):
    """streamReplyWithRange with a group: deliver entries > start - 1 to
    cons, move the group's last ID and read counter, create or reassign
    PEL entries (the consumer's active time then: Redis 7.2).  Returns the
    reply body (an array of entries); ``ops`` gets an XCLAIM per entry
    and an XGROUP SETID when the group's last ID moved (7.2 propagates it
    with or without NOACK).  ``claimed``: the reply items of entries
    CLAIM took, which come first (the new ones then have four elements)."""
    if budget is not None:
        count = budget.left(count)
    items = s.range(start, MAX_ID, count)
    if budget is not None:
        items = budget.take(items)
    if claimed is not None:
        parts = list(claimed)
        for i, fv in items:
            parts.append(b"*4\r\n" + id_reply(i) + bulk_items(fv) + _NEW_ENTRY_TAIL)
        body = b"*%d\r\n" % len(parts) + b"".join(parts)
    elif not items:
        return EMPTY_ARRAY
    now = mstime()
    pel = g.pel
    cpel = cons.pel
    moved = False
    for i, fv in items:
        if i > g.last_id:
            if (g.entries_read != INVALID_READ and g.last_id >= s.first_id
                    and not s.has_tombstones_in(g.last_id)):
                g.entries_read += 1
            elif s.entries_added:
                g.entries_read = s.estimate_distance(i)
            g.last_id = i
            moved = True
        if not noack:
            cons.active_time = now
            nack = pel.get(i)
            if nack is None:
                nack = NACK(cons, now)
                pel[i] = nack
                cpel[i] = nack
            else:
                if nack.consumer is not None:
                    del nack.consumer.pel[i]
                nack.consumer = cons
                nack.delivery_time = now
                nack.delivery_count = 1
                cpel[i] = nack
            if ops is not None:
                ops.append(xclaim_op(key, gname, g, id_bytes(i), nack))
    if moved and ops is not None:
        ops.append(setid_op(key, gname, g))
    return body if claimed is not None else entries_reply(items)


def serve_history(c, s, cons, start, count, budget=None):
    """streamReplyWithRangeFromConsumerPEL: the consumer's own pending
    entries from start on; deleted entries come as [id, nil]."""
    now = mstime()
    parts = []
    n = 0
    for i in cons.pel.irange(minimum=start):
        if count and n >= count:
            break
        fv = s.get(i)
        if budget is not None and not budget.fits(i, fv or ()):
            break
        if fv is None:
            parts.append(b"*2\r\n" + id_reply(i) + c.null_array)
        else:
            nack = cons.pel[i]
            nack.delivery_time = now
            nack.delivery_count += 1
            parts.append(entry_reply(i, fv))
        n += 1
    return b"*%d\r\n" % n + b"".join(parts)
