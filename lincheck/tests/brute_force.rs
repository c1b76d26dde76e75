//! The search (with its cache, its dominance pruning of unknown-outcome operations and its
//! two passes) agrees with a brute-force enumeration of every order on thousands of small
//! random register histories, with and without unknown outcomes.

use pulse_lincheck::models::{Register, RegisterInput, RegisterOutput};
use pulse_lincheck::{check, Model, Operation, Verdict};

type Op = Operation<RegisterInput, RegisterOutput>;

/// xorshift64*: reproducible histories without a dependency.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

fn random_history(rng: &mut Rng) -> Vec<Op> {
    let n = 1 + rng.below(7) as usize;
    (0..n)
        .map(|client| {
            let call = rng.below(10);
            let len = 1 + rng.below(6);
            let v = rng.below(3) as i64;
            let (input, output) = match rng.below(3) {
                0 => (
                    RegisterInput::Read,
                    RegisterOutput::Read((rng.below(4) != 0).then_some(v)),
                ),
                1 => (RegisterInput::Write(v), RegisterOutput::Written),
                _ => (
                    RegisterInput::Cas(v, rng.below(3) as i64),
                    RegisterOutput::Cas(rng.below(2) == 0),
                ),
            };
            let unknown = rng.below(4) == 0;
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

/// Tries every order of every subset that contains all returned operations.
fn brute(h: &[Op]) -> bool {
    fn go(h: &[Op], done: &mut Vec<bool>, state: Option<i64>) -> bool {
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
            // Real time: nothing pending may have returned before i was called.
            let blocked = h
                .iter()
                .zip(done.iter())
                .any(|(o, d)| !*d && o.ret.is_some_and(|r| r < h[i].call));
            if blocked {
                continue;
            }
            if let Some(next) = Register.step(&state, &h[i].input, h[i].output.as_ref()) {
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
    go(h, &mut vec![false; h.len()], None)
}

#[test]
fn the_search_agrees_with_brute_force_on_random_small_histories() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut yes, mut no) = (0, 0);
    for case in 0..20_000 {
        let h = random_history(&mut rng);
        let expected = brute(&h);
        let got = check(&Register, &h);
        assert!(!matches!(got, Verdict::Unknown(_)));
        assert_eq!(got.is_linearizable(), expected, "case {case}: {h:#?}");
        if expected {
            yes += 1
        } else {
            no += 1
        }
    }
    assert!(yes > 1000 && no > 1000, "{yes} linearizable, {no} not");
}
