#[test]
fn flusher_is_started_exactly_once() {
    atomic_check_then_act::scenario_buggy();
}

#[test]
fn flusher_is_started_exactly_once_fixed() {
    atomic_check_then_act::scenario_fixed();
}
