"""Ophidis's own request path on the I/O designs of bench/io_floor.py:
instructions per request of the real server (its Client, parser, bodies
and replies) when its client sockets are read and written from C
(issue 34, "the -P 1 floor and the I/O layer" in docs/PERFORMANCE.md).

    python bench/io_proto.py [--src DIR] [--designs uvloop,g,h] [--tests get,set] [-n 10000]

A prototype, outside the package: the server is started as
``python -m ophidis`` starts it (its configuration, ``Server.run``), and one
more TCP listener is added whose connections get the real ``Client`` with a
transport written here in Cython (``CTransport``: write, writelines,
get_write_buffer_size/limits, is_closing, close, abort, pause/resume_reading,
get_extra_info), served by a C poller (recv into a 16 KiB buffer, one bytes
object per read, ``Client.data_received``, send from ``write``):

  uvloop  the server's own listeners, as bench/callgrind.py measures them
          (before main's a49b5be: uvloop's transports, the Client as their
          Protocol; since: net/_sock.pyx's SockConn over add_reader, which
          is io_floor.py's design c)
  g       uvloop still the loop; the client sockets in an epoll set of our
          own whose fd is one ``add_reader`` of uvloop's: its callback serves
          every ready socket in C
  h       the stdlib asyncio loop (a ``SelectorEventLoop``) with a selector
          whose ``select()`` serves the client sockets in C while the loop
          has nothing due, the GIL released around the blocking epoll_wait;
          the loop's call_at (overridden) ends that wait; its call_soon made
          while the poller serves sockets runs at the end of the pass (as
          Redis's beforeSleep), outside the asyncio loop

Not handled (a prototype): TLS, unix sockets, the busy-script poller,
connection_lost ordering beyond ``call_soon``.  The workload is
bench/callgrind.py's ``--vs-redis`` one (-c 1 -r 1000, -P as given, the
fill, a warm-up, the cron paused while counting).
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

from callgrind import VS_TESTS, Counted, _free_port, _up, _wait, subscribe

CYTHON = r"""
# cython: language_level=3, boundscheck=False, wraparound=False
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.ref cimport PyObject
from cpython.exc cimport PyErr_CheckSignals
from libc.stdint cimport uint64_t
from libc.errno cimport errno, EAGAIN, EINTR
import traceback

cdef extern from "<sys/socket.h>" nogil:
    ssize_t recv(int fd, void *buf, size_t n, int flags)
    ssize_t send(int fd, const void *buf, size_t n, int flags)
    int MSG_NOSIGNAL

cdef extern from "<time.h>" nogil:
    ctypedef long time_t
    cdef struct timespec:
        time_t tv_sec
        long tv_nsec
    int clock_gettime(int clk, timespec *ts)
    int CLOCK_MONOTONIC

cdef extern from "<sys/epoll.h>" nogil:
    ctypedef union epoll_data_t:
        int fd
        uint64_t u64
    cdef struct epoll_event:
        unsigned int events
        epoll_data_t data
    int epoll_create1(int flags)
    int epoll_ctl(int epfd, int op, int fd, epoll_event *ev)
    int epoll_wait(int epfd, epoll_event *evs, int n, int timeout)
    int EPOLLIN, EPOLLOUT, EPOLLERR, EPOLLHUP
    int EPOLL_CTL_ADD, EPOLL_CTL_DEL, EPOLL_CTL_MOD

cdef char rbuf[16384]
cdef enum:
    HIGH = 65536
    LOW = 16384


cdef inline double _mono() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + ts.tv_nsec * 1e-9


cdef class CTransport:
    cdef public object protocol
    cdef object sock, loop, dr, wbuf
    cdef int fd
    cdef Poller poller
    cdef bint closing, closed, reading, wpaused

    def write(self, data):
        cdef ssize_t r, n
        if self.closed or self.closing:
            return
        if type(data) is not bytes:
            data = bytes(data)
        n = PyBytes_GET_SIZE(data)
        if self.wbuf is not None:
            self.wbuf += data
            self._check_high()
            return
        r = send(self.fd, PyBytes_AS_STRING(data), n, MSG_NOSIGNAL)
        if r == n:
            return
        if r < 0:
            if errno != EAGAIN and errno != EINTR:
                self._close(OSError(errno, "send"))
                return
            r = 0
        self.wbuf = bytearray(data[r:])
        self.poller._events(self)
        self._check_high()

    cdef _check_high(self):
        if not self.wpaused and len(self.wbuf) > HIGH:
            self.wpaused = True
            self.protocol.pause_writing()

    cdef _flush(self):
        cdef ssize_t r
        cdef const char *p = self.wbuf
        r = send(self.fd, p, len(self.wbuf), MSG_NOSIGNAL)
        if r < 0:
            if errno != EAGAIN and errno != EINTR:
                self._close(OSError(errno, "send"))
            return
        del self.wbuf[:r]
        if not self.wbuf:
            self.wbuf = None
            self.poller._events(self)
            if self.closing:
                self._close(None)
                return
        if self.wpaused and (self.wbuf is None or len(self.wbuf) <= LOW):
            self.wpaused = False
            self.protocol.resume_writing()

    def writelines(self, lines):
        self.write(b"".join(lines))

    def get_write_buffer_size(self):
        return len(self.wbuf) if self.wbuf is not None else 0

    def get_write_buffer_limits(self):
        return (LOW, HIGH)

    def set_write_buffer_limits(self, high=None, low=None):
        pass

    def is_closing(self):
        return self.closing or self.closed

    def close(self):
        if self.closed:
            return
        self.closing = True
        if self.wbuf is None:
            self._close(None)

    def abort(self):
        self._close(None)

    def pause_reading(self):
        self.reading = False
        self.poller._events(self)

    def resume_reading(self):
        self.reading = True
        self.poller._events(self)

    def get_extra_info(self, name, default=None):
        try:
            if name == "socket":
                return self.sock
            if name == "peername":
                return self.sock.getpeername()
            if name == "sockname":
                return self.sock.getsockname()
        except OSError:
            pass
        return default

    cdef _close(self, exc):
        if self.closed:
            return
        self.closed = True
        epoll_ctl(self.poller.ep, EPOLL_CTL_DEL, self.fd, NULL)
        self.loop.call_soon(self._lost, exc)

    def _lost(self, exc):
        try:
            self.protocol.connection_lost(exc)
        finally:
            self.sock.close()
            self.poller.live.discard(self)


cdef class Poller:
    cdef int ep, outer
    cdef set live
    cdef object loop
    cdef public bint pending     # set by the loop's call_soon/call_at: return to the loop
    cdef public bint dispatching # inside run()'s pass over ready sockets
    cdef public list soon        # call_soon's callbacks made meanwhile: run at the pass's end

    def __cinit__(self, loop, int outer=-1):
        cdef epoll_event ev
        self.ep = epoll_create1(0)
        self.outer = outer
        self.loop = loop
        self.live = set()
        self.soon = []
        if outer >= 0:
            ev.events = EPOLLIN
            ev.data.u64 = 0
            epoll_ctl(self.ep, EPOLL_CTL_ADD, outer, &ev)

    def fileno(self):
        return self.ep

    def add(self, sock, protocol):
        cdef epoll_event ev
        cdef CTransport t = CTransport.__new__(CTransport)
        t.sock = sock
        t.fd = sock.fileno()
        t.loop = self.loop
        t.poller = self
        t.protocol = protocol
        t.dr = protocol.data_received
        t.reading = True
        self.live.add(t)
        ev.events = EPOLLIN
        ev.data.u64 = <uint64_t><PyObject*>t
        epoll_ctl(self.ep, EPOLL_CTL_ADD, t.fd, &ev)
        protocol.connection_made(t)

    cdef _events(self, CTransport t):
        cdef epoll_event ev
        if t.closed:
            return
        ev.events = (EPOLLIN if t.reading else 0) | (EPOLLOUT if t.wbuf is not None else 0)
        ev.data.u64 = <uint64_t><PyObject*>t
        epoll_ctl(self.ep, EPOLL_CTL_MOD, t.fd, &ev)

    cdef _ready(self, CTransport t, unsigned int events):
        cdef ssize_t n
        if t.closed:
            return
        if events & EPOLLOUT and t.wbuf is not None:
            t._flush()
        if events & (EPOLLIN | EPOLLERR | EPOLLHUP) and t.reading and not t.closed:
            n = recv(t.fd, rbuf, sizeof(rbuf), 0)
            if n > 0:
                try:
                    t.dr(PyBytes_FromStringAndSize(rbuf, n))
                except Exception:
                    traceback.print_exc()
                    t._close(None)
            elif n == 0:
                t._close(None)
            elif errno != EAGAIN and errno != EINTR:
                t._close(OSError(errno, "recv"))

    # g: uvloop's add_reader callback of our epoll fd
    def __call__(self):
        cdef epoll_event evs[64]
        cdef int n = epoll_wait(self.ep, evs, 64, 0), i
        for i in range(n):
            self._ready(<CTransport><PyObject*>evs[i].data.u64, evs[i].events)

    # h: the selector's select(): serve the clients until the loop's own
    # epoll fd (self.outer) is ready or the timeout passes
    def run(self, timeout):
        cdef epoll_event evs[64]
        cdef int ms = -1, n, i
        cdef double deadline = 0
        cdef bint outer_ready = False
        if timeout is not None:
            deadline = _mono() + <double>timeout
            ms = <int>(<double>timeout * 1000 + 0.999)
        self.pending = False
        while True:
            if ms == 0:
                n = epoll_wait(self.ep, evs, 64, 0)
            else:
                with nogil:
                    n = epoll_wait(self.ep, evs, 64, ms)
            if n < 0:
                PyErr_CheckSignals()    # a signal's Python handler (SIGTERM: shutdown)
                return
            self.dispatching = True
            try:
                for i in range(n):
                    if evs[i].data.u64 == 0:
                        outer_ready = True
                    else:
                        self._ready(<CTransport><PyObject*>evs[i].data.u64, evs[i].events)
                # Redis's beforeSleep: what the pass scheduled with call_soon
                # (push flushes, AOF and replication flushes, unblocked
                # clients) runs here, not through the asyncio loop
                while self.soon:
                    todo, self.soon = self.soon, []
                    for cb, args in todo:
                        try:
                            cb(*args)
                        except Exception:
                            traceback.print_exc()
            finally:
                self.dispatching = False
            if outer_ready or ms == 0 or n == 0 or self.pending:
                return
            if ms > 0:
                ms = <int>((deadline - _mono()) * 1000 + 0.999)
                if ms <= 0:
                    return
"""

LAUNCHER = """
import asyncio, os, selectors, socket, sys
import uvloop
import ioproto_c
from ophidis.main import load_config
from ophidis.net.client import Client
from ophidis.server.server import Server


class ClientSelector(selectors.EpollSelector):
    def __init__(self):
        super().__init__()
        self.poller = None

    def select(self, timeout=None):
        if self.poller is not None:
            self.poller.run(timeout)
            timeout = 0
        return super().select(timeout)


class ClientLoop(asyncio.SelectorEventLoop):
    # a callback or timer added while the poller serves clients (a push's
    # flush, a future's done callback) must end the poller's wait
    poller = None

    def call_soon(self, callback, *args, context=None):
        p = self.poller
        if p is not None:
            if p.dispatching and context is None:
                p.soon.append((callback, args))    # (no Handle: the server ignores it)
                return None
            p.pending = True
        return super().call_soon(callback, *args, context=context)

    def call_at(self, when, callback, *args, context=None):
        if self.poller is not None:
            self.poller.pending = True
        return super().call_at(when, callback, *args, context=context)


def main():
    design = os.environ["IOPROTO_DESIGN"]
    cfg, _, _ = load_config(sys.argv[1:])
    server = Server(cfg)
    sel = None
    if design == "h":
        sel = ClientSelector()
        loop = ClientLoop(sel)
    else:
        loop = uvloop.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.run_until_complete(server.run())
    if design != "uvloop":
        if design == "h":
            poller = ioproto_c.Poller(loop, sel.fileno())
            sel.poller = poller
            loop.poller = poller
        else:
            poller = ioproto_c.Poller(loop)
            loop.add_reader(poller.fileno(), poller)
        ls = socket.socket()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", int(os.environ["IOPROTO_PORT"])))
        ls.listen(511)
        ls.setblocking(False)

        def on_accept():
            for _ in range(1000):
                try:
                    s, _ = ls.accept()
                except (BlockingIOError, InterruptedError):
                    return
                s.setblocking(False)
                poller.add(s, Client(server))

        loop.add_reader(ls.fileno(), on_accept)
    loop.run_forever()


main()
"""

SETUP = """
from setuptools import setup, Extension
from Cython.Build import cythonize
setup(ext_modules=cythonize([Extension("ioproto_c", ["ioproto_c.pyx"], extra_compile_args=["-O2"])],
                            quiet=True))
"""


def build(work):
    with open(os.path.join(work, "ioproto_c.pyx"), "w") as f:
        f.write(CYTHON)
    with open(os.path.join(work, "setup.py"), "w") as f:
        f.write(SETUP)
    with open(os.path.join(work, "launch.py"), "w") as f:
        f.write(LAUNCHER)
    r = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "-q"], cwd=work,
                       capture_output=True, text=True)
    if r.returncode:
        raise SystemExit("building the Cython part failed:\n" + r.stdout[-2000:] + r.stderr[-2000:])


class Proto(Counted):
    """The launcher under callgrind; bench() goes to the extra listener
    (the design's), cli() to the server's own port."""

    def __init__(self, work, design, src):
        self.bench_port = _free_port()
        env = dict(os.environ, PYTHONPATH=work + os.pathsep + src, PYTHONHASHSEED="0",
                   IOPROTO_DESIGN=design, IOPROTO_PORT=str(self.bench_port))
        super().__init__([sys.executable, os.path.join(work, "launch.py"), "--hz", "1"], work, design, env)
        if design == "uvloop":
            self.bench_port = self.port
        else:
            _wait(lambda: _up(self.bench_port), design + "'s listener")

    def bench(self, pipeline, n, what, keyspace=1000):
        port, self.port = self.port, self.bench_port
        try:
            super().bench(pipeline, n, what, keyspace)
        finally:
            self.port = port


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                   "src"))
    ap.add_argument("--designs", default="uvloop,g,h")
    ap.add_argument("--tests", default="get,set", help="tests of bench/callgrind.py's --vs-redis table, or "
                    "'publish': PUBLISH to --subscribers subscribers on the design's port")
    ap.add_argument("--subscribers", type=int, default=10)
    ap.add_argument("-n", type=int, default=10000)
    ap.add_argument("-P", type=int, default=1, dest="pipeline")
    ap.add_argument("--save", metavar="DIR", help="keep each profile as DIR/<design>-<test>.cg")
    ap.add_argument("--work", metavar="DIR", help="build here (default: a temp dir, removed)")
    a = ap.parse_args(argv)
    work = a.work or tempfile.mkdtemp(prefix="ophidis-ioproto-")
    os.makedirs(work, exist_ok=True)
    try:
        build(work)
        for design in a.designs.split(","):
            s = Proto(work, design, a.src)
            try:
                for t in a.tests.split(","):
                    if t == "publish":
                        subs = subscribe(s.bench_port, a.subscribers)
                        fill, what = None, ["PUBLISH", "chan", "hello"]
                    else:
                        subs = []
                        fill, what = VS_TESTS[t]
                    s.cli("FLUSHALL")
                    if fill:
                        s.bench(16, 2 * (a.n + 5000), fill, keyspace=1000000)
                    s.bench(a.pipeline, 5000, what)
                    per = s.count(a.pipeline, a.n, what) / a.n
                    for sk in subs:
                        sk.close()
                    print("%-7s %-6s -P %d: %6.0f instructions a request" % (design, t, a.pipeline, per), flush=True)
                    if a.save:
                        os.makedirs(a.save, exist_ok=True)
                        shutil.copy(sorted(glob.glob(s.out + ".*"), key=os.path.getmtime)[-1],
                                    os.path.join(a.save, "%s-%s.cg" % (design, t)))
            finally:
                s.stop()
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
