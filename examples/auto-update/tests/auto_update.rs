#[test]
fn first_read_gets_a_value() {
    auto_update::scenario_buggy();
}

#[test]
fn first_read_gets_a_value_fixed() {
    auto_update::scenario_fixed();
}
