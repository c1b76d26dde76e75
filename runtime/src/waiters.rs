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
        let list = self.by_object.entry(object).or_default();
        let i = tid as usize;
        if self.index.len() <= i {
            self.index.resize(i + 1, 0);
        }
        if list.get(self.index[i] as usize) == Some(&tid) {
            return;
        }
        self.index[i] = list.len() as u32;
        list.push(tid);
        self.count += 1;
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

    /// The threads blocked on `object`, in index order.
    pub(crate) fn of(&self, object: ObjRef) -> Vec<Tid> {
        if self.count == 0 {
            return Vec::new();
        }
        let mut list = self.by_object.get(&object).cloned().unwrap_or_default();
        list.sort_unstable();
        list
    }

    pub(crate) fn any(&self, object: ObjRef) -> bool {
        self.count != 0 && self.by_object.get(&object).is_some_and(|l| !l.is_empty())
    }

    /// Takes every thread off `object`'s list into `into`, in index order.
    pub(crate) fn take_all(&mut self, object: ObjRef, into: &mut Vec<Tid>) {
        into.clear();
        if self.count == 0 {
            return;
        }
        if let Some(list) = self.by_object.get_mut(&object) {
            self.count -= list.len() as u32;
            into.append(list);
            into.sort_unstable();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_come_and_go_in_any_order_and_are_listed_in_index_order() {
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
        assert_eq!(w.of(a), [1, 3, 5, 9]);
        assert!(w.remove(a, 1) && !w.remove(a, 1) && !w.remove(b, 3));
        assert_eq!(w.of(a), [3, 5, 9]);
        w.add(a, 1);
        assert_eq!(w.of(a), [1, 3, 5, 9]);
        let mut woken = Vec::new();
        w.take_all(a, &mut woken);
        assert_eq!(woken, [1, 3, 5, 9]);
        assert!(!w.any(a) && w.any(b));
        w.clear();
        assert!(!w.any(b) && w.of(b).is_empty());
    }
}
