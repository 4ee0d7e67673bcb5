#!/usr/bin/env bash
# The cargo-fuzz template (examples/fuzz-template, its own workspace, nightly):
# 1. its committed seed corpus and dictionary are what `examples/seeds.rs` generates from the
#    router (a stale one would leave new methods unseeded);
# 2. both targets run for 30 seconds each (router_bytes from the seeds, with the dictionary);
#    any crash (a broken protocol invariant) fails the stage;
# 3. with the README's planted bug (feature `planted-bug`), router_bytes must find it within
#    60 seconds from the seeds and the dictionary.
# Installs nightly and cargo-fuzz as fuzz.sh does when they are missing.
set -euo pipefail
cd "$(dirname "$0")/../../examples/fuzz-template"

SECONDS_PER_TARGET="${FUZZ_SECONDS:-30}"
PLANTED_LIMIT=60

if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "nightly toolchain missing: installing it"
  rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

echo "--- fuzz-template: the committed seeds are the router's"
cargo run --quiet --example seeds
if ! git diff --quiet --exit-code -- seeds router_bytes.dict ||
    [ -n "$(git status --porcelain -- seeds router_bytes.dict)" ]; then
  git status --short -- seeds router_bytes.dict
  echo "fuzz-template: seeds/ or router_bytes.dict differ from what examples/seeds.rs generates: run it and commit" >&2
  exit 1
fi

cargo +nightly fuzz build --fuzz-dir . -s none
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
failed=()
for target in router_bytes router_ops; do
  echo "--- fuzz-template $target for ${SECONDS_PER_TARGET}s"
  mkdir -p "$scratch/$target"
  seeds=()
  if [ "$target" = router_bytes ]; then
    seeds=(seeds/router_bytes -- -dict=router_bytes.dict)
  else
    seeds=(--)
  fi
  if ! cargo +nightly fuzz run --fuzz-dir . -s none "$target" "$scratch/$target" "${seeds[@]}" \
      -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 2>"$scratch/$target.log"; then
    failed+=("$target")
    tail -n 60 "$scratch/$target.log"
  else
    grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "$scratch/$target.log" || true
  fi
done
if [ "${#failed[@]}" -ne 0 ]; then
  echo "fuzz-template: crashes in: ${failed[*]} (inputs in examples/fuzz-template/artifacts/)" >&2
  exit 1
fi
echo "fuzz-template: router_bytes and router_ops each ran ${SECONDS_PER_TARGET}s without a crash"

echo "--- fuzz-template: router_bytes finds the planted bug within ${PLANTED_LIMIT}s"
cargo +nightly fuzz build --fuzz-dir . -s none --features planted-bug router_bytes
mkdir -p "$scratch/planted"
start=$(date +%s)
if cargo +nightly fuzz run --fuzz-dir . -s none --features planted-bug router_bytes \
    "$scratch/planted" seeds/router_bytes -- -dict=router_bytes.dict \
    -max_total_time="$PLANTED_LIMIT" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$scratch/" 2>"$scratch/planted.log"; then
  tail -n 5 "$scratch/planted.log"
  echo "fuzz-template: router_bytes did not find the planted bug within ${PLANTED_LIMIT}s" >&2
  exit 1
fi
took=$(( $(date +%s) - start ))
if ! grep -q 'a handler panicked: attempt to divide by zero' "$scratch/planted.log"; then
  tail -n 40 "$scratch/planted.log"
  echo "fuzz-template: router_bytes crashed, but not on the planted bug" >&2
  exit 1
fi
echo "fuzz-template: router_bytes found the planted bug in ${took}s (limit ${PLANTED_LIMIT}s)"
