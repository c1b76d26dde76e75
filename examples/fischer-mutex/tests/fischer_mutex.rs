#[test]
fn one_thread_at_a_time() {
    fischer_mutex::scenario_buggy();
}

#[test]
fn one_thread_at_a_time_fixed() {
    fischer_mutex::scenario_fixed();
}
