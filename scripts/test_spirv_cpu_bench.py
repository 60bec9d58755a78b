#!/usr/bin/env python3
"""Tests of spirv_cpu_bench.py against a stand-in `coexec`: rows are written
cell by cell as measured, --cell-timeout turns a slow cell into `timeout`,
--sizes reaches `coexec bench --size`, and bad --sizes are refused.

Usage: python3 scripts/test_spirv_cpu_bench.py
"""
import os
import stat
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "spirv_cpu_bench.py")

# Sleeps 30 s for kernel `slow` with --cpu-impl spirv; otherwise prints a
# report whose time is its --size (0.5 without one) and logs its arguments.
STUB = """#!/bin/sh
echo "$@" >> "$0.log"
kernel=; impl=; size=0.5
while [ $# -gt 0 ]; do
  case "$1" in
    --kernel) kernel=$2; shift;;
    --cpu-impl) impl=$2; shift;;
    --size) size=$2; shift;;
  esac
  shift
done
if [ "$kernel" = slow ] && [ "$impl" = spirv ]; then exec sleep 30; fi
case "$size" in *[!0-9.]*) size=0.25;; esac
echo '{"time_s": '"$size"', "verified": true, "per_device": [{"kind": "cpu", "items": 1}]}'
"""


class SpirvCpuBench(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.stub = os.path.join(self.dir.name, "coexec")
        with open(self.stub, "w") as f:
            f.write(STUB)
        os.chmod(self.stub, stat.S_IRWXU)

    def tearDown(self):
        self.dir.cleanup()

    def run_script(self, *args, timeout=60):
        return subprocess.run([sys.executable, SCRIPT, "--coexec", self.stub, *args],
                              capture_output=True, text=True, timeout=timeout)

    def test_a_slow_cell_times_out_and_the_others_are_kept(self):
        out = self.run_script("--kernels", "fast,slow", "--cell-timeout", "1",
                              "--sizes", "fast=2")
        self.assertEqual(out.returncode, 0, out.stderr)
        rows = out.stdout.splitlines()
        self.assertEqual(len(rows), 4, out.stdout)
        self.assertEqual(rows[2].split("|")[1:-1],
                         [" fast ", " 2 ", " 2.00000 ", " 2.00000 ", " 2.00000 ",
                          " 1.00 ", " 2.00000 (100%) ", " 2.00000 (100%) "])
        slow = rows[3].split("|")[1:-1]
        self.assertEqual(slow[4].strip(), "timeout")
        self.assertEqual(slow[5].strip(), "-")
        self.assertEqual(slow[6].strip(), "0.50000 (100%)")
        self.assertEqual(slow[7].strip(), "timeout")
        with open(self.stub + ".log") as f:
            log = f.read()
        self.assertIn("--kernel fast --devices cpu --cpu-impl rayon", log)
        self.assertIn("--size 2", log)
        self.assertNotIn("--kernel slow --devices cpu --cpu-impl rayon --reps 3 --json "
                         "--scheduler hguided --size", log)

    def test_a_run_cut_short_keeps_the_cells_it_measured(self):
        p = subprocess.Popen([sys.executable, SCRIPT, "--coexec", self.stub,
                              "--kernels", "slow"], stdout=subprocess.PIPE, text=True)
        try:
            lines = [p.stdout.readline() for _ in range(2)]
            self.assertTrue(lines[0].startswith("| kernel |"), lines)
            # Rayon and native are measured before the spirv cell hangs.
            got = ""
            while got.count("|") < 5:
                got += p.stdout.read(1)
            self.assertEqual(got, "| slow | default | 0.50000 | 0.50000 |")
        finally:
            p.kill()
            p.wait()
            p.stdout.close()

    def test_bad_sizes_are_refused(self):
        for bad, why in (("taylor", "not KERNEL=SIZE"), ("nope=5", "not among"),
                         ("fast=1,fast=2", "given twice")):
            out = self.run_script("--kernels", "fast", "--sizes", bad)
            self.assertEqual(out.returncode, 2, bad)
            self.assertIn(why, out.stderr)
        out = self.run_script("--kernels", "fast", "--cell-timeout", "0")
        self.assertEqual(out.returncode, 2)


if __name__ == "__main__":
    unittest.main()
