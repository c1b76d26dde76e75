//! The FIFO queue exercise of the state-machine testing post
//! (`../shared/papers/linearizability-state-machine-testing.txt`, the end): which of three
//! histories of `E(x)` (enqueue) and `D => x` (dequeue) linearize. The first does (the
//! enqueues overlap, so y may go first); in the second `E(x)` returned before `E(y)` was
//! called, so a dequeue cannot yield y first; in the third y is dequeued twice.

use std::collections::VecDeque;

use pulse_lincheck::{check, Model, Operation, Verdict};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Q {
    Enqueue(char),
    Dequeue,
}

struct Fifo;

impl Model for Fifo {
    type Input = Q;
    type Output = Option<char>;
    type State = VecDeque<char>;

    fn init(&self) -> VecDeque<char> {
        VecDeque::new()
    }

    fn step(
        &self,
        s: &VecDeque<char>,
        input: &Q,
        out: Option<&Option<char>>,
    ) -> Option<VecDeque<char>> {
        let mut next = s.clone();
        match input {
            Q::Enqueue(x) => {
                next.push_back(*x);
                Some(next)
            }
            Q::Dequeue => {
                let got = next.pop_front();
                (out.is_none() || out == Some(&got)).then_some(next)
            }
        }
    }
}

fn op(
    client: usize,
    input: Q,
    call: u64,
    ret: u64,
    output: Option<char>,
) -> Operation<Q, Option<char>> {
    Operation {
        client,
        input,
        call,
        output: Some(output),
        ret: Some(ret),
    }
}

#[test]
fn overlapping_enqueues_may_dequeue_in_either_order() {
    // thread 1: |--- E(x) -----|   |-- D => y ---|
    // thread 2:    |-- E(y) --|  |--- D => x --|
    let h = vec![
        op(1, Q::Enqueue('x'), 0, 5, None),
        op(2, Q::Enqueue('y'), 1, 4, None),
        op(2, Q::Dequeue, 6, 11, Some('x')),
        op(1, Q::Dequeue, 7, 10, Some('y')),
    ];
    assert_eq!(check(&Fifo, &h), Verdict::Linearizable);
}

#[test]
fn an_enqueue_that_returned_first_is_dequeued_first() {
    // thread 1: |-- E(x) --| |--- D => y --|
    // thread 2:                 |-- E(y) --|
    let h = vec![
        op(1, Q::Enqueue('x'), 0, 2, None),
        op(1, Q::Dequeue, 3, 8, Some('y')),
        op(2, Q::Enqueue('y'), 4, 6, None),
    ];
    assert!(matches!(check(&Fifo, &h), Verdict::NotLinearizable(_)));
}

#[test]
fn one_enqueue_is_not_dequeued_twice() {
    // thread 1: |--- E(x) --| |--- D => y --|
    // thread 2: |--- E(y) --|
    // thread 3:                 | -- D => y --|
    let h = vec![
        op(1, Q::Enqueue('x'), 0, 3, None),
        op(2, Q::Enqueue('y'), 0, 3, None),
        op(1, Q::Dequeue, 4, 8, Some('y')),
        op(3, Q::Dequeue, 5, 9, Some('y')),
    ];
    assert!(matches!(check(&Fifo, &h), Verdict::NotLinearizable(_)));
}
