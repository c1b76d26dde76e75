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
    /// Byte ranges of the file's inline modules: a module nested in a shadowing item's
    /// does not see that item.
    modules: Vec<Range<usize>>,
    /// (crate, module range) of an `extern crate std;` (unrenamed) inside a module: its
    /// `self::std::..` paths are std's (lazy_static's `inline_lazy.rs`).
    declared: Vec<(String, Range<usize>)>,
    /// `use crossbeam_channel as mpsc;`: alias -> the synchronising crate it names.
    foreign: HashMap<String, String>,
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
            modules: Vec::new(),
            declared: Vec::new(),
            foreign: HashMap::new(),
        }
    }
}

impl Roots {
    pub(crate) fn add_alias(&mut self, alias: &str, krate: Crate) {
        self.names.insert(alias.to_owned(), krate);
    }

    /// `use <krate> as <alias>;` of a crate that synchronises: `alias::..` paths are its.
    pub(crate) fn add_foreign_alias(&mut self, alias: &str, krate: &str) {
        self.foreign.insert(alias.to_owned(), krate.to_owned());
    }

    /// The crate a path's first segment `name` names, through a foreign alias if it is one.
    pub(crate) fn foreign_crate<'n>(&'n self, name: &'n str) -> &'n str {
        self.foreign.get(name).map_or(name, String::as_str)
    }

    /// A local item (`mod std`, `use x as std`) hides the extern crate for relative paths in
    /// `scope` (its module); `::std` still names the crate.
    pub(crate) fn shadow(&mut self, name: &str, scope: Range<usize>) {
        self.shadowed.push((name.to_owned(), scope));
    }

    /// An inline module's body, for `shadowed_at`.
    pub(crate) fn module(&mut self, body: Range<usize>) {
        self.modules.push(body);
    }

    /// The crate `name` reaches, if it is a root name at all (shadowing aside).
    pub(crate) fn lookup(&self, name: &str) -> Option<Crate> {
        self.names.get(name).copied()
    }

    /// Whether a relative path starting with `name` at byte `at` names a local item instead.
    pub(crate) fn shadowed_at(&self, name: &str, at: usize) -> bool {
        (self.shadowed.iter()).any(|(n, scope)| n == name && self.sees(scope, at))
    }

    /// Whether an item of the file's top module hides `name` (an edition-2015 `use` path
    /// starts at the crate root, so only the root's own items hide a crate there).
    pub(crate) fn shadowed_at_top(&self, name: &str) -> bool {
        (self.shadowed.iter()).any(|(n, scope)| n == name && !self.modules.contains(scope))
    }

    /// `extern crate <name>;` declared in `scope` (its module), unrenamed.
    pub(crate) fn declare_extern(&mut self, name: &str, scope: Range<usize>) {
        self.declared.push((name.to_owned(), scope));
    }

    /// Whether the module around byte `at` declares `extern crate <name>;` itself, so that
    /// `self::<name>::..` names that crate.
    pub(crate) fn declared_at(&self, name: &str, at: usize) -> bool {
        (self.declared.iter()).any(|(n, scope)| n == name && self.sees(scope, at))
    }

    /// Whether code at `at` sees an item declared in module `scope`: inside it, and not in a
    /// module nested in it.
    fn sees(&self, scope: &Range<usize>, at: usize) -> bool {
        scope.contains(&at)
            && !self.modules.iter().any(|m| {
                m.contains(&at) && m.start > scope.start && m.end <= scope.end && m != scope
            })
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

/// What a path or `use` names after a std module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Item<'a> {
    /// `std::process::Command`, `use std::process::exit`.
    Named(&'a str),
    /// The module itself (`use std::process;`): its uses are judged where they are written.
    Module,
    /// `use std::process::*`, or nothing known after the module.
    Any,
}

/// A std module that pulse does not schedule, with what to do about it. `std::process` only
/// blocks through a child process (`Command`, `Child` and its pipes); `process::exit`,
/// `abort` and `id` do not.
pub(crate) fn std_unscheduled(
    krate: Crate,
    module: &str,
    item: Item,
) -> Option<(FindingKind, &'static str)> {
    const BLOCKING: &str = "blocking I/O is not a scheduling point: mark the call #[pulse::atomic] or list the path in [package.metadata.pulse] atomic";
    match (krate, module) {
        (Crate::Std, "fs" | "net") => Some((FindingKind::BlockingIo, BLOCKING)),
        (Crate::Std, "process") => match item {
            Item::Named("Command" | "Child" | "ChildStdin" | "ChildStdout" | "ChildStderr")
            | Item::Any => Some((FindingKind::BlockingIo, BLOCKING)),
            Item::Named(_) | Item::Module => None,
        },
        // Judged where it is invoked: a fence is modelled, other assembly reported.
        (Crate::Std | Crate::Core, "arch")
            if matches!(item, Item::Named("asm" | "global_asm" | "naked_asm")) =>
        {
            None
        }
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
        // (Instrumented, tokio is scheduled: its workers are threads, its reactor's wait
        // pulse's `libc::epoll_wait`.)
        ("tokio", Some("sync" | "time" | "task" | "runtime" | "spawn")) => Some(INSTRUMENT),
        // Instrumented, async-io's reactor waits in pulse's `epoll` (decision 61).
        ("async_std" | "async_channel" | "smol" | "async_lock" | "async_io", Some(_)) => {
            Some(INSTRUMENT)
        }
        _ => None,
    }
}

/// The crate a facade crate's module re-exports (`futures::channel` is `futures_channel`,
/// `crossbeam::scope` is `crossbeam_utils`'): instrumented, the path is scheduled.
pub(crate) fn facade_module(root: &str, next: Option<&str>) -> Option<&'static str> {
    Some(match (root, next?) {
        ("futures", "channel") => "futures_channel",
        ("futures", "lock" | "task" | "future" | "stream" | "sink" | "io") => "futures_util",
        ("futures", "executor") => "futures_executor",
        ("crossbeam", "channel" | "select") => "crossbeam_channel",
        ("crossbeam", "deque") => "crossbeam_deque",
        ("crossbeam", "epoch") => "crossbeam_epoch",
        ("crossbeam", "queue") => "crossbeam_queue",
        ("crossbeam", "atomic" | "sync" | "thread" | "scope" | "utils" | "Backoff") => {
            "crossbeam_utils"
        }
        _ => return None,
    })
}

/// Whether some path into `root` is another crate's synchronisation (so `use root as x;`
/// makes `x::..` paths worth following), and what to do about it.
pub(crate) fn foreign_sync_crate(root: &str) -> Option<&'static str> {
    ["sync", "lock", "channel", "Mutex"]
        .iter()
        .find_map(|m| foreign_sync(root, Some(m)))
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
        // A module nested in the shadowing item's does not see it.
        roots.module(12..18);
        assert!(!roots.shadowed_at("std", 15));
        assert!(roots.shadowed_at("std", 19));
        assert_eq!(roots.lookup("s"), Some(Crate::Std));
        assert_eq!(roots.lookup("my"), None);
        roots.add_foreign_alias("mpsc", "crossbeam_channel");
        assert_eq!(roots.foreign_crate("mpsc"), "crossbeam_channel");
        assert_eq!(roots.foreign_crate("flume"), "flume");
        assert_eq!(roots.lookup("mpsc"), None);
    }

    #[test]
    fn foreign_crates() {
        assert!(foreign_sync("parking_lot", Some("Mutex")).is_some());
        assert!(foreign_sync("tokio", Some("sync")).is_some());
        assert!(foreign_sync("tokio", Some("io")).is_none());
        assert!(foreign_sync("serde", Some("Serialize")).is_none());
        assert!(foreign_sync_crate("crossbeam_channel").is_some());
        assert!(foreign_sync_crate("once_cell").is_some());
        assert!(foreign_sync_crate("futures").is_some());
        assert!(foreign_sync_crate("tokio").is_some());
        assert!(foreign_sync_crate("serde").is_none());
        assert_eq!(
            facade_module("crossbeam", Some("scope")),
            Some("crossbeam_utils")
        );
        assert_eq!(
            facade_module("futures", Some("channel")),
            Some("futures_channel")
        );
        assert_eq!(facade_module("parking_lot", Some("Mutex")), None);
        assert!(std_unscheduled(Crate::Std, "fs", Item::Module).is_some());
        assert!(std_unscheduled(Crate::Std, "collections", Item::Any).is_none());
    }

    #[test]
    fn only_a_child_process_blocks() {
        let blocks = |item| std_unscheduled(Crate::Std, "process", item).is_some();
        assert!(blocks(Item::Named("Command")));
        assert!(blocks(Item::Named("Child")));
        assert!(blocks(Item::Any));
        assert!(!blocks(Item::Named("abort")));
        assert!(!blocks(Item::Named("exit")));
        assert!(!blocks(Item::Module));
    }
}
