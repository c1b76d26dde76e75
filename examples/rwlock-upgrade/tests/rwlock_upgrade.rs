#[test]
fn concurrent_appends_are_all_kept() {
    rwlock_upgrade::scenario_buggy();
}

#[test]
fn concurrent_appends_are_all_kept_fixed() {
    rwlock_upgrade::scenario_fixed();
}
