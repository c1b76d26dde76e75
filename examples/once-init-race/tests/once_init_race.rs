#[test]
fn config_is_loaded_once() {
    once_init_race::scenario_buggy();
}

#[test]
fn config_is_loaded_once_fixed() {
    once_init_race::scenario_fixed();
}
