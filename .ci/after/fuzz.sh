#!/usr/bin/env bash
# Fuzzing stage: builds every cargo-fuzz target (fuzz/, its own workspace, nightly) and runs
# each for 30 seconds from its committed corpus (at its plateau: fuzz/README.md) with its
# dictionary (fuzz/dict/map); any crash fails the stage. About 4 minutes on 2 cores once
# cargo-fuzz is installed (the build is most of it). Every target must have a corpus and a
# dictionary.
set -euo pipefail
cd "$(dirname "$0")/../.."

SECONDS_PER_TARGET="${FUZZ_SECONDS:-30}"

if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "nightly toolchain missing: installing it (rustup reaches the toolchain server)"
  rustup toolchain install nightly --profile minimal || {
    echo "error: no nightly toolchain and 'rustup toolchain install nightly' failed" >&2
    exit 1
  }
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

cd fuzz
# -s none: the code under test is unsafe-free, so AddressSanitizer adds build and run time
# for nothing; debug assertions (overflow checks) stay on.
cargo +nightly fuzz build -s none

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
failed=()
for target in $(cargo +nightly fuzz list); do
  echo "--- fuzz $target for ${SECONDS_PER_TARGET}s"
  mkdir -p "$scratch/$target"
  seeds="corpus/$target"
  dict="dict/$(awk -v t="$target" '$1 == t { print $2 }' dict/map)"
  if [ ! -d "$seeds" ] || [ ! -f "$dict" ]; then
    echo "fuzz: $target has no corpus in $seeds or no dictionary in dict/map" >&2
    failed+=("$target")
    continue
  fi
  # The scratch directory comes first: new inputs go there, the committed corpus is read-only.
  if ! cargo +nightly fuzz run -s none "$target" "$scratch/$target" "$seeds" -- \
      -dict="$dict" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 2>"$scratch/$target.log"; then
    failed+=("$target")
    tail -n 60 "$scratch/$target.log"
  else
    grep -E '^stat::(number_of_executed_units|peak_rss_mb)|^#[0-9]+ *DONE' "$scratch/$target.log" || true
  fi
done

if [ "${#failed[@]}" -ne 0 ]; then
  echo "fuzz: crashes in: ${failed[*]} (inputs in fuzz/artifacts/; see fuzz/README.md)" >&2
  exit 1
fi
echo "fuzz: all targets ran ${SECONDS_PER_TARGET}s without a crash"
