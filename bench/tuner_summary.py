#!/usr/bin/env python3
"""tuner_summary: several tuner_bench tables of one setup (repeated runs) as one table.

Per size: each forced algorithm's median time over the runs (with the model's prediction from
the first run), the tuner's pick in each run, and per run the pick's forced time over the fastest
forced time of that run; then the median of those ratios. Under the table, how far one run
can judge a pick: the points (sizes x runs) whose pick missed the fastest by over 10 %; those
where the pick's configuration, timed twice in one run (forced, and as the tuner's own batch,
which follows another way's), was over 10 % apart; and, for reference, those the algorithm
fastest by the median of the runs, fixed in hindsight, would miss.

    bench/tuner_summary.py run1.md run2.md run3.md
"""
import statistics
import sys

MISS = 1.10  # the target: the pick within 10 % of the fastest forced algorithm


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
    points = misses = twice_apart = steady_misses = 0
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
        points += len(ratios)
        misses += sum(x > MISS for x in ratios)
        for _, rows in runs:
            row = rows.get(size)
            if row and row.get("auto / best", "-") != "-":
                apart = float(row["auto / best"]) / float(row["pick forced / best"])
                twice_apart += max(apart, 1 / apart) > MISS
        medians = [float(t) if t != "-" else float("inf") for t in times]
        steady = algos[medians.index(min(medians))]
        for _, rows in runs:
            if size in rows and rows[size][steady] != "-":
                forced = [float(rows[size][a].split()[0]) for a in algos if rows[size][a] != "-"]
                steady_misses += float(rows[size][steady].split()[0]) / min(forced) > MISS
        short = sorted(set(picks))
        print(f"| {size} | " + " | ".join(times) + f" | {', '.join(short)} | " +
              " ".join(f"{x:.2f}" for x in ratios) + f" | {statistics.median(ratios):.2f} |")
    print(f"\nOf {points} points (sizes x runs): the pick over {MISS:.2f}x the fastest at "
          f"{misses}; its configuration timed twice over {MISS:.2f}x apart at {twice_apart}; "
          f"the algorithm fastest by the median of the runs, fixed in hindsight, over "
          f"{MISS:.2f}x at {steady_misses}.\n")


if __name__ == "__main__":
    main(sys.argv[1:])
