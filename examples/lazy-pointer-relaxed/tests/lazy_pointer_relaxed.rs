#[test]
fn config_is_seen_initialised() {
    lazy_pointer_relaxed::scenario_buggy();
}

#[test]
fn config_is_seen_initialised_fixed() {
    lazy_pointer_relaxed::scenario_fixed();
}
