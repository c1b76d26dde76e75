#[test]
fn commands_after_start_are_served() {
    boot_race::scenario_buggy();
}

#[test]
fn commands_after_start_are_served_fixed() {
    boot_race::scenario_fixed();
}
