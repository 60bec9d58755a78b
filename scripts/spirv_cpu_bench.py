#!/usr/bin/env python3
"""CPU share native vs SPIR-V (a CPU Vulkan device on the CPU workers' cores),
and the rayon baseline.

For each kernel: `coexec bench --json` on the CPU alone and co-executed
(`--devices all`), with `--cpu-impl native` and `--cpu-impl spirv`, and on
the CPU alone with `--cpu-impl rayon` (the kernel's Rust code through rayon's
thread pool over the whole range, no coexec scheduling: what a user would
write without coexec); prints a Markdown table (median seconds of --reps
timed runs after one warm-up). Each cell is printed (and flushed) as soon
as it is measured, so a run cut short keeps what it measured.

Usage: scripts/spirv_cpu_bench.py [--coexec PATH] [--quick] [--reps N]
       [--kernels a,b] [--scheduler S] [--cell-timeout S]
       [--sizes KERNEL=SIZE,...]

--cell-timeout S: a cell (one `coexec bench`) running longer than S seconds
is killed and shows `timeout`. --sizes: the size of the named kernels (as
`coexec bench --size`: `2^22`, `2048x2048`), over --quick's and the default.
"""
import argparse
import json
import subprocess
import sys

QUICK = {
    "saxpy": "100003", "mandelbrot": "256x256", "gaussian": "192x128",
    "matmul": "200x200", "taylor": "30001", "binomial": "1500", "nbody": "3000",
    "ray": "128x96", "rap": "1500", "spmv": "30001", "gather": "100003",
    "blackscholes": "100003", "jacobi": "500x300", "histogram": "40000",
    "collatz": "30001",
}
SEED = ["saxpy", "mandelbrot", "gaussian", "matmul", "taylor", "binomial",
        "nbody", "ray", "rap"]


CELLS = (("cpu", "rayon"), ("cpu", "native"), ("cpu", "spirv"),
         ("all", "native"), ("all", "spirv"))


def bench(coexec, kernel, size, devices, impl, reps, scheduler, timeout=None):
    """One cell: (the JSON document, (time, verified, CPU share)); the
    document is None and the second item a list of words where the command
    failed, "timeout" where it ran past `timeout` seconds."""
    cmd = [coexec, "bench", "--kernel", kernel, "--devices", devices,
           "--cpu-impl", impl, "--reps", str(reps), "--json",
           "--scheduler", scheduler]
    if size:
        cmd += ["--size", size]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "timeout"
    if out.returncode not in (0, 2):
        return None, out.stderr.strip().splitlines()[-1:]
    try:
        doc = json.loads(out.stdout)
    except json.JSONDecodeError:
        return None, ["no JSON"]
    cpu = [d for d in doc["per_device"] if d["kind"] == "cpu"]
    share = cpu[0]["items"] / max(1, sum(d["items"] for d in doc["per_device"])) if cpu else 0
    return doc, (doc["time_s"], doc["verified"], share)


def parse_sizes(text, kernels):
    """`KERNEL=SIZE,...` of --sizes as a dict; a ValueError names a bad one."""
    sizes = {}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        k, eq, v = pair.partition("=")
        k, v = k.strip(), v.strip()
        if not eq or not k or not v:
            raise ValueError(f"`{pair}` is not KERNEL=SIZE")
        if k not in kernels:
            raise ValueError(f"{k} is not among --kernels ({','.join(kernels)})")
        if k in sizes:
            raise ValueError(f"{k} given twice")
        sizes[k] = v
    return sizes


def cell(key, r):
    """The text of one measured cell."""
    if r == "timeout":
        return "timeout"
    if r is None or not isinstance(r, tuple):
        return f"failed {r}"
    s = f"{r[0]:.5f}"
    if key[0] == "all":
        s += f" ({100 * r[2]:.0f}%)"
    return s + ("" if r[1] else " UNVERIFIED")


def emit(text):
    """Writes part of the table at once (a run cut short keeps it)."""
    sys.stdout.write(text)
    sys.stdout.flush()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--coexec", default="target/release/coexec")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--kernels", default=",".join(SEED))
    p.add_argument("--scheduler", default="hguided")
    p.add_argument("--cell-timeout", type=float, default=None, metavar="S",
                   help="seconds a cell may run; past them it shows `timeout`")
    p.add_argument("--sizes", default="", metavar="KERNEL=SIZE,...",
                   help="per-kernel sizes, e.g. taylor=2^22,matmul=2048x2048")
    a = p.parse_args()
    kernels = [k.strip() for k in a.kernels.split(",") if k.strip()]
    if a.cell_timeout is not None and a.cell_timeout <= 0:
        p.error("--cell-timeout: give a positive number of seconds")
    try:
        sizes = parse_sizes(a.sizes, kernels)
    except ValueError as e:
        p.error(f"--sizes: {e}")
    emit("| kernel | size | CPU rayon s | CPU native s | CPU spirv s | spirv/native | all native s (cpu share) | all spirv s (cpu share) |\n"
         "|---|---|---|---|---|---|---|---|\n")
    for k in kernels:
        size = sizes.get(k) or (QUICK.get(k) if a.quick else None)
        emit(f"| {k} | {size or 'default'} |")
        row = {}
        for key in CELLS:
            _, row[key] = bench(a.coexec, k, size, key[0], key[1], a.reps,
                                a.scheduler, a.cell_timeout)
            emit(f" {cell(key, row[key])} |")
            if key == ("cpu", "spirv"):
                cn, cs = row[("cpu", "native")], row[key]
                ok = isinstance(cn, tuple) and isinstance(cs, tuple)
                emit(f" {cs[0] / cn[0]:.2f} |" if ok else " - |")
        emit("\n")


if __name__ == "__main__":
    main()
