#[test]
fn published_data_is_seen_with_the_flag() {
    relaxed_flag_mp::scenario_buggy();
}

#[test]
fn published_data_is_seen_with_the_flag_fixed() {
    relaxed_flag_mp::scenario_fixed();
}
