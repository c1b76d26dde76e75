//! What pulse links into a user's crate adds no trait impls on std types, so code whose
//! types are inferred from the one impl std has still compiles instrumented. serde_json,
//! once a dependency, made the first assertion ambiguous (E0283: `impl PartialEq<Value>
//! for usize`), and a real crate's suite failed to build under `cargo pulse test`.
//! (The one exception, std's `SystemTime` against pulse's, is ARCHITECTURE.md decision 36.)

use pulse::std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

static COUNTER: AtomicUsize = AtomicUsize::new(0);

#[test]
fn sums_and_collects_infer_through_std_impls_alone() {
    COUNTER.store(4950, Relaxed);
    let sum = (0..100).sum();
    assert_eq!(COUNTER.load(Relaxed), sum);
    let parsed = "7".parse().unwrap();
    assert_eq!(7u64, parsed);
}
