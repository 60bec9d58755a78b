#!/usr/bin/env python3
"""Energy and EDP: the best single device against co-execution, under the
time objective and the EDP objective.

For each kernel (the seed suite and the comparable set, or --kernels), runs
`coexec bench --json --energy MODE` (a fresh process each, every output
verified) for: the GPU alone, the CPU alone, and all devices with
`--objective time` and with `--objective edp`. Energy is measured over a
window of the repetitions (`--energy window`: RAPL and NVML counters read
before and after, the window extended to --window-s by untimed runs; joules
per run = window / runs), or with each NVIDIA GPU's power sampled and
integrated (`--energy sampled`). EDP = joules per run x median time.

Where no counter reads (no RAPL, no NVIDIA GPU) the energy columns say
"unavailable" and the times are still given: the script never fails for
that. The EDP objective's engine learns device power from its own windows
(COEXEC_ENERGY_WINDOW_S, set here to --engine-window-s); its configuration
gets --edp-warmup untimed runs first so that a window closes before the
timed ones.

Writes OUT/edp.json (one object per kernel) and OUT/edp.md (a table).

Usage: scripts/edp_bench.py [--coexec PATH] [--out DIR] [--set seed|comparable|all]
       [--kernels K[:SIZE],...] [--quick] [--reps N] [--energy window|sampled]
       [--window-s S] [--engine-window-s S] [--edp-warmup N]
"""
import argparse
import json
import os
import subprocess
import sys

SEED = ["saxpy", "mandelbrot", "gaussian", "matmul", "taylor", "binomial",
        "nbody", "ray", "rap"]
COMPARABLE = ["spmv", "gather", "blackscholes", "jacobi", "histogram", "collatz"]
QUICK = {
    "saxpy": "100003", "mandelbrot": "256x256", "gaussian": "192x128",
    "matmul": "200x200", "taylor": "30001", "binomial": "1500", "nbody": "3000",
    "ray": "128x96", "rap": "1500", "spmv": "30001", "gather": "100003",
    "blackscholes": "100003", "jacobi": "500x300", "histogram": "40000",
    "collatz": "30001",
}
# (label, --devices, --objective)
CONFIGS = [("gpu", "gpu", "time"), ("cpu", "cpu", "time"),
           ("co time", "all", "time"), ("co edp", "all", "edp")]


def run(a, kernel, size, devices, objective):
    """One configuration: its record, or {"error": ...}."""
    edp = objective == "edp"
    cmd = [a.coexec, "bench", "--kernel", kernel, "--devices", devices,
           "--objective", objective, "--reps", str(a.reps), "--json",
           "--warmup", str(a.edp_warmup if edp else 2),
           "--energy", a.energy, "--energy-window-s", str(a.window_s)]
    if size:
        cmd += ["--size", size]
    env = dict(os.environ, COEXEC_ENERGY_WINDOW_S=str(a.engine_window_s))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=a.timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {a.timeout} s", "cmd": " ".join(cmd)}
    if p.returncode not in (0, 2):
        tail = (p.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": f"rc {p.returncode}: {tail}", "cmd": " ".join(cmd)}
    r = json.loads(p.stdout.strip().splitlines()[-1])
    e = r.get("energy") or {}
    return {
        "cmd": " ".join(cmd),
        "time_s": r["time_s"],
        "verified": r["verified"],
        "cpu_items": r["cpu_items"],
        "devices_used": [d["path"] for d in r["per_device"] if d["packages"] > 0],
        "joules_per_run": e.get("joules_per_run"),
        "edp": e.get("edp"),
        "energy_complete": e.get("complete", False),
        "energy": e,
    }


def best_single(row):
    """The single device of least time, and of least EDP where known."""
    solo = {k: row[k] for k in ("gpu", "cpu") if "time_s" in row.get(k, {})}
    if not solo:
        return None, None
    by_time = min(solo, key=lambda k: solo[k]["time_s"])
    with_edp = {k: v for k, v in solo.items() if v.get("edp") is not None}
    by_edp = min(with_edp, key=lambda k: with_edp[k]["edp"]) if with_edp else None
    return by_time, by_edp


def fmt(x, spec):
    return "unavailable" if x is None else format(x, spec)


def table(rows):
    head = ("| kernel | size | best single (time) | T s | E J/run | EDP J*s "
            "| co time: T s | E | EDP | EDP / best | co edp: T s | E | EDP | EDP / best | devices (edp) |")
    lines = [head, "|" + "---|" * 15]
    for row in rows:
        bt, be = row.get("best_time"), row.get("best_edp")
        b = row.get(bt, {}) if bt else {}
        ref = row.get(be, {}).get("edp") if be else None
        cells = [row["kernel"], row["size"] or "default", bt or "-",
                 fmt(b.get("time_s"), ".5f"), fmt(b.get("joules_per_run"), ".3f"),
                 fmt(b.get("edp"), ".3e")]
        for k in ("co time", "co edp"):
            c = row.get(k, {})
            if "error" in c or not c:
                cells += [c.get("error", "-"), "", "", ""]
                continue
            ratio = c["edp"] / ref if c.get("edp") is not None and ref else None
            t = fmt(c["time_s"], ".5f") + ("" if c["verified"] else " UNVERIFIED")
            cells += [t, fmt(c["joules_per_run"], ".3f"), fmt(c["edp"], ".3e"),
                      fmt(ratio, ".3f")]
        cells.append(",".join(row.get("co edp", {}).get("devices_used", [])) or "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def kernels(a):
    if a.kernels:
        return [tuple((k.split(":", 1) + [None])[:2]) for k in a.kernels.split(",")]
    names = {"seed": SEED, "comparable": COMPARABLE, "all": SEED + COMPARABLE}[a.set]
    return [(k, QUICK[k] if a.quick else None) for k in names]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--coexec", default="target/release/coexec")
    p.add_argument("--out", default="edp-out")
    p.add_argument("--set", choices=["seed", "comparable", "all"], default="all")
    p.add_argument("--kernels", help="K[:SIZE],... instead of --set")
    p.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--energy", choices=["window", "sampled"], default="window")
    p.add_argument("--window-s", type=float, default=2.0)
    p.add_argument("--engine-window-s", type=float, default=0.5)
    p.add_argument("--edp-warmup", type=int, default=20)
    p.add_argument("--timeout", type=int, default=600)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for kernel, size in kernels(a):
        row = {"kernel": kernel, "size": size}
        for label, devices, objective in CONFIGS:
            row[label] = run(a, kernel, size, devices, objective)
        row["best_time"], row["best_edp"] = best_single(row)
        rows.append(row)
        summary = {k: (row[k].get("time_s"), row[k].get("edp"), row[k].get("error"))
                   for k, _, _ in CONFIGS}
        print(f"{kernel} {size or 'default'}: {summary}", file=sys.stderr, flush=True)
        with open(os.path.join(a.out, "edp.json"), "w") as f:
            json.dump(rows, f, indent=1)
        with open(os.path.join(a.out, "edp.md"), "w") as f:
            f.write(table(rows))
    sys.stdout.write(table(rows))


if __name__ == "__main__":
    main()
