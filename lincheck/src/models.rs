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
    /// Values are shared with the states that hold them (an append copies no text).
    Put(String, Arc<str>),
    Append(String, Arc<str>),
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

/// A string as the appends that built it: a persistent list of pieces shared between
/// states, so an `append` costs one small node and copies no text. Equality and hashing are
/// by content (a polynomial hash kept per node, then a byte-wise walk from the end).
#[derive(Clone, Default)]
pub struct Text(Option<Arc<Piece>>);

struct Piece {
    prev: Option<Arc<Piece>>,
    piece: Arc<str>,
    /// Length and hash of the whole text up to and including this piece.
    len: usize,
    hash: u64,
}

const BASE: u64 = 0x100_0000_01b3;

impl Text {
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |p| p.len)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn hash(&self) -> u64 {
        self.0.as_ref().map_or(0, |p| p.hash)
    }

    fn of(piece: Arc<str>) -> Text {
        Text::default().then(piece)
    }

    fn then(&self, piece: Arc<str>) -> Text {
        let mut hash = self.hash();
        for b in piece.bytes() {
            hash = hash.wrapping_mul(BASE).wrapping_add(u64::from(b) + 1);
        }
        Text(Some(Arc::new(Piece {
            prev: self.0.clone(),
            len: self.len() + piece.len(),
            hash,
            piece,
        })))
    }

    /// Compares the texts' bytes from the end, piece against piece.
    fn same_bytes(a: Option<&Piece>, b: &mut dyn Iterator<Item = &[u8]>, len: usize) -> bool {
        let mut node = a;
        let mut left = node.map_or(0, |n| n.piece.len());
        let mut seen = 0;
        for chunk in b {
            let mut end = chunk.len();
            while end > 0 {
                while left == 0 {
                    match node {
                        Some(n) => {
                            node = n.prev.as_deref();
                            left = node.map_or(0, |n| n.piece.len());
                        }
                        None => return false,
                    }
                    if node.is_none() {
                        return false;
                    }
                }
                let mine = &node.expect("a node with bytes left").piece.as_bytes()[..left];
                let k = end.min(left);
                if mine[left - k..] != chunk[end - k..end] {
                    return false;
                }
                end -= k;
                left -= k;
                seen += k;
            }
        }
        seen == len
    }

    /// Whether the text is `s`.
    pub fn equals(&self, s: &str) -> bool {
        self.len() == s.len()
            && Text::same_bytes(
                self.0.as_deref(),
                &mut std::iter::once(s.as_bytes()),
                s.len(),
            )
    }

    /// The pieces from the last to the first.
    fn pieces(&self) -> impl Iterator<Item = &[u8]> {
        let mut node = self.0.as_deref();
        std::iter::from_fn(move || {
            let n = node?;
            node = n.prev.as_deref();
            Some(n.piece.as_bytes())
        })
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Text) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) if Arc::ptr_eq(a, b) => true,
            _ => {
                self.len() == other.len()
                    && self.hash() == other.hash()
                    && Text::same_bytes(self.0.as_deref(), &mut other.pieces(), self.len())
            }
        }
    }
}

impl Eq for Text {}

impl std::hash::Hash for Text {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash());
        state.write_usize(self.len());
    }
}

impl std::fmt::Debug for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut pieces: Vec<&[u8]> = self.pieces().collect();
        pieces.reverse();
        let text: String = pieces.iter().map(|p| String::from_utf8_lossy(p)).collect();
        write!(f, "{text:?}")
    }
}

/// A key-value store's state: the keys written so far and their values, sorted by key. The
/// first entry is kept inline: a partition holds one key, and its states then allocate
/// nothing but their texts' new pieces.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct KvState {
    first: Option<(Arc<str>, Text)>,
    rest: Option<Arc<Vec<KvEntry>>>,
}

/// A key and its value.
type KvEntry = (Arc<str>, Text);

impl KvState {
    fn entries(&self) -> impl Iterator<Item = &KvEntry> {
        self.first
            .iter()
            .chain(self.rest.iter().flat_map(|r| r.iter()))
    }

    fn value(&self, key: &str) -> Option<&Text> {
        self.entries().find(|(k, _)| &**k == key).map(|(_, v)| v)
    }

    fn with(&self, key: &str, value: impl FnOnce(Option<&Text>) -> Text) -> KvState {
        if self.rest.is_none() {
            match &self.first {
                None => {
                    return KvState {
                        first: Some((key.into(), value(None))),
                        rest: None,
                    }
                }
                Some((k, v)) if &**k == key => {
                    return KvState {
                        first: Some((k.clone(), value(Some(v)))),
                        rest: None,
                    }
                }
                Some(_) => {}
            }
        }
        let mut all: Vec<KvEntry> = self.entries().cloned().collect();
        match all.binary_search_by(|(k, _)| (**k).cmp(key)) {
            Ok(i) => all[i].1 = value(Some(&all[i].1)),
            Err(i) => {
                let v = value(None);
                all.insert(i, (key.into(), v));
            }
        }
        let mut all = all.into_iter();
        let first = all.next();
        let rest: Vec<_> = all.collect();
        KvState {
            first,
            rest: (!rest.is_empty()).then(|| Arc::new(rest)),
        }
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
                Some(KvOutput::Value(v)) => {
                    let matches = match state.value(k) {
                        Some(t) => t.equals(v),
                        None => v.is_empty(),
                    };
                    matches.then(|| state.clone())
                }
                Some(_) => None,
            },
            KvInput::Put(k, v) => Some(state.with(k, |_| Text::of(v.clone()))),
            KvInput::Append(k, v) => Some(state.with(k, |old| match old {
                Some(t) => t.then(v.clone()),
                None => Text::of(v.clone()),
            })),
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
    fn texts_compare_by_content_whatever_their_pieces() {
        let t = |pieces: &[&str]| {
            pieces
                .iter()
                .fold(Text::default(), |t, p| t.then(Arc::from(*p)))
        };
        let abc = [
            t(&["abc"]),
            t(&["ab", "c"]),
            t(&["a", "", "bc"]),
            t(&["a", "b", "c"]),
        ];
        for x in &abc {
            assert!(x.equals("abc"));
            assert!(!x.equals("abd") && !x.equals("ab") && !x.equals("xabc"));
            for y in &abc {
                assert_eq!(x, y);
            }
            assert_ne!(x, &t(&["ab", "d"]));
            assert_ne!(x, &t(&["abcd"]));
            assert_eq!(format!("{x:?}"), "\"abc\"");
        }
        assert!(Text::default().equals("") && t(&[""]).equals(""));
        assert_eq!(Text::default(), t(&[""]));
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
