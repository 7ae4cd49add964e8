"""Vector sets: VADD and VSIM speed and recall@10 against an exact search.

Starts an Ophidis server (this checkout's src) on a free port, adds N
vectors of DIM dimensions (float32, FP32 blobs, pipelined) with VADD: by
default clustered like embeddings (a mixture of 1000 Gaussian clusters in
a 32-dimensional subspace plus noise), or i.i.d. Gaussian (``--data
gauss``, the hardest case for any graph index), then runs Q queries with VSIM (COUNT 10) and compares each
answer with the exact 10 nearest by cosine similarity computed with numpy
(VSIM ... TRUTH is checked too on the first queries).  Prints the insert
and query rates and the mean recall@10.

    python bench/vset_recall.py                # N=100000 DIM=128 (slow in pure Python)
    python bench/vset_recall.py -n 10000 -q 200
    python bench/vset_recall.py --quant NOQUANT --ef 0,200,400
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time

import numpy as np
import redis

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=100000, help="vectors added")
    ap.add_argument("-d", "--dim", type=int, default=128)
    ap.add_argument("-q", "--queries", type=int, default=200)
    ap.add_argument("--quant", default="Q8", choices=["Q8", "NOQUANT", "BIN"])
    ap.add_argument("--ef", default="0", help="VSIM EF values, comma-separated (0: the default, 100)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--data", default="clustered", choices=["clustered", "gauss"])
    ap.add_argument("--port", type=int, default=0, help="use a server already running there")
    a = ap.parse_args()

    rng = np.random.default_rng(a.seed)
    if a.data == "gauss":
        data = rng.standard_normal((a.n, a.dim)).astype(np.float32)
        queries = rng.standard_normal((a.queries, a.dim)).astype(np.float32)
    else:
        basis = rng.standard_normal((32, a.dim))
        centers = rng.standard_normal((1000, 32)) * 3.0

        def draw(k):
            z = centers[rng.integers(0, len(centers), k)] + rng.standard_normal((k, 32))
            return (z @ basis + 0.5 * rng.standard_normal((k, a.dim))).astype(np.float32)

        data = draw(a.n)
        queries = draw(a.queries)

    proc = None
    port = a.port
    if not port:
        port = free_port()
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"))
        proc = subprocess.Popen([sys.executable, "-m", "ophidis.main", "--port", str(port), "--save", ""],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        r = redis.Redis(port=port)
        deadline = time.time() + 30
        while True:
            try:
                r.ping()
                break
            except redis.ConnectionError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        r.delete("bench:vset")
        t0 = time.perf_counter()
        batch = 200
        for start in range(0, a.n, batch):
            p = r.pipeline(transaction=False)
            for i in range(start, min(start + batch, a.n)):
                p.execute_command("VADD", "bench:vset", "FP32", data[i].tobytes(), i, a.quant)
            p.execute()
        t_add = time.perf_counter() - t0
        assert r.execute_command("VCARD", "bench:vset") == a.n

        unit = data / np.linalg.norm(data, axis=1, keepdims=True)
        exact = [np.argsort(-(unit @ (q / np.linalg.norm(q))), kind="stable")[:10].tolist() for q in queries]
        print("vectors %d x %d (%s, %s): VADD %.0f/s (%.1fs)" % (a.n, a.dim, a.data, a.quant, a.n / t_add, t_add))
        for ef in [int(x) for x in a.ef.split(",")]:
            extra = ["EF", ef] if ef else []
            hits = 0
            t_sim = 0.0
            for q, ex in zip(queries, exact):
                t0 = time.perf_counter()
                got = r.execute_command("VSIM", "bench:vset", "FP32", q.tobytes(), "COUNT", 10, *extra)
                t_sim += time.perf_counter() - t0
                hits += len({int(x) for x in got} & set(ex))
            print("VSIM COUNT 10 EF %d: %.0f/s, recall@10 %.4f over %d queries"
                  % (ef or 100, a.queries / t_sim, hits / (10.0 * a.queries), a.queries))
        truth_hits = 0
        for q, ex in list(zip(queries, exact))[:10]:
            tr = r.execute_command("VSIM", "bench:vset", "FP32", q.tobytes(), "COUNT", 10, "TRUTH")
            truth_hits += len({int(x) for x in tr} & set(ex))
        print("VSIM TRUTH recall@10 (what quantization alone loses): %.4f" % (truth_hits / 100.0))
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    main()
