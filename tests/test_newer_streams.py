"""The stream surface Redis added or changed after 7.0: consumers'
active time (7.2: XINFO CONSUMERS ``inactive``, XINFO STREAM FULL
``active-time``), consumers created by XCLAIM/XAUTOCLAIM/XREADGROUP before
anything is served (7.2), XREAD ... ``+`` (7.4), XDELEX/XACKDEL and the
KEEPREF/DELREF/ACKED policies (8.2), XREADGROUP ... CLAIM (8.4).  Where
valkey-server 9.1 shares the behaviour the replies are compared with it
byte for byte; the 8.x commands valkey lacks are checked against Redis's
documented replies."""

from __future__ import annotations

import re

from support.resp import RespConn


def test_approx_trim_with_limit_replays_from_the_aof(start_server):
    """XADD ~ LIMIT propagates MAXLEN = n LIMIT l: the AOF's replay must
    not apply the LIMIT (nor refuse it without ~), as Redis's loader."""
    for strategy, arg in (("MAXLEN", "55"), ("MINID", "45")):
        s = start_server("--appendonly", "yes", "--stream-node-max-entries", "10",
                         "--enable-debug-command", "yes")
        c = RespConn(s.port)
        for j in range(100):
            c.call("XADD", "st", "%d-1" % (j + 1), "f", "v")
        c.call("XADD", "st", strategy, "~", arg, "LIMIT", "30", "*", "f", "v")
        assert c.call("XLEN", "st") == b":71\r\n"
        assert c.call("CONFIG", "SET", "stream-node-max-entries", "1") == b"+OK\r\n"
        assert c.call("DEBUG", "LOADAOF") == b"+OK\r\n"
        assert c.call("XLEN", "st") == b":71\r\n"
        c.call("XADD", "st", "*", "f", "v")
        assert c.call("XLEN", "st") == b":72\r\n"
        c.close()
        s.stop()
