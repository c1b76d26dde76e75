//! Classifying a path by its first two segments: does it lead into std's sync/thread/time
//! (rewrite its root to the shim), into something that synchronises behind pulse's back
//! (report it), or elsewhere (leave it)?
//!
//! Only the root and the module after it matter: the shim mirrors std's layout, so
//! `std::sync::X` becomes `<shim>::sync::X` for every `X`.

use crate::report::FindingKind;
use std::collections::HashMap;
use std::ops::Range;

/// The crate a path root names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Crate {
    Std,
    Core,
    Alloc,
}

/// The names that reach std/core/alloc in one file: the crates themselves plus aliases from
/// `extern crate std as foo;` and `use std as s;`, minus names a local item shadows in the
/// module that declares it.
#[derive(Debug, Clone)]
pub(crate) struct Roots {
    names: HashMap<String, Crate>,
    /// (name, byte range of the module where a local item of that name hides the crate)
    shadowed: Vec<(String, Range<usize>)>,
}

impl Default for Roots {
    fn default() -> Self {
        let names = [
            ("std", Crate::Std),
            ("core", Crate::Core),
            ("alloc", Crate::Alloc),
        ]
        .into_iter()
        .map(|(n, c)| (n.to_owned(), c))
        .collect();
        Roots {
            names,
            shadowed: Vec::new(),
        }
    }
}

impl Roots {
    pub(crate) fn add_alias(&mut self, alias: &str, krate: Crate) {
        self.names.insert(alias.to_owned(), krate);
    }

    /// A local item (`mod std`, `use x as std`) hides the extern crate for relative paths in
    /// `scope` (its module); `::std` still names the crate.
    pub(crate) fn shadow(&mut self, name: &str, scope: Range<usize>) {
        self.shadowed.push((name.to_owned(), scope));
    }

    /// The crate `name` reaches, if it is a root name at all (shadowing aside).
    pub(crate) fn lookup(&self, name: &str) -> Option<Crate> {
        self.names.get(name).copied()
    }

    /// Whether a relative path starting with `name` at byte `at` names a local item instead.
    pub(crate) fn shadowed_at(&self, name: &str, at: usize) -> bool {
        self.shadowed
            .iter()
            .any(|(n, scope)| n == name && scope.contains(&at))
    }
}

/// Whether `<krate>::<module>` is mirrored by the shim, so its root is rewritten: one of std's
/// `modules` (`Options::std_modules`) that also exists in `krate`.
pub(crate) fn is_shim_module(krate: Crate, module: &str, modules: &[String]) -> bool {
    let exists = match krate {
        Crate::Std => matches!(module, "sync" | "thread" | "time" | "hint" | "thread_local"),
        // core::sync only holds `atomic`; core::hint::spin_loop must yield like std's.
        Crate::Core => matches!(module, "sync" | "hint"),
        Crate::Alloc => module == "sync",
    };
    exists && modules.iter().any(|m| m == module)
}

/// A std module that pulse does not schedule, with what to do about it.
pub(crate) fn std_unscheduled(krate: Crate, module: &str) -> Option<(FindingKind, &'static str)> {
    match (krate, module) {
        (Crate::Std, "fs" | "net" | "process") => Some((
            FindingKind::BlockingIo,
            "blocking I/O is not a scheduling point: mark the call #[pulse::atomic] or list the path in [package.metadata.pulse] atomic",
        )),
        (Crate::Std | Crate::Core, "intrinsics" | "arch") => Some((
            FindingKind::RawAtomics,
            "raw intrinsics are invisible to the scheduler: use std::sync::atomic, or mark the block #[pulse::atomic] if it does not synchronise",
        )),
        _ => None,
    }
}

/// Another crate's synchronisation, which pulse cannot see unless that crate is instrumented.
pub(crate) fn foreign_sync(root: &str, next: Option<&str>) -> Option<&'static str> {
    const INSTRUMENT: &str =
        "pulse does not schedule it: instrument the dependency with --instrument-dep, or mark the critical section #[pulse::atomic]";
    const ASYNC: &str =
        "async runtimes are not scheduled by pulse: test the synchronous core, or mark the section #[pulse::atomic]";
    match (root, next) {
        (
            "parking_lot" | "crossbeam" | "crossbeam_channel" | "crossbeam_utils"
            | "crossbeam_queue" | "crossbeam_deque" | "crossbeam_epoch" | "spin" | "flume"
            | "lock_api" | "dashmap" | "arc_swap" | "rayon" | "portable_atomic" | "atomic_waker"
            | "event_listener" | "futures_channel" | "std_semaphore" | "thread_local",
            Some(_),
        ) => Some(INSTRUMENT),
        ("once_cell", Some("sync")) | ("futures", Some("lock" | "channel")) => Some(INSTRUMENT),
        ("futures_util", Some("lock")) => Some(INSTRUMENT),
        ("tokio", Some("sync" | "time" | "task" | "runtime" | "spawn")) => Some(ASYNC),
        ("async_std" | "async_channel" | "smol" | "async_lock", Some(_)) => Some(ASYNC),
        _ => None,
    }
}

/// Keywords after which a `::` starts a fresh (crate-rooted) path rather than continuing one.
pub(crate) fn is_expr_keyword(ident: &str) -> bool {
    matches!(
        ident,
        "as" | "async"
            | "await"
            | "box"
            | "break"
            | "const"
            | "continue"
            | "dyn"
            | "else"
            | "enum"
            | "extern"
            | "fn"
            | "for"
            | "if"
            | "impl"
            | "in"
            | "let"
            | "loop"
            | "match"
            | "mod"
            | "move"
            | "mut"
            | "pub"
            | "ref"
            | "return"
            | "static"
            | "struct"
            | "trait"
            | "type"
            | "unsafe"
            | "use"
            | "where"
            | "while"
            | "yield"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shim_modules() {
        let all = crate::Options::default().std_modules;
        assert!(is_shim_module(Crate::Std, "sync", &all));
        assert!(is_shim_module(Crate::Std, "hint", &all));
        assert!(!is_shim_module(Crate::Std, "collections", &all));
        assert!(is_shim_module(Crate::Core, "sync", &all));
        assert!(!is_shim_module(Crate::Core, "time", &all));
        assert!(is_shim_module(Crate::Alloc, "sync", &all));
        assert!(!is_shim_module(Crate::Alloc, "vec", &all));
        let untimed = ["sync".to_owned(), "thread".to_owned()];
        assert!(!is_shim_module(Crate::Std, "time", &untimed));
        assert!(is_shim_module(Crate::Core, "sync", &untimed));
    }

    #[test]
    fn shadowing_is_scoped_to_its_module() {
        let mut roots = Roots::default();
        roots.add_alias("s", Crate::Std);
        roots.shadow("std", 10..20);
        assert_eq!(roots.lookup("std"), Some(Crate::Std));
        assert!(roots.shadowed_at("std", 15));
        assert!(!roots.shadowed_at("std", 25));
        assert_eq!(roots.lookup("s"), Some(Crate::Std));
        assert_eq!(roots.lookup("my"), None);
    }

    #[test]
    fn foreign_crates() {
        assert!(foreign_sync("parking_lot", Some("Mutex")).is_some());
        assert!(foreign_sync("tokio", Some("sync")).is_some());
        assert!(foreign_sync("tokio", Some("io")).is_none());
        assert!(foreign_sync("serde", Some("Serialize")).is_none());
        assert!(std_unscheduled(Crate::Std, "fs").is_some());
        assert!(std_unscheduled(Crate::Std, "collections").is_none());
    }
}
