#!/usr/bin/env bash
# The cargo-fuzz template (examples/fuzz-template, its own workspace, nightly): builds both
# targets and runs each for 30 seconds; any crash (a broken protocol invariant) fails the
# stage. Installs nightly and cargo-fuzz as fuzz.sh does when they are missing.
set -euo pipefail
cd "$(dirname "$0")/../../examples/fuzz-template"

SECONDS_PER_TARGET="${FUZZ_SECONDS:-30}"

if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "nightly toolchain missing: installing it"
  rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

cargo +nightly fuzz build --fuzz-dir . -s none
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
failed=()
for target in router_bytes router_ops; do
  echo "--- fuzz-template $target for ${SECONDS_PER_TARGET}s"
  mkdir -p "$scratch/$target"
  if ! cargo +nightly fuzz run --fuzz-dir . -s none "$target" "$scratch/$target" -- \
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
