#[test]
fn spinlock_protects_its_counter() {
    spinlock_relaxed_unlock::scenario_buggy();
}

#[test]
fn spinlock_protects_its_counter_fixed() {
    spinlock_relaxed_unlock::scenario_fixed();
}
