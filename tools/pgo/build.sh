#!/usr/bin/env bash
# Builds dcsim with profile-guided optimization (docs/performance.md; docs/adr/0008).
#
#   tools/pgo/build.sh            prints the path of the optimized binary
#
# 1. An instrumented build (rustc's -Cprofile-generate) in target/pgo/instrumented.
# 2. Training: the benchmark's quick rows and every scenario in scenarios/, which between
#    them run most transports (DCTCP to ExpressPass and Fastpass) and the dumbbell, star,
#    leaf-spine and fat-tree.
# 3. llvm-profdata (rustup's llvm-tools component, added if missing) merges the profiles.
# 4. The optimized build (-Cprofile-use) in target/pgo/optimized; its `bench` says "pgo".
# The profile only steers code layout, inlining and branch order: the simulation's results
# are byte-identical to the plain release's (CI compares them).
set -euo pipefail
cd "$(dirname "$0")/../.."

host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
  rustup component add llvm-tools >&2
fi

dir="$PWD/target/pgo"
rm -rf "$dir/profiles" "$dir/train"
mkdir -p "$dir/profiles" "$dir/train"

echo "pgo: instrumented build" >&2
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-generate=$dir/profiles" \
  cargo build --release --locked -p dcsim-cli --target-dir "$dir/instrumented" >&2
bin="$dir/instrumented/release/dcsim"

echo "pgo: training" >&2
"$bin" bench --quick --repeat 1 > /dev/null
for f in scenarios/*.toml; do
  "$bin" run "$f" --out "$dir/train/$(basename "$f" .toml)" --quiet > /dev/null
done
"$profdata" merge -o "$dir/merged.profdata" "$dir/profiles"

echo "pgo: optimized build" >&2
DCSIM_BUILD=pgo RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-use=$dir/merged.profdata" \
  cargo build --release --locked -p dcsim-cli --target-dir "$dir/optimized" >&2
echo "$dir/optimized/release/dcsim"
