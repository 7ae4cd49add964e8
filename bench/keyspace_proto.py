"""Measure the keyspace table of PERFORMANCE.md's "Issue 34: string memory"
design against the dict the keyspace is today.

    python bench/keyspace_proto.py [--keys N] [--callgrind]

Builds a prototype of the table (a Cython module written to a temporary
directory: insert and lookup only, not the server's code) and fills it, in
a fresh process, the way `bench/run.py --suites memory` fills the server:
N SETs of random keys `key:%012d` below N (redis-benchmark -r N), each key
and value a new `bytes` object as the parser makes them, an existing key's
value replaced.  Prints the RSS growth and bytes per key of a dict, of
the prototype and of the package's Keyspace (keyspace/_keyspace.pyx, built
in --src).  --callgrind also counts the instructions of 200k lookups and
inserts in C loops (valgrind's callgrind; loop included).

The table: one pymalloc block per key (value pointer, the low 32 bits of
the key's hash, the key's length, the key's bytes), a dense array of
entry pointers in insertion order and an index of 4-byte slots at most 2/3
full: CPython's compact dict with the key inside its entry.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

PYX = r'''
# cython: language_level=3
from cpython.mem cimport PyMem_Malloc, PyMem_RawMalloc, PyMem_RawFree
from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.string cimport memcpy, memcmp, memset
from libc.stdint cimport uint32_t, int32_t

cdef extern from "Python.h":
    Py_ssize_t PyObject_Hash(object o) except -1
    PyObject *PyDict_GetItemWithError(object d, object k) except? NULL

ctypedef struct Entry:
    PyObject *value
    uint32_t hash
    uint32_t klen
    char key[1]

cdef class Table:
    cdef int32_t *index
    cdef Entry **slots
    cdef Py_ssize_t mask, used, nslots, cap

    def __cinit__(self):
        self.mask = 7
        self.index = <int32_t *>PyMem_RawMalloc(8 * 4)
        memset(self.index, 0xff, 8 * 4)
        self.cap = 5
        self.slots = <Entry **>PyMem_RawMalloc(self.cap * 8)

    cdef void _grow(self):
        cdef Py_ssize_t n = (self.mask + 1) * 2, i, j = 0, p
        while n * 2 // 3 < self.used * 3 // 2 + 1:
            n *= 2
        PyMem_RawFree(self.index)
        self.index = <int32_t *>PyMem_RawMalloc(n * 4)
        memset(self.index, 0xff, n * 4)
        self.mask = n - 1
        cdef Entry **ns = <Entry **>PyMem_RawMalloc((n * 2 // 3) * 8)
        for i in range(self.nslots):
            if self.slots[i] != NULL:
                ns[j] = self.slots[i]
                p = ns[j].hash & self.mask
                while self.index[p] >= 0:
                    p = (p + 1) & self.mask
                self.index[p] = j
                j += 1
        PyMem_RawFree(self.slots)
        self.slots = ns
        self.nslots = j
        self.cap = n * 2 // 3

    cdef PyObject *get(self, bytes key) except? NULL:
        cdef uint32_t h = <uint32_t>PyObject_Hash(key)
        cdef Py_ssize_t klen = PyBytes_GET_SIZE(key), p = h & self.mask
        cdef int32_t ix
        cdef Entry *e
        while True:
            ix = self.index[p]
            if ix < 0:
                return NULL
            e = self.slots[ix]
            if e.hash == h and e.klen == klen and memcmp(e.key, PyBytes_AS_STRING(key), klen) == 0:
                return e.value
            p = (p + 1) & self.mask

    cdef int set(self, bytes key, object value) except -1:
        cdef uint32_t h = <uint32_t>PyObject_Hash(key)
        cdef Py_ssize_t klen = PyBytes_GET_SIZE(key), p = h & self.mask
        cdef Entry *e
        while self.index[p] >= 0:
            e = self.slots[self.index[p]]
            if e.hash == h and e.klen == klen and memcmp(e.key, PyBytes_AS_STRING(key), klen) == 0:
                Py_INCREF(value)
                Py_XDECREF(e.value)
                e.value = <PyObject *>value
                return 0
            p = (p + 1) & self.mask
        if self.nslots == self.cap:
            self._grow()
            p = h & self.mask
            while self.index[p] >= 0:
                p = (p + 1) & self.mask
        e = <Entry *>PyMem_Malloc(16 + klen)
        if e == NULL:
            raise MemoryError()
        e.hash = h
        e.klen = <uint32_t>klen
        memcpy(e.key, PyBytes_AS_STRING(key), klen)
        Py_INCREF(value)
        e.value = <PyObject *>value
        self.index[p] = <int32_t>self.nslots
        self.slots[self.nslots] = e
        self.nslots += 1
        self.used += 1
        return 0

    def __setitem__(self, bytes key, value):
        self.set(key, value)

    def __len__(self):
        return self.used


cdef Py_ssize_t table_gets(Table t, list keys) except -1:
    cdef Py_ssize_t n = 0
    for k in keys:
        if t.get(<bytes>k) != NULL:
            n += 1
    return n

cdef Py_ssize_t dict_gets(dict d, list keys) except -1:
    cdef Py_ssize_t n = 0
    for k in keys:
        if PyDict_GetItemWithError(d, k) != NULL:
            n += 1
    return n

cdef Py_ssize_t table_sets(Table t, list keys, list vals) except -1:
    cdef Py_ssize_t i
    for i in range(len(keys)):
        t.set(<bytes>keys[i], vals[i])
    return 0

cdef Py_ssize_t dict_sets(dict d, list keys, list vals) except -1:
    cdef Py_ssize_t i
    for i in range(len(keys)):
        d[keys[i]] = vals[i]
    return 0

def run_gets(t, list keys):
    return table_gets(t, keys) if isinstance(t, Table) else dict_gets(t, keys)

def run_sets(t, list keys, list vals):
    return table_sets(t, keys, vals) if isinstance(t, Table) else dict_sets(t, keys, vals)
'''

SETUP = '''
from setuptools import setup
from Cython.Build import cythonize
setup(ext_modules=cythonize("ksproto.pyx", quiet=True))
'''

# the child: fill a dict or the table as the server's SETs do, print RSS growth
FILL = r'''
import gc, random, sys
sys.path.insert(0, sys.argv[1])
import ksproto
def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) * 1024
kind, n = sys.argv[2], int(sys.argv[3])
if kind == "keyspace":
    sys.path.insert(0, sys.argv[4])
    from ophidis.keyspace._keyspace import Keyspace
random.seed(1)
picks = [random.randrange(n) for _ in range(n)]
gc.disable()
before = rss()
t = {} if kind == "dict" else Keyspace() if kind == "keyspace" else ksproto.Table()
for r in picks:
    t[b"key:%012d" % r] = b"".join([b"x", b"xx"])    # new key and value objects
growth = rss() - before
print("%-8s %7d keys  RSS growth %6.1f MB  %6.1f bytes a key" % (kind, len(t), growth / 2**20, growth / len(t)))
'''

# the child run under callgrind: 200k inserts then 200k lookups of new key objects
COUNT = r'''
import random, sys
sys.path.insert(0, sys.argv[1])
import ksproto
kind = sys.argv[2]
random.seed(1)
keys = [b"key:%012d" % random.randrange(10**6) for _ in range(200000)]
vals = [b"".join([b"x", b"xx"]) for _ in keys]
t = {} if kind == "dict" else ksproto.Table()
ksproto.run_sets(t, keys, vals)
again = [b"key:%012d" % int(k[4:]) for k in keys]
for k in again:
    hash(k)                   # a parser-made key gets its hash on its first lookup either way
ksproto.run_gets(t, again)
'''


def build(tmp):
    with open(os.path.join(tmp, "ksproto.pyx"), "w") as f:
        f.write(PYX)
    with open(os.path.join(tmp, "setup.py"), "w") as f:
        f.write(SETUP)
    subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "-q"], cwd=tmp, check=True,
                   capture_output=True)


def callgrind(tmp, kind):
    out = os.path.join(tmp, "cg." + kind)
    subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, sys.executable, "-c", COUNT, tmp,
                    kind], check=True, capture_output=True)
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", out], check=True, capture_output=True,
                          text=True).stdout
    got = {}
    for name in ("run_sets", "run_gets"):
        m = re.search(r"^\s*([\d,]+) .*ksproto\.c:__pyx_pw_\w*%s\b" % name, text, re.M)
        got[name] = int(m.group(1).replace(",", "")) if m else 0
    print("%-5s per insert-or-replace %5.0f  per lookup %5.0f instructions (200k each, loop included)" % (
        kind, got["run_sets"] / 200000, got["run_gets"] / 200000))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", type=int, default=1000000, help="SETs and key range (default 1000000)")
    ap.add_argument("--callgrind", action="store_true", help="also count instructions (valgrind)")
    ap.add_argument("--src", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"),
                    help="the package's source tree, for its built Keyspace (keyspace/_keyspace.pyx)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ksproto-") as tmp:
        build(tmp)
        for kind in ("dict", "table", "keyspace"):
            subprocess.run([sys.executable, "-c", FILL, tmp, kind, str(a.keys), a.src], check=True)
        if a.callgrind:
            for kind in ("dict", "table"):
                callgrind(tmp, kind)


if __name__ == "__main__":
    main()
