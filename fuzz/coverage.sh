#!/usr/bin/env bash
# Line coverage of the core (`core/src`) by each target's committed corpus: `cargo fuzz
# coverage` replays the corpus in a coverage build, `llvm-cov report` sums it up. Prints one
# line per target (regions, functions, lines covered), and the per-file table under
# coverage/<target>/report.txt. Needs the nightly `llvm-tools-preview` component.
#
#   fuzz/coverage.sh                  # every target
#   fuzz/coverage.sh connection_ops   # one
#   CORPUS_ROOT=/tmp/old/corpus fuzz/coverage.sh   # another set of corpora (an older one)
set -euo pipefail
cd "$(dirname "$0")"

bin_dir="$(rustc +nightly --print sysroot)/lib/rustlib/$(rustc +nightly -vV | sed -n 's/^host: //p')/bin"
[ -x "$bin_dir/llvm-cov" ] || rustup component add llvm-tools-preview --toolchain nightly
triple="$(rustc +nightly -vV | sed -n 's/^host: //p')"

targets=("$@")
[ "${#targets[@]}" -gt 0 ] || mapfile -t targets < <(cargo +nightly fuzz list)
for target in "${targets[@]}"; do
  cargo +nightly fuzz coverage -s none "$target" "${CORPUS_ROOT:-corpus}/$target" >/dev/null 2>&1
  report="coverage/$target/report.txt"
  # The core's files only (the sources given last), so that TOTAL is the core's.
  "$bin_dir/llvm-cov" report "target/$triple/coverage/$triple/release/$target" \
    -instr-profile="coverage/$target/coverage.profdata" "$(cd ../core/src && pwd)" >"$report"
  awk -v t="$target" '
    /^TOTAL/ { printf "%s: core/src lines %d/%d (%s), functions %d/%d, regions %d/%d\n",
               t, $8 - $9, $8, $10, $5 - $6, $5, $2 - $3, $2 }' "$report"
done
