#[test]
fn concurrent_withdrawals_and_deposit_conserve_money() {
    bank_account::scenario_buggy();
}

#[test]
fn concurrent_withdrawals_and_deposit_conserve_money_fixed() {
    bank_account::scenario_fixed();
}
