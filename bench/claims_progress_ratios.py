"""The claims section's paired ratios from its progress lines (stderr of bench/run.py): per claimer count, each
system's claims/s per round, their median, and the median of the per-round time ratios (raw's claims/s ÷ the
system's). For a run whose tables were not written (a failed end-to-end check after the claim-path rounds).

Usage: python3 bench/claims_progress_ratios.py bench/results/claims-galera-2026-12-06-progress.txt
"""
import re
import statistics
import sys

LINE = re.compile(r"round (\d+) (\S+)\s+x(\d+):\s+([\d.]+) claims/s .*load ([\d.]+)")


def main(path: str) -> None:
    runs = {}
    with open(path) as f:
        for line in f:
            m = LINE.search(line)
            if m:
                runs[(int(m[1]), m[2], int(m[3]))] = (float(m[4]), float(m[5]))
    for k in sorted({k for _r, _m, k in runs}):
        rounds = sorted({r for r, _m, kk in runs if kk == k and (r, "raw", k) in runs})
        out = [f"{k} claimers"]
        for mode in ("raw", "minbw", "minbw-inv"):
            cps = [runs[(r, mode, k)][0] for r in rounds if (r, mode, k) in runs]
            if cps:
                out.append(f"{mode} claims/s p50 {statistics.median(cps):.1f} (rounds: {', '.join(map(str, cps))})")
        for mode in ("minbw", "minbw-inv"):
            ratios = [runs[(r, "raw", k)][0] / runs[(r, mode, k)][0] for r in rounds if (r, mode, k) in runs]
            if ratios:
                out.append(f"time {mode} ÷ raw {statistics.median(ratios):.3f} "
                           f"(rounds: {', '.join(f'{x:.2f}' for x in ratios)})")
        loads = [v[1] for (_r, _m, kk), v in runs.items() if kk == k]
        out.append(f"load {min(loads)}–{max(loads)}")
        print("; ".join(out))


if __name__ == "__main__":
    main(sys.argv[1])
