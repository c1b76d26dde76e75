//! What the instrumentation did and what it could not do, per file and per tree.
//!
//! cargo-pulse shows this to people (the `Display` impls) and to machines (`--json`, via
//! serde). Every finding's message says what the user can do about the site.

use serde::Serialize;
use std::fmt;
use std::path::{Path, PathBuf};

/// How a site was rewritten.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum RewriteKind {
    /// A `use` tree (groups split between the shim and std when mixed).
    UsePath,
    /// A path in an expression: `std::thread::spawn(..)`.
    ExprPath,
    /// A path in a type: `Arc<std::sync::Mutex<T>>`.
    TypePath,
    /// A path in a pattern.
    PatPath,
    /// A trait bound or an impl header's trait.
    BoundPath,
    /// The path of an attribute.
    AttrPath,
    /// The path of a macro invocation: `std::thread_local!`.
    MacroPath,
    /// The path in `pub(in ..)`.
    VisPath,
    /// A path inside a macro invocation's or definition's tokens.
    MacroTokens,
    /// A path inside an attribute's arguments.
    AttrTokens,
    /// A path found by the token sweep that no syntax-tree position claimed.
    Tokens,
    /// A bare `thread_local!` (std's prelude macro).
    ThreadLocal,
    /// A `#[test]` fn body wrapped in `run_test`.
    TestWrapped,
    /// A statement or expression marked `#[pulse::atomic]`, wrapped in `pulse::atomic`.
    Atomic,
    /// A call whose path matches `[package.metadata.pulse] atomic`.
    AtomicCall,
    /// A method call whose name matches the last segment of an `atomic` `Type::method` entry.
    AtomicMethod,
    /// `extern crate pulse;` appended to the root of an edition-2015 crate, or
    /// `#[doc(hidden)] pub extern crate pulse as __pulse;` to a crate root whose crate exports
    /// macros (for their `$crate::__pulse::..` paths).
    ExternCrate,
    /// A call on std's `Arc`/`Weak` whose answer other threads change (`Arc::strong_count`,
    /// `get_mut`, `try_unwrap`, `Weak::upgrade`, ...) routed to the shim's visible twin.
    ArcCall,
    /// A constructor of std's `HashMap`/`HashSet` or `RandomState::new` that picks random hash
    /// keys (`HashMap::new`, `with_capacity`, `from`) routed to the shim's twin, whose keys
    /// are a scheduler choice (the value is still std's).
    HashCall,
    /// A `.upgrade()` method call given a scheduling point before and after (its receiver's
    /// type is unknown to the instrumenter: std's `Weak` or not, it is called as written).
    ArcMethod,
    /// The receiver of `.duration_since(UNIX_EPOCH)` passed through the shim's
    /// `__pulse_system_time`, so std's `SystemTime` (a file's `modified()`) takes pulse's
    /// `UNIX_EPOCH` (pulse's passes through unchanged).
    SystemTimeReceiver,
    /// A `.modified()`, `.accessed()` or `.created()` call passed through the shim's
    /// `__pulse_file_time`, so std's `SystemTime` from a file's metadata comes out as
    /// pulse's (any other type's value as it is).
    FileTime,
    /// `place[i] = value` (or `place.field = value`) in a `const` context written as
    /// `::core::mem::forget(::core::mem::replace(&mut place[i], value))`: pulse's atomics have
    /// a `Drop`, which a `const fn` cannot run on the old value.
    ConstAssign,
    /// An `asm!` whose template is a memory fence (`lock`-prefixed, `mfence`, `dmb`, ...)
    /// given a `SeqCst` fence before it, which the memory model sees (the assembly runs
    /// as written).
    AsmFence,
    /// `fn drop(&mut self) {` of a `Drop` impl given a first call telling the memory model
    /// that the dropping thread has every other owner's accesses behind it (std's `Arc`,
    /// whose last drop is that edge, stays std's).
    DropAcquire,
    /// `libc::syscall(libc::SYS_futex, ..)` made `<shim>::__pulse_futex!(libc::SYS_futex, ..)`:
    /// a futex wait blocks in the scheduler, not in the kernel (atomic-wait, hand-written
    /// futex locks).
    FutexCall,
    /// `libc::epoll_wait` (`epoll_pwait`), or a `macro_rules!` body's `libc::$f` (mio's
    /// `syscall!`), made `<shim>::libc::..`: all of libc, with a readiness wait that blocks
    /// in the scheduler, not in the kernel (an async runtime's reactor).
    LibcCall,
    /// A function that waits in rustix's `epoll::wait` for a timeout or deadline it takes
    /// (polling 3's `Poller::wait`) given a first line that waits in the scheduler until the
    /// instance is readable or the limit passes on the virtual clock (`<shim>::libc::
    /// ready_by`), so the system call only collects what is ready.
    ReactorWait,
}

/// Why a site that may synchronise was left alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum FindingKind {
    /// Another crate's locks, channels, atomics or runtime.
    ForeignSync,
    /// `std::fs`, `std::net`, `std::process`: blocking I/O, not a scheduling point.
    BlockingIo,
    /// Intrinsics, `core::arch`, `asm!`, volatile accesses.
    RawAtomics,
    /// `extern` blocks and calls into them.
    Ffi,
    /// An attribute macro that rewrites the item after instrumentation.
    AttributeMacro,
    /// A test the harness glue could not wrap.
    TestNotWrapped,
    /// An atomic marker or atomic-listed call that could not be wrapped.
    AtomicNotWrapped,
    /// `use std as s` / `extern crate std as s`: followed in this file only.
    StdAlias,
    /// `use std::*`: brings std's sync/thread/time in unrewritten.
    StdGlob,
    /// A local item named `std`/`core`/`alloc`: relative paths through it are left alone.
    StdShadowed,
    /// Source pulled from outside the instrumented tree (`#[path]`, `include!`).
    ExternalSource,
    /// A rewrite that overlapped another and was dropped (a bug in pulse: please report it).
    Internal,
}

/// One rewritten site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rewrite {
    /// 1-based line of the site in the original file.
    pub line: usize,
    /// 1-based column (in chars) of the site in the original file.
    pub column: usize,
    pub kind: RewriteKind,
    /// The site's original text (abbreviated for large sites).
    pub from: String,
    /// What it became.
    pub to: String,
}

/// One site that may synchronise but was not rewritten.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub line: usize,
    pub column: usize,
    pub kind: FindingKind,
    /// What the site is and what to do about it.
    pub message: String,
}

/// A file syn could not parse; it is left byte-identical.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ParseError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

impl std::error::Error for ParseError {}

/// One `#[cfg(..)]` or `cfg_attr(..)` predicate met, and what the build's cfgs
/// (`Options::cfg`) made of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CfgDecision {
    pub line: usize,
    pub column: usize,
    /// The predicate as written (whitespace normalised): `feature = "shuttle"`, `not(loom)`.
    pub predicate: String,
    /// `Some(false)`: the code under it is left out of this build and left alone;
    /// `None`: undecided (a cfg set by a build script or RUSTFLAGS that pulse does not know),
    /// rewritten as if compiled.
    pub value: Option<bool>,
}

/// Everything instrumentation did to one file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FileReport {
    /// Empty from `instrument_source`; the file's path from `instrument_tree`.
    pub path: PathBuf,
    pub rewrites: Vec<Rewrite>,
    pub findings: Vec<Finding>,
    pub parse_error: Option<ParseError>,
    /// Every cfg predicate evaluated (only when `Options::cfg` is given).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cfgs: Vec<CfgDecision>,
}

impl FileReport {
    /// Whether the report has anything to show.
    pub fn is_empty(&self) -> bool {
        self.rewrites.is_empty()
            && self.findings.is_empty()
            && self.parse_error.is_none()
            && self.cfgs.is_empty()
    }
}

impl fmt::Display for FileReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        if let Some(e) = &self.parse_error {
            writeln!(
                f,
                "{path}:{}:{} error: not instrumented, syn could not parse it: {}",
                e.line, e.column, e.message
            )?;
        }
        for r in &self.rewrites {
            writeln!(
                f,
                "{path}:{}:{} {:?} {} -> {}",
                r.line, r.column, r.kind, r.from, r.to
            )?;
        }
        for x in &self.findings {
            writeln!(
                f,
                "{path}:{}:{} warning: {:?}: {}",
                x.line, x.column, x.kind, x.message
            )?;
        }
        for c in &self.cfgs {
            let value = match c.value {
                Some(true) => "true",
                Some(false) => "false: left out of this build, not rewritten",
                None => "undecided: rewritten as if compiled",
            };
            writeln!(
                f,
                "{path}:{}:{} cfg({}) {value}",
                c.line, c.column, c.predicate
            )?;
        }
        Ok(())
    }
}

/// The reports of every file `instrument_tree` touched or has something to say about.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TreeReport {
    pub files: Vec<FileReport>,
}

impl TreeReport {
    pub fn rewrite_count(&self) -> usize {
        self.files.iter().map(|f| f.rewrites.len()).sum()
    }

    pub fn finding_count(&self) -> usize {
        self.files.iter().map(|f| f.findings.len()).sum()
    }

    /// The distinct cfg predicates met: (decided, as `pred = true|false`; undecided).
    pub fn cfg_predicates(&self) -> (Vec<String>, Vec<String>) {
        let mut decided = std::collections::BTreeSet::new();
        let mut undecided = std::collections::BTreeSet::new();
        for c in self.files.iter().flat_map(|f| &f.cfgs) {
            match c.value {
                Some(v) => decided.insert(format!("{} = {v}", c.predicate)),
                None => undecided.insert(c.predicate.clone()),
            };
        }
        (
            decided.into_iter().collect(),
            undecided.into_iter().collect(),
        )
    }

    /// Every file left untouched because it did not parse, with its error.
    pub fn parse_errors(&self) -> Vec<(&Path, &ParseError)> {
        self.files
            .iter()
            .filter_map(|f| f.parse_error.as_ref().map(|e| (f.path.as_path(), e)))
            .collect()
    }
}

impl fmt::Display for TreeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for file in &self.files {
            write!(f, "{file}")?;
        }
        let rewritten = self.files.iter().filter(|f| !f.rewrites.is_empty()).count();
        let errors = self.parse_errors().len();
        write!(
            f,
            "instrumented {rewritten} file{}: {} rewrite{}, {} finding{}, {errors} parse error{}",
            plural(rewritten),
            self.rewrite_count(),
            plural(self.rewrite_count()),
            self.finding_count(),
            plural(self.finding_count()),
            plural(errors),
        )?;
        let cfgs: Vec<&CfgDecision> = self.files.iter().flat_map(|f| &f.cfgs).collect();
        if !cfgs.is_empty() {
            let (decided, undecided) = self.cfg_predicates();
            let list = |v: &[String]| {
                if v.is_empty() {
                    "none".to_owned()
                } else {
                    v.join(", ")
                }
            };
            write!(
                f,
                "\ncfg predicates decided for this build: {}\ncfg predicates undecided (every branch rewritten): {}",
                list(&decided),
                list(&undecided)
            )?;
        }
        writeln!(f)
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_grouped_by_file_with_summary() {
        let report = TreeReport {
            files: vec![
                FileReport {
                    path: "src/lib.rs".into(),
                    rewrites: vec![Rewrite {
                        line: 1,
                        column: 5,
                        kind: RewriteKind::UsePath,
                        from: "std::sync".into(),
                        to: "::pulse::std::sync".into(),
                    }],
                    findings: vec![Finding {
                        line: 3,
                        column: 1,
                        kind: FindingKind::ForeignSync,
                        message: "`parking_lot::Mutex`: do something".into(),
                    }],
                    parse_error: None,
                    cfgs: vec![],
                },
                FileReport {
                    path: "src/bad.rs".into(),
                    parse_error: Some(ParseError {
                        line: 2,
                        column: 3,
                        message: "expected `;`".into(),
                    }),
                    ..FileReport::default()
                },
            ],
        };
        let text = report.to_string();
        assert_eq!(
            text,
            "src/lib.rs:1:5 UsePath std::sync -> ::pulse::std::sync\n\
             src/lib.rs:3:1 warning: ForeignSync: `parking_lot::Mutex`: do something\n\
             src/bad.rs:2:3 error: not instrumented, syn could not parse it: expected `;`\n\
             instrumented 1 file: 1 rewrite, 1 finding, 1 parse error\n"
        );
        assert_eq!(report.parse_errors().len(), 1);
    }
}
