#!/usr/bin/python3
"""Benchmark attn-trace against PyTorch and NumPy.  Not part of the test suite.

Run with Debian's interpreter, which has python3-torch and numpy:

    /usr/bin/python3 tests/bench/bench.py --quick      # T 512 and 1024, few repetitions
    /usr/bin/python3 tests/bench/bench.py --full       # T up to 4096, more repetitions (default)

Sections:
  1. the walkthrough's example as whole processes (attn-trace vs a `python3 -c` PyTorch script)
  2. embedding rows for V = 50,000, d_in = 4,096 (whole processes)
  3. attention over long inputs (attn-trace's compute time and whole process vs PyTorch / NumPy
     on OpenBLAS, compute time)
  4. the FMA peak per core, numpy's BLAS rate, and attn-trace's own matrix-product rate
  5. the blocked matrix product alone on the same shapes (attn_gemm_bench), in steady state
"""

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY = "/usr/bin/python3"

WALKTHROUGH_PY = """\
import torch
sentence = 'Life is short, eat dessert first'
words = sentence.replace(',', '').split()
dc = {s: i for i, s in enumerate(sorted(set(words)))}
print(dc)
ids = torch.tensor([dc[s] for s in words])
print(ids)
torch.manual_seed(123)
embed = torch.nn.Embedding(50000, 3)
x = embed(ids).detach()
print(x)
torch.manual_seed(123)
W_query = torch.rand(3, 2)
W_key = torch.rand(3, 2)
W_value = torch.rand(3, 4)
print(W_query); print(W_key); print(W_value)
queries = x @ W_query
keys = x @ W_key
values = x @ W_value
print(queries); print(keys); print(values)
omega = queries @ keys.T
print(omega)
weights = torch.softmax(omega / 2**0.5, dim=-1)
print(weights)
context = weights @ values
print(context)
"""

EMBEDDING_PY = """\
import torch
words = 'Life is short, eat dessert first'.replace(',', '').split()
dc = {s: i for i, s in enumerate(sorted(set(words)))}
ids = torch.tensor([dc[s] for s in words])
torch.manual_seed(123)
embed = torch.nn.Embedding(50000, 4096)
x = embed(ids).detach()
print(x.shape, float(x.sum()))
"""


def find_binary(arg):
    if arg:
        return os.path.abspath(arg)
    for rel in ("build/release/app/attn-trace", "build/app/attn-trace"):
        p = os.path.join(REPO, rel)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    sys.exit("bench.py: no attn-trace binary found; give --binary PATH")


def thread_env(n):
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(n)
    env["OPENBLAS_NUM_THREADS"] = str(n)
    env["MKL_NUM_THREADS"] = str(n)
    return env


def fmt_s(sec):
    if sec < 1e-3:
        return "%.1f us" % (sec * 1e6)
    if sec < 1:
        return "%.2f ms" % (sec * 1e3)
    return "%.3f s" % sec


def run_measured(cmd, env=None):
    """Runs cmd once (stdout to /dev/null) and returns (seconds, stderr): from just before the
    process is spawned to its exit (os.wait4), so that no other program's start is counted as
    the process's (timing it through /usr/bin/time added that program's own start, 3-4 ms)."""
    with tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
        _, status, _ = os.wait4(p.pid, 0)
        seconds = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read()
    if p.returncode != 0:
        raise subprocess.CalledProcessError(p.returncode, cmd, stderr=text)
    return seconds, text


def peak_rss_kb(cmd, runs=3, env=None):
    """Median peak RSS (KiB) of `cmd` over `runs` runs, from /usr/bin/time -f %M.

    Not the ru_maxrss of a child of this process: Python spawns it with vfork, and the kernel
    counts the memory of this Python process, which the child had before its exec, in its peak."""
    if not os.path.exists("/usr/bin/time"):
        return None
    vals = []
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "rss")
        for _ in range(runs):
            subprocess.run(["/usr/bin/time", "-f", "%M", "-o", out] + cmd, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=True, env=env)
            with open(out) as f:
                vals.append(int(f.read().strip().splitlines()[-1]))
    return statistics.median(vals)


def time_process(cmd, runs, warmup, env=None):
    """Median wall time of a whole process, start to exit (stdout to /dev/null).

    Uses hyperfine -N when it is installed, else time.perf_counter around subprocess.run."""
    hf = shutil.which("hyperfine")
    if hf:
        with tempfile.TemporaryDirectory() as d:
            js = os.path.join(d, "hf.json")
            line = " ".join(shlex.quote(c) for c in cmd)
            subprocess.run([hf, "-N", "--warmup", str(warmup), "--runs", str(runs), "--export-json", js,
                            "--style", "none", line], check=True, stdout=subprocess.DEVNULL, env=env)
            with open(js) as f:
                r = json.load(f)["results"][0]
            return r["median"], "hyperfine"
    for _ in range(warmup):
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True, env=env)
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True, env=env)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), "perf_counter"


def print_table(headers, rows):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    line = "  ".join(str(h).ljust(w) for h, w in zip(headers, widths))
    print(line)
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(r, widths))))


def verdict(ok):
    return "MET" if ok else "NOT MET"


# ---------------------------------------------------------------------------------------------
# 1 and 2: whole processes
# ---------------------------------------------------------------------------------------------

def section_process(title, at_cmd, py_src, at_runs, py_runs, ratio_target, rss_target_mb):
    print("\n== %s ==" % title)
    py_cmd = [PY, "-c", py_src]
    at_t, how = time_process(at_cmd, at_runs, 3)
    py_t, _ = time_process(py_cmd, py_runs, 3 if py_runs >= 5 else 1)
    at_rss = peak_rss_kb(at_cmd)
    py_rss = peak_rss_kb(py_cmd, runs=1)
    ratio = py_t / at_t
    print("timing: %s, median; attn-trace %d runs, PyTorch %d runs; stdout to /dev/null" % (how, at_runs, py_runs))
    print_table(["program", "median wall", "peak RSS"], [
        ["attn-trace: " + " ".join(at_cmd[1:]) if len(at_cmd) > 1 else "attn-trace (default run)",
         fmt_s(at_t), "%.1f MB" % (at_rss / 1024) if at_rss else "n/a"],
        ["python3 -c (PyTorch script)", fmt_s(py_t), "%.1f MB" % (py_rss / 1024) if py_rss else "n/a"],
    ])
    print("ratio PyTorch / attn-trace: %.0fx   (target >= %dx: %s)" % (ratio, ratio_target, verdict(ratio >= ratio_target)))
    if at_rss:
        mb = at_rss / 1024
        print("attn-trace peak RSS: %.1f MB (%d KiB)   (target <= %d MB: %s)"
              % (mb, at_rss, rss_target_mb, verdict(mb <= rss_target_mb)))
    return {"at": at_t, "py": py_t, "ratio": ratio, "rss_kb": at_rss}


# ---------------------------------------------------------------------------------------------
# 3: long inputs
# ---------------------------------------------------------------------------------------------

PEER_PY = r"""
import sys, time, statistics
T, d_in, dk, dv, heads, threads, reps, lib = sys.argv[1:]
T, d_in, dk, dv, heads, threads, reps = map(int, (T, d_in, dk, dv, heads, threads, reps))
import numpy as np
rng = np.random.default_rng(0)
X = rng.random((T, d_in), dtype=np.float32)
Ws = [tuple(rng.random((d_in, w), dtype=np.float32) for w in (dk, dk, dv)) for _ in range(heads)]
scale = np.float32(dk ** -0.5)
if lib == "torch":
    import torch
    torch.set_num_threads(threads)
    Xt = torch.from_numpy(X)
    Wt = [tuple(torch.from_numpy(w) for w in ws) for ws in Ws]
    def run():
        with torch.no_grad():
            zs = []
            for wq, wk, wv in Wt:
                q = Xt @ wq; k = Xt @ wk; v = Xt @ wv
                a = torch.softmax((q @ k.T) / dk ** 0.5, dim=-1)
                zs.append(a @ v)
            return torch.cat(zs, dim=-1)
else:
    def run():
        zs = []
        for wq, wk, wv in Ws:
            q = X @ wq; k = X @ wk; v = X @ wv
            s = (q @ k.T) * scale
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            a = e / e.sum(axis=-1, keepdims=True)
            zs.append(a @ v)
        return np.concatenate(zs, axis=-1)
run()
ts = []
for _ in range(reps):
    t0 = time.perf_counter(); run(); ts.append(time.perf_counter() - t0)
print(statistics.median(ts))
"""


def attn_flops(T, d_in, dk, dv, heads):
    # projections (Q, K: d_kq; V: d_v) and the two T x T products
    return heads * (2 * T * d_in * (2 * dk + dv) + 2 * T * T * dk + 2 * T * T * dv)


OPENBLAS_DIR = "/usr/lib/x86_64-linux-gnu/openblas-pthread"
# The steps of the attention proper (what the peers compute): not the embedding or the weights.
ATTENTION_STEPS = {"queries", "keys", "values", "omega", "mask", "masked_omega", "scaled_scores",
                   "attention_weights", "context_vectors", "context_concat"}


def peer_env(threads, isa=None):
    """The peers' environment: OpenBLAS first on the library path when it is installed, and the
    instruction set of the attn-trace path they are compared with. For the avx2 path, OpenBLAS's
    Haswell kernels (OPENBLAS_CORETYPE) and PyTorch's AVX2 kernels (ATEN_CPU_CAPABILITY), as on a
    CPU without AVX-512; for the avx512 path, OpenBLAS's own choice (SkylakeX here) and PyTorch's
    AVX-512 kernels (its default is AVX2)."""
    env = thread_env(threads)
    if os.path.isdir(OPENBLAS_DIR):
        env["LD_LIBRARY_PATH"] = OPENBLAS_DIR
    if isa == "avx2":
        env["OPENBLAS_CORETYPE"] = "Haswell"
        env["ATEN_CPU_CAPABILITY"] = "avx2"
    elif isa == "avx512":
        env["ATEN_CPU_CAPABILITY"] = "avx512"
    return env


def isa_paths():
    """The vectorised paths this CPU has, best first: each is measured (ATTN_ISA)."""
    flags = cpu_flags()
    if "avx512f" in flags:
        return ["avx512", "avx2"]
    return ["avx2"] if "avx2" in flags and "fma" in flags else ["plain"]


def parse_timings(stderr):
    """attn-trace --timings: (attention seconds, products GFLOP/s, all-steps seconds)."""
    attention, products, steps = 0.0, None, None
    for line in stderr.splitlines():
        parts = line.split()
        if not parts or line.startswith("attn-trace:") or parts[0] == "step":
            continue
        if line.startswith("matrix products"):
            products = float(parts[-1]) if len(parts) >= 4 else None
        elif line.startswith("all steps"):
            steps = float(parts[-1]) / 1e3
        elif parts[0] in ATTENTION_STEPS:
            ms = [p for p in parts[1:] if not p.startswith("[") and not p.endswith("]") and not p.startswith("h")]
            attention += float(ms[0]) / 1e3
    return attention, products, steps


def section_long(binary, Ts, at_runs, peer_reps, tmp):
    print("\n== 3. Attention over long inputs: d_in 1024, d_kq = d_v = 128, wrapper heads ==")
    print("attn-trace: attn-trace --file F --vocab-size T --d-in 1024 --d-kq 128 --d-v 128 --heads H")
    print("  --threads N --format summary --max-memory 64G --timings; median of %d runs after a warmup." % at_runs)
    print("  'compute' is the sum of its --timings lines for the attention steps (queries, keys, values,")
    print("  omega, scaled_scores, attention_weights, context_vectors, context_concat): the same work the")
    print("  peers time. 'process' is the whole process, which also generates the embedding rows and")
    print("  the weights, writes the summary (statistics and checksums of every step), starts and exits:")
    print("  from just before it is spawned to its exit (os.wait4); its peak RSS from one more run")
    print("  under /usr/bin/time -f %M.")
    print("PyTorch / NumPy: in-process compute time (median of %d after a warmup) on random float32" % peer_reps)
    print("  X and weights of the same shapes; threads via torch.set_num_threads and OMP_NUM_THREADS /")
    print("  OPENBLAS_NUM_THREADS / MKL_NUM_THREADS; BLAS: %s" %
          ("OpenBLAS (LD_LIBRARY_PATH=%s)" % OPENBLAS_DIR if os.path.isdir(OPENBLAS_DIR)
           else "whatever libblas.so.3 is (OpenBLAS is NOT installed: apt-get install libopenblas0-pthread)"))
    d_in, dk, dv = 1024, 128, 128
    isas = isa_paths()
    print("ISA paths measured (ATTN_ISA): %s; CPU: %s" % (", ".join(isas), cpu_model()))
    print("Each path's peers run on the same instruction set: OPENBLAS_CORETYPE=Haswell and")
    print("  ATEN_CPU_CAPABILITY=avx2 beside attn-trace's avx2 path; OpenBLAS's own kernel and")
    print("  ATEN_CPU_CAPABILITY=avx512 beside its avx512 path.")
    rows, results = [], []
    for T in Ts:
        path = os.path.join(tmp, "sentence_%d.txt" % T)
        with open(path, "w") as f:
            f.write(" ".join("w%d" % i for i in range(T)) + "\n")
        for heads in (1, 8):
            for threads in (1, 2):
                fl = attn_flops(T, d_in, dk, dv, heads)
                for isa in isas:
                    peers = {}
                    for lib in ("torch", "numpy"):
                        out = subprocess.run([PY, "-c", PEER_PY, str(T), str(d_in), str(dk), str(dv), str(heads),
                                              str(threads), str(peer_reps), lib], stdout=subprocess.PIPE,
                                             check=True, env=peer_env(threads, isa), text=True).stdout
                        peers[lib] = float(out.strip().splitlines()[-1])
                    best = min(peers.values())
                    env = thread_env(threads)
                    env["ATTN_ISA"] = isa
                    cmd = [binary, "--file", path, "--vocab-size", str(T), "--d-in", str(d_in), "--d-kq", str(dk),
                           "--d-v", str(dv), "--heads", str(heads), "--threads", str(threads), "--format",
                           "summary", "--max-memory", "64G", "--timings"]
                    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
                    ts, computes, rates, rss = [], [], [], []
                    rss.append(peak_rss_kb(cmd, runs=1, env=env) or 0)
                    for _ in range(at_runs):
                        seconds, stderr = run_measured(cmd, env)
                        ts.append(seconds)
                        ran = stderr.splitlines()[0].split(", isa ")[1].split()[0]
                        if ran != isa:
                            sys.exit("bench.py: ATTN_ISA=%s but --timings says isa %s" % (isa, ran))
                        attention, rate, _ = parse_timings(stderr)
                        computes.append(attention)
                        rates.append(rate)
                    at_t, at_c = statistics.median(ts), statistics.median(computes)
                    rate = statistics.median(rates)
                    res = {"T": T, "heads": heads, "threads": threads, "isa": isa, "at": at_t, "compute": at_c,
                           "torch": peers["torch"], "numpy": peers["numpy"], "flops": fl, "rss_kb": max(rss),
                           "products_gflops": rate}
                    results.append(res)
                    rows.append([T, heads, threads, isa, fmt_s(at_c), fmt_s(at_t), fmt_s(peers["torch"]),
                                 fmt_s(peers["numpy"]), "%.2f" % (best / at_c), "%.2f" % (best / at_t),
                                 "%.0f%%" % (100 * (at_t - at_c) / at_c),
                                 "yes" if at_c < best else "no", "%.0f" % rate, "%.0f MB" % (max(rss) / 1024)])
                    print("  done T=%d heads=%d threads=%d isa=%s" % (T, heads, threads, isa), file=sys.stderr,
                          flush=True)
    print()
    print_table(["T", "heads", "thr", "isa", "at compute", "at process", "torch", "numpy", "best/compute",
                 "best/process", "overhead", "compute faster", "products GFLOP/s", "at RSS"], rows)
    print("(best = the faster of PyTorch and NumPy on the same ISA; best/x > 1 means attn-trace is faster;")
    print(" overhead = (process - compute) / compute; 'products GFLOP/s' is attn-trace's own --timings")
    print(" rate over its matrix products.)")
    return results


# ---------------------------------------------------------------------------------------------
# 4: FMA peak
# ---------------------------------------------------------------------------------------------

FMA_C = r"""
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char **argv) {
    long iters = atol(argv[1]);
#if defined(USE512)
    typedef __m512 V; const int lanes = 16;
#define SET1 _mm512_set1_ps
#define FMA _mm512_fmadd_ps
#define ADD _mm512_add_ps
#define STORE _mm512_storeu_ps
#else
    typedef __m256 V; const int lanes = 8;
#define SET1 _mm256_set1_ps
#define FMA _mm256_fmadd_ps
#define ADD _mm256_add_ps
#define STORE _mm256_storeu_ps
#endif
    V a = SET1(0.9999999f), b = SET1(1e-7f);
    V c0 = SET1(1), c1 = SET1(2), c2 = SET1(3), c3 = SET1(4), c4 = SET1(5), c5 = SET1(6),
      c6 = SET1(7), c7 = SET1(8), c8 = SET1(9), c9 = SET1(10), c10 = SET1(11), c11 = SET1(12);
    double t0 = now();
    for (long i = 0; i < iters; ++i) {
        c0 = FMA(c0, a, b); c1 = FMA(c1, a, b); c2 = FMA(c2, a, b); c3 = FMA(c3, a, b);
        c4 = FMA(c4, a, b); c5 = FMA(c5, a, b); c6 = FMA(c6, a, b); c7 = FMA(c7, a, b);
        c8 = FMA(c8, a, b); c9 = FMA(c9, a, b); c10 = FMA(c10, a, b); c11 = FMA(c11, a, b);
    }
    double t = now() - t0;
    V s = ADD(ADD(ADD(c0, c1), ADD(c2, c3)), ADD(ADD(c4, c5), ADD(c6, c7)));
    s = ADD(s, ADD(ADD(c8, c9), ADD(c10, c11)));
    float out[16]; STORE(out, s);
    fprintf(stderr, "%g\n", out[0]);
    printf("%.6f\n", 12.0 * lanes * 2.0 * iters / t / 1e9);
    return 0;
}
"""


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def measure_fma_peak(tmp):
    """Single-thread FP32 FMA throughput of a register-only loop (12 independent accumulators).

    Compiled with the system C compiler into a temporary folder; None if there is none."""
    cc = shutil.which("cc") or shutil.which("gcc")
    flags = cpu_flags()
    if not cc or "fma" not in flags:
        return None
    src = os.path.join(tmp, "fma.c")
    with open(src, "w") as f:
        f.write(FMA_C)
    best = {}
    variants = [("AVX2 FMA (8 lanes)", ["-mavx2", "-mfma"])]
    if "avx512f" in flags:
        variants.append(("AVX-512 FMA (16 lanes)", ["-mavx512f", "-DUSE512"]))
    for name, extra in variants:
        exe = os.path.join(tmp, "fma_%d" % len(best))
        r = subprocess.run([cc, "-O2"] + extra + [src, "-o", exe], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if r.returncode:
            continue
        vals = []
        for _ in range(5):
            out = subprocess.run(["taskset", "-c", "0", exe, "100000000"] if shutil.which("taskset") else [exe, "100000000"],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=True).stdout
            vals.append(float(out))
        best[name] = max(vals)
    return best or None


BLAS_PY = r"""
import statistics, sys, time
import numpy as np
n, reps = int(sys.argv[1]), int(sys.argv[2])
a = np.random.default_rng(1).random((n, n), dtype=np.float32)
b = np.random.default_rng(2).random((n, n), dtype=np.float32)
np.dot(a, b)
ts = []
for _ in range(reps):
    t0 = time.perf_counter(); np.dot(a, b); ts.append(time.perf_counter() - t0)
print(2.0 * n ** 3 / statistics.median(ts) / 1e9)
"""


def measure_blas(n, reps, isa=None):
    """numpy.dot's rate on one thread, in the peers' environment (OpenBLAS when installed) for the
    given attn-trace path."""
    out = subprocess.run([PY, "-c", BLAS_PY, str(n), str(reps)], stdout=subprocess.PIPE, check=True,
                         env=peer_env(1, isa), text=True).stdout
    return float(out.strip().splitlines()[-1])


def section_peak(long_results, tmp, reps, fma_before=None):
    print("\n== 4. Floating-point throughput ==")
    blas = {isa: measure_blas(2048, reps, isa) for isa in isa_paths()}
    for isa, rate in blas.items():
        print("numpy.dot 2048x2048 float32, 1 thread, on %s (beside the %s path): %.1f GFLOP/s" %
              ("OpenBLAS" if os.path.isdir(OPENBLAS_DIR) else "libblas.so.3", isa, rate))
    print("  -> that is the BLAS's throughput, NOT the CPU's peak")
    fma = measure_fma_peak(tmp)
    if fma and fma_before:
        # The peak is what the core can do: the higher of the two measurements, so that a slow
        # spell of the shared machine during one of them does not make it look smaller.
        for k, v in fma_before.items():
            print("measured FMA peak, %s, before section 3: %.1f GFLOP/s, now: %.1f" % (k, v, fma.get(k, 0.0)))
            fma[k] = max(fma.get(k, 0.0), v)
    if fma:
        for k, v in fma.items():
            print("measured FMA peak, %s, register-only loop on 1 core: %.1f GFLOP/s" % (k, v))
        peak = max(fma.values())
        peak_name = "measured FMA peak (%s)" % max(fma, key=fma.get)
    else:
        peak = max(blas.values())
        peak_name = "numpy BLAS throughput (no direct FMA measurement: no C compiler or no FMA)"
        print("no C compiler / no FMA flag: using the BLAS throughput above as the reference; it is NOT a peak")
    rows = []
    for r in long_results:
        g = r["products_gflops"]
        # The peak of the path that ran: the AVX2 loop's for avx2, the AVX-512 loop's for avx512.
        own = {"avx2": fma.get("AVX2 FMA (8 lanes)"), "avx512": fma.get("AVX-512 FMA (16 lanes)")}.get(
            r["isa"]) if fma else None
        own = own or peak
        rows.append([r["T"], r["heads"], r["threads"], r["isa"], "%.1f" % g, "%.1f" % (g / r["threads"]),
                     "%.0f%%" % (100 * g / r["threads"] / own)])
    print()
    print("attn-trace's matrix products (its --timings rate: 2 m n k / wall time of each product step),")
    print("against the FMA peak of the ISA path that ran:")
    print_table(["T", "heads", "thr", "isa", "GFLOP/s", "per thread", "of FMA peak per thread"], rows)
    print("reference for 'of FMA peak': %s = %.1f GFLOP/s per core; target >= 75%%" % (peak_name, peak))
    return blas, fma, peak


def section_kernel(binary, Ts, peak):
    """The blocked product alone on the attention's shapes, in steady state (attn_gemm_bench), on
    each ISA the CPU runs (AVX-512 and AVX2), each against its own vector width's FMA peak, which
    the bench measures itself (`peak` is not used)."""
    bench = os.path.join(os.path.dirname(os.path.dirname(binary)), "tests", "attn_gemm_bench")
    print("\n== 5. The blocked matrix product alone, steady state (%s) ==" % os.path.relpath(bench, REPO))
    if not os.access(bench, os.X_OK):
        print("not built (it is built with the tests: cmake --build --preset release)")
        return [], []
    rows, fractions, table = [], [], []
    for threads in (1, 2):
        out = subprocess.run([bench, str(threads)] + [str(t) for t in Ts], stdout=subprocess.PIPE,
                             check=True, text=True, env=thread_env(threads)).stdout
        lines = out.splitlines()
        if threads == 1:
            print(lines[0])  # the FMA peak per core of each ISA the bench measured
        # "avx2 T=512 X W_q (...): 0.123 ms 120.0 GFLOP/s 88.8 % of peak (min 118.1 max 121.3 GFLOP/s)"
        for line in lines[2:]:
            head, rate = line.rsplit(": ", 1)
            words = rate.split()
            g, frac = float(words[2]), float(words[4]) / 100
            if threads == 1:
                fractions.append((head.split()[0], frac))  # the target is for one thread
            table.append({"what": head, "threads": threads, "gflops": g, "fraction": frac})
            rows.append([head, threads, "%.1f" % g, "%.0f%%" % (100 * frac),
                         " ".join(words[8:12]).lstrip("(")])
    print_table(["isa, product", "thr", "GFLOP/s", "of its ISA's FMA peak per thread", "spread (GFLOP/s)"], rows)
    print("(each product repeated 22 times on the same inputs, median of the last 21: warm caches,")
    print(" an output matrix already in memory, the worker threads awake, and the memory in 2 MiB")
    print(" pages where the system gives them, as a run makes its heap ready)")
    return fractions, table


# ---------------------------------------------------------------------------------------------
# 6: T = 16,384 in bounded memory
# ---------------------------------------------------------------------------------------------

BOUNDED_PY = r"""
import resource, sys, time
T, d_in, dk, dv, heads, threads = map(int, sys.argv[1:7])
import numpy as np
import torch
torch.set_num_threads(threads)
rng = np.random.default_rng(0)
X = torch.from_numpy(rng.random((T, d_in), dtype=np.float32))
Ws = [tuple(torch.from_numpy(rng.random((d_in, w), dtype=np.float32)) for w in (dk, dk, dv))
      for _ in range(heads)]
def run():
    # The heads one at a time: each head's (T, T) scores and weights are freed before the next.
    with torch.no_grad():
        zs = []
        for wq, wk, wv in Ws:
            q = X @ wq; k = X @ wk; v = X @ wv
            a = torch.softmax((q @ k.T) / dk ** 0.5, dim=-1)
            zs.append(a @ v)
            del a
        return torch.cat(zs, dim=-1)
ts = []
for _ in range(2):
    t0 = time.perf_counter(); run(); ts.append(time.perf_counter() - t0)
print(min(ts), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def section_bounded(binary, tmp, threads=2):
    T, d_in, dk, dv, heads = 16384, 1024, 128, 128, 8
    print("\n== 6. T = 16,384 in bounded memory: d_in 1024, d_kq = d_v = 128, 8 heads, %d threads ==" % threads)
    print("attn-trace --format summary (whole process, one run); PyTorch computing the same heads one at a")
    print("  time on random inputs (the faster of two runs of the 8 heads, inputs made before timing)")
    path = os.path.join(tmp, "sentence_%d.txt" % T)
    with open(path, "w") as f:
        f.write(" ".join("w%d" % i for i in range(T)) + "\n")
    rows, results = [], []
    for isa in isa_paths():
        out = subprocess.run([PY, "-c", BOUNDED_PY, str(T), str(d_in), str(dk), str(dv), str(heads), str(threads)],
                             stdout=subprocess.PIPE, check=True, env=peer_env(threads, isa), text=True).stdout
        py_t, py_rss = out.split()
        env = thread_env(threads)
        env["ATTN_ISA"] = isa
        cmd = [binary, "--file", path, "--vocab-size", str(T), "--d-in", str(d_in), "--d-kq", str(dk), "--d-v",
               str(dv), "--heads", str(heads), "--threads", str(threads), "--format", "summary"]
        with tempfile.NamedTemporaryFile("r", dir=tmp) as o:
            # One run of several seconds: /usr/bin/time's own start does not count, and its
            # peak RSS is the process's alone.
            t0 = time.perf_counter()
            subprocess.run(["/usr/bin/time", "-f", "%M", "-o", o.name] + cmd, stdout=subprocess.DEVNULL,
                           check=True, env=env)
            at_t = time.perf_counter() - t0
            rss = int(open(o.name).read().strip().splitlines()[-1])
        r = {"isa": isa, "at": at_t, "rss_kb": rss, "torch": float(py_t), "torch_rss_kb": int(py_rss)}
        results.append(r)
        rows.append([isa, fmt_s(at_t), "%.0f MB" % (rss / 1024), fmt_s(r["torch"]),
                     "%.0f MB" % (r["torch_rss_kb"] / 1024), "%.2f" % (r["torch"] / at_t)])
    print_table(["isa", "attn-trace process", "attn-trace peak RSS", "PyTorch heads one at a time",
                 "PyTorch peak RSS", "PyTorch / attn-trace"], rows)
    return results


# ---------------------------------------------------------------------------------------------

def show_blas():
    print("\n== BLAS used by the peers ==")
    code = ("import numpy, io, contextlib\n"
            "b = io.StringIO()\n"
            "with contextlib.redirect_stdout(b): numpy.show_config()\n"
            "s = b.getvalue()\n"
            "print('numpy', numpy.__version__)\n"
            "lines = s.splitlines(); sect = ''\n"
            "for l in lines:\n"
            "    if l.endswith(':') and not l.startswith(' '): sect = l[:-1]\n"
            "    elif 'libraries' in l and sect in ('blas_opt_info', 'lapack_opt_info'): print('  %s: %s' % (sect, l.strip()))\n"
            "    elif l.strip().startswith(('baseline', 'found')): print('  SIMD ' + l.strip())\n"
            "import torch\n"
            "print('torch', torch.__version__, '- default threads', torch.get_num_threads())\n"
            "c = torch.__config__.show()\n"
            "import re\n"
            "for l in c.splitlines():\n"
            "    if any(k in l for k in ('BLAS', 'LAPACK', 'MKL', 'OpenMP', 'CPU capability')):\n"
            "        l = l.strip()\n"
            "        if l.startswith('- Build settings'):\n"
            "            l = '- Build settings: ' + ', '.join(re.findall(r'(?:BLAS_INFO|LAPACK_INFO|USE_MKLDNN|USE_OPENMP)=[^,]*', l))\n"
            "        print('  ' + l)\n")
    code += ("maps = open('/proc/self/maps').read().split()\n"
             "print('libblas loaded by the peers: ' + ', '.join(sorted({m for m in maps if 'libblas' in m or 'libopenblas' in m})))\n")
    out = subprocess.run([PY, "-c", code], stdout=subprocess.PIPE, text=True, env=peer_env(1)).stdout
    print(out.rstrip())
    libblas = "/usr/lib/x86_64-linux-gnu/libblas.so.3"
    real = os.path.realpath(libblas) if os.path.exists(libblas) else "(none)"
    print("libblas.so.3 resolves to: %s" % real)
    have_openblas = any(os.path.exists(p) for p in (
        "/usr/lib/x86_64-linux-gnu/openblas-pthread", "/usr/lib/x86_64-linux-gnu/openblas-openmp",
        "/usr/lib/x86_64-linux-gnu/openblas-serial"))
    print("OpenBLAS installed: %s" % ("yes" if have_openblas else "no"))
    print("note: Debian's default libblas.so.3 is the netlib reference BLAS (unoptimized) unless")
    print("      libopenblas0-pthread is installed; the benchmark installs nothing. With OpenBLAS")
    print("      installed, the peers load it explicitly (LD_LIBRARY_PATH=%s)." % OPENBLAS_DIR)
    if not have_openblas:
        print("      -> OpenBLAS is NOT installed: the peers run on the reference BLAS, and section 3")
        print("         does not compare with the peers the project's targets name.")


def write_markdown(path, s1, s2, long_results, fma, blas, kernel_rows, bounded):
    """The results as the tables of docs/performance.md (its Results section is these tables)."""
    own_peak = {"avx2": (fma or {}).get("AVX2 FMA (8 lanes)"), "avx512": (fma or {}).get("AVX-512 FMA (16 lanes)")}
    out = []
    w = out.append
    w("Measured by `tests/bench/bench.py` on %s: %s, %d cores." % (time.strftime("%Y-%m-%d"), cpu_model(),
                                                                  os.cpu_count() or 0))
    w("")
    w("| ISA path | measured FMA peak per core | `numpy.dot` 2048 × 2048, 1 thread, beside it |")
    w("|---|---|---|")
    for isa in isa_paths():
        p = own_peak.get(isa)
        w("| %s | %s | %.1f GFLOP/s |" % (isa, "%.1f GFLOP/s" % p if p else "n/a", blas.get(isa, 0.0)))
    w("")
    w("| run | attn-trace | PyTorch | ratio | attn-trace peak RSS |")
    w("|---|---|---|---|---|")
    for name, r in (("the walkthrough", s1), ("embedding rows, V 50,000 × d_in 4,096", s2)):
        w("| %s | %s | %s | %.0f× | %.1f MB |" % (name, fmt_s(r["at"]), fmt_s(r["py"]), r["ratio"],
                                                r["rss_kb"] / 1024))
    w("")
    w("| T | heads | threads | ISA | attn-trace compute | attn-trace process | overhead | PyTorch | NumPy | "
      "faster peer / compute | faster peer / process | products, % of peak per thread |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in long_results:
        best = min(r["torch"], r["numpy"])
        ref = own_peak.get(r["isa"])
        frac = "%.0f %%" % (100 * r["products_gflops"] / r["threads"] / ref) if ref else "n/a"
        w("| %d | %d | %d | %s | %s | %s | %.0f %% | %s | %s | %.2f | %.2f | %s |" % (
            r["T"], r["heads"], r["threads"], r["isa"], fmt_s(r["compute"]), fmt_s(r["at"]),
            100 * (r["at"] - r["compute"]) / r["compute"], fmt_s(r["torch"]), fmt_s(r["numpy"]),
            best / r["compute"], best / r["at"], frac))
    w("")
    w("| product (one thread unless said) | threads | GFLOP/s | % of its ISA's FMA peak per thread |")
    w("|---|---|---|---|")
    for k in kernel_rows:
        w("| %s | %d | %.1f | %.0f %% |" % (k["what"], k["threads"], k["gflops"], 100 * k["fraction"]))
    if bounded:
        w("")
        w("| ISA | attn-trace process | attn-trace peak RSS | PyTorch, heads one at a time | PyTorch peak RSS |")
        w("|---|---|---|---|---|")
        for r in bounded:
            w("| %s | %s | %.0f MB | %s | %.0f MB |" % (r["isa"], fmt_s(r["at"]), r["rss_kb"] / 1024,
                                                    fmt_s(r["torch"]), r["torch_rss_kb"] / 1024))
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true", help="fewer repetitions, T 512 and 1024")
    g.add_argument("--full", action="store_true", help="more repetitions, T up to 4096 (default)")
    ap.add_argument("--binary", help="attn-trace binary (default build/release/app/attn-trace, "
                                     "else build/app/attn-trace)")
    ap.add_argument("--bounded", action="store_true", help="with --quick: run section 6 (T = 16,384) too")
    ap.add_argument("--markdown", metavar="FILE", help="also write the results as docs/performance.md's tables")
    args = ap.parse_args()
    full = not args.quick
    binary = find_binary(args.binary)

    print("attn-trace benchmark (%s mode)" % ("full" if full else "quick"))
    print("binary: %s" % os.path.relpath(binary, REPO) if binary.startswith(REPO) else binary)
    print("python: %s; hyperfine: %s" % (PY, shutil.which("hyperfine") or "not installed (perf_counter fallback)"))
    show_blas()

    s1 = section_process("1. Walkthrough example, whole process (start to last byte)", [binary], WALKTHROUGH_PY,
                         200 if full else 50, 10 if full else 5, 500, 16)
    s2 = section_process("2. Embedding rows, V = 50,000, d_in = 4,096, whole process",
                         [binary, "--d-in", "4096", "--steps", "embeddings", "--format", "summary"], EMBEDDING_PY,
                         200 if full else 50, 10 if full else 5, 10, 16)

    with tempfile.TemporaryDirectory(prefix="attn-bench-") as tmp:
        Ts = (512, 1024, 2048, 4096) if full else (512, 1024)
        fma_before = measure_fma_peak(tmp)
        long_results = section_long(binary, Ts, 5 if full else 3, 5, tmp)
        blas, fma, peak = section_peak(long_results, tmp, 5 if full else 3, fma_before)
        kernel, kernel_rows = section_kernel(binary, Ts, peak)
        bounded = section_bounded(binary, tmp) if full or args.bounded else []

    print("\n== Summary of the targets (CPU: %s) ==" % cpu_model())
    print("walkthrough >= 500x faster than PyTorch: %.0fx  %s" % (s1["ratio"], verdict(s1["ratio"] >= 500)))
    print("walkthrough peak RSS <= 16 MB: %.1f MB  %s" % (s1["rss_kb"] / 1024, verdict(s1["rss_kb"] / 1024 <= 16)))
    print("embedding rows >= 10x faster: %.0fx  %s" % (s2["ratio"], verdict(s2["ratio"] >= 10)))
    print("embedding rows peak RSS <= 16 MB: %.1f MB  %s" % (s2["rss_kb"] / 1024, verdict(s2["rss_kb"] / 1024 <= 16)))
    own_peak = {"avx2": (fma or {}).get("AVX2 FMA (8 lanes)"), "avx512": (fma or {}).get("AVX-512 FMA (16 lanes)")}
    for isa in isa_paths():
        rs = [r for r in long_results if r["isa"] == isa]
        if not rs:
            continue
        print("-- the %s path --" % isa)
        wins = sum(1 for r in rs if r["compute"] < min(r["torch"], r["numpy"]))
        print("compute faster than the faster peer (same ISA, equal threads): %d of %d cases  %s"
              % (wins, len(rs), verdict(wins == len(rs))))
        late = [r for r in rs if r["T"] >= 1024]
        wins_p = sum(1 for r in late if r["at"] < min(r["torch"], r["numpy"]))
        print("from T = 1024, whole process faster than the faster peer's compute: %d of %d cases  %s"
              % (wins_p, len(late), verdict(wins_p == len(late))))
        over = [(r["at"] - r["compute"]) / r["compute"] for r in late]
        if over:
            print("from T = 1024, process overhead <= 30%% of the compute: worst %.0f%%  %s"
                  % (100 * max(over), verdict(max(over) <= 0.30)))
        ref = own_peak.get(isa) or peak
        fr = [r["products_gflops"] / r["threads"] / ref for r in late]
        if fr:
            print("from T = 1024, matrix products in the runs >= 75%% of the FMA peak per thread: worst %.0f%%  %s"
                  % (100 * min(fr), verdict(min(fr) >= 0.75)))
        ks = [f for i, f in kernel if i == isa]
        if ks:
            print("the blocked product alone >= 85%% of the FMA peak on one thread: %d of %d (worst %.0f%%)  %s"
                  % (sum(f >= 0.85 for f in ks), len(ks), 100 * min(ks), verdict(min(ks) >= 0.85)))
        for r in bounded:
            if r["isa"] == isa:
                print("T = 16,384, 8 heads: peak RSS %.0f MB (target < 1,536), process %s vs PyTorch's heads one "
                      "at a time %s  %s" % (r["rss_kb"] / 1024, fmt_s(r["at"]), fmt_s(r["torch"]),
                                            verdict(r["rss_kb"] / 1024 < 1536 and r["at"] < r["torch"])))
    if args.markdown:
        write_markdown(args.markdown, s1, s2, long_results, fma, blas, kernel_rows, bounded)
        print("\nmarkdown tables written to %s" % args.markdown)


if __name__ == "__main__":
    main()
