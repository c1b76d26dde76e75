//! ARCHITECTURE.md's harness table names every variable the protocol defines.

#[test]
fn every_variable_is_in_architecture_md() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../ARCHITECTURE.md"))
        .unwrap();
    let missing: Vec<&str> = pulse_protocol::env::ALL
        .iter()
        .copied()
        .filter(|name| !doc.contains(&format!("| `{name}")))
        .collect();
    assert!(
        missing.is_empty(),
        "not in ARCHITECTURE.md's env table: {missing:?}"
    );
}
