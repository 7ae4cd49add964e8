"""The -P 1 floor of an I/O design: user-space instructions per request of
minimal servers that answer every read with one fixed GET-like reply
(``$3\\r\\nxxx\\r\\n``), counted by callgrind as bench/callgrind.py counts
Ophidis (issue 34, "the -P 1 floor and the I/O layer" in
docs/PERFORMANCE.md).

    python bench/io_floor.py [--designs a,b,c] [-n 5000] [--save DIR] [--annotate]

Each design is a small self-contained server (written, and its Cython part
built, into a temporary directory with the running interpreter; Cython,
setuptools and uvloop must be importable):

  a     uvloop, asyncio.Protocol.data_received (Python) + transport.write
  a-cy  the same with data_received a Cython function (as Ophidis's Client)
  b     uvloop, loop.add_reader(fd, cb): cb reads/writes with
        socket.recv_into/socket.send in Python
  c     uvloop, loop.add_reader(fd, cb): cb a Cython object doing
        recv()/send() through libc
  d     uvloop, asyncio.BufferedProtocol (get_buffer/buffer_updated), Python
  e     a Cython epoll loop of its own (epoll_wait, accept4, recv, send in C),
        the GIL released around every epoll_wait
  e-try an epoll_wait(0) holding the GIL first; released only around a
        blocking wait (the case of every -P 1 read)
  e-gil the GIL never released
  g     uvloop drives; the client sockets in an epoll set of our own whose
        fd is one add_reader of uvloop's: a Cython callback drains the
        ready sockets (recv/send in C)
  f     the stdlib asyncio selector loop, Protocol.data_received
  redis redis-server (GET of a 3-byte value, and PING as ping_mbulk)

The workload is issue 34's: ``redis-benchmark -c 1 -P 1 -r 1000 -t get``,
5,000 requests of warm-up, the counters zeroed (``callgrind_control -z``),
N counted requests, dumped, the total divided by N.  The kernel's time in
the system calls is not counted (nor is it for Ophidis or redis-server in
bench/callgrind.py).  ``--annotate`` prints where each design's
instructions go, in buckets (the GIL, libuv, the Python runtime, ...), from
``callgrind_annotate``'s self costs.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from callgrind import Counted, _free_port, _total, _up, _wait

REPLY = "b'$3\\r\\nxxx\\r\\n'"

PY_PROTOCOL = """
import asyncio, sys
%(imports)s
REPLY = %(reply)s


class P(asyncio.Protocol):
    def connection_made(self, t):
        self.w = t.write

    def data_received(self, data):
        self.w(REPLY)

%(patch)s

async def main():
    loop = asyncio.get_running_loop()
    await loop.create_server(P, "127.0.0.1", int(sys.argv[1]))
    await asyncio.Event().wait()

%(run)s
"""

PY_BUFFERED = """
import asyncio, sys, uvloop
REPLY = %(reply)s


class P(asyncio.BufferedProtocol):
    def connection_made(self, t):
        self.w = t.write
        self.buf = bytearray(65536)

    def get_buffer(self, hint):
        return self.buf

    def buffer_updated(self, n):
        self.w(REPLY)


async def main():
    loop = asyncio.get_running_loop()
    await loop.create_server(P, "127.0.0.1", int(sys.argv[1]))
    await asyncio.Event().wait()

uvloop.run(main())
"""

PY_READER = """
import socket, sys, uvloop
REPLY = %(reply)s
loop = uvloop.new_event_loop()
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", int(sys.argv[1])))
ls.listen(128)
ls.setblocking(False)
buf = bytearray(65536)


def on_accept():
    try:
        s, _ = ls.accept()
    except BlockingIOError:
        return
    s.setblocking(False)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    fd = s.fileno()
    %(handler)s


loop.add_reader(ls.fileno(), on_accept)
loop.run_forever()
"""

# (b): the callback in Python
READER_PY = """recv_into, send = s.recv_into, s.send

    def on_read():
        try:
            n = recv_into(buf)
        except BlockingIOError:
            return
        if n:
            send(REPLY)
        else:
            loop.remove_reader(fd)
            s.close()
    loop.add_reader(fd, on_read)"""

# (c): the callback a Cython object (iofloor_c.Conn)
READER_CY = """import iofloor_c
    loop.add_reader(fd, iofloor_c.Conn(s, loop))"""

PY_EPOLL = """
import socket, sys, iofloor_c
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", int(sys.argv[1])))
ls.listen(128)
ls.setblocking(False)
iofloor_c.serve(ls.fileno(), %(mode)d)
"""

PY_BATCH = """
import socket, sys, uvloop, iofloor_c
loop = uvloop.new_event_loop()
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", int(sys.argv[1])))
ls.listen(128)
ls.setblocking(False)
batch = iofloor_c.Batch()
loop.add_reader(batch.fileno(), batch)


def on_accept():
    try:
        s, _ = ls.accept()
    except BlockingIOError:
        return
    s.setblocking(False)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    batch.add(s.detach())


loop.add_reader(ls.fileno(), on_accept)
loop.run_forever()
"""

PY_SELECTOR = """
import asyncio, selectors, socket, sys, iofloor_c


class ClientSelector(selectors.EpollSelector):
    # the stdlib loop's selector; the client sockets are served in select()
    def __init__(self):
        super().__init__()
        self.clients = iofloor_c.Clients(self.fileno())

    def select(self, timeout=None):
        self.clients.run(timeout)
        return super().select(0)


def main():
    sel = ClientSelector()
    loop = asyncio.SelectorEventLoop(sel)
    clients = sel.clients
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", int(sys.argv[1])))
    ls.listen(128)
    ls.setblocking(False)

    def on_accept():
        try:
            s, _ = ls.accept()
        except BlockingIOError:
            return
        s.setblocking(False)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        clients.add(s.detach())

    loop.add_reader(ls.fileno(), on_accept)
    loop.run_forever()


main()
"""

CYTHON = r"""
# cython: language_level=3, boundscheck=False, wraparound=False
from libc.string cimport memcpy

cdef extern from "<sys/socket.h>" nogil:
    ssize_t recv(int fd, void *buf, size_t n, int flags)
    ssize_t send(int fd, const void *buf, size_t n, int flags)
    int accept4(int fd, void *addr, void *addrlen, int flags)
    int setsockopt(int fd, int level, int name, const void *val, unsigned int len)
    int SOCK_NONBLOCK
    int MSG_NOSIGNAL

cdef extern from "<netinet/in.h>" nogil:
    int IPPROTO_TCP

cdef extern from "<netinet/tcp.h>" nogil:
    int TCP_NODELAY

cdef extern from "<unistd.h>" nogil:
    int close(int fd)

cdef extern from "<sys/epoll.h>" nogil:
    ctypedef union epoll_data_t:
        int fd
    cdef struct epoll_event:
        unsigned int events
        epoll_data_t data
    int epoll_create1(int flags)
    int epoll_ctl(int epfd, int op, int fd, epoll_event *ev)
    int epoll_wait(int epfd, epoll_event *evs, int n, int timeout) nogil
    int EPOLLIN
    int EPOLL_CTL_ADD
    int EPOLL_CTL_DEL

cdef char buf[65536]
cdef const char *REPLY = b"$3\r\nxxx\r\n"
cdef size_t REPLY_LEN = 9


# a-cy: Protocol.data_received as a Cython function (Ophidis's way)
def data_received(self, data):
    self.w(b"$3\r\nxxx\r\n")


# c: the add_reader callback, recv/send through libc
cdef class Conn:
    cdef int fd
    cdef object sock, loop

    def __init__(self, sock, loop):
        self.sock = sock
        self.loop = loop
        self.fd = sock.fileno()

    def __call__(self):
        cdef ssize_t n = recv(self.fd, buf, sizeof(buf), 0)
        if n > 0:
            send(self.fd, REPLY, REPLY_LEN, MSG_NOSIGNAL)
        elif n == 0:
            self.loop.remove_reader(self.fd)
            self.sock.close()


cdef inline void _accept(int ep, int lfd) noexcept nogil:
    cdef int one = 1
    cdef epoll_event ev
    cdef int cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)
    if cfd < 0:
        return
    setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one))
    ev.events = EPOLLIN
    ev.data.fd = cfd
    epoll_ctl(ep, EPOLL_CTL_ADD, cfd, &ev)


cdef inline void _ready(int ep, int fd) noexcept nogil:
    cdef ssize_t n = recv(fd, buf, sizeof(buf), 0)
    if n > 0:
        send(fd, REPLY, REPLY_LEN, MSG_NOSIGNAL)
    elif n == 0:
        epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL)
        close(fd)


# e: an epoll loop of its own.  mode 0: the GIL released around every
# epoll_wait; 1: epoll_wait(0) first with the GIL held, released only
# around a blocking wait; 2: the GIL never released.
def serve(int lfd, int mode):
    cdef epoll_event evs[64]
    cdef epoll_event ev
    cdef int ep = epoll_create1(0), n, i, fd
    ev.events = EPOLLIN
    ev.data.fd = lfd
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev)
    while True:
        if mode == 2:
            n = epoll_wait(ep, evs, 64, 100)
        else:
            n = 0
            if mode == 1:
                n = epoll_wait(ep, evs, 64, 0)
            if n == 0:
                with nogil:
                    n = epoll_wait(ep, evs, 64, 100)
        for i in range(n):
            fd = evs[i].data.fd
            if fd == lfd:
                _accept(ep, lfd)
            else:
                _ready(ep, fd)


# g: the client sockets in an epoll set of our own, its fd one add_reader
# of uvloop's; the callback drains every ready socket
cdef class Batch:
    cdef int ep

    def __cinit__(self):
        self.ep = epoll_create1(0)

    def fileno(self):
        return self.ep

    def add(self, int fd):
        cdef epoll_event ev
        ev.events = EPOLLIN
        ev.data.fd = fd
        epoll_ctl(self.ep, EPOLL_CTL_ADD, fd, &ev)

    def __call__(self):
        cdef epoll_event evs[64]
        cdef int n = epoll_wait(self.ep, evs, 64, 0), i
        for i in range(n):
            _ready(self.ep, evs[i].data.fd)
"""

CYTHON_H = r"""


cdef extern from "<time.h>" nogil:
    ctypedef long time_t
    cdef struct timespec:
        time_t tv_sec
        long tv_nsec
    int clock_gettime(int clk, timespec *ts)
    int CLOCK_MONOTONIC


cdef inline double _mono() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + ts.tv_nsec * 1e-9


# h: the client sockets served inside the selector's select(): an epoll set
# of the clients plus the asyncio selector's own epoll fd; run() serves the
# clients in C until the selector's fd is ready or the timeout passes
cdef class Clients:
    cdef int ep, outer

    def __cinit__(self, int outer):
        cdef epoll_event ev
        self.ep = epoll_create1(0)
        self.outer = outer
        ev.events = EPOLLIN
        ev.data.fd = outer
        epoll_ctl(self.ep, EPOLL_CTL_ADD, outer, &ev)

    def add(self, int fd):
        cdef epoll_event ev
        ev.events = EPOLLIN
        ev.data.fd = fd
        epoll_ctl(self.ep, EPOLL_CTL_ADD, fd, &ev)

    def run(self, timeout):
        cdef epoll_event evs[64]
        cdef int ms = -1, n, i, fd
        cdef double deadline = 0
        cdef bint outer_ready = False
        if timeout is not None:
            deadline = _mono() + <double>timeout
            ms = <int>(<double>timeout * 1000 + 0.999)
        while True:
            if ms == 0:
                n = epoll_wait(self.ep, evs, 64, 0)
            else:
                with nogil:
                    n = epoll_wait(self.ep, evs, 64, ms)
            for i in range(n):
                fd = evs[i].data.fd
                if fd == self.outer:
                    outer_ready = True
                else:
                    _ready(self.ep, fd)
            if outer_ready or ms == 0 or n <= 0:
                return
            if ms > 0:
                ms = <int>((deadline - _mono()) * 1000 + 0.999)
                if ms <= 0:
                    return
"""

SETUP = """
from setuptools import setup, Extension
from Cython.Build import cythonize
setup(ext_modules=cythonize([Extension("iofloor_c", ["iofloor_c.pyx"], extra_compile_args=["-O2"])],
                            quiet=True))
"""

# name -> (description, script or None for redis-server, the Cython part needed)
DESIGNS = {
    "a": ("uvloop Protocol.data_received (Python) + transport.write",
          PY_PROTOCOL % {"imports": "import uvloop", "reply": REPLY, "patch": "", "run": "uvloop.run(main())"}),
    "a-cy": ("uvloop Protocol, data_received a Cython function",
             PY_PROTOCOL % {"imports": "import uvloop, iofloor_c", "reply": REPLY,
                            "patch": "P.data_received = iofloor_c.data_received", "run": "uvloop.run(main())"}),
    "b": ("uvloop add_reader, Python recv_into/send", PY_READER % {"reply": REPLY, "handler": READER_PY}),
    "c": ("uvloop add_reader, Cython callback, libc recv/send", PY_READER % {"reply": REPLY, "handler": READER_CY}),
    "d": ("uvloop BufferedProtocol (Python get_buffer/buffer_updated)", PY_BUFFERED % {"reply": REPLY}),
    "e": ("own Cython epoll loop, GIL released around each epoll_wait", PY_EPOLL % {"mode": 0}),
    "e-try": ("own Cython epoll loop, epoll_wait(0) first, GIL released only to block", PY_EPOLL % {"mode": 1}),
    "e-gil": ("own Cython epoll loop, GIL never released", PY_EPOLL % {"mode": 2}),
    "g": ("uvloop + one add_reader of our epoll fd, Cython drains the ready sockets", PY_BATCH),
    "h": ("stdlib asyncio loop, its selector's select() serving the client sockets in C", PY_SELECTOR),
    "f": ("stdlib asyncio (selector loop) Protocol.data_received",
          PY_PROTOCOL % {"imports": "", "reply": REPLY, "patch": "", "run": "asyncio.run(main())"}),
    "redis": ("redis-server GET (3-byte value) / PING", None),
}

# Buckets of callgrind_annotate's self costs: the first pattern that
# matches "function [object]" wins.
BUCKETS = [
    ("GIL take/release", r"take_gil|drop_gil|PyEval_(Save|Restore)Thread|PyGILState|_PyThreadState_(Swap|GET)|"
                         r"PyThread_|pthread_|futex|_PyRuntimeState|tstate_|gilstate|"
                         r"_PyEval_(Signal|Fini)|lll_|__GI___pthread|__lll_|PyThreadState_"),
    ("syscall wrappers (epoll_wait, read/recv, write/send)",
     r"^(__GI_)?(__libc_)?(epoll_wait|epoll_ctl|read|recv|recvfrom|write|writev|send|sendto|sendmsg|"
     r"__libc_recv|__libc_send|__libc_read|__libc_write|__libc_writev|syscall|__internal_syscall_cancel|"
     r"__syscall_cancel|__syscall_cancel_arch|__pthread_enable_asynccancel|__pthread_disable_asynccancel)"
     r"( |$|\[)"),
    ("clock", r"clock_gettime|__vdso|uv__hrtime|monotonic|do_hres|vdso"),
    ("libuv", r"^uv_|^uv__"),
    ("uvloop (Cython)", r"uvloop"),
    ("our Cython", r"iofloor_c"),
    ("malloc/free", r"malloc|free|_int_|mi_|PyObject_Malloc|PyObject_Free|pymalloc|_PyObject_Malloc|"
                    r"_PyObject_Free|PyMem_|arena|unlink_chunk|tcache"),
    ("Python runtime (calls, objects, eval)", r"python|libpython|Py|_Py"),
    ("redis-server", r"redis-server"),
    ("libc other", r"libc"),
]


def annotate(path):
    """(self cost, "function [object]") of each function, from callgrind_annotate.
    The frames on the stack when the counters were zeroed show the whole
    total as their own (an artifact of callgrind_control -z): left out."""
    r = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", "--auto=no", path],
                       capture_output=True, text=True)
    total, merged = 0, {}
    for line in r.stdout.splitlines():
        m = re.match(r"^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(.*)$", line)
        if not m:
            continue
        cost = int(m.group(1).replace(",", ""))
        if "PROGRAM TOTALS" in line:
            total = cost
            continue
        if ":" not in m.group(2) or "=>" in line or re.search(r"\([\d,]+x\)", line) \
                or (total and cost > 0.9 * total):
            continue
        fn = m.group(2).split(":", 1)[1].strip()
        merged[fn] = merged.get(fn, 0) + cost     # a function's lines from several files (inlined headers)
    return sorted(((c, f) for f, c in merged.items()), reverse=True)


def buckets(rows):
    out = {}
    for cost, fn in rows:
        for name, pat in BUCKETS:
            if re.search(pat, fn):
                break
        else:
            name = "other"
        out[name] = out.get(name, 0) + cost
    return out


def _total_of(path) -> int:
    data = open(path).read()
    m = re.search(r"^summary: (\d+)", data, re.M) or re.search(r"^totals: (\d+)", data, re.M)
    return int(m.group(1))


class Minimal:
    """A minimal server under callgrind (the script's own process)."""

    def __init__(self, script, work, name):
        self.port = _free_port()
        self.out = os.path.join(work, name + ".callgrind.out")
        self.p = subprocess.Popen(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + self.out,
                                   sys.executable, script, str(self.port)],
                                  cwd=work, env=dict(os.environ, PYTHONPATH=work, PYTHONHASHSEED="0"),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait(lambda: _up(self.port) or self.p.poll() is not None, name)
        if self.p.poll() is not None:
            raise SystemExit("%s exited (%s)" % (name, self.p.returncode))

    def bench(self, n, what):
        run = subprocess.run(["redis-benchmark", "-p", str(self.port), "-P", "1", "-c", "1", "-r", "1000", "-q",
                              "-n", str(n)] + what, capture_output=True, text=True)
        if run.returncode:
            raise SystemExit("redis-benchmark: %s%s" % (run.stdout[-500:], run.stderr[-500:]))

    def count(self, n, what):
        self.bench(5000, what)
        subprocess.run(["callgrind_control", "-z", str(self.p.pid)], capture_output=True)
        self.bench(n, what)
        before = set(glob.glob(self.out + ".*"))
        subprocess.run(["callgrind_control", "-d", str(self.p.pid)], capture_output=True)
        _wait(lambda: set(glob.glob(self.out + ".*")) - before, "the callgrind dump", 120)
        time.sleep(0.5)
        return _total(self.out)

    def last_dump(self):
        return sorted(glob.glob(self.out + ".*"), key=os.path.getmtime)[-1]

    def stop(self):
        self.p.kill()
        self.p.wait()


def build(work):
    with open(os.path.join(work, "iofloor_c.pyx"), "w") as f:
        f.write(CYTHON + CYTHON_H)
    with open(os.path.join(work, "setup.py"), "w") as f:
        f.write(SETUP)
    r = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "-q"], cwd=work,
                       capture_output=True, text=True)
    if r.returncode:
        raise SystemExit("building the Cython part failed:\n" + r.stdout[-2000:] + r.stderr[-2000:])


def report(name, per, path, a):
    print("%-6s %8.0f  %s" % (name, per, DESIGNS[name.split(" ")[0]][0] if name.split(" ")[0] in DESIGNS
                              else ""), flush=True)
    if a.save:
        shutil.copy(path, os.path.join(a.save, "%s.cg" % name.replace(" ", "-")))
    if a.annotate:
        rows = annotate(path)
        for b, cost in sorted(buckets(rows).items(), key=lambda kv: -kv[1]):
            print("         %7.0f  %s" % (cost / a.n, b))
        for cost, fn in rows[:a.annotate]:
            print("           %6.0f  %s" % (cost / a.n, fn[:110]))
        sys.stdout.flush()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--designs", default=",".join(DESIGNS), help="which (%(default)s)")
    ap.add_argument("-n", type=int, default=5000, help="counted requests (after 5,000 of warm-up)")
    ap.add_argument("--save", metavar="DIR", help="keep each profile as DIR/<design>.cg")
    ap.add_argument("--annotate", type=int, default=0, metavar="N",
                    help="print the cost buckets and the N most costly functions (self) of each design")
    ap.add_argument("--work", metavar="DIR", help="write and build the servers here (default: a temp dir, removed)")
    ap.add_argument("--redis-server", default="redis-server")
    ap.add_argument("--profiles", metavar="DIR", help="only annotate the profiles --save kept in DIR (with the "
                    "same -n)")
    a = ap.parse_args(argv)
    if a.profiles:
        a.save = None
        for path in sorted(glob.glob(os.path.join(a.profiles, "*.cg"))):
            name = os.path.basename(path)[:-3].replace("redis-ping", "redis ping")
            report(name, _total_of(path) / a.n, path, a)
        return
    names = [d.strip() for d in a.designs.split(",") if d.strip()]
    for d in names:
        if d not in DESIGNS:
            raise SystemExit("unknown design %r (one of %s)" % (d, ", ".join(DESIGNS)))
    work = a.work or tempfile.mkdtemp(prefix="ophidis-iofloor-")
    os.makedirs(work, exist_ok=True)
    if a.save:
        os.makedirs(a.save, exist_ok=True)
    print("%s, -c 1 -P 1 -r 1000 -t get, %d counted requests: instructions a request" %
          (sys.version.split()[0], a.n), flush=True)
    try:
        build(work)
        for name in names:
            desc, src = DESIGNS[name]
            if src is None:
                s = Counted([a.redis_server, "--hz", "1"], work, name)
                try:
                    s.bench(1, 5000, ["-t", "set"])
                    for label, what in (("redis", ["-t", "get"]), ("redis ping", ["-t", "ping_mbulk"])):
                        s.bench(1, 5000, what)
                        per = s.count(1, a.n, what) / a.n
                        report(label, per, sorted(glob.glob(s.out + ".*"), key=os.path.getmtime)[-1], a)
                finally:
                    s.stop()
                continue
            script = os.path.join(work, "server_%s.py" % name.replace("-", "_"))
            with open(script, "w") as f:
                f.write(src)
            s = Minimal(script, work, name)
            try:
                per = s.count(a.n, ["-t", "get"]) / a.n
                report(name, per, s.last_dump(), a)
            finally:
                s.stop()
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
