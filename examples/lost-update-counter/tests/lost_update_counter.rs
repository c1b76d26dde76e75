#[test]
fn concurrent_increments_are_not_lost() {
    lost_update_counter::scenario_buggy();
}

#[test]
fn concurrent_increments_are_not_lost_fixed() {
    lost_update_counter::scenario_fixed();
}
