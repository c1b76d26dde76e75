#[test]
fn peterson_admits_one_thread_at_a_time() {
    peterson_lock::scenario_buggy();
}

#[test]
fn peterson_admits_one_thread_at_a_time_fixed() {
    peterson_lock::scenario_fixed();
}
