"""Per-slot usage statistics (Redis 8.2's CLUSTER SLOT-STATS).

key-count and memory-bytes are read from the keyspace when asked for;
cpu-usec, network-bytes-in and network-bytes-out are accumulated by
command dispatch while ``cluster-slot-stats-enabled`` is yes, for the
commands that route to one slot (those without keys count nowhere).  While
accumulating, the request loop's fast path leaves keyed commands to the
general path (``Cluster.recompute_fast``), where dispatch calls
``SlotStats.account``."""

from __future__ import annotations

from .slots import SLOTS

KEY_COUNT = "key-count"
MEMORY_BYTES = "memory-bytes"
CPU_USEC = "cpu-usec"
NETWORK_BYTES_IN = "network-bytes-in"
NETWORK_BYTES_OUT = "network-bytes-out"

# the metrics in the order of the reply's map; the first two always, the
# others only while the accumulation is on
METRICS = (KEY_COUNT, MEMORY_BYTES, CPU_USEC, NETWORK_BYTES_IN, NETWORK_BYTES_OUT)
ALWAYS = 2

# MULTI's request ("*1\r\n$5\r\nmulti\r\n"): counted with its EXEC, the
# transaction's slot known only then
MULTI_BYTES = 15


def request_bytes(argv) -> int:
    """The size of argv as a RESP multibulk request."""
    n = 3 + len(str(len(argv)))
    for a in argv:
        k = len(a)
        n += k + 5 + len(str(k))
    return n


class SlotStats:
    """The accumulated metrics of each slot (cpu in microseconds)."""

    __slots__ = ("cpu", "bytes_in", "bytes_out")

    def __init__(self):
        self.cpu = [0.0] * SLOTS
        self.bytes_in = [0] * SLOTS
        self.bytes_out = [0] * SLOTS

    def account(self, slot: int, seconds: float, bytes_in: int, reply):
        """One command of slot: its time, request and reply."""
        if seconds:
            self.cpu[slot] += seconds * 1e6
        self.bytes_in[slot] += bytes_in
        if reply:
            self.bytes_out[slot] += len(reply)

    def reset_slot(self, slot: int):
        self.cpu[slot] = 0.0
        self.bytes_in[slot] = 0
        self.bytes_out[slot] = 0

    def reset(self):
        self.cpu = [0.0] * SLOTS
        self.bytes_in = [0] * SLOTS
        self.bytes_out = [0] * SLOTS

    def value(self, metric: str, slot: int) -> int:
        if metric == CPU_USEC:
            return int(self.cpu[slot])
        if metric == NETWORK_BYTES_IN:
            return self.bytes_in[slot]
        return self.bytes_out[slot]
