//! The key-value model, partitioned by key and whole, agrees with a brute-force enumeration
//! over a plain map of strings on thousands of small random histories. Values are built from
//! pieces that make the same text in several ways ("a" + "b" and "ab"), so the model's own
//! representation of texts (pieces, kept hashes) is held to comparing contents exactly.

use std::collections::BTreeMap;

use pulse_lincheck::models::{Kv, KvInput, KvOutput};
use pulse_lincheck::{check, Operation, Verdict};

type Op = Operation<KvInput, KvOutput>;

/// xorshift64*: reproducible histories without a dependency.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len() as u64) as usize]
    }
}

const PIECES: [&str; 4] = ["a", "b", "ab", ""];
const READS: [&str; 8] = ["", "a", "b", "ab", "ba", "aab", "abab", "abb"];

fn random_history(rng: &mut Rng) -> Vec<Op> {
    let n = 1 + rng.below(7) as usize;
    (0..n)
        .map(|client| {
            let call = rng.below(10);
            let len = 1 + rng.below(6);
            let key = ["k", "l"][rng.below(2) as usize].to_string();
            let (input, output) = match rng.below(4) {
                0 | 1 => (
                    KvInput::Append(key, rng.pick(&PIECES).into()),
                    KvOutput::Done,
                ),
                2 => (KvInput::Put(key, rng.pick(&PIECES).into()), KvOutput::Done),
                _ => (
                    KvInput::Get(key),
                    KvOutput::Value(rng.pick(&READS).to_string()),
                ),
            };
            let unknown = rng.below(5) == 0;
            Operation {
                client,
                input,
                call,
                output: (!unknown).then_some(output),
                ret: (!unknown).then_some(call + len),
            }
        })
        .collect()
}

/// The model, written plainly: a missing key reads as the empty string.
fn step(state: &BTreeMap<String, String>, op: &Op) -> Option<BTreeMap<String, String>> {
    let mut next = state.clone();
    match (&op.input, &op.output) {
        (KvInput::Get(k), Some(KvOutput::Value(v))) => {
            (state.get(k).map_or("", String::as_str) == v).then_some(next)
        }
        (KvInput::Get(_), _) => Some(next),
        (KvInput::Put(k, v), _) => {
            next.insert(k.clone(), v.to_string());
            Some(next)
        }
        (KvInput::Append(k, v), _) => {
            next.entry(k.clone()).or_default().push_str(v);
            Some(next)
        }
    }
}

/// Tries every order of every subset that contains all returned operations.
fn brute(h: &[Op]) -> bool {
    fn go(h: &[Op], done: &mut Vec<bool>, state: BTreeMap<String, String>) -> bool {
        if h.iter()
            .zip(done.iter())
            .all(|(o, d)| *d || o.ret.is_none())
        {
            return true;
        }
        for i in 0..h.len() {
            if done[i] {
                continue;
            }
            let blocked = h
                .iter()
                .zip(done.iter())
                .any(|(o, d)| !*d && o.ret.is_some_and(|r| r < h[i].call));
            if blocked {
                continue;
            }
            if let Some(next) = step(&state, &h[i]) {
                done[i] = true;
                let ok = go(h, done, next);
                done[i] = false;
                if ok {
                    return true;
                }
            }
        }
        false
    }
    go(h, &mut vec![false; h.len()], BTreeMap::new())
}

#[test]
fn the_kv_model_agrees_with_brute_force_on_random_small_histories() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let (mut yes, mut no) = (0, 0);
    for case in 0..20_000 {
        let h = random_history(&mut rng);
        let expected = brute(&h);
        for partitioned in [true, false] {
            let got = check(&Kv { partitioned }, &h);
            assert!(!matches!(got, Verdict::Unknown(_)));
            assert_eq!(
                got.is_linearizable(),
                expected,
                "case {case}, partitioned {partitioned}: {h:#?}"
            );
        }
        if expected {
            yes += 1
        } else {
            no += 1
        }
    }
    assert!(yes > 1000 && no > 1000, "{yes} linearizable, {no} not");
}
