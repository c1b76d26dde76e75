//! Warnings a test process writes for the driver, one per line, in words the driver reads
//! back: the runtime's warning about an object a later execution reuses, and the driver's
//! one line for all such objects of the dependencies (async-io's reactor and driver, tokio's
//! signal registry: statics of the crate, not the test's to change, five lines per test).

use crate::trace::dependency_of;

/// Words of the warning about an object a later execution reuses.
pub const SHARED_BETWEEN_EXECUTIONS: &str = "is shared between executions";

const CARRIED_OVER: &str = "over from one schedule to the next, which can make failures \
                            depend on the order schedules ran in";

/// The warning for a `kind` object (`Mutex`) used at `at` that an earlier execution used.
pub fn shared_between_executions(kind: &str, at: &str) -> String {
    format!(
        "the {kind} used at {at} {SHARED_BETWEEN_EXECUTIONS} (a `static`, or created outside \
         the checked closure): its value carries {CARRIED_OVER}"
    )
}

/// The kind and location of a [`shared_between_executions`] warning.
fn parse_shared(line: &str) -> Option<(&str, &str)> {
    let (kind, rest) = line.strip_prefix("the ")?.split_once(" used at ")?;
    let (at, _) = rest.split_once(&format!(" {SHARED_BETWEEN_EXECUTIONS} ("))?;
    Some((kind, at))
}

/// `warnings` with those about dependencies' objects shared between executions made one
/// line (when there are two or more), in the place of the first: `5 objects of
/// async-io-2.6.0 (4) and polling-3.11.0 (1), the first the OnceLock used at
/// async-io-2.6.0/src/reactor.rs:96:17, are shared between executions ...`. The test's own are kept as they
/// are. Locations as written (registry or instrumented-copy paths).
pub fn merge_shared_in_dependencies(warnings: Vec<String>) -> Vec<String> {
    let of_dependency = |w: &str| {
        let (kind, at) = parse_shared(w)?;
        Some((kind.to_string(), at.to_string(), dependency_of(at)?))
    };
    let shared: Vec<(String, String, String)> =
        warnings.iter().filter_map(|w| of_dependency(w)).collect();
    if shared.len() < 2 {
        return warnings;
    }
    let mut crates: Vec<(String, usize)> = Vec::new();
    for (_, _, dep) in &shared {
        match crates.iter_mut().find(|(d, _)| d == dep) {
            Some((_, n)) => *n += 1,
            None => crates.push((dep.clone(), 1)),
        }
    }
    let crates: Vec<String> = crates.iter().map(|(d, n)| format!("{d} ({n})")).collect();
    let (kind, at, _) = &shared[0];
    let merged = format!(
        "{} objects of {}, the first the {kind} used at {at}, are shared between executions \
         (statics of those crates): their values carry {CARRIED_OVER}",
        shared.len(),
        crates.join(" and "),
    );
    let mut out = Vec::with_capacity(warnings.len() - shared.len() + 1);
    let mut placed = false;
    for w in warnings {
        if of_dependency(&w).is_none() {
            out.push(w);
        } else if !placed {
            out.push(merged.clone());
            placed = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const REGISTRY: &str = "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f";

    #[test]
    fn the_warning_reads_back() {
        let w = shared_between_executions("Mutex", "src/lib.rs:3:9");
        assert_eq!(parse_shared(&w), Some(("Mutex", "src/lib.rs:3:9")));
        assert_eq!(parse_shared("the test returned while threads ..."), None);
    }

    #[test]
    fn dependencies_objects_are_one_line_and_the_test_s_own_stay() {
        let own = shared_between_executions("Mutex", "src/lib.rs:3:9");
        let other =
            "the test returned while threads it never joined were still blocked".to_string();
        let warnings = vec![
            other.clone(),
            shared_between_executions(
                "OnceLock",
                &format!("{REGISTRY}/async-io-2.6.0/src/reactor.rs:96:17"),
            ),
            own.clone(),
            shared_between_executions(
                "Mutex",
                &format!("{REGISTRY}/async-io-2.6.0/src/reactor.rs:195:21"),
            ),
            shared_between_executions(
                "Mutex",
                "/t/target/pulse/app-0123456789abcdef/deps/polling-3.11.0/src/lib.rs:751:38",
            ),
        ];
        let merged = merge_shared_in_dependencies(warnings);
        assert_eq!(merged.len(), 3, "{merged:#?}");
        assert_eq!(merged[0], other);
        assert!(
            merged[1].starts_with(
                "3 objects of async-io-2.6.0 (2) and polling-3.11.0 (1), the first the OnceLock used at "
            ) && merged[1].contains("/async-io-2.6.0/src/reactor.rs:96:17, are shared between executions")
                && merged[1].contains("their values carry over"),
            "{}",
            merged[1]
        );
        assert_eq!(merged[2], own);
        // One alone stays as it is.
        let one = vec![shared_between_executions(
            "OnceLock",
            &format!("{REGISTRY}/tokio-1.0.0/src/signal.rs:1:1"),
        )];
        assert_eq!(merge_shared_in_dependencies(one.clone()), one);
    }
}
