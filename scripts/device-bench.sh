#!/usr/bin/env bash
# Measurements on the GPU machine (no Rust toolchain there): build here with
#   cargo build --release --bin coexec && cargo bench --bench core --no-run
#   cp target/release/deps/core-* target/release/coexec-core   (the executable)
#   ../shared/device/bundle.sh target/release/coexec target/release/coexec-core
# then run this script there with .device/ carried:
#   source .device/env.sh; bash scripts/device-bench.sh PART
# PART 1: info, core harness, suite part 1; PART 2: suite part 2 + quick
# scaling; PART 3: binomial and full-range scaling of mandelbrot and taylor;
# PART 4: core harness again (timestamps read back by query, host query
# reset, batched CPU bookkeeping), the GPU gap with the old copy read-back
# and with the next package always in flight, and the eight kernels
# co-executed with wave-sized GPU packages (`coexec bench`, 3 reps; their
# CPU-alone times are those of parts 1-3). PARTS 5-7: the full suite and
# the full-range sweeps with the code of that date. PART 8: the core
# harness with work stealing between CPU workers and the package log moved,
# not copied (every section). PART 9: the suite's five shorter kernels again
# with work stealing; PARTS 10 and 11: nbody and rap, then ray, likewise
# (not Dynamic{5}). PART 12: HGuided with stealing on and off
# (COEXEC_STEAL=0) and the GPU alone, interleaved.
set -u
part="${1:-1}"
out="${OUT:-/tmp/out}"
r=/tmp/coexec-results
# Part 4 writes straight into $OUT, so that what ran comes back even if the
# call is cut short.
[ "$part" = 4 ] && r="$out"
mkdir -p "$r" "$out"
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export COEXEC_CACHE_DIR=/tmp/coexec-cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv > "$r/gpu.txt" 2>&1
lscpu > "$r/lscpu.txt" 2>&1
if [ "$part" = 1 ]; then
  coexec info > "$r/info.txt" 2>&1
  timeout 150 coexec-core --mandel 8192x8192 --saxpy 268435456 --json "$r/core.json" > "$r/core.txt" 2>&1
  timeout 360 coexec suite --no-scaling --reps 2 --cpu-solo hguided --kernels taylor,gaussian,mandelbrot,matmul,binomial \
    --json "$r/suite1.json" --out "$r/suite1" > "$r/suite1.txt" 2>&1
elif [ "$part" = 3 ]; then
  timeout 200 coexec suite --no-scaling --reps 2 --cpu-solo hguided --schedulers dynamic:200,static,hguided:hints,hguided:nohints \
    --kernels binomial --json "$r/suite3.json" --out "$r/suite3" > "$r/suite3.txt" 2>&1
  timeout 300 coexec suite --reps 1 --cpu-solo hguided --schedulers static,hguided:hints,hguided:nohints \
    --kernels mandelbrot,taylor --json "$r/scaling-full.json" --out "$r/scaling-full" > "$r/scaling-full.txt" 2>&1
elif [ "$part" = 4 ]; then
  coexec info > "$r/info.txt" 2>&1
  timeout 100 coexec-core --only claim,cpu_package_overhead,gpu_gap,cpu_vs_rayon,gpu_vs_raw \
    --mandel 8192x8192 --saxpy 268435456 --json "$r/core.json" > "$r/core.txt" 2>&1
  COEXEC_GPU_TIMESTAMPS=copy timeout 45 coexec-core --only gpu_gap --mandel 8192x8192 --saxpy 268435456 \
    --json "$r/gap-copy.json" > "$r/gap-copy.txt" 2>&1
  COEXEC_PREFETCH_LEAD_US=1000000 timeout 45 coexec-core --only gpu_gap --mandel 8192x8192 --saxpy 268435456 \
    --json "$r/gap-lead.json" > "$r/gap-lead.txt" 2>&1
  # CPU shares of the power from the solo times of parts 1-3 (default
  # sizes): T_gpu / (T_cpu + T_gpu).
  for kp in nbody:0.01157 gaussian:0.02351 rap:0.02730 taylor:0.06941 matmul:0.1688 \
            binomial:0.06547 ray:0.00419 mandelbrot:0.01882; do
    k="${kp%%:*}"; c="${kp##*:}"
    [ "$SECONDS" -gt 300 ] && { echo "out of time before $k" >> "$r/skipped.txt"; continue; }
    {
      timeout 40 coexec bench --kernel "$k" --devices gpu --scheduler static --json
      timeout 40 coexec bench --kernel "$k" --devices all --scheduler hguided --cpu-power "$c" --json
      timeout 40 coexec bench --kernel "$k" --devices all --scheduler hguided --json
      timeout 40 coexec bench --kernel "$k" --devices all --scheduler static --cpu-power "$c" --json
    } > "$r/bench-$k.jsonl" 2> "$r/bench-$k.err"
  done
elif [ "$part" = 5 ]; then
  # Core harness again (one-move package log, interleaved gpu_vs_raw), the
  # taylor GPU-alone time through `coexec bench` next to the suite's, then
  # the full suite with every scheduler for the five shorter kernels.
  coexec info > "$r/info.txt" 2>&1
  timeout 100 coexec-core --only claim,cpu_package_overhead,gpu_gap,cpu_vs_rayon,gpu_vs_raw \
    --mandel 8192x8192 --saxpy 268435456 --json "$r/core.json" > "$r/core.txt" 2>&1
  timeout 40 coexec bench --kernel taylor --devices gpu --scheduler static --json > "$r/bench-taylor.jsonl" 2>&1
  timeout 420 coexec suite --no-scaling --reps 2 --cpu-solo hguided --kernels taylor,mandelbrot,gaussian,matmul,binomial \
    --json "$r/suite5.json" --out "$r/suite5" > "$r/suite5.txt" 2>&1
elif [ "$part" = 6 ]; then
  # The three kernels whose CPU alone takes 20-33 s: every scheduler but
  # Dynamic{5}, which hands a fifth of the range to one CPU worker (about
  # 3 x T_cpu, 60-100 s a run).
  timeout 480 coexec suite --no-scaling --reps 2 --cpu-solo hguided \
    --schedulers dynamic:200,static,hguided:hints,hguided:nohints --kernels rap,ray,nbody \
    --json "$r/suite6.json" --out "$r/suite6" > "$r/suite6.txt" 2>&1
  # taylor's GPU alone: 4.7 ms through `coexec bench`, 23 ms in the suite
  # (after the CPU-alone runs) at 2^24 elements, whose 128 MiB fit the
  # CPU's 300 MiB L3. The same pair at 2^26 (512 MiB) tells whether it is a
  # cache effect.
  timeout 40 coexec bench --kernel taylor --size 67108864 --devices gpu --scheduler static --json \
    > "$r/bench-taylor-2e26.jsonl" 2>&1
  timeout 60 coexec suite --no-scaling --reps 2 --cpu-solo hguided --schedulers static,hguided:nohints \
    --kernels taylor --sizes taylor=67108864 --json "$r/suite6-taylor.json" > "$r/suite6-taylor.txt" 2>&1
elif [ "$part" = 7 ]; then
  # Full-range scalability sweeps of the six kernels not swept in part 3
  # (the suite's own runs at small sizes, the sweeps at 2^10 .. 2^26).
  timeout 540 coexec suite --reps 2 --cpu-solo hguided --schedulers hguided:nohints \
    --sizes gaussian=1024x1024,matmul=512x512,binomial=65536,nbody=16384,ray=1024x1024,rap=65536 \
    --kernels gaussian,matmul,binomial,nbody,ray,rap \
    --json "$r/scaling7.json" --out "$r/scaling7" > "$r/scaling7.txt" 2>&1
elif [ "$part" = 8 ]; then
  coexec info > "$r/info.txt" 2>&1
  timeout 300 coexec-core --mandel 8192x8192 --saxpy 268435456 --json "$r/core.json" > "$r/core.txt" 2>&1
  timeout 100 coexec-core --only cpu_package_overhead,cpu_vs_rayon --mandel 8192x8192 --saxpy 268435456 \
    --json "$r/core-again.json" > "$r/core-again.txt" 2>&1
elif [ "$part" = 9 ]; then
  timeout 500 coexec suite --no-scaling --reps 2 --cpu-solo hguided --kernels taylor,mandelbrot,gaussian,matmul,binomial \
    --json "$r/suite9.json" --out "$r/suite9" > "$r/suite9.txt" 2>&1
elif [ "$part" = 11 ]; then
  timeout 540 coexec suite --no-scaling --reps 2 --cpu-solo hguided \
    --schedulers dynamic:200,static,hguided:hints,hguided:nohints --kernels ray \
    --json "$r/suite11.json" --out "$r/suite11" > "$r/suite11.txt" 2>&1
elif [ "$part" = 12 ]; then
  # Stealing on and off (COEXEC_STEAL=0), and the GPU alone, three rounds
  # interleaved, HGuided with the hint powers of part 4.
  # One `coexec bench` line of JSON, tagged; its stderr to ab.err.
  ab() {
    local tag=$1; shift
    timeout 60 coexec bench --kernel "$k" "$@" --reps 5 --json 2>> "$r/ab.err" \
      | sed "s/^{/{\"round\":$round,$tag,/" >> "$r/ab.jsonl"
  }
  for round in 1 2 3; do
    for kp in gaussian:0.02351 taylor:0.06941 mandelbrot:0.01882 rap:0.02730 matmul:0.1688; do
      k="${kp%%:*}"; c="${kp##*:}"
      ab '"steal":true,"config":"hints"' --devices all --scheduler hguided --cpu-power "$c"
      COEXEC_STEAL=0 ab '"steal":false,"config":"hints"' --devices all --scheduler hguided --cpu-power "$c"
      ab '"steal":true,"config":"nohints"' --devices all --scheduler hguided
      COEXEC_STEAL=0 ab '"steal":false,"config":"nohints"' --devices all --scheduler hguided
      ab '"config":"gpu"' --devices gpu --scheduler hguided
      [ "$SECONDS" -gt 520 ] && break 2
    done
  done
elif [ "$part" = 10 ]; then
  timeout 540 coexec suite --no-scaling --reps 2 --cpu-solo hguided \
    --schedulers dynamic:200,static,hguided:hints,hguided:nohints --kernels nbody,rap \
    --json "$r/suite10.json" --out "$r/suite10" > "$r/suite10.txt" 2>&1
else
  timeout 420 coexec suite --no-scaling --reps 1 --cpu-solo hguided --schedulers dynamic:200,static,hguided:hints,hguided:nohints --kernels gaussian,rap,ray,nbody \
    --json "$r/suite2.json" --out "$r/suite2" > "$r/suite2.txt" 2>&1
  timeout 100 coexec suite --quick --reps 1 --kernels mandelbrot,taylor,rap \
    --json "$r/scaling.json" --out "$r/scaling" > "$r/scaling.txt" 2>&1
fi
if [ "$part" != 4 ]; then
  # One archive: a call brings back only a few files from $OUT.
  tar czf "$out/results-$part.tgz" -C /tmp coexec-results
fi
ls -la "$out"
