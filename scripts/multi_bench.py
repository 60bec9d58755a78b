#!/usr/bin/env python3
"""Scaling and HE over several devices: the CPU workers and each GPU alone,
then GPUs together and every device together, each in its own process.

For each `KERNEL:SIZE` given, runs `coexec bench` (every output verified
against the kernel's CPU reference):

* T_d for each device d of DEVICES (default cpu,gpu0,gpu1): its best solo
  configuration, the best median over hguided, dynamic:8, dynamic:64 and
  static (warm: after a warm-up, COEXEC_PROFILE=off);
* for each co-executed configuration of CONFIGS (default gpu0,gpu1 and
  cpu,gpu0,gpu1), HGuided without hints: warm (median of HE_REPS runs after 3
  warm-ups) and cold (first run of a fresh process without a profile, median
  over HE_COLD processes);
* S = T_best / T (T_best: the best single device), S_max(config) = T_best *
  sum over its devices of 1/T_d, HE = S / S_max;
* cold, against cold baselines: each device's first run of a fresh process
  in its best solo configuration (median over HE_COLD processes; the GPUs'
  from GPU 0 and from the best GPU on an engine of its own, the better
  standing for each identical GPU), T_best and S_max from those, so that a
  cold run is held to what one device pays on its own first run (its
  uploads and pipeline creation included). `S_cold_vs_warm` keeps the cold
  run against the warm T_best.

The GPU baseline is each GPU's best solo configuration, device-local
memory included: T_gpuN = min(gpuN alone on the several-GPU engine, the
single best GPU on an engine of its own, `--gpus best`, staged on a discrete
GPU). With identical GPUs that engine's time stands for each of them.

Usage: multi_bench.py COEXEC_BINARY OUT_JSON KERNEL:SIZE ...
Environment: HE_REPS (5), HE_COLD (2), DEVICES, CONFIGS (';'-separated),
SOLO_GPU and SOLO_CPU (comma-separated schedulers; default all four),
CPU_REPS (timed runs of the CPU alone; default HE_REPS).
"""

import json
import os
import statistics
import sys

import he_bench  # the runner; beside this script

SOLO = ["hguided", "dynamic:8", "dynamic:64", "static"]


def bench(binary, kernel, size, devices, scheduler, warmup, reps, gpus=None):
    """One `coexec bench` process, profiles off (he_bench.py's runner)."""
    return he_bench.bench(binary, kernel, size, None, devices, scheduler, warmup, reps,
                          env={"COEXEC_PROFILE": "off"}, gpus=gpus)


def items(r):
    """Items per device of a bench result, where it says."""
    return [(d.get("name", "?"), d.get("items")) for d in r.get("per_device", [])]


def solo_cold(binary, kernel, size, devs, solo, cold_n):
    """Each device's cold time: the first run of a fresh process in its best
    solo configuration, median over `cold_n` processes. The GPUs: the better
    of GPU 0 on the several-GPU engine and the best GPU on an engine of its
    own (each in its best scheduler there), for every GPU of `devs`
    (identical GPUs)."""
    def first(devices, sched, gpus=None):
        runs = [bench(binary, kernel, size, devices, sched, 1, 1, gpus=gpus)["first_s"]
                for _ in range(cold_n)]
        return statistics.median(runs)

    out = {}
    gpus = [d for d in devs if d != "cpu"]
    if "cpu" in devs:
        out["cpu"] = first("cpu", solo["cpu"]["best"])
    if gpus:
        times = solo[gpus[0]]["all"]
        own = {s: t for s, t in times.items() if s.endswith(" (own engine)")}
        here = {s: t for s, t in times.items() if s not in own}
        t = []
        if here:
            t.append(first(gpus[0], min(here, key=here.get)))
        if own:
            t.append(first("gpu", min(own, key=own.get).removesuffix(" (own engine)"), gpus="best"))
        for d in gpus:
            out[d] = min(t)
    print("   cold solo " + " ".join(f"{d} {v*1e3:.3f} ms" for d, v in out.items()), flush=True)
    return out


def main():
    if len(sys.argv) < 4 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if sys.argv[1:2] in (["-h"], ["--help"]) else 2)
    binary, out_path, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
    reps = int(os.environ.get("HE_REPS", "5"))
    cold_n = int(os.environ.get("HE_COLD", "2"))
    devs = os.environ.get("DEVICES", "cpu,gpu0,gpu1").split(",")
    configs = os.environ.get("CONFIGS", "gpu0,gpu1;cpu,gpu0,gpu1").split(";")
    solo_gpu = os.environ.get("SOLO_GPU", ",".join(SOLO)).split(",")
    solo_cpu = os.environ.get("SOLO_CPU", ",".join(SOLO)).split(",")
    cpu_reps = int(os.environ.get("CPU_REPS", str(reps)))
    results = []
    for spec in specs:
        kernel, size = spec.split(":", 1)
        row = {"kernel": kernel, "size": size}
        try:
            solo = {}
            local = {s: bench(binary, kernel, size, "gpu", s, 1, reps, gpus="best")["time_s"]
                     for s in solo_gpu}
            for d in devs:
                cpu = d == "cpu"
                times = {s: bench(binary, kernel, size, d, s, 1, cpu_reps if cpu else reps)["time_s"]
                         for s in (solo_cpu if cpu else solo_gpu)}
                if not cpu:
                    times.update({f"{s} (own engine)": t for s, t in local.items()})
                best = min(times, key=times.get)
                solo[d] = {"best": best, "time_s": times[best], "all": times}
            t_best = min(v["time_s"] for v in solo.values())
            line = f"{kernel:<12} {size:<12} " + " ".join(
                f"{d} {solo[d]['time_s']*1e3:.3f} ms ({solo[d]['best']})" for d in devs)
            print(line, flush=True)
            cold_solo = solo_cold(binary, kernel, size, devs, solo, cold_n)
            t_best_cold = min(cold_solo.values())
            row.update(solo=solo, t_best=t_best, cold_solo=cold_solo, t_best_cold=t_best_cold)
            row["configs"] = {}
            for c in configs:
                s_max = t_best * sum(1 / solo[d]["time_s"] for d in c.split(","))
                s_max_cold = t_best_cold * sum(1 / cold_solo[d] for d in c.split(","))
                warm = bench(binary, kernel, size, c, "hguided", 3, reps)
                cold = [bench(binary, kernel, size, c, "hguided", 1, 1)["first_s"]
                        for _ in range(cold_n)]
                t_w, t_c = warm["time_s"], statistics.median(cold)
                fig = {
                    "s_max": s_max, "warm_s": t_w, "cold_s": t_c, "cold_runs": cold,
                    "S_warm": t_best / t_w, "HE_warm": t_best / t_w / s_max,
                    "s_max_cold": s_max_cold, "S_cold": t_best_cold / t_c,
                    "HE_cold": t_best_cold / t_c / s_max_cold, "S_cold_vs_warm": t_best / t_c,
                    "items": items(warm), "balance": warm.get("balance"),
                }
                row["configs"][c] = fig
                print(f"   {c:<16} S_max {s_max:.2f}  warm {t_w*1e3:.3f} ms S {fig['S_warm']:.3f} "
                      f"HE {fig['HE_warm']:.3f}  cold {t_c*1e3:.3f} ms S_max {s_max_cold:.2f} "
                      f"S {fig['S_cold']:.3f} HE {fig['HE_cold']:.3f}  "
                      f"items {fig['items']}", flush=True)
        except Exception as e:
            row["error"] = str(e)
            print(f"{kernel} {size} ERROR {e}", flush=True)
        results.append(row)
        with open(out_path, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
