"""Forked children (redisFork): one place for the fork and the child's life.

Every background job that forks (BGSAVE, the AOF rewrite, later a diskless
replication transfer or a cluster job) goes through :func:`fork`:

    child = fork(server, body, what="Background save child")
    # in the parent: child.pid, child.read_info(), child.poll(), child.kill()

The classes of the jobs (BGSAVE's Persistence, the AOF rewrite's Aof) keep
their running child with :class:`ChildJob`.

``body(ctx)`` runs in the child and returns the exit code (0 = success);
an exception is logged with ``log.child_failed(what)`` and gives exit code
1.  The child always leaves through ``log.flush_and_exit`` (``os._exit``):
the parent's atexit handlers, buffered files and asyncio loop never run in
it.  ``ctx`` (a :class:`ChildContext`) offers:

  ctx.send_info(bytes)    a line for the parent (copy-on-write figures),
                          read by ``child.read_info()`` after the child exits
  ctx.progress(done)      ``done`` keys written so far, sent with the
                          copy-on-write size, measured at most once a second
                          (Redis's CHILD_INFO_TYPE_CURRENT_INFO); the
                          parent's ``child.poll()`` reads these reports, INFO
                          shows them (current_cow_size, current_fork_perc,
                          current_save_keys_processed ...)
  ctx.cow_summary(cow)    (peak, average) of the sizes measured, ``cow``
                          (the final one) included
  ctx.parent_alive()      False once the parent that forked is gone
  ctx.rename(src, dst)    ``os.rename`` that refuses (and returns False,
                          removing ``src``) when the parent is gone: an
                          orphan never replaces a file the next server owns

Life cycle in the child, in this order: the parent-death signal is asked
for first (``prctl(PR_SET_PDEATHSIG, SIGKILL)`` through ctypes on Linux;
then the parent is checked once more, since it may have died between fork
and prctl), SIGTERM/SIGINT/SIGUSR1 back to their defaults (SIGUSR1 is how
the parent kills a child whose result it does not want), no wakeup fd, the
log role ``C``, the process title with the child's name when ``fork`` was
given one (proctitle.py: ``redis-rdb-bgsave`` ...), the listening sockets closed, the garbage collector off,
and the child's CPU priority lowered by ``CHILD_NICE``: a Python child
serialising the keyspace keeps a core busy far longer than Redis's C
child, and under ``save 1 1`` with writes one save follows the other, so
on a busy machine the event loop (and the clients it answers) competed
with it for the CPU; with the child niced, the scheduler runs the event
loop first whenever both are runnable (PING's tail latency under that load,
docs/PERFORMANCE.md) and the child takes the idle time.
Where prctl is missing (not Linux) the ``getppid()`` check of
``ctx.rename`` is the only guard, so every child that publishes a file
must publish it with ``ctx.rename``.  PR_SET_PDEATHSIG fires when the
*thread* that forked exits: fork from the event-loop thread only.

In the parent, :func:`fork` flushes stdout, freezes the garbage collector's
current objects (fewer pages copied on write), times the fork
(``server.latest_fork_usec``, ``total_forks``, the ``fork`` latency event)
and raises ``OSError`` when the pipe or the fork fails; the caller logs it
with its own wording.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import signal
import sys
from time import monotonic, perf_counter

from .. import log, oomscore, proctitle
from ..keyspace import dictshape
from ..keyspace.db import stats
from ..net import client as client_mod

PR_SET_PDEATHSIG = 1
_PROGRESS = b"P"          # a progress report's first word on the info pipe
CHILD_NICE = 10     # added to a forked child's nice value (see the docstring)

_prctl = None
if sys.platform.startswith("linux"):
    try:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        _prctl = _libc.prctl
        _prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
        _prctl.restype = ctypes.c_int
    except (OSError, AttributeError):
        _prctl = None


def private_dirty() -> int:
    """Bytes of private dirty memory of this process (copy-on-write after fork)."""
    try:
        with open("/proc/self/smaps_rollup") as f:
            for line in f:
                if line.startswith("Private_Dirty:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def close_quietly(fd):
    """os.close(fd), an OSError ignored (the descriptor is gone either way)."""
    try:
        os.close(fd)
    except OSError:
        pass


def set_parent_death_signal(sig=signal.SIGKILL) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent dies
    (Linux); False where that is not available."""
    if _prctl is None:
        return False
    return _prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0


class ChildContext:
    """What a child's body can use (see the module docstring)."""

    def __init__(self, parent_pid, wfd):
        self.parent_pid = parent_pid
        self._wfd = wfd
        self._cow = self._cow_peak = self._cow_sum = self._cow_samples = 0
        self._cow_next = monotonic() + 1.0

    def parent_alive(self) -> bool:
        return os.getppid() == self.parent_pid

    def send_info(self, data: bytes):
        try:
            os.write(self._wfd, data)
        except OSError:
            pass

    def progress(self, done):
        now = monotonic()
        if now >= self._cow_next:
            self._cow_next = now + 1.0
            cow = self._cow = private_dirty()
            self._cow_sum += cow
            self._cow_samples += 1
            if cow > self._cow_peak:
                self._cow_peak = cow
        self.send_info(b"%s %d %d %d\n" % (_PROGRESS, self._cow, done, self._cow_samples))

    def cow_summary(self, cow):
        peak = max(self._cow_peak, cow)
        return peak, (self._cow_sum + cow) // (self._cow_samples + 1)

    def rename(self, src, dst) -> bool:
        """Publish ``src`` as ``dst`` unless the parent is gone (then ``src``
        is removed and False returned).  OSError from the rename propagates."""
        if not self.parent_alive():
            log.warning("The parent process %d is gone: not renaming %s into %s" % (self.parent_pid, src, dst))
            try:
                os.unlink(src)
            except OSError:
                pass
            return False
        os.rename(src, dst)
        return True


class Child:
    """A running child, seen from the parent."""

    def __init__(self, pid, rfd, fork_usec, keys_total=0):
        self.pid = pid
        self.fork_usec = fork_usec
        self._rfd = rfd
        self._pending = b""          # bytes read, not a whole line yet
        self._final = []             # the lines of send_info
        # the last progress report (INFO's current_* fields)
        self.keys_total = keys_total
        self.keys_processed = 0
        self.cow = 0
        self.cow_peak = 0
        self.cow_time = 0.0          # monotonic time of the last measure (0: none)
        self._samples = 0

    def update(self):
        """Read what the child sent so far (never blocks)."""
        if self._rfd is None:
            return
        try:
            os.set_blocking(self._rfd, False)
            while True:
                data = os.read(self._rfd, 65536)
                if not data:
                    break
                self._pending += data
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            return
        *lines, self._pending = self._pending.split(b"\n")
        for line in lines:
            if line.startswith(_PROGRESS + b" "):
                try:
                    cow, done, samples = (int(x) for x in line.split()[1:4])
                except ValueError:
                    continue
                self.keys_processed = done
                if samples != self._samples:     # a new measure of copy-on-write
                    self._samples = samples
                    self.cow = cow
                    self.cow_peak = max(self.cow_peak, cow)
                    self.cow_time = monotonic()
            else:
                self._final.append(line + b"\n")

    def fork_perc(self) -> float:
        """current_fork_perc: keys written / keys at the fork, in percent."""
        if not self.keys_total:
            return 0.0
        return min(100.0, self.keys_processed * 100.0 / self.keys_total)

    def poll(self):
        """The wait status once the child has exited, else None (its
        progress reports are read meanwhile).  A child that was already
        reaped counts as exit code 1."""
        self.update()
        try:
            wpid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            return 1 << 8
        return status if wpid else None

    def read_info(self) -> bytes:
        """What the child sent with ``ctx.send_info`` (b"" if nothing)."""
        self.update()
        return b"".join(self._final) + (self._pending if self._pending[:2] != _PROGRESS + b" " else b"")

    def read_numbers(self) -> list:
        """The integers of the child's info line (copy-on-write figures);
        [] when it sent nothing readable."""
        try:
            return [int(x) for x in self.read_info().split()]
        except ValueError:
            return []

    def kill(self, sig=signal.SIGUSR1):
        """Stop the child and reap it (killRDBChild / killAppendOnlyChild)."""
        try:
            os.kill(self.pid, sig)
        except OSError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except OSError:
            pass

    def close(self):
        if self._rfd is not None:
            close_quietly(self._rfd)
            self._rfd = None


class ChildJob:
    """The parent's side of one kind of forked job (BGSAVE: snapshot's
    Persistence, the AOF rewrite: Aof), a mixin of the class that declares
    its state: ``server``, ``child`` (a Child while one runs), ``child_pid``
    and ``last_cow`` (the copy-on-write size the last child reported);
    ``CHILD_TYPE`` is the job's ``server.child_type``."""

    __slots__ = ()
    CHILD_TYPE = None

    def exited_child(self):
        """(pid, wait status) of the running child once it has exited, its
        copy-on-write size read; None while it runs, or when none does."""
        pid = self.child_pid
        if pid is None:
            return None
        status = self.child.poll()
        if status is None:
            return None
        self._read_cow()
        return pid, status

    def _read_cow(self):
        if self.child is None:
            return
        nums = self.child.read_numbers()
        if nums:
            self.last_cow = nums[0]

    def _child_gone(self):
        if self.child is not None:
            self.child.close()
        self.child = None
        self.child_pid = None
        srv = self.server
        if srv.child_type == self.CHILD_TYPE:
            srv.child_type = None


def _child_setup(server, parent_pid, title):
    set_parent_death_signal(signal.SIGKILL)
    if os.getppid() != parent_pid:
        # the parent died before prctl took effect
        log.flush_and_exit(1)
    gc.disable()
    # first of all, as Redis: the OOM killer should pick the child first
    oomscore.apply(server.config["oom-score-adj"], server.config["oom-score-adj-values"], oomscore.BGCHILD)
    try:
        os.nice(CHILD_NICE)
    except OSError:
        pass
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
        signal.signal(s, signal.SIG_DFL)
    try:
        signal.set_wakeup_fd(-1)
    except (ValueError, OSError):
        pass
    log.role = "C"
    if title is not None:
        # Redis's name for the child, whatever set-proc-title says (as Redis)
        proctitle.apply(server.config, title)
    for _, lsrv in list(server.listeners):
        for sock in getattr(lsrv, "sockets", None) or ():
            close_quietly(sock.fileno())


def fork(server, body, what="Background child", title=None) -> Child:
    """Fork a child that runs ``body(ctx)`` and exits with its return value;
    ``title`` (proctitle.BGSAVE ...) is the child's ``{title}`` in its
    process title (None: the parent's title stays).  Returns the
    :class:`Child` in the parent; raises OSError when the pipe or the fork
    fails."""
    rfd, wfd = os.pipe()
    sys.stdout.flush()
    gc.collect(0)
    gc.freeze()
    parent_pid = os.getpid()
    t0 = perf_counter()
    try:
        pid = os.fork()
    except OSError:
        os.close(rfd)
        os.close(wfd)
        raise
    if pid == 0:
        code = 1
        try:
            os.close(rfd)
            _child_setup(server, parent_pid, title)
            code = body(ChildContext(parent_pid, wfd))
        except BaseException:  # noqa: BLE001
            code = log.child_failed(what)
        finally:
            log.flush_and_exit(code if isinstance(code, int) else 1)
    os.close(wfd)
    fork_usec = int((perf_counter() - t0) * 1e6)
    server.latest_fork_usec = fork_usec
    stats.total_forks += 1
    lt = client_mod._LATENCY_MONITOR
    if lt is not None and fork_usec / 1e6 >= lt:
        server.latency_add("fork", fork_usec // 1000)
    # the tables as they were at the fork: Redis resizes them only at the
    # forced ratios while a child runs (keyspace/dictshape.py)
    dictshape.look_all(server)
    return Child(pid, rfd, fork_usec, sum(len(db.d) for db in server.dbs))
