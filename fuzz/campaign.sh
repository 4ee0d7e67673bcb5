#!/usr/bin/env bash
# A fuzzing campaign (a development machine's job, not CI's): for each target given (default:
# all), fuzz a copy of its committed corpus with its dictionary until a further 10-minute run
# adds under 2 % of edges, minimize the corpus (`cargo fuzz cmin`) and add it to
# corpus/<target>/ (nothing committed is removed). Prints one line per target: edges of the
# committed corpus before, the plateau check, edges of the minimized corpus after, runs and
# files. Run it at low priority:
#
#   nice -n 19 fuzz/campaign.sh connection_bytes     # FIRST=1200 PLATEAU=600 MAX=3600 seconds
#
# RESUME=1 goes on from the work corpus a stopped campaign left (no first run). Do not edit
# this file while it runs: bash reads it as it goes.
#
# Each target's dictionary is named in dict/map (which fuzz.sh reads too).
set -euo pipefail
cd "$(dirname "$0")"

FIRST="${FIRST:-1200}"     # the first run, seconds
PLATEAU="${PLATEAU:-600}"  # each further run, seconds
MAX="${MAX:-3600}"         # the most fuzzing per target, seconds
work="${WORK:-/tmp/rpcwire-campaign}"

dict_for() {
  echo "dict/$(awk -v t="$1" '$1 == t { print $2 }' dict/map)"
}

# Edges (libFuzzer's `cov:`) of a corpus: loaded once, nothing fuzzed.
edges() {
  cargo +nightly fuzz run -s none "$1" "$2" -- -runs=0 -rss_limit_mb=2048 2>&1 |
    sed -n 's/.*INITED cov: \([0-9]*\).*/\1/p' | tail -n 1
}

# Fuzzes corpus $2 of target $1 for $3 seconds; prints "start end runs" (edges at start and end).
fuzz() {
  local log="$work/$1.log"
  cargo +nightly fuzz run -s none "$1" "$2" -- -dict="$(dict_for "$1")" \
    -max_total_time="$3" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -print_pcs=0 >>"$log" 2>&1 || { echo "crash: see $log" >&2; exit 1; }
  # The last run's figures (tail reads everything: no broken pipe under pipefail).
  local start end runs
  start=$(sed -n 's/.*INITED cov: \([0-9]*\).*/\1/p' "$log" | tail -n 1)
  end=$(sed -n 's/^#[0-9]*.*cov: \([0-9]*\).*/\1/p' "$log" | tail -n 1)
  runs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\)/\1/p' "$log" | tail -n 1)
  echo "$start $end $runs"
}

cargo +nightly fuzz build -s none
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || mapfile -t targets < <(cargo +nightly fuzz list)
mkdir -p "$work"
for target in "${targets[@]}"; do
  corpus="$work/$target"
  before=$(edges "$target" "corpus/$target")
  if [ "${RESUME:-0}" = 1 ] && [ -n "$(ls -A "$corpus" 2>/dev/null)" ]; then
    spent=0
    total_runs=0
  else
    rm -rf "$corpus" "$work/$target.log"
    mkdir -p "$corpus"
    cp corpus/"$target"/* "$corpus"/ 2>/dev/null || true
    read -r _ end runs < <(fuzz "$target" "$corpus" "$FIRST")
    spent=$FIRST
    total_runs=$runs
  fi
  while :; do
    read -r start end runs < <(fuzz "$target" "$corpus" "$PLATEAU")
    spent=$((spent + PLATEAU))
    total_runs=$((total_runs + runs))
    gain=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.2f", (e - s) * 100 / s }')
    if awk -v g="$gain" 'BEGIN { exit !(g < 2) }' || [ "$spent" -ge "$MAX" ]; then
      break
    fi
  done
  cargo +nightly fuzz cmin -s none "$target" "$corpus" >>"$work/$target.log" 2>&1
  after=$(edges "$target" "$corpus")
  # Added to the committed corpus, none taken away: its named seeds (specification examples,
  # regressions) stay whether or not the minimized set kept them.
  mkdir -p "corpus/$target"
  cp "$corpus"/* "corpus/$target"/
  files=$(find "corpus/$target" -type f | wc -l)
  echo "$target: before $before edges; fuzzed ${spent}s (${total_runs} runs); last ${PLATEAU}s: $start -> $end edges (+${gain} %); after cmin $after edges in $files files"
done
