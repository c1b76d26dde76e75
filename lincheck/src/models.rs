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

/// A key-value store's state: the keys written so far and their values, sorted by key, with
/// a hash of the whole kept up to date as values change. The search hashes and compares a
/// state at every step, and with ten keys hashing the key strings cost more than the rest of
/// the step; the kept hash also rejects most unequal states before a text is walked.
#[derive(Clone, Debug, Default)]
pub struct KvState {
    /// Wrapping sum of `entry_hash` over the entries (so replacing one entry is O(1)).
    hash: u64,
    entries: Entries,
}

/// A partition holds one key, and its states then allocate nothing but their texts' new
/// pieces; with several keys, the entries are one shared slice (one allocation per step,
/// one reference count to clone the state into the cache).
#[derive(Clone, Debug, Default)]
enum Entries {
    #[default]
    Empty,
    One(KvEntry),
    Many(Arc<[KvEntry]>),
}

/// A key (with its hash, computed once) and its value.
#[derive(Clone, Debug)]
struct KvEntry {
    key: Arc<str>,
    key_hash: u64,
    value: Text,
}

fn str_hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(BASE)
    })
}

/// splitmix64's finaliser: the entries' hashes are summed, so each must be well mixed.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl KvEntry {
    fn hash(&self) -> u64 {
        mix(self.key_hash
            ^ self.value.hash().wrapping_mul(0x9e37_79b9_7f4a_7c15)
            ^ (self.value.len() as u64).rotate_left(40))
    }
}

impl PartialEq for KvEntry {
    fn eq(&self, other: &KvEntry) -> bool {
        (Arc::ptr_eq(&self.key, &other.key) || self.key == other.key) && self.value == other.value
    }
}

impl KvState {
    fn entries(&self) -> &[KvEntry] {
        match &self.entries {
            Entries::Empty => &[],
            Entries::One(e) => std::slice::from_ref(e),
            Entries::Many(all) => all,
        }
    }

    fn value(&self, key: &str) -> Option<&Text> {
        self.entries()
            .iter()
            .find(|e| &*e.key == key)
            .map(|e| &e.value)
    }

    fn with(&self, key: &str, value: impl FnOnce(Option<&Text>) -> Text) -> KvState {
        let entries = self.entries();
        let found = entries.binary_search_by(|e| (*e.key).cmp(key));
        let new = match found {
            Ok(i) => KvEntry {
                key: entries[i].key.clone(),
                key_hash: entries[i].key_hash,
                value: value(Some(&entries[i].value)),
            },
            Err(_) => KvEntry {
                key: key.into(),
                key_hash: str_hash(key),
                value: value(None),
            },
        };
        let mut hash = self.hash.wrapping_add(new.hash());
        let entries = match (found, &self.entries) {
            (Ok(_), Entries::One(_)) | (Err(_), Entries::Empty) => {
                if let Entries::One(old) = &self.entries {
                    hash = hash.wrapping_sub(old.hash());
                }
                Entries::One(new)
            }
            (Ok(i), _) => {
                hash = hash.wrapping_sub(entries[i].hash());
                // One allocation: the iterator's length is known.
                let mut new = Some(new);
                Entries::Many(
                    entries
                        .iter()
                        .enumerate()
                        .map(|(j, e)| {
                            if j == i {
                                new.take().unwrap_or_else(|| e.clone())
                            } else {
                                e.clone()
                            }
                        })
                        .collect(),
                )
            }
            (Err(i), _) => {
                let mut all: Vec<KvEntry> = Vec::with_capacity(entries.len() + 1);
                all.extend_from_slice(&entries[..i]);
                all.push(new);
                all.extend_from_slice(&entries[i..]);
                Entries::Many(all.into())
            }
        };
        KvState { hash, entries }
    }
}

impl PartialEq for KvState {
    fn eq(&self, other: &KvState) -> bool {
        self.hash == other.hash && self.entries() == other.entries()
    }
}

impl Eq for KvState {}

impl std::hash::Hash for KvState {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
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
            KvInput::Get(_) => self.accepts(state, input, output).then(|| state.clone()),
            KvInput::Put(k, v) => Some(state.with(k, |_| Text::of(v.clone()))),
            KvInput::Append(k, v) => Some(state.with(k, |old| match old {
                Some(t) => t.then(v.clone()),
                None => Text::of(v.clone()),
            })),
        }
    }

    /// Without cloning the state (two reference counts touched, then dropped: the atomic
    /// operations were most of the model's time on `c50-ok`).
    fn accepts(&self, state: &KvState, input: &KvInput, output: Option<&KvOutput>) -> bool {
        match (input, output) {
            (KvInput::Get(k), Some(KvOutput::Value(v))) => match state.value(k) {
                Some(t) => t.equals(v),
                None => v.is_empty(),
            },
            (KvInput::Get(_), Some(_)) => false,
            (KvInput::Get(_), None) | (KvInput::Put(..) | KvInput::Append(..), _) => true,
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
