#[test]
fn readers_never_see_a_torn_pair() {
    seqlock::scenario_buggy();
}

#[test]
fn readers_never_see_a_torn_pair_fixed() {
    seqlock::scenario_fixed();
}
