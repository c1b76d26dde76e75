#[test]
fn log_is_written_in_ticket_order() {
    mpsc_pipeline::scenario_buggy();
}

#[test]
fn log_is_written_in_ticket_order_fixed() {
    mpsc_pipeline::scenario_fixed();
}
