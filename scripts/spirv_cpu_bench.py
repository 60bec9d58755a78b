#!/usr/bin/env python3
"""CPU share native vs SPIR-V (a CPU Vulkan device on the CPU workers' cores),
and the rayon baseline.

For each kernel: `coexec bench --json` on the CPU alone and co-executed
(`--devices all`), with `--cpu-impl native` and `--cpu-impl spirv`, and on
the CPU alone with `--cpu-impl rayon` (the kernel's Rust code through rayon's
thread pool over the whole range, no coexec scheduling: what a user would
write without coexec); prints a Markdown table (median seconds of --reps
timed runs after one warm-up).

Usage: scripts/spirv_cpu_bench.py [--coexec PATH] [--quick] [--reps N]
       [--kernels a,b] [--scheduler S]
"""
import argparse
import json
import subprocess

QUICK = {
    "saxpy": "100003", "mandelbrot": "256x256", "gaussian": "192x128",
    "matmul": "200x200", "taylor": "30001", "binomial": "1500", "nbody": "3000",
    "ray": "128x96", "rap": "1500", "spmv": "30001", "gather": "100003",
    "blackscholes": "100003", "jacobi": "500x300", "histogram": "40000",
    "collatz": "30001",
}
SEED = ["saxpy", "mandelbrot", "gaussian", "matmul", "taylor", "binomial",
        "nbody", "ray", "rap"]


def bench(coexec, kernel, size, devices, impl, reps, scheduler):
    cmd = [coexec, "bench", "--kernel", kernel, "--devices", devices,
           "--cpu-impl", impl, "--reps", str(reps), "--json",
           "--scheduler", scheduler]
    if size:
        cmd += ["--size", size]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode not in (0, 2):
        return None, out.stderr.strip().splitlines()[-1:]
    doc = json.loads(out.stdout)
    cpu = [d for d in doc["per_device"] if d["kind"] == "cpu"]
    share = cpu[0]["items"] / max(1, sum(d["items"] for d in doc["per_device"])) if cpu else 0
    return doc, (doc["time_s"], doc["verified"], share)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--coexec", default="target/release/coexec")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--kernels", default=",".join(SEED))
    p.add_argument("--scheduler", default="hguided")
    a = p.parse_args()
    print("| kernel | size | CPU rayon s | CPU native s | CPU spirv s | spirv/native | all native s (cpu share) | all spirv s (cpu share) |")
    print("|---|---|---|---|---|---|---|---|")
    for k in a.kernels.split(","):
        size = QUICK[k] if a.quick else None
        row = {}
        for devices, impl in (("cpu", "rayon"), ("cpu", "native"), ("cpu", "spirv"),
                              ("all", "native"), ("all", "spirv")):
            _, r = bench(a.coexec, k, size, devices, impl, a.reps, a.scheduler)
            row[(devices, impl)] = r
        def t(key):
            r = row[key]
            if r is None or not isinstance(r, tuple):
                return f"failed {r}"
            s = f"{r[0]:.5f}"
            if key[0] == "all":
                s += f" ({100 * r[2]:.0f}%)"
            return s + ("" if r[1] else " UNVERIFIED")
        cn, cs = row[("cpu", "native")], row[("cpu", "spirv")]
        ratio = f"{cs[0] / cn[0]:.2f}" if isinstance(cn, tuple) and isinstance(cs, tuple) else "-"
        print(f"| {k} | {size or 'default'} | {t(('cpu','rayon'))} | {t(('cpu','native'))} | {t(('cpu','spirv'))} | {ratio} "
              f"| {t(('all','native'))} | {t(('all','spirv'))} |", flush=True)


if __name__ == "__main__":
    main()
