#!/usr/bin/env python3
"""Instructions per call at the margin, by function, from two callgrind profiles of one
program: `callgrind-margin.py BIG.out N_BIG SMALL.out N_SMALL [PATTERN]` prints, for each
function, (self instructions in BIG - in SMALL) / (N_BIG - N_SMALL), largest first (start-up
and shutdown cancel out, as in the callgrind-*.sh scripts). With PATTERN (a regular
expression), only the functions whose name matches it. Uses `callgrind_annotate`."""

import re
import subprocess
import sys


def self_counts(path):
    out = subprocess.run(
        ["callgrind_annotate", "--inclusive=no", "--auto=no", "--threshold=100", path],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    counts = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*)$", line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        name = re.sub(r"\s+\[[^\]]*\]$", "", m.group(2))
        name = name.split(":", 1)[1] if re.match(r"^[^ ]*\.rs:|^\?\?\?:|^/", name) else name
        counts[name] = counts.get(name, 0) + int(m.group(1).replace(",", ""))
    return counts


def main():
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__)
    big, n_big, small, n_small = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    pattern = re.compile(sys.argv[5]) if len(sys.argv) == 6 else None
    b, s = self_counts(big), self_counts(small)
    rows = []
    for name in set(b) | set(s):
        if pattern and not pattern.search(name):
            continue
        per = (b.get(name, 0) - s.get(name, 0)) / (n_big - n_small)
        if abs(per) >= 0.5:
            rows.append((per, name))
    rows.sort(reverse=True)
    total = sum(per for per, _ in rows)
    for per, name in rows:
        print(f"{per:9.1f}  {name}")
    print(f"{total:9.1f}  total of the functions listed")


if __name__ == "__main__":
    main()
