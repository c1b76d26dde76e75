#[test]
fn racing_registrations_have_one_winner() {
    proc_reg::scenario_buggy();
}

#[test]
fn racing_registrations_have_one_winner_fixed() {
    proc_reg::scenario_fixed();
}
