//! The built-in models `cargo pulse check-history` checks recorded histories against: a
//! read/write/compare-and-set register (Jepsen's etcd test) and a key-value store with `get`,
//! `put` and `append`, partitioned by key.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::{Model, Operation};

/// An operation on a register holding an integer or nothing (`nil`, the initial value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegisterInput {
    Read,
    Write(i64),
    /// Compare-and-set: from the first value to the second.
    Cas(i64, i64),
}

/// What a register operation returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegisterOutput {
    /// The value read (`None`: nil).
    Read(Option<i64>),
    Written,
    /// Whether the compare-and-set found the expected value (and set it).
    Cas(bool),
}

/// A single register, initially nil.
#[derive(Clone, Copy, Debug, Default)]
pub struct Register;

impl Model for Register {
    type Input = RegisterInput;
    type Output = RegisterOutput;
    type State = Option<i64>;

    fn init(&self) -> Option<i64> {
        None
    }

    fn step(
        &self,
        state: &Option<i64>,
        input: &RegisterInput,
        output: Option<&RegisterOutput>,
    ) -> Option<Option<i64>> {
        match (input, output) {
            (RegisterInput::Read, None) => Some(*state),
            (RegisterInput::Read, Some(RegisterOutput::Read(v))) => (v == state).then_some(*state),
            (RegisterInput::Write(v), None | Some(RegisterOutput::Written)) => Some(Some(*v)),
            (RegisterInput::Cas(from, to), out) => {
                let matches = *state == Some(*from);
                let next = if matches { Some(*to) } else { *state };
                match out {
                    None => Some(next),
                    Some(RegisterOutput::Cas(ok)) => (*ok == matches).then_some(next),
                    Some(_) => None,
                }
            }
            _ => None,
        }
    }

    fn read_only(&self, input: &RegisterInput, output: Option<&RegisterOutput>) -> bool {
        matches!(
            (input, output),
            (RegisterInput::Read, Some(_))
                | (RegisterInput::Cas(..), Some(RegisterOutput::Cas(false)))
        )
    }
}

/// An operation on a key-value store whose values are strings, initially empty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KvInput {
    Get(String),
    Put(String, String),
    Append(String, String),
}

impl KvInput {
    pub fn key(&self) -> &str {
        match self {
            KvInput::Get(k) | KvInput::Put(k, _) | KvInput::Append(k, _) => k,
        }
    }
}

/// What a key-value operation returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KvOutput {
    /// The value `get` read.
    Value(String),
    /// `put` and `append` return nothing.
    Done,
}

/// A key-value store. With `partitioned` (the default of `cargo pulse check-history`), each
/// key's operations are checked on their own: a store is linearizable exactly when each key's
/// history is (P-compositionality), and that is what makes a 50-client history tractable.
#[derive(Clone, Copy, Debug)]
pub struct Kv {
    pub partitioned: bool,
}

impl Default for Kv {
    fn default() -> Self {
        Kv { partitioned: true }
    }
}

/// A key-value store's state: the keys written so far and their values, sorted by key (one
/// entry per partition when partitioned). Values are shared: a step that reads copies no text.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct KvState(Vec<(Arc<str>, Arc<str>)>);

impl KvState {
    pub fn get(&self, key: &str) -> &str {
        match self.0.binary_search_by(|(k, _)| (**k).cmp(key)) {
            Ok(i) => &self.0[i].1,
            Err(_) => "",
        }
    }

    fn with(&self, key: &str, value: Arc<str>) -> KvState {
        let mut next = self.clone();
        match next.0.binary_search_by(|(k, _)| (**k).cmp(key)) {
            Ok(i) => next.0[i].1 = value,
            Err(i) => next.0.insert(i, (key.into(), value)),
        }
        next
    }
}

impl Model for Kv {
    type Input = KvInput;
    type Output = KvOutput;
    type State = KvState;

    fn init(&self) -> KvState {
        KvState::default()
    }

    fn step(&self, state: &KvState, input: &KvInput, output: Option<&KvOutput>) -> Option<KvState> {
        match input {
            KvInput::Get(k) => match output {
                None => Some(state.clone()),
                Some(KvOutput::Value(v)) if v == state.get(k) => Some(state.clone()),
                Some(_) => None,
            },
            KvInput::Put(k, v) => Some(state.with(k, v.as_str().into())),
            KvInput::Append(k, v) => {
                let mut value = String::with_capacity(state.get(k).len() + v.len());
                value.push_str(state.get(k));
                value.push_str(v);
                Some(state.with(k, value.into()))
            }
        }
    }

    fn read_only(&self, input: &KvInput, output: Option<&KvOutput>) -> bool {
        matches!(input, KvInput::Get(_)) && output.is_some()
    }

    fn partition(&self, history: &[Operation<KvInput, KvOutput>]) -> Option<Vec<Vec<usize>>> {
        if !self.partitioned {
            return None;
        }
        let mut parts: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, op) in history.iter().enumerate() {
            parts.entry(op.input.key()).or_default().push(i);
        }
        Some(parts.into_values().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{check, Verdict};

    fn op<I, O>(client: usize, input: I, call: u64, output: O, ret: u64) -> Operation<I, O> {
        Operation {
            client,
            input,
            call,
            output: Some(output),
            ret: Some(ret),
        }
    }

    #[test]
    fn a_read_overlapping_a_write_may_see_either_value() {
        use RegisterInput::*;
        use RegisterOutput as O;
        for seen in [None, Some(1)] {
            let h = vec![
                op(0, Write(1), 0, O::Written, 3),
                op(1, Read, 1, O::Read(seen), 2),
            ];
            assert_eq!(check(&Register, &h), Verdict::Linearizable);
        }
    }

    #[test]
    fn a_stale_read_after_a_write_returned_is_not_linearizable() {
        use RegisterInput::*;
        use RegisterOutput as O;
        let h = vec![
            op(0, Write(1), 0, O::Written, 1),
            op(1, Read, 2, O::Read(None), 3),
        ];
        let Verdict::NotLinearizable(e) = check(&Register, &h) else {
            panic!("expected a violation");
        };
        assert_eq!(e.longest_prefix, vec![0]);
        assert_eq!(e.cannot_follow, Some(1));
    }

    #[test]
    fn an_info_write_may_have_happened_or_not() {
        use RegisterInput::*;
        use RegisterOutput as O;
        let info = |call| Operation {
            client: 0,
            input: Write(5),
            call,
            output: None,
            ret: None,
        };
        // Happened: a later read sees it.
        let h = vec![info(0), op(1, Read, 1, O::Read(Some(5)), 2)];
        assert!(check(&Register, &h).is_linearizable());
        // Never happened: a later read does not see it.
        let h = vec![info(0), op(1, Read, 1, O::Read(None), 2)];
        assert!(check(&Register, &h).is_linearizable());
        // But it cannot take effect before its call.
        let h = vec![op(1, Read, 0, O::Read(Some(5)), 1), info(2)];
        assert!(!check(&Register, &h).is_linearizable());
    }

    #[test]
    fn kv_keys_are_checked_apart_and_together_alike() {
        use KvInput::*;
        let h = vec![
            op(0, Put("a".into(), "1".into()), 0, KvOutput::Done, 1),
            op(1, Append("b".into(), "x".into()), 0, KvOutput::Done, 3),
            op(0, Get("a".into()), 2, KvOutput::Value("1".into()), 4),
            op(1, Get("b".into()), 5, KvOutput::Value("".into()), 6),
        ];
        for partitioned in [true, false] {
            let v = check(&Kv { partitioned }, &h);
            let Verdict::NotLinearizable(e) = v else {
                panic!("expected a violation, got {v:?}");
            };
            assert_eq!(e.cannot_follow, Some(3));
        }
    }
}
