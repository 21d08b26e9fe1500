#!/usr/bin/env python3
"""Checks one efacoll-bench JSON report against what was asked.

usage: bench_smoke_check.py REPORT.json --collective C --type T --ranks N --min B --max B
           --factor F [--provider P] [--in-place] [--no-efacoll] [--csv REPORT.csv]

Every row: sizes are the asked ones (rounded down to whole elements per rank, as nccl-tests
does), #wrong is 0 for efacoll and the host MPI, algbw = size / time and busbw = algbw times
nccl-tests' factor. With --provider, efacoll was loaded, used that provider and ran every call
itself. Prints what failed; exits 1 if anything did.
"""
import argparse
import csv
import json
import math
import sys

TYPE_SIZES = {"int8": 1, "uint8": 1, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8,
              "float": 4, "double": 8}


def expected_sizes(collective, type_size, ranks, lo, hi, factor):
    blocks = 1 if collective == "allreduce" else ranks
    sizes, size = [], lo
    while size <= hi:
        count = size // (type_size * blocks)
        if count > 0:
            sizes.append(count * type_size * blocks)
        size *= factor
    return sizes


def bus_factor(collective, ranks):
    return (2.0 if collective == "allreduce" else 1.0) * (ranks - 1) / ranks


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("report")
    p.add_argument("--collective", required=True)
    p.add_argument("--type", required=True)
    p.add_argument("--ranks", type=int, required=True)
    p.add_argument("--min", type=int, required=True)
    p.add_argument("--max", type=int, required=True)
    p.add_argument("--factor", type=int, required=True)
    p.add_argument("--provider")
    p.add_argument("--in-place", action="store_true")
    p.add_argument("--no-efacoll", action="store_true")
    p.add_argument("--csv")
    a = p.parse_args()

    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)

    with open(a.report) as f:
        r = json.load(f)
    check(r["collective"] == a.collective, f"collective {r['collective']}")
    check(r["type"] == a.type, f"type {r['type']}")
    check(r["ranks"] == a.ranks, f"ranks {r['ranks']}")
    check(r["in_place"] == a.in_place, f"in_place {r['in_place']}")
    check(r["check"] is True, "check is off")
    check(close(r["bus_factor"], bus_factor(a.collective, a.ranks)),
          f"bus_factor {r['bus_factor']}")
    keys = [i["key"] for i in r["implementations"]]
    if a.no_efacoll:
        check(r["efacoll"]["loaded"] is False, "efacoll reported loaded")
        check(keys == ["host_mpi"], f"implementations {keys}")
    else:
        check(keys == ["efacoll", "host_mpi"], f"implementations {keys}")
        check(r["efacoll"]["loaded"] is True, "efacoll not loaded")
        provider = r["efacoll"]["provider"] or ""
        check(provider.startswith(a.provider or ""), f"provider {provider!r}")

    want = expected_sizes(a.collective, TYPE_SIZES[a.type], a.ranks, a.min, a.max, a.factor)
    got = [row["size"] for row in r["rows"]]
    check(got == want, f"sizes {got}, want {want}")
    factor = bus_factor(a.collective, a.ranks)
    for row in r["rows"]:
        size = row["size"]
        check(row["count"] * TYPE_SIZES[a.type] == size, f"count {row['count']} at {size}")
        for key in keys:
            m = row["results"][key]
            where = f"{key} at {size} B"
            check(m["wrong"] == 0, f"{where}: #wrong {m['wrong']}")
            check(m["time_us"] > 0, f"{where}: time {m['time_us']}")
            check(close(m["algbw_gbps"], size / (m["time_us"] * 1e3)),
                  f"{where}: algbw {m['algbw_gbps']} != size / time")
            check(close(m["busbw_gbps"], m["algbw_gbps"] * factor),
                  f"{where}: busbw {m['busbw_gbps']} != algbw {m['algbw_gbps']} * {factor}")
        if "efacoll" in keys:
            passed = row["results"]["efacoll"]["passed_to_host_mpi"]
            check(passed == 0, f"efacoll passed {passed} calls to the host MPI at {size} B")

    if a.csv:
        with open(a.csv) as f:
            rows = list(csv.DictReader(f))
        check([int(x["size_bytes"]) for x in rows] == want, "CSV sizes differ")
        for x in rows:
            for key in keys:
                check(x[f"{key}_wrong"] == "0", f"CSV {key} #wrong {x[f'{key}_wrong']}")

    for f in failures:
        print(f"FAIL {a.report}: {f}")
    print(f"{a.report}: {len(got)} rows, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
