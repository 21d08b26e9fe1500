#!/usr/bin/env python3
"""tuner_summary: several tuner_bench tables of one setup (repeated runs) as one table.

Per size: each forced algorithm's median time over the runs (with the model's prediction from
the first run), the tuner's pick in each run, and per run the pick's forced time over the fastest
forced time of that run; then the median of those ratios.

    bench/tuner_summary.py run1.md run2.md run3.md
"""
import statistics
import sys


def read(path):
    header, rows = None, {}
    for line in open(path):
        if not line.startswith("| "):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "size (B)":
            header = cells
            continue
        rows[int(cells[0])] = dict(zip(header, cells))
    return header, rows


def main(paths):
    runs = [read(p) for p in paths]
    header = runs[0][0]
    algos = [h for h in header if h.endswith("us (predicted)")]
    names = [a.replace(" us (predicted)", "") for a in algos]
    print("| size (B) | " + " | ".join(f"{n} us" for n in names) +
          " | picks | pick / best per run | median |")
    print("|---|" + "---|" * len(names) + "---|---|---|")
    for size in sorted(runs[0][1]):
        times, ratios, picks = [], [], []
        for a in algos:
            vals = [float(r[1][size][a].split()[0]) for r in runs
                    if size in r[1] and r[1][size][a] != "-"]
            times.append(f"{statistics.median(vals):.1f}" if vals else "-")
        for _, rows in runs:
            if size not in rows:
                continue
            picks.append(rows[size]["tuner's pick"])
            ratios.append(float(rows[size]["pick forced / best"]))
        short = sorted(set(picks))
        print(f"| {size} | " + " | ".join(times) + f" | {', '.join(short)} | " +
              " ".join(f"{x:.2f}" for x in ratios) + f" | {statistics.median(ratios):.2f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
