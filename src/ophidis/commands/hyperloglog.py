"""HyperLogLog commands (hyperloglog.c): PFADD, PFCOUNT, PFMERGE, PFDEBUG,
PFSELFTEST.

The value is a string in Redis's HLL format (see ``types/hll.py``); the
commands keep it as a ``bytearray`` and edit it in place.  Like Redis, a
command that writes to an HLL first turns a shared/embstr string into a
private raw one (``_unshare``), and PFCOUNT of one key stores the computed
cardinality in the header (a write: the key is signalled and the command
propagated).
"""

from __future__ import annotations

import math
import random
import re

from ..cmdtable.registry import command
from ..errors import RedisError
from ..keyspace import notify
from ..protocol.resp import OK, ONE, ZERO, integer
from ..types import hll

_STRING = notify.STRING
NOT_HLL = RedisError("WRONGTYPE Key is not a valid HyperLogLog string value.")
INVALID = RedisError("INVALIDOBJ Corrupted HLL object detected")


def _check(v):
    """isHLLObjectOrReply, for a string (the typed lookup checked the type)."""
    if not hll.valid_header(v):
        raise NOT_HLL


def _unshare(db, key, v) -> bytearray:
    if v.__class__ is not bytearray:
        v = bytearray(v)
        db.d[key] = v
    return v


def _max_bytes(c) -> int:
    return c.server.config.values["hll-sparse-max-bytes"]


def _add_dense(v, pairs, st):
    """Apply (register, count) pairs to a dense HLL; st: its remembered
    state or None.  Returns (registers raised, state or None)."""
    updated = 0
    if len(pairs) < 64:
        update = hll.dense_update
        for idx, cnt in pairs:
            old = update(v, idx, cnt)
            if old >= 0:
                updated += 1
                if st is not None:
                    st.changed(idx, old, cnt)
        return updated, st
    # Many elements: work on the registers unpacked one per byte, pack once.
    if st is None:
        st = hll.Dense(v)
    regs = st.regs
    hist = st.hist
    for idx, cnt in pairs:
        old = regs[idx]
        if cnt > old:
            regs[idx] = cnt
            updated += 1
            if hist is not None:
                hist[old] -= 1
                hist[cnt] += 1
    if updated:
        v[hll.HDR:] = hll.raw_to_dense(regs)
    return updated, st


def _promote(v, sp):
    """Turn v (sparse, described by sp) dense in place.  Returns its Dense
    state, or None if the sparse value is corrupted."""
    body = sp.to_dense_body()
    if body is None:
        return None
    regs = sp.regs
    hll.forget(v)
    v[4] = hll.DENSE
    v[hll.HDR:] = body
    st = hll.Dense.__new__(hll.Dense)
    st.regs = regs
    st.hist = sp.hist
    return st


def _write_and_promote(v, sp, changed):
    """A register no longer fits the sparse encoding: write sp's pending
    changes (``changed``) to v, then make v dense (its state, or None)."""
    if changed:
        hll.write_sparse(v, sp)
    return _promote(v, sp)


def _add_sparse(c, v, sp, pairs):
    """Apply (register, count) pairs to a sparse HLL.  Returns (updated,
    error, state of v afterwards: a Sparse, a Dense after promotion, None
    after an error)."""
    max_bytes = _max_bytes(c)
    updated = 0
    changed = False
    sset = sp.set
    for i, (idx, cnt) in enumerate(pairs):
        r = sset(idx, cnt, max_bytes)
        if r == 1:
            updated += 1
            changed = True
        elif r == hll.PROMOTE:
            st = _write_and_promote(v, sp, changed)
            if st is None:
                return updated, INVALID, None
            old = hll.dense_update(v, idx, cnt)
            st.changed(idx, old, cnt)
            n, st = _add_dense(v, pairs[i + 1:], st)
            return updated + 1 + n, None, st
        elif r < 0:
            if changed:
                hll.write_sparse(v, sp)
            hll.forget(v)
            return updated, INVALID, None
    if changed:
        hll.write_sparse(v, sp)
    return updated, None, sp


@command("pfadd")
def pfadd(c, argv):
    db = c.db
    key = argv[1]
    v = db.lookup_write_typed(key, bytes)
    updated = 0
    if v is None:
        v = hll.new_sparse()
        db.add(key, v)
        updated = 1
    else:
        _check(v)
        v = _unshare(db, key, v)
    st = None
    if len(argv) > 2:
        pairs = hll.pat_lens(argv[2:])
        if v[4] == hll.DENSE:
            n, st = _add_dense(v, pairs, hll.cached(v))
            updated += n
        else:
            n, err, st = _add_sparse(c, v, hll.state(v), pairs)
            updated += n
            if err is not None:
                raise err
    if updated:
        db.signal(key)
        if notify.flags:
            notify.notify(_STRING, b"pfadd", key, db.id)
        c.server.dirty += updated
        hll.invalidate(v)
    if st is not None:
        hll.remember(v, st)
    return ONE if updated else ZERO


def _unsigned_to_signed(n):
    return n - (1 << 64) if n >= 1 << 63 else n


def _registers(v):
    """Registers of an HLL checked by _check (one byte each); raises
    INVALIDOBJ for a corrupted sparse value."""
    st = hll.state(v)
    regs = st.registers()
    if regs is None:
        raise INVALID
    if v.__class__ is bytearray:
        hll.remember(v, st)
    return regs


def _merged_registers(db, keys):
    """hllMerge over the HLLs at keys (missing ones skipped): (the registers'
    maximums, None when there is no HLL; whether one of them is dense)."""
    regs = None
    dense = False
    for key in keys:
        v = db.lookup_read_typed(key, bytes)
        if v is None:
            continue
        _check(v)
        if v[4] == hll.DENSE:
            dense = True
        raw = _registers(v)
        regs = bytes(raw) if regs is None else hll.raw_max(regs, raw)
    return regs, dense


@command("pfcount")
def pfcount(c, argv):
    db = c.db
    if len(argv) > 2:
        regs = _merged_registers(db, argv[1:])[0]
        if regs is None:
            return ZERO
        return integer(_unsigned_to_signed(hll.raw_count(regs)))
    key = argv[1]
    v = db.lookup_read_typed(key, bytes)
    if v is None:
        return ZERO
    _check(v)
    v = _unshare(db, key, v)
    if hll.cache_valid(v):
        return integer(hll.get_card(v))
    st = hll.state(v)
    hist = st.histogram()
    if hist is None:
        raise INVALID
    card = hll.estimate(hist)
    hll.set_card(v, card)
    hll.remember(v, st)
    db.signal(key)
    c.server.dirty += 1
    return integer(_unsigned_to_signed(card))


@command("pfmerge")
def pfmerge(c, argv):
    db = c.db
    regs, use_dense = _merged_registers(db, argv[1:])
    dst = argv[1]
    v = db.lookup_write(dst)
    if v is None:
        v = hll.new_sparse()
        db.add(dst, v)
    else:
        v = _unshare(db, dst, v)
    st = hll.state(v)
    if use_dense and v[4] == hll.SPARSE:
        st = _promote(v, st)
        if st is None:
            raise INVALID
    if regs is not None:
        if v[4] == hll.DENSE:
            merged = hll.raw_max(bytes(st.registers()), regs)
            v[hll.HDR:] = hll.raw_to_dense(merged)
            st.regs = bytearray(merged)
            st.hist = None
        else:
            st = _merge_into_sparse(c, v, st, regs)
    hll.invalidate(v)
    hll.remember(v, st)
    db.signal(dst)
    notify.notify(_STRING, b"pfadd", dst, db.id)
    c.server.dirty += 1
    return OK


_NONZERO = re.compile(rb"[^\x00]")


def _merge_into_sparse(c, v, sp, regs):
    """Set every non-zero register of regs into the sparse v, in register
    order, as Redis does (which may turn v dense on the way).  Returns the
    state of v afterwards."""
    max_bytes = _max_bytes(c)
    changed = False
    for m in _NONZERO.finditer(regs):
        j = m.start()
        r = sp.set(j, regs[j], max_bytes)
        if r == 1:
            changed = True
        elif r == hll.PROMOTE:
            st = _write_and_promote(v, sp, changed)
            if st is None:
                return hll.state(v)
            merged = hll.raw_max(bytes(st.registers()), regs)
            v[hll.HDR:] = hll.raw_to_dense(merged)
            st.regs = bytearray(merged)
            st.hist = None
            return st
    if changed:
        hll.write_sparse(v, sp)
    return sp


# ---------------------------------------------------------------------------
# Debugging
# ---------------------------------------------------------------------------
@command("pfdebug", flags=("syscmd",))
def pfdebug(c, argv):
    db = c.db
    sub = argv[1]
    key = argv[2]
    v = db.lookup_write_typed(key, bytes)
    if v is None:
        raise RedisError("ERR The specified key does not exist")
    _check(v)
    v = _unshare(db, key, v)
    s = sub.lower()
    if s == b"getreg":
        st = hll.state(v)
        if v[4] == hll.SPARSE:
            st = _promote(v, st)
            if st is None:
                raise INVALID
            c.server.dirty += 1
        raw = st.registers()
        hll.remember(v, st)
        return b"*%d\r\n" % hll.REGISTERS + b"".join([b":%d\r\n" % x for x in raw])
    if s == b"decode":
        if v[4] != hll.SPARSE:
            raise RedisError("ERR HLL encoding is not sparse")
        text = hll.state(v).decode()
        return b"$%d\r\n%s\r\n" % (len(text), text)
    if s == b"encoding":
        return b"+dense\r\n" if v[4] == hll.DENSE else b"+sparse\r\n"
    if s == b"todense":
        if v[4] == hll.SPARSE:
            st = _promote(v, hll.state(v))
            if st is None:
                raise INVALID
            hll.remember(v, st)
            c.server.dirty += 1
            return ONE
        return ZERO
    raise RedisError("ERR Unknown PFDEBUG subcommand '%s'" % sub.decode("utf-8", "replace"))


@command("pfselftest", flags=("syscmd",))
def pfselftest(c, argv):
    """A reduced version of Redis's self test: register access on a dense
    array, then the estimate of sparse and dense HLLs fed the same elements
    (up to 100000 of them instead of 10 million) must agree and stay within
    six standard errors."""
    # Test 1: registers keep their values and do not disturb their neighbours.
    regs = bytearray(hll.DENSE_SIZE)
    for _ in range(2):
        vals = [random.randrange(64) for _ in range(hll.REGISTERS)]
        for i, x in enumerate(vals):
            hll.dense_put(regs, i, x)
        for i, x in enumerate(vals):
            got = hll.dense_get(regs, i)
            if got != x:
                raise RedisError("TESTFAILED Register %d should be %d but is %d" % (i, x, got))
        if hll.dense_to_raw(bytes(regs[hll.HDR:])) != bytes(vals):
            raise RedisError("TESTFAILED dense/raw conversion")
    # Test 2: approximation error, sparse and dense side by side.
    dense = bytearray(hll.DENSE_SIZE)
    dense[0:4] = hll.MAGIC
    sparse = hll.new_sparse()
    sp = hll.Sparse(sparse[hll.HDR:])
    max_bytes = _max_bytes(c)
    relerr = 1.04 / (hll.REGISTERS ** 0.5)
    seed = random.getrandbits(64)
    checkpoint = 1
    is_sparse = True
    for j in range(1, 100001):
        ele = ((j ^ seed) & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little")
        idx, cnt = hll.pat_len(ele)
        hll.dense_set(dense, idx, cnt)
        if is_sparse:
            r = sp.set(idx, cnt, max_bytes)
            if r == hll.PROMOTE:
                hll.write_sparse(sparse, sp)
                if _promote(sparse, sp) is None:
                    raise RedisError("TESTFAILED sparse to dense conversion")
                hll.dense_set(sparse, idx, cnt)
                is_sparse = False
        else:
            hll.dense_set(sparse, idx, cnt)
        if j == checkpoint:
            if is_sparse:
                hll.write_sparse(sparse, sp)
            if j < max_bytes // 2 and not is_sparse:
                raise RedisError("TESTFAILED sparse encoding not used")
            card_dense = hll.raw_count(hll.dense_to_raw(bytes(dense[hll.HDR:])))
            card_other = (hll.estimate(sp.histogram()) if is_sparse
                          else hll.raw_count(hll.dense_to_raw(bytes(sparse[hll.HDR:]))))
            if card_dense != card_other:
                raise RedisError("TESTFAILED dense/sparse disagree")
            abserr = abs(checkpoint - card_dense)
            maxerr = 1 if j == 10 else math.ceil(relerr * 6 * checkpoint)
            if abserr > maxerr:
                raise RedisError("TESTFAILED Too big error. card:%d abserr:%d" % (checkpoint, abserr))
            checkpoint *= 10
    return OK
