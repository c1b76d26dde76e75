#[test]
fn every_price_is_for_its_item() {
    late_reply::scenario_buggy();
}

#[test]
fn every_price_is_for_its_item_fixed() {
    late_reply::scenario_fixed();
}

#[test]
fn a_generous_timeout_is_never_missed() {
    late_reply::scenario_generous();
}
