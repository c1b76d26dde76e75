#[test]
fn report_is_ready_when_read() {
    sleep_ordering::scenario_buggy();
}

#[test]
fn report_is_ready_when_read_fixed() {
    sleep_ordering::scenario_fixed();
}
