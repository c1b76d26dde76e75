#!/bin/sh
# Times `cargo pulse check-history` on the shared linearizability data: the 102 Jepsen etcd
# histories (register model) and the six key-value ones (kv model, per key; and c10 whole),
# five runs each, one line per run as the command prints it (total, slowest file; parsing
# included). Run from anywhere: sh bench/check-history.sh
set -eu
cd "$(dirname "$0")/.."
data=${PULSE_LIN_DATA:-../shared/data/linearizability}
cargo build --release --quiet -p cargo-pulse
bin=target/release/cargo-pulse
etcd=$(tail -n +2 "$data/jepsen/VERDICTS.tsv" | cut -f1 | sed "s|^|$data/jepsen/|")
runs=${RUNS:-5}
echo "etcd (102 histories, register):"
for _ in $(seq "$runs"); do
    # shellcheck disable=SC2086
    "$bin" pulse check-history --model register $etcd | tail -n 1 || true
done
echo "kv c50 (per key):"
for _ in $(seq "$runs"); do
    "$bin" pulse check-history --model kv "$data/kv/c50-ok.txt" "$data/kv/c50-bad.txt" | tail -n 1 || true
done
echo "kv c10 (whole history, no partitioning):"
for _ in $(seq "$runs"); do
    "$bin" pulse check-history --model kv --no-partition "$data/kv/c10-ok.txt" "$data/kv/c10-bad.txt" | tail -n 1 || true
done
