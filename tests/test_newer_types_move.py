"""Redis 8's built-in types (JSON, Bloom, cuckoo, Count-Min, Top-K,
t-digest, time series, vector sets) leave one server for another whole:
MIGRATE (the DUMP payload: each type's module record) and a cluster's
atomic slot migration (CLUSTER MIGRATION IMPORT), both checked by DUMP
bytes and by each type's own reads on the other side."""

from __future__ import annotations

import pytest
from support.cluster import keys_in, settled_masters, wait_state

DEBUG = ("--enable-debug-command", "yes")


def fill(c, names):
    """One key of each type under the given names (a dict type -> key)."""
    k = names
    c.execute_command("JSON.SET", k["json"], "$", '{"a":[1,2.5,"x"],"b":{"c":null}}')
    c.execute_command("BF.RESERVE", k["bf"], "0.01", "100")
    c.execute_command("BF.MADD", k["bf"], *["i%d" % i for i in range(150)])      # two sub-filters
    c.execute_command("CF.RESERVE", k["cf"], "64")
    c.execute_command("CF.INSERT", k["cf"], "ITEMS", *["i%d" % i for i in range(40)])
    c.execute_command("CMS.INITBYDIM", k["cms"], "100", "4")
    c.execute_command("CMS.INCRBY", k["cms"], "a", "3", "b", "5")
    c.execute_command("TOPK.RESERVE", k["topk"], "3")
    c.execute_command("TOPK.ADD", k["topk"], *("a a a b b c d".split()))
    c.execute_command("TDIGEST.CREATE", k["tdigest"])
    c.execute_command("TDIGEST.ADD", k["tdigest"], *[str(i) for i in range(1, 101)])
    c.execute_command("TS.CREATE", k["ts"], "LABELS", "kind", "move")
    for t in range(1, 21):
        c.execute_command("TS.ADD", k["ts"], t * 1000, t * 1.5)
    for i in range(30):
        c.execute_command("VADD", k["vset"], "VALUES", "3", i, i % 7, 1, "e%d" % i, "SETATTR", '{"n":%d}' % i)


def reads(c, k) -> dict:
    """What each type answers about its key (the same before and after)."""
    return {
        "json": c.execute_command("JSON.GET", k["json"]),
        "bf": (c.execute_command("BF.MEXISTS", k["bf"], "i0", "i149", "nope"), c.execute_command("BF.CARD", k["bf"])),
        "cf": (c.execute_command("CF.COUNT", k["cf"], "i3"), c.execute_command("CF.EXISTS", k["cf"], "i39")),
        "cms": c.execute_command("CMS.QUERY", k["cms"], "a", "b", "z"),
        "topk": c.execute_command("TOPK.LIST", k["topk"], "WITHCOUNT"),
        "tdigest": c.execute_command("TDIGEST.QUANTILE", k["tdigest"], "0.5", "0.9"),
        "ts": c.execute_command("TS.RANGE", k["ts"], "-", "+"),
        "vset": (c.execute_command("VCARD", k["vset"]), c.execute_command("VEMB", k["vset"], "e5"),
                 c.execute_command("VGETATTR", k["vset"], "e7"),
                 c.execute_command("VSIM", k["vset"], "ELE", "e3", "COUNT", "3", "TRUTH")),
    }


TYPES = ("json", "bf", "cf", "cms", "topk", "tdigest", "ts", "vset")
TYPE_NAMES = {"json": b"ReJSON-RL", "bf": b"MBbloom--", "cf": b"MBbloomCF", "cms": b"CMSk-TYPE",
              "topk": b"TopK-TYPE", "tdigest": b"TDIS-TYPE", "ts": b"TSDB-TYPE", "vset": b"vectorset"}


def test_migrate_moves_every_type(start_server):
    a, b = start_server(*DEBUG), start_server(*DEBUG)
    ca, cb = a.client(), b.client()
    names = {t: "m:" + t for t in TYPES}
    fill(ca, names)
    before = reads(ca, names)
    dumps = {t: ca.dump(k) for t, k in names.items()}
    assert {t: ca.type(k) for t, k in names.items()} == TYPE_NAMES
    assert ca.execute_command("MIGRATE", "127.0.0.1", b.port, "", 0, 5000, "KEYS", *names.values()) == b"OK"
    assert ca.exists(*names.values()) == 0
    assert reads(cb, names) == before
    assert {t: cb.dump(k) for t, k in names.items()} == dumps
    assert {t: cb.type(k) for t, k in names.items()} == TYPE_NAMES
    # and the moved values still take writes
    assert cb.execute_command("BF.ADD", names["bf"], "new") == 1
    assert cb.execute_command("TS.ADD", names["ts"], 99000, 1) == 99000
    assert cb.execute_command("VADD", names["vset"], "VALUES", "3", 1, 1, 1, "new") == 1


@pytest.fixture(scope="module")
def cluster():
    yield from settled_masters(3)


def test_slot_migration_moves_every_type(cluster):
    """CLUSTER MIGRATION IMPORT of slots 0-99 (node 0's) to node 1 carries a
    key of each type, written before the import, unchanged."""
    src, dst = cluster.client(0), cluster.client(1)
    keys = keys_in(0, 99, len(TYPES), prefix="t8")
    names = dict(zip(TYPES, keys))
    fill(src, names)
    before = reads(src, names)
    dumps = {t: src.dump(k) for t, k in names.items()}
    task = dst.execute_command("CLUSTER", "MIGRATION", "IMPORT", "0", "99")
    wait_state(cluster, 1, task, ("completed",), timeout=60)
    assert not any(src.execute_command("CLUSTER", "COUNTKEYSINSLOT", s) for s in range(100))
    assert reads(dst, names) == before
    assert {t: dst.dump(k) for t, k in names.items()} == dumps
