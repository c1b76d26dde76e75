#[test]
fn workers_combine_complete_phase_results() {
    barrier_phase::scenario_buggy();
}

#[test]
fn workers_combine_complete_phase_results_fixed() {
    barrier_phase::scenario_fixed();
}
