//! JSON for the test-process side of the contract (the failure record, isolated runs'
//! messages), through serde-json-core rather than serde_json: everything pulse links into a
//! user's crate must add no trait impls on std types, and serde_json's
//! `impl PartialEq<Value> for usize` (and the like) makes `assert_eq!(n, (0..k).sum())`
//! ambiguous (E0283) in the user's own code. cargo-pulse reads the same JSON with serde_json.

use serde::de::DeserializeOwned;
use serde::Serialize;

/// `value` as compact JSON.
pub fn to_string<T: Serialize>(value: &T) -> String {
    let mut buf = vec![0u8; 1024];
    loop {
        match serde_json_core::to_slice(value, &mut buf) {
            Ok(len) => {
                buf.truncate(len);
                return String::from_utf8(buf).expect("serde-json-core writes UTF-8");
            }
            // The only failure for our types: the buffer is too small.
            Err(_) => buf.resize(buf.len() * 4, 0),
        }
    }
}

/// Reads a `T` from `text` (unknown fields are refused by serde-json-core only when the
/// type says so).
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    // Unescaped strings are never longer than the text they come from.
    let mut unescaped = vec![0u8; text.len()];
    serde_json_core::from_slice_escaped(text.as_bytes(), &mut unescaped)
        .map(|(value, _)| value)
        .map_err(|e| format!("{e:?}"))
}

#[cfg(test)]
mod tests {
    use crate::{FailureKind, FailureRecord, TraceEvent};

    #[test]
    fn a_record_round_trips_and_serde_json_reads_it() {
        let record = FailureRecord {
            kind: FailureKind::Deadlock,
            message: "a \"quoted\"\nmessage\tand ünïcode".into(),
            seed: Some(u64::MAX),
            details: vec!["one".into(), "two".into()],
            trace: vec![TraceEvent {
                step: 3,
                thread: "main".into(),
                object: Some("Mutex#1".into()),
                ..Default::default()
            }],
            report: "x".repeat(5000),
            ..Default::default()
        };
        let text = super::to_string(&record);
        assert_eq!(super::from_str::<FailureRecord>(&text).unwrap(), record);
        assert_eq!(
            serde_json::from_str::<FailureRecord>(&text).unwrap(),
            record
        );
    }
}
