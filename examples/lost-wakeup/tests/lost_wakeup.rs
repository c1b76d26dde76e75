#[test]
fn two_consumers_each_pop_a_job() {
    lost_wakeup::scenario_buggy();
}

#[test]
fn two_consumers_each_pop_a_job_fixed() {
    lost_wakeup::scenario_fixed();
}
