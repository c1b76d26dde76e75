#[test]
fn spinlock_admits_one_holder_at_a_time() {
    spinlock_broken::scenario_buggy();
}

#[test]
fn spinlock_admits_one_holder_at_a_time_fixed() {
    spinlock_broken::scenario_fixed();
}
