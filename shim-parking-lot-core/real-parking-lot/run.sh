#!/usr/bin/env bash
# Builds the real parking_lot 0.12.5 and lock_api 0.4.14 against this shim, as cargo-pulse's
# wiring will, and runs real_parking_lot.rs on them. Needs the registry (cargo fetches the
# sources); everything is written under $WORK (default /tmp/pulse-real-parking-lot).
#
# The wiring, step by step:
#  1. `cargo pulse instrument` each of parking_lot and lock_api (their atomics become
#     pulse's, thread_local! pulse's per-virtual-thread one);
#  2. (nothing: parking_lot's std::time is rewritten too; the shim takes pulse's Instant)
#  3. make every crate use ONE copy of pulse: the instrumented crates' `pulse` dependency
#     and this shim's pulse-runtime must be the same package, or the shim's
#     `pulse_runtime::current()` is a different thread-local and sees no execution;
#  4. [patch.crates-io] parking_lot_core (this crate), parking_lot, lock_api (the copies).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
work="${WORK:-/tmp/pulse-real-parking-lot}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target-plc}"
rm -rf "$work" && mkdir -p "$work/src" "$work/tests" "$work/inst"

# A project that depends on the registry crates, so `cargo pulse instrument` finds them.
cat > "$work/Cargo.toml" <<TOML
[package]
name = "real-parking-lot"
version = "0.0.0"
edition = "2021"
publish = false

[workspace]

[dependencies]
parking_lot = "=0.12.5"
lock_api = "=0.4.14"
pulse = { path = "$repo/pulse" }
TOML
: > "$work/src/lib.rs"
cp "$here/real_parking_lot.rs" "$work/tests/"

for krate in parking_lot lock_api; do
    (cd "$repo" && cargo run -q -p cargo-pulse -- pulse instrument --crate "$krate" \
        --out "$work/inst/$krate" --manifest-path "$work/Cargo.toml" > "$work/inst/$krate.report")
    # 3: one pulse for all.
    sed -i "s#^pulse = { path = \"[^\"]*\" }#pulse = { path = \"$repo/pulse\" }#" "$work/inst/$krate/Cargo.toml"
done

# 4.
cat >> "$work/Cargo.toml" <<TOML

[patch.crates-io]
parking_lot_core = { path = "$repo/shim-parking-lot-core" }
parking_lot = { path = "$work/inst/parking_lot" }
lock_api = { path = "$work/inst/lock_api" }
TOML

cd "$work" && cargo test --test real_parking_lot "$@"
