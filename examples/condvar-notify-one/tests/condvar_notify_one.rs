#[test]
fn slot_hands_off_every_item() {
    condvar_notify_one::scenario_buggy();
}

#[test]
fn slot_hands_off_every_item_fixed() {
    condvar_notify_one::scenario_fixed();
}
