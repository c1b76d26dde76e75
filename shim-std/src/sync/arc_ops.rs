//! `Arc` and `Weak` operations whose answer depends on what other threads did with their
//! clones: counts, uniqueness checks, upgrades. The values stay std's own `Arc` and `Weak`
//! (ARCHITECTURE decision 10); the instrumenter rewrites calls it can see
//! (`Arc::strong_count(&a)`, `std::sync::Arc::get_mut(&mut a)`, `Weak::upgrade(&w)`,
//! `w.upgrade()`) to these functions. Each has a scheduling point before it, like every
//! visible operation, and one after it: a check (`strong_count(&a) == 1`) and the act that
//! trusts it (`drop`, a write through a pointer) are separate steps other threads can run
//! between, as they can on a machine.

use std::sync::{Arc, Weak};

use super::atomic::held_exclusively;
use crate::rt;

const KIND: &str = "Arc";

/// `f` between two scheduling points on the allocation at `addr`.
#[track_caller]
#[inline]
fn visible<R>(op: &'static str, after: &'static str, addr: usize, f: impl FnOnce() -> R) -> R {
    let Some(ctx) = rt::current() else {
        return f();
    };
    ctx.switch_addr(op, KIND, addr);
    let r = f();
    if let Some(ctx) = rt::current() {
        ctx.switch_addr(after, KIND, addr);
    }
    r
}

fn addr<T: ?Sized>(a: &Arc<T>) -> usize {
    Arc::as_ptr(a) as *const () as usize
}

fn weak_addr<T: ?Sized>(w: &Weak<T>) -> usize {
    Weak::as_ptr(w) as *const () as usize
}

/// `Arc::strong_count`, a visible operation.
#[track_caller]
pub fn strong_count<T: ?Sized>(this: &Arc<T>) -> usize {
    visible(
        "Arc::strong_count",
        "Arc::strong_count returned",
        addr(this),
        || Arc::strong_count(this),
    )
}

/// `Arc::weak_count`, a visible operation.
#[track_caller]
pub fn weak_count<T: ?Sized>(this: &Arc<T>) -> usize {
    visible(
        "Arc::weak_count",
        "Arc::weak_count returned",
        addr(this),
        || Arc::weak_count(this),
    )
}

/// `Arc::get_mut`, a visible operation. The `&mut` it gives comes after every other owner's
/// accesses (`atomic::held_exclusively`): the clones' drops that made it unique are std's.
#[track_caller]
pub fn get_mut<T: ?Sized>(this: &mut Arc<T>) -> Option<&mut T> {
    let at = addr(this);
    visible("Arc::get_mut", "Arc::get_mut returned", at, move || {
        let value = Arc::get_mut(this);
        if let Some(value) = &value {
            held_exclusively(&**value);
        }
        value
    })
}

/// `Arc::make_mut`, a visible operation (exclusive afterwards, as `get_mut`).
#[track_caller]
pub fn make_mut<T: Clone>(this: &mut Arc<T>) -> &mut T {
    let at = addr(this);
    visible("Arc::make_mut", "Arc::make_mut returned", at, move || {
        let value = Arc::make_mut(this);
        held_exclusively(&*value);
        value
    })
}

/// If `this` is the last `Arc` of its value, its holder has every other owner's accesses
/// behind it (as `get_mut`), before the value moves out (`try_unwrap`, `into_inner`): what it
/// points to keeps its history.
fn owner_alone<T>(this: &Arc<T>) {
    if Arc::strong_count(this) == 1 {
        held_exclusively(&**this);
    }
}

/// `Arc::try_unwrap`, a visible operation.
#[track_caller]
pub fn try_unwrap<T>(this: Arc<T>) -> Result<T, Arc<T>> {
    let at = addr(&this);
    visible(
        "Arc::try_unwrap",
        "Arc::try_unwrap returned",
        at,
        move || {
            owner_alone(&this);
            Arc::try_unwrap(this)
        },
    )
}

/// `Arc::into_inner`, a visible operation.
#[track_caller]
pub fn into_inner<T>(this: Arc<T>) -> Option<T> {
    let at = addr(&this);
    visible(
        "Arc::into_inner",
        "Arc::into_inner returned",
        at,
        move || {
            owner_alone(&this);
            Arc::into_inner(this)
        },
    )
}

/// A method call `.upgrade()` the instrumenter cannot type: its receiver may be std's
/// `sync::Weak`, `rc::Weak` or a type of the crate's own. A scheduling point before the
/// call (taken by `receiver`) and one after (`returned`), whatever the type.
#[track_caller]
#[inline]
pub fn receiver<T: ?Sized>(this: &T) -> &T {
    if let Some(ctx) = rt::current() {
        ctx.switch_addr(
            "Weak::upgrade",
            KIND,
            this as *const T as *const () as usize,
        );
    }
    this
}

/// See `receiver`.
#[track_caller]
#[inline]
pub fn returned<R>(r: R) -> R {
    if let Some(ctx) = rt::current() {
        ctx.switch_addr("Weak::upgrade returned", KIND, 0);
    }
    r
}

/// `Weak`'s operations, under their own names.
pub mod weak {
    use super::{visible, weak_addr};
    use std::sync::{Arc, Weak};

    /// `Weak::upgrade`, a visible operation.
    #[track_caller]
    pub fn upgrade<T: ?Sized>(this: &Weak<T>) -> Option<Arc<T>> {
        visible(
            "Weak::upgrade",
            "Weak::upgrade returned",
            weak_addr(this),
            || this.upgrade(),
        )
    }

    /// `Weak::strong_count`, a visible operation.
    #[track_caller]
    pub fn strong_count<T: ?Sized>(this: &Weak<T>) -> usize {
        visible(
            "Weak::strong_count",
            "Weak::strong_count returned",
            weak_addr(this),
            || this.strong_count(),
        )
    }

    /// `Weak::weak_count`, a visible operation.
    #[track_caller]
    pub fn weak_count<T: ?Sized>(this: &Weak<T>) -> usize {
        visible(
            "Weak::weak_count",
            "Weak::weak_count returned",
            weak_addr(this),
            || this.weak_count(),
        )
    }
}
