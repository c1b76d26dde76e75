//! The threads blocked on each object, so waking an object's waiters costs what there is
//! to wake, not a scan of every thread (1,000-thread tests).
//!
//! A list per object in arrival order, each thread knowing its place in it: blocking and
//! waking one thread are O(1). Sorted lists made each a binary search and a memmove of
//! half the list: with 1,000 threads at one barrier, a tenth of every decision.

use crate::fast_hash::FastMap;
use crate::obj_ref::ObjRef;

type Tid = u32;

#[derive(Default)]
pub(crate) struct Waiters {
    /// Lists of objects nobody waits on stay, empty, for reuse.
    by_object: FastMap<ObjRef, Vec<Tid>>,
    /// Per thread: its index in its object's list, while it is in one.
    index: Vec<u32>,
    /// Threads listed, over all objects: at 0 (most unlocks) no map is touched.
    count: u32,
    /// Scratch for `sort_tids`.
    marks: Vec<bool>,
}

impl Waiters {
    pub(crate) fn clear(&mut self) {
        if self.count != 0 {
            self.by_object.values_mut().for_each(Vec::clear);
            self.count = 0;
        }
    }

    /// Lists `tid` as blocked on `object` (once).
    pub(crate) fn add(&mut self, object: ObjRef, tid: Tid) {
        self.add_all(object, &[tid]);
    }

    /// Lists each of `tids` as blocked on `object` (once), looking the object up once.
    pub(crate) fn add_all(&mut self, object: ObjRef, tids: &[Tid]) {
        let Some(&most) = tids.iter().max() else {
            return;
        };
        if self.index.len() <= most as usize {
            self.index.resize(most as usize + 1, 0);
        }
        let list = self.by_object.entry(object).or_default();
        for &tid in tids {
            let i = tid as usize;
            if list.get(self.index[i] as usize) == Some(&tid) {
                continue;
            }
            self.index[i] = list.len() as u32;
            list.push(tid);
            self.count += 1;
        }
    }

    /// Takes `tid` off `object`'s list; false if it was not on it.
    pub(crate) fn remove(&mut self, object: ObjRef, tid: Tid) -> bool {
        let Some(list) = self.by_object.get_mut(&object) else {
            return false;
        };
        let k = self
            .index
            .get(tid as usize)
            .map_or(usize::MAX, |&k| k as usize);
        if list.get(k) != Some(&tid) {
            return false;
        }
        list.swap_remove(k);
        if let Some(&moved) = list.get(k) {
            self.index[moved as usize] = k as u32;
        }
        self.count -= 1;
        true
    }

    /// The threads blocked on `object`, in arrival order (as changed by removals).
    pub(crate) fn of(&self, object: ObjRef) -> &[Tid] {
        match self.count {
            0 => &[],
            _ => self.by_object.get(&object).map_or(&[], Vec::as_slice),
        }
    }

    pub(crate) fn any(&self, object: ObjRef) -> bool {
        self.count != 0 && self.by_object.get(&object).is_some_and(|l| !l.is_empty())
    }

    /// Takes every thread off `object`'s list into `into`, in index order.
    pub(crate) fn take_all(&mut self, object: ObjRef, into: &mut Vec<Tid>) {
        self.take_all_unordered(object, into);
        sort_tids(into, &mut self.marks);
    }

    /// Takes every thread off `object`'s list into `into`, in arrival order.
    pub(crate) fn take_all_unordered(&mut self, object: ObjRef, into: &mut Vec<Tid>) {
        into.clear();
        if self.count == 0 {
            return;
        }
        if let Some(list) = self.by_object.get_mut(&object) {
            self.count -= list.len() as u32;
            into.append(list);
        }
    }
}

/// Sorts distinct thread indices: many of them (a lock or barrier releasing hundreds of
/// threads) by marking each and reading the marks back, O(n + largest), a comparison sort
/// below that.
fn sort_tids(tids: &mut [Tid], marks: &mut Vec<bool>) {
    if tids.len() < 64 {
        tids.sort_unstable();
        return;
    }
    let most = tids.iter().copied().max().unwrap_or(0) as usize;
    if tids.len() * 16 < most {
        tids.sort_unstable();
        return;
    }
    marks.clear();
    marks.resize(most + 1, false);
    for &t in tids.iter() {
        marks[t as usize] = true;
    }
    let sorted = marks
        .iter()
        .enumerate()
        .filter(|&(_, &marked)| marked)
        .map(|(t, _)| t as Tid);
    for (slot, t) in tids.iter_mut().zip(sorted) {
        *slot = t;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_come_and_go_in_any_order_and_are_listed_in_arrival_order() {
        let a = ObjRef {
            kind: "Mutex",
            id: 1,
        };
        let b = ObjRef {
            kind: "Condvar",
            id: 2,
        };
        let mut w = Waiters::default();
        for t in [5, 1, 9, 3] {
            w.add(a, t);
        }
        w.add(a, 9); // once
        w.add(b, 2);
        assert_eq!(w.of(a), [5, 1, 9, 3]);
        // The last takes the place of one that leaves.
        assert!(w.remove(a, 1) && !w.remove(a, 1) && !w.remove(b, 3));
        assert_eq!(w.of(a), [5, 3, 9]);
        w.add(a, 1);
        assert_eq!(w.of(a), [5, 3, 9, 1]);
        let mut woken = Vec::new();
        w.take_all(a, &mut woken);
        assert_eq!(woken, [1, 3, 5, 9]);
        assert!(!w.any(a) && w.any(b));
        w.clear();
        assert!(!w.any(b) && w.of(b).is_empty());
    }

    #[test]
    fn many_threads_are_listed_in_bulk_and_taken_in_index_or_arrival_order() {
        let a = ObjRef {
            kind: "Mutex",
            id: 1,
        };
        let mut w = Waiters::default();
        // 300 distinct threads in a scrambled order: enough for the marks' sort.
        let arrival: Vec<Tid> = (0..300).map(|i| (i * 7919) % 300).collect();
        w.add_all(a, &arrival[..150]);
        w.add_all(a, &arrival[100..]); // the overlap is listed once
        let mut taken = Vec::new();
        w.take_all(a, &mut taken);
        assert_eq!(taken, (0..300).collect::<Vec<Tid>>());
        w.add_all(a, &arrival);
        w.take_all_unordered(a, &mut taken);
        assert_eq!(taken, arrival);
        assert!(!w.any(a));
    }
}
