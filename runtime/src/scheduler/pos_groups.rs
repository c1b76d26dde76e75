//! POS's re-draw of many racers at once, drawn lazily.
//!
//! When the thread that runs touches an object that k other runnable threads are about to
//! touch, POS gives all k fresh priorities. Drawn one by one that is O(k) per step, and a
//! barrier or lock that n threads queue on re-draws the rest at every step of a round:
//! O(n²) per round. One execution of once_cell's `get_or_init_stress` (1,000 threads, 1,000
//! barriers) took over 60 s under POS, 3.3 s under random.
//!
//! Only the highest of the k matters until it runs or leaves. So a group keeps its members
//! undrawn and draws their maximum alone: the maximum of m independent uniform priorities
//! below a ceiling c is c·U^(1/m) (U uniform on [0, 1)), held by a member chosen uniformly;
//! the others stay independent and uniform below it. That member, the group's top, is drawn
//! and competes like any thread; when it leaves, the next maximum is drawn below it. A member
//! that leaves on its own (blocked, or its next operation is elsewhere) is drawn uniformly
//! below the ceiling. Every draw is exact in distribution, and a step costs O(1) amortised.

use super::pos::DRAWN;
use super::{below, Rng};
use crate::fast_hash::FastMap;

/// Re-draws of at least this many racers are grouped; fewer are drawn one by one, as
/// before groups: the same draws, so small programs keep their schedules per seed. Grouping
/// from 8 made 10 threads at one barrier cost 208 ns per decision against 113 drawn one by
/// one (a `powf` and hash lookups per step); from 32, 135.
pub(super) const GROUP_FROM: usize = 32;

/// Above every drawn priority: a fresh group's ceiling.
const TOP: u64 = 1 << 63;

#[derive(Default)]
pub(super) struct Groups {
    /// Object -> its group's slot in `slots`; looked up only when a group is made or asked
    /// for by object, the per-step paths go by slot.
    by_object: FastMap<u64, u32>,
    slots: Vec<Group>,
    free: Vec<u32>,
    /// Per thread: the slot + 1 of the group that holds it undrawn (0: none), and its index
    /// there.
    member_of: Vec<u32>,
    index: Vec<u32>,
    /// Per thread: the slot + 1 of the group it tops (0: none).
    top_of: Vec<u32>,
    undrawn: usize,
}

#[derive(Default)]
struct Group {
    object: u64,
    /// Undrawn: independent and uniform among drawn priorities below `ceiling`.
    members: Vec<u32>,
    ceiling: u64,
    /// The drawn member holding the ceiling, while there are undrawn ones.
    top: Option<u32>,
}

/// What a change did to the drawn priorities: the caller keeps its ranking in step.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Drawn {
    /// The thread that left, drawn now (it was undrawn).
    pub left: Option<(u32, u64)>,
    /// The group's new top and its priority.
    pub top: Option<(u32, u64)>,
}

impl Groups {
    pub(super) fn clear(&mut self) {
        self.by_object.clear();
        self.slots.clear();
        self.free.clear();
        self.member_of.clear();
        self.index.clear();
        self.top_of.clear();
        self.undrawn = 0;
    }

    /// Whether a group exists for `object` (then every re-draw on it is grouped).
    pub(super) fn has(&self, object: u64) -> bool {
        // A group has members while it exists: no hashing on the path without groups.
        self.undrawn > 0 && self.by_object.contains_key(&object)
    }

    pub(super) fn is_undrawn(&self, t: u32) -> bool {
        self.member_of.get(t as usize).is_some_and(|&g| g != 0)
    }

    /// Threads held undrawn, over all groups.
    pub(super) fn undrawn(&self) -> usize {
        self.undrawn
    }

    fn track(&mut self, t: u32) {
        let i = t as usize;
        if self.member_of.len() <= i {
            self.member_of.resize(i + 1, 0);
            self.index.resize(i + 1, 0);
            self.top_of.resize(i + 1, 0);
        }
    }

    /// `racers` (drawn, runnable, next operation on `object`, in thread order) and the
    /// group's undrawn members get fresh priorities: all join the group, under a fresh
    /// ceiling, and its top is drawn.
    pub(super) fn redraw(&mut self, object: u64, racers: &[u32], rng: &mut Rng) -> Drawn {
        for &t in racers {
            self.track(t);
        }
        let slot = match self.by_object.get(&object) {
            Some(&slot) => slot as usize,
            None => {
                let slot = self.free.pop().unwrap_or_else(|| {
                    self.slots.push(Group::default());
                    self.slots.len() as u32 - 1
                });
                self.by_object.insert(object, slot);
                let group = &mut self.slots[slot as usize];
                group.object = object;
                slot as usize
            }
        };
        let group = &mut self.slots[slot];
        if let Some(top) = group.top.take() {
            self.top_of[top as usize] = 0;
        }
        for &t in racers {
            let i = t as usize;
            self.top_of[i] = 0;
            self.member_of[i] = slot as u32 + 1;
            self.index[i] = group.members.len() as u32;
            group.members.push(t);
        }
        group.ceiling = TOP;
        self.undrawn += racers.len();
        self.draw_top(slot, rng)
    }

    /// `t` is about to run: it leaves its group without a draw (its priority is drawn after
    /// it runs, and the group it was in, on the object it acts on, is re-drawn).
    pub(super) fn forget(&mut self, t: u32) {
        let i = t as usize;
        if let Some(&g) = self.member_of.get(i).filter(|&&g| g != 0) {
            self.remove_member(t, g as usize - 1);
        }
        if let Some(&g) = self.top_of.get(i).filter(|&&g| g != 0) {
            self.top_of[i] = 0;
            self.slots[g as usize - 1].top = None;
        }
    }

    /// `t` stops racing with its group (it blocked, or its next operation is on another
    /// object): drawn below the ceiling if undrawn; if it was the top, the next is drawn.
    pub(super) fn leave(&mut self, t: u32, rng: &mut Rng) -> Drawn {
        let i = t as usize;
        let mut drawn = Drawn::default();
        if let Some(&g) = self.member_of.get(i).filter(|&&g| g != 0) {
            let slot = g as usize - 1;
            let ceiling = self.slots[slot].ceiling;
            self.remove_member(t, slot);
            drawn.left = Some((t, uniform_below(ceiling, rng)));
        } else if let Some(&g) = self.top_of.get(i).filter(|&&g| g != 0) {
            self.top_of[i] = 0;
            drawn.top = self.draw_top(g as usize - 1, rng).top;
        }
        drawn
    }

    fn remove_member(&mut self, t: u32, slot: usize) {
        let group = &mut self.slots[slot];
        let k = self.index[t as usize] as usize;
        group.members.swap_remove(k);
        if let Some(&moved) = group.members.get(k) {
            self.index[moved as usize] = k as u32;
        }
        self.member_of[t as usize] = 0;
        self.undrawn -= 1;
        if group.members.is_empty() {
            if let Some(top) = group.top.take() {
                self.top_of[top as usize] = 0;
            }
            self.by_object.remove(&group.object);
            self.free.push(slot as u32);
        }
    }

    /// Draws the maximum of the group's undrawn members, makes its holder the top and the
    /// ceiling of the rest. A group with no members left (freed) draws nothing.
    fn draw_top(&mut self, slot: usize, rng: &mut Rng) -> Drawn {
        let group = &mut self.slots[slot];
        if group.members.is_empty() {
            return Drawn::default();
        }
        if let Some(old) = group.top.take() {
            self.top_of[old as usize] = 0;
        }
        let m = group.members.len();
        let u = max_of_uniforms(rng, m);
        let p = (DRAWN as f64 + (group.ceiling - DRAWN) as f64 * u) as u64;
        // Below the ceiling (ties would let a member pass its top), never below `DRAWN`.
        let p = p.min(group.ceiling.saturating_sub(1)).max(DRAWN);
        let k = below(rng, m);
        let t = group.members[k];
        group.ceiling = p;
        self.remove_member(t, slot);
        let group = &mut self.slots[slot];
        if !group.members.is_empty() {
            group.top = Some(t);
            self.top_of[t as usize] = slot as u32 + 1;
        }
        Drawn {
            left: None,
            top: Some((t, p)),
        }
    }

    /// Test support: every group's members are undrawn and indexed, each nonempty group
    /// has a top, and the count adds up.
    #[cfg(test)]
    pub(super) fn check(&self) {
        let mut undrawn = 0;
        for (&object, &slot) in &self.by_object {
            let group = &self.slots[slot as usize];
            assert_eq!(group.object, object);
            assert!(!group.members.is_empty(), "an empty group {object}");
            for (k, &t) in group.members.iter().enumerate() {
                assert_eq!(self.member_of[t as usize], slot + 1);
                assert_eq!(self.index[t as usize] as usize, k);
            }
            let tops: Vec<u32> = (0..self.top_of.len() as u32)
                .filter(|&t| self.top_of[t as usize] == slot + 1)
                .collect();
            assert_eq!(
                tops,
                group.top.into_iter().collect::<Vec<_>>(),
                "group {object}"
            );
            undrawn += group.members.len();
        }
        assert_eq!(undrawn, self.undrawn);
        assert_eq!(self.by_object.len() + self.free.len(), self.slots.len());
    }
}

/// Uniform on [0, 1).
fn unit(rng: &mut Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// The largest of `m` independent uniforms on [0, 1), as U^(1/m) = exp(ln U / m). A group
/// starts with 32 or more members, so ln U / m is mostly small, and there a cubic series
/// (relative error below 1e-13) stands in for `exp`: `powf` was 7% of POS's time per
/// decision with 1,000 threads at one barrier.
fn max_of_uniforms(rng: &mut Rng, m: usize) -> f64 {
    let x = unit(rng).ln() / m as f64;
    if x > -1e-3 {
        1.0 + x * (1.0 + x * (0.5 + x / 6.0))
    } else {
        x.exp()
    }
}

/// A drawn priority, uniform below `ceiling`.
fn uniform_below(ceiling: u64, rng: &mut Rng) -> u64 {
    let span = ceiling.saturating_sub(DRAWN).max(1);
    DRAWN + (unit(rng) * span as f64) as u64 % span
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::rng_from_seed;

    /// The series and `exp` draw what `powf` does, for one member and for thousands.
    #[test]
    fn the_maximum_of_uniforms_is_u_to_the_one_over_m() {
        for m in [1, 2, 31, 32, 100, 1_000, 100_000] {
            let mut a = rng_from_seed(m as u64);
            let mut b = rng_from_seed(m as u64);
            for _ in 0..10_000 {
                let fast = max_of_uniforms(&mut a, m);
                let exact = unit(&mut b).powf(1.0 / m as f64);
                assert!((fast - exact).abs() <= 1e-12, "m {m}: {fast} vs {exact}");
            }
        }
    }
}
