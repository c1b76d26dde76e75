#[test]
fn opposite_transfers_complete() {
    lock_order_deadlock::scenario_buggy();
}

#[test]
fn opposite_transfers_complete_fixed() {
    lock_order_deadlock::scenario_fixed();
}
