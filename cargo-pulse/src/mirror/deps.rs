//! Which registry crates of the test's dependency graph are instrumented (`--instrument-deps`),
//! found once per change of the user's manifests or lock and remembered in
//! `target/pulse/instrument-deps.json`.
//!
//! `auto` (the default) walks the resolved graph of the mirror from the workspace members along
//! normal and dev edges (never into build-dependencies or proc-macros, whose code runs in the
//! build, not under the scheduler), keeps the crates.io packages, drops pulse's own crates and
//! everything they depend on (an instrumented crate depends on pulse: one pulse needs would be a
//! cycle), and scans each one's library sources for the paths pulse rewrites. Every version of a
//! crate is its own [`DepSource`]; [`patch_entries`] gives each one its own `[patch]` key.
//!
//! `parking_lot_core` 0.2 to 0.10 (parking_lot 0.4 to 0.13) are never instrumented: pulse's
//! support tree holds a drop-in replacement of each whose parking goes to the scheduler (0.9's
//! implementation, the others its API under theirs), patched in instead ([`core_shim_patches`]).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use cargo_metadata::{DependencyKind, Metadata, Package, PackageId, TargetKind};
use serde::{Deserialize, Serialize};

use super::DepSource;
use crate::support::Support;
use crate::workspace;

/// What `--instrument-deps` (and `[package.metadata.pulse] instrument`) asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DepsMode {
    /// Every crate whose sources synchronise, plus the crates named.
    Auto { also: Vec<String> },
    /// Only the crates named (`--instrument-deps a,b`, `--instrument-dep a`).
    List(Vec<String>),
    /// None.
    None,
}

impl DepsMode {
    /// The mode from the command line's values (`auto`, `none`, crate names; empty: auto) and
    /// the crates named in the manifests' metadata. `none` on the command line wins.
    pub fn from_flags(flags: &[String], metadata: &[String]) -> DepsMode {
        let flags: Vec<&str> = flags
            .iter()
            .flat_map(|f| f.split(','))
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .collect();
        if flags.contains(&"none") {
            return DepsMode::None;
        }
        let mut names: Vec<String> = flags
            .iter()
            .filter(|f| **f != "auto")
            .map(|f| f.to_string())
            .chain(metadata.iter().cloned())
            .collect();
        names.sort();
        names.dedup();
        if flags.is_empty() || flags.contains(&"auto") {
            DepsMode::Auto { also: names }
        } else {
            DepsMode::List(names)
        }
    }

    pub fn named(&self) -> &[String] {
        match self {
            DepsMode::Auto { also } => also,
            DepsMode::List(names) => names,
            DepsMode::None => &[],
        }
    }

    /// For cache keys and reports: `auto`, `auto+a,b`, `a,b`, `none`.
    pub fn describe(&self) -> String {
        match self {
            DepsMode::Auto { also } if also.is_empty() => "auto".into(),
            DepsMode::Auto { also } => format!("auto+{}", also.join(",")),
            DepsMode::List(names) => names.join(","),
            DepsMode::None => "none".into(),
        }
    }
}

/// The outcome of a resolution, cached.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Selection {
    pub deps: Vec<DepSource>,
    /// The `parking_lot_core` minor versions (0.x, ascending) the graph holds and pulse has a
    /// replacement for: each is patched in. (A cache written before this field, with its two
    /// booleans for 0.9 and 0.10, is never read back: its fingerprint names another build of
    /// cargo-pulse, so the graph is resolved again.)
    #[serde(default)]
    pub shimmed_core_minors: Vec<u64>,
    /// Crates that would have been instrumented but are dependencies of pulse itself.
    pub held_back: Vec<String>,
    /// Registry crates of the test graph whose sources name nothing pulse rewrites (`auto`).
    #[serde(default)]
    pub not_synchronising: Vec<String>,
}

/// Scan results by source directory: registry sources never change.
pub type ScanCache = BTreeMap<PathBuf, bool>;

/// Runs `cargo metadata` on the (unpatched) mirror and picks the crates to instrument.
pub fn select(
    mirror_manifest: &Path,
    mode: &DepsMode,
    offline: bool,
    scans: &mut ScanCache,
) -> Result<Selection> {
    let meta = metadata(mirror_manifest, offline, true)?;
    select_from(&meta, mode, scans)
}

fn select_from(meta: &Metadata, mode: &DepsMode, scans: &mut ScanCache) -> Result<Selection> {
    let by_id: BTreeMap<&PackageId, &Package> = meta.packages.iter().map(|p| (&p.id, p)).collect();
    let support = support_closure(meta, &by_id);
    let mut out = Selection {
        shimmed_core_minors: shimmed_core_minors(meta),
        ..Selection::default()
    };
    let mut chosen: BTreeSet<&PackageId> = BTreeSet::new();

    // Crates asked for by name: every version in the graph.
    let registry = workspace::registry_packages(meta);
    for name in mode.named() {
        let Some(pkgs) = registry.get(name) else {
            bail!(
                "--instrument-deps {name}: no registry crate named `{name}` in the workspace's dependencies \
                 (only crates.io dependencies can be instrumented; path dependencies already are)"
            );
        };
        for p in pkgs {
            if is_proc_macro(p) {
                bail!("--instrument-deps {name}: `{name}` is a proc-macro crate; it runs in the compiler, not under the scheduler");
            }
            if support.contains(&p.id) {
                bail!(
                    "--instrument-deps {name}: pulse itself depends on `{name}` {}, so it cannot be instrumented \
                     (the instrumented copy would depend on pulse)",
                    p.version
                );
            }
            if is_shimmed_parking_lot_core(p) {
                continue;
            }
            chosen.insert(&p.id);
        }
    }

    if matches!(mode, DepsMode::Auto { .. }) {
        for p in test_graph(meta, &by_id) {
            if !is_crates_io(p) || is_shimmed_parking_lot_core(p) {
                continue;
            }
            let Some(lib_dir) = lib_dir(p) else { continue };
            let uses = *scans
                .entry(lib_dir.clone())
                .or_insert_with(|| synchronises(&lib_dir, &build_scripts(p)));
            if !uses {
                out.not_synchronising
                    .push(format!("{} {}", p.name, p.version));
                continue;
            }
            if support.contains(&p.id) {
                out.held_back.push(format!("{} {}", p.name, p.version));
                continue;
            }
            chosen.insert(&p.id);
        }
    }

    for id in chosen {
        out.deps.push(dep_source(by_id[id]));
    }
    out.deps
        .sort_by(|a, b| (&a.name, &a.version).cmp(&(&b.name, &b.version)));
    out.held_back.sort();
    out.not_synchronising.sort();
    out.not_synchronising.dedup();
    Ok(out)
}

pub fn metadata(mirror_manifest: &Path, offline: bool, all_features: bool) -> Result<Metadata> {
    let mut cmd = cargo_metadata::MetadataCommand::new();
    cmd.manifest_path(mirror_manifest);
    let mut other = Vec::new();
    if offline {
        other.push("--offline".to_string());
    }
    if let Some(host) = host_triple() {
        other.extend(["--filter-platform".to_string(), host]);
    }
    cmd.other_options(other);
    if all_features {
        // Optional dependencies the user may switch on with --features are in the lock anyway;
        // patching one that this build does not enable costs a copy and is not a cargo warning.
        cmd.features(cargo_metadata::CargoOpt::AllFeatures);
    }
    cmd.exec().with_context(|| {
        format!(
            "running `cargo metadata` on the mirror {}",
            mirror_manifest.display()
        )
    })
}

fn host_triple() -> Option<String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = std::process::Command::new(rustc).arg("-vV").output().ok()?;
    String::from_utf8(out.stdout)
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
}

/// Packages whose code runs in the test binaries: reached from the workspace members along
/// normal edges (and dev edges of the members), never through build-dependencies,
/// proc-macros, pulse's own crates or the `parking_lot_core` pulse replaces.
fn test_graph<'m>(
    meta: &'m Metadata,
    by_id: &BTreeMap<&'m PackageId, &'m Package>,
) -> Vec<&'m Package> {
    let Some(resolve) = &meta.resolve else {
        return Vec::new();
    };
    let nodes: BTreeMap<&PackageId, &cargo_metadata::Node> =
        resolve.nodes.iter().map(|n| (&n.id, n)).collect();
    let members: BTreeSet<&PackageId> = meta.workspace_members.iter().collect();
    let mut seen: BTreeSet<&PackageId> = BTreeSet::new();
    let mut queue: VecDeque<&PackageId> = members.iter().copied().collect();
    let mut out = Vec::new();
    while let Some(id) = queue.pop_front() {
        if !seen.insert(id) {
            continue;
        }
        if !members.contains(id) {
            out.push(by_id[id]);
        }
        let Some(node) = nodes.get(id) else { continue };
        for dep in &node.deps {
            let runs_in_tests = dep.dep_kinds.iter().any(|k| match k.kind {
                DependencyKind::Normal => true,
                DependencyKind::Development => members.contains(id),
                _ => false,
            });
            let Some(p) = by_id.get(&dep.pkg) else {
                continue;
            };
            // (The registry's parking_lot_core is replaced by pulse's, which has no
            // dependencies of its own to instrument.)
            if runs_in_tests
                && !is_proc_macro(p)
                && !is_support(p)
                && !is_shimmed_parking_lot_core(p)
            {
                queue.push_back(&dep.pkg);
            }
        }
    }
    out
}

/// pulse's support crates and everything they depend on, by any edge.
fn support_closure<'m>(
    meta: &'m Metadata,
    by_id: &BTreeMap<&'m PackageId, &'m Package>,
) -> BTreeSet<&'m PackageId> {
    let Some(resolve) = &meta.resolve else {
        return BTreeSet::new();
    };
    let nodes: BTreeMap<&PackageId, &cargo_metadata::Node> =
        resolve.nodes.iter().map(|n| (&n.id, n)).collect();
    let mut seen = BTreeSet::new();
    let mut stack: Vec<&PackageId> = meta
        .packages
        .iter()
        .filter(|p| is_support(p))
        .map(|p| &p.id)
        .collect();
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        if let Some(node) = nodes.get(id) {
            stack.extend(node.deps.iter().map(|d| &d.pkg));
        }
    }
    seen.retain(|id| by_id.contains_key(id));
    seen
}

fn is_support(p: &Package) -> bool {
    p.source.is_none() && p.manifest_path.as_str().contains(&Support::root_marker())
}

fn is_crates_io(p: &Package) -> bool {
    p.source.as_ref().is_some_and(|s| s.is_crates_io())
}

fn is_proc_macro(p: &Package) -> bool {
    p.targets
        .iter()
        .any(|t| t.kind.contains(&TargetKind::ProcMacro))
}

/// The registry's `parking_lot_core` 0.2 to 0.10, which pulse replaces with its shims.
pub fn is_shimmed_parking_lot_core(p: &Package) -> bool {
    shimmed_core_minor(p).is_some() && !is_support(p)
}

/// The `parking_lot_core` minor versions (0.x) pulse has a replacement for: 0.9 is the
/// implementation; 0.2 (parking_lot 0.4, 0.5), 0.3 (0.6), 0.4 (0.7), 0.5 (0.8), 0.6 (0.9),
/// 0.7 (0.10), 0.8 (0.11) and 0.10 (0.13) are each that version's API over it.
const SHIMMED_CORE_MINORS: &[u64] = &[2, 3, 4, 5, 6, 7, 8, 9, 10];

/// The minor version of a `parking_lot_core` pulse has a replacement for.
fn shimmed_core_minor(p: &Package) -> Option<u64> {
    (p.name == "parking_lot_core"
        && p.version.major == 0
        && SHIMMED_CORE_MINORS.contains(&p.version.minor))
    .then_some(p.version.minor)
}

/// The replaceable `parking_lot_core` minors in the graph, ascending. A package of pulse's
/// support tree is a shim itself, from an earlier patched build: it stands for the registry's
/// version it replaced, unless only other shims depend on it (the 0.9 one every other is
/// built on, the 0.2 one 0.3's re-exports).
fn shimmed_core_minors(meta: &Metadata) -> Vec<u64> {
    let shim_ids: BTreeSet<&PackageId> = meta
        .packages
        .iter()
        .filter(|p| is_support(p) && shimmed_core_minor(p).is_some())
        .map(|p| &p.id)
        .collect();
    let used_beyond_shims = |id: &PackageId| {
        meta.resolve.as_ref().is_some_and(|r| {
            r.nodes
                .iter()
                .filter(|n| !shim_ids.contains(&n.id))
                .any(|n| n.deps.iter().any(|d| &d.pkg == id))
        })
    };
    let minors: BTreeSet<u64> = meta
        .packages
        .iter()
        .filter(|p| !shim_ids.contains(&p.id) || used_beyond_shims(&p.id))
        .filter_map(shimmed_core_minor)
        .collect();
    minors.into_iter().collect()
}

/// The `[patch.crates-io]` entries of pulse's `parking_lot_core` replacements the selection
/// needs: the first under the crate's own name, each other under a key of its own (as for two
/// versions of an instrumented crate): `parking_lot_core-pulse-v0_10`.
pub fn core_shim_patches(sel: &Selection, support: &Support) -> Vec<PatchEntry> {
    sel.shimmed_core_minors
        .iter()
        .enumerate()
        .map(|(i, &minor)| PatchEntry {
            key: if i == 0 {
                "parking_lot_core".into()
            } else {
                format!("parking_lot_core-pulse-v0_{minor}")
            },
            package: (i > 0).then(|| "parking_lot_core".into()),
            dir: support.parking_lot_core_dir(minor),
        })
        .collect()
}

impl Selection {
    /// pulse's replacements patched in, for people: `0.9, 0.10`.
    pub fn core_shim_versions(&self) -> Vec<String> {
        self.shimmed_core_minors
            .iter()
            .map(|minor| format!("0.{minor}"))
            .collect()
    }
}

fn lib_target(p: &Package) -> Option<&cargo_metadata::Target> {
    p.targets.iter().find(|t| {
        t.kind.iter().any(|k| {
            matches!(
                k,
                TargetKind::Lib | TargetKind::RLib | TargetKind::DyLib | TargetKind::StaticLib
            )
        })
    })
}

/// The directory holding the library's sources (`src/` for almost every crate).
fn lib_dir(p: &Package) -> Option<PathBuf> {
    let root = lib_target(p)?.src_path.as_std_path();
    root.parent().map(workspace::normalize)
}

fn build_scripts(p: &Package) -> Vec<PathBuf> {
    p.targets
        .iter()
        .filter(|t| t.kind.contains(&TargetKind::CustomBuild))
        .map(|t| t.src_path.clone().into_std_path_buf())
        .collect()
}

pub fn dep_source(p: &Package) -> DepSource {
    let src = p
        .manifest_path
        .parent()
        .unwrap()
        .to_path_buf()
        .into_std_path_buf();
    // Only the library is built from a dependency.
    let lib = |t: &cargo_metadata::Target| {
        t.kind
            .iter()
            .any(|k| matches!(k, TargetKind::Lib | TargetKind::RLib | TargetKind::DyLib))
    };
    let facade_roots = workspace::facade_roots(p, lib);
    let crate_roots = workspace::crate_roots(p, lib);
    DepSource {
        name: p.name.clone(),
        version: p.version.to_string(),
        lib_dir: lib_dir(p).unwrap_or_else(|| src.join("src")),
        src,
        build_scripts: build_scripts(p),
        facade_roots,
        crate_roots,
    }
}

/// Whether any `.rs` file under `dir` (build scripts aside) names what pulse rewrites: std's
/// `sync`, `thread` or `time`, `core::sync::atomic`, `thread_local!`, an epoll wait. Comments are skipped; a
/// false positive costs a copy, a false negative an unscheduled dependency.
pub fn synchronises(dir: &Path, skip: &[PathBuf]) -> bool {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .filter(|e| e.path().extension().is_some_and(|x| x == "rs"))
        .filter(|e| !skip.iter().any(|s| s == e.path()))
        .any(|e| {
            std::fs::read_to_string(e.path())
                .map(|text| source_synchronises(&text))
                .unwrap_or(false)
        })
}

pub fn source_synchronises(text: &str) -> bool {
    const NEEDLES: &[&str] = &[
        "std::sync",
        "std::thread",
        "std::time",
        "core::sync",
        "thread_local!",
        // A reactor's readiness wait (mio's selector), scheduled through pulse's libc.
        "epoll_wait",
        "epoll_pwait",
    ];
    let code: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    if NEEDLES.iter().any(|n| code.contains(n)) {
        return true;
    }
    // Grouped imports: `use std::{sync::Mutex, thread};`, `use core::{sync::atomic, ..}`.
    for root in ["std::{", "core::{"] {
        let mut rest = code.as_str();
        while let Some(i) = rest.find(root) {
            let group = &rest[i + root.len()..];
            let mut depth = 1usize;
            let end = group
                .char_indices()
                .find(|&(_, c)| {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        _ => {}
                    }
                    depth == 0
                })
                .map_or(group.len(), |(j, _)| j);
            let inner = &group[..end];
            let words = inner
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .collect::<Vec<_>>();
            let root_word = root.trim_end_matches("::{");
            if words
                .iter()
                .any(|w| *w == "sync" || root_word == "std" && (*w == "thread" || *w == "time"))
            {
                return true;
            }
            rest = &group[end..];
        }
    }
    false
}

/// One `[patch.crates-io]` entry per dependency: `(key, package rename, dir)`. cargo takes one
/// entry per name and source, so a second version of a crate is patched under a key of its own
/// with `package = "<name>"` (cargo's documented way to patch several versions of one crate).
pub fn patch_entries(deps: &[DepSource], dir: impl Fn(&DepSource) -> PathBuf) -> Vec<PatchEntry> {
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    deps.iter()
        .map(|d| {
            if seen.insert(&d.name) {
                PatchEntry {
                    key: d.name.clone(),
                    package: None,
                    dir: dir(d),
                }
            } else {
                let v: String = d
                    .version
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                    .collect();
                PatchEntry {
                    key: format!("{}-pulse-v{v}", d.name),
                    package: Some(d.name.clone()),
                    dir: dir(d),
                }
            }
        })
        .collect()
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchEntry {
    pub key: String,
    pub package: Option<String>,
    pub dir: PathBuf,
}

/// The mirror's `Cargo.lock`: the user's resolution, as it reads once the instrumented copies
/// are patched in.
///
/// - Each instrumented dependency's entry becomes a path package's (no `source`, no
///   `checksum`), as cargo writes a patched-in copy, and references to it lose their
///   `(registry+...)`. Left a registry entry, it no longer matches the copy, so cargo
///   resolves the dependencies of the crates that use it again and may pick another version
///   already in the graph: scc's tempfile (`getrandom >=0.3, <0.5`, locked at 0.4.3) took
///   pulse's getrandom 0.3.4, and the instrumented 0.4.3 was left out ("patch was not used").
/// - With pulse's `parking_lot_core` shims (`unlock_core`), the registry's 0.2 to 0.10 are
///   dropped: a lock that pins one keeps cargo from taking the shim (0.2.99, ..., 0.10.99).
pub fn lock_for_mirror(lock: &str, deps: &[DepSource], unlock_core: bool) -> String {
    let patched =
        |name: &str, version: &str| deps.iter().any(|d| d.name == name && d.version == version);
    let mut out = String::with_capacity(lock.len());
    for (i, block) in lock.split("\n[[package]]\n").enumerate() {
        let (name, version) = name_and_version(block).unwrap_or_default();
        let registry = block.contains("\nsource = \"registry+");
        if i > 0 {
            let shimmed = SHIMMED_CORE_MINORS
                .iter()
                .any(|minor| version.starts_with(&format!("0.{minor}.")));
            if unlock_core && registry && name == "parking_lot_core" && shimmed {
                continue;
            }
            out.push_str("\n[[package]]\n");
        }
        let is_copy = i > 0 && registry && patched(name, version);
        for line in block.split_inclusive('\n') {
            if is_copy && (line.starts_with("source = ") || line.starts_with("checksum = ")) {
                continue;
            }
            out.push_str(&unsource_reference(line, &patched));
        }
    }
    out
}

/// A block's `name = ".."` and `version = ".."`, its first two lines.
fn name_and_version(block: &str) -> Option<(&str, &str)> {
    fn value<'a>(line: Option<&'a str>, key: &str) -> Option<&'a str> {
        line?
            .strip_prefix(key)?
            .strip_prefix(" = \"")?
            .strip_suffix('"')
    }
    let mut lines = block.lines();
    Some((
        value(lines.next(), "name")?,
        value(lines.next(), "version")?,
    ))
}

/// A dependency list's ` "name version (registry+..)",` as ` "name version",` when that
/// package is patched in.
fn unsource_reference(line: &str, patched: &impl Fn(&str, &str) -> bool) -> String {
    let trimmed = line.trim_start();
    let Some(inner) = trimmed
        .strip_prefix('"')
        .and_then(|r| r.split_once('"'))
        .map(|(inner, _)| inner)
    else {
        return line.to_owned();
    };
    let mut parts = inner.splitn(3, ' ');
    let (Some(name), Some(version), Some(source)) = (parts.next(), parts.next(), parts.next())
    else {
        return line.to_owned();
    };
    if source.starts_with("(registry+") && patched(name, version) {
        line.replacen(&format!(" {source}"), "", 1)
    } else {
        line.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_from_flags() {
        let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            DepsMode::from_flags(&[], &[]),
            DepsMode::Auto { also: vec![] }
        );
        assert_eq!(
            DepsMode::from_flags(&[], &s(&["once_cell"])),
            DepsMode::Auto {
                also: s(&["once_cell"])
            }
        );
        assert_eq!(
            DepsMode::from_flags(&s(&["none"]), &s(&["x"])),
            DepsMode::None
        );
        assert_eq!(
            DepsMode::from_flags(&s(&["b,a", "c"]), &[]),
            DepsMode::List(s(&["a", "b", "c"]))
        );
        assert_eq!(
            DepsMode::from_flags(&s(&["auto,x"]), &[]).describe(),
            "auto+x"
        );
    }

    #[test]
    fn the_scan_sees_what_pulse_rewrites_and_not_comments() {
        assert!(source_synchronises("use core::sync::atomic::AtomicBool;"));
        assert!(source_synchronises("let t = std::time::Instant::now();"));
        assert!(source_synchronises("use std::{fmt, sync::{Arc, Mutex}};"));
        assert!(source_synchronises("use std::{\n    io,\n    thread,\n};"));
        assert!(source_synchronises("thread_local! { static X: u8 = 0; }"));
        assert!(source_synchronises("syscall!(epoll_wait(ep, evs, n, t))"));
        assert!(!source_synchronises(
            "use std::{fmt, io};\nuse core::{mem, ptr};"
        ));
        assert!(!source_synchronises("/// use std::sync::Mutex;\nfn f() {}"));
        assert!(!source_synchronises("use core::{time::Duration};"));
    }

    #[test]
    fn a_second_version_gets_a_key_of_its_own() {
        let d = |v: &str| DepSource {
            name: "spin".into(),
            version: v.into(),
            src: PathBuf::from(format!("/reg/spin-{v}")),
            lib_dir: PathBuf::from(format!("/reg/spin-{v}/src")),
            build_scripts: vec![],
            facade_roots: vec![],
            crate_roots: vec![],
        };
        let e = patch_entries(&[d("0.5.2"), d("0.9.8")], |d| {
            PathBuf::from(format!("/deps/{}-{}", d.name, d.version))
        });
        assert_eq!(e[0].key, "spin");
        assert_eq!(e[0].package, None);
        assert_eq!(e[1].key, "spin-pulse-v0_9_8");
        assert_eq!(e[1].package.as_deref(), Some("spin"));
        assert_eq!(e[1].dir, PathBuf::from("/deps/spin-0.9.8"));
    }

    #[test]
    fn the_registry_parking_lot_core_is_unlocked() {
        let lock = "version = 4\n\n[[package]]\nname = \"lock_api\"\nversion = \"0.4.14\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\n\n[[package]]\nname = \"parking_lot_core\"\nversion = \"0.9.12\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"x\"\n\n[[package]]\nname = \"parking_lot_core\"\nversion = \"0.10.0\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"y\"\n\n[[package]]\nname = \"parking_lot_core\"\nversion = \"0.9.99\"\n";
        let out = lock_for_mirror(lock, &[], true);
        assert!(!out.contains("0.9.12") && !out.contains("0.10.0"), "{out}");
        assert!(out.contains("0.9.99") && out.contains("lock_api"), "{out}");
        assert_eq!(lock_for_mirror(lock, &[], false), lock);
        assert_eq!(lock_for_mirror("version = 4\n", &[], true), "version = 4\n");
    }

    /// A resolved graph: `(name, version, registry?, dependencies by index)`, the first
    /// package the workspace member.
    fn graph(pkgs: &[(&str, &str, bool, &[usize])]) -> Metadata {
        let id = |i: usize| format!("pkg{i}");
        let packages: Vec<serde_json::Value> = pkgs
            .iter()
            .enumerate()
            .map(|(i, (name, version, registry, _))| {
                let dir = if *registry {
                    format!("/reg/{name}-{version}")
                } else {
                    format!("/home/.cargo/pulse/{}/{name}", Support::root_marker())
                };
                serde_json::json!({
                    "name": name, "version": version, "id": id(i),
                    "source": registry.then_some("registry+https://github.com/rust-lang/crates.io-index"),
                    "dependencies": [], "features": {},
                    "manifest_path": format!("{dir}/Cargo.toml"),
                    "targets": [{"name": name, "kind": ["lib"], "crate_types": ["lib"],
                                 "src_path": format!("{dir}/src/lib.rs"), "edition": "2021"}],
                })
            })
            .collect();
        let nodes: Vec<serde_json::Value> = pkgs
            .iter()
            .enumerate()
            .map(|(i, (.., deps))| {
                let deps: Vec<serde_json::Value> = deps
                    .iter()
                    .map(|&d| {
                        serde_json::json!({"name": pkgs[d].0, "pkg": id(d),
                        "dep_kinds": [{"kind": null, "target": null}]})
                    })
                    .collect();
                serde_json::json!({"id": id(i), "deps": deps,
                    "dependencies": deps.iter().map(|d| d["pkg"].clone()).collect::<Vec<_>>(),
                    "features": []})
            })
            .collect();
        serde_json::from_value(serde_json::json!({
            "packages": packages, "workspace_members": [id(0)], "workspace_default_members": [id(0)],
            "resolve": {"nodes": nodes, "root": id(0)},
            "target_directory": "/t", "version": 1, "workspace_root": "/w",
        }))
        .unwrap()
    }

    #[test]
    fn every_old_parking_lot_core_in_the_graph_is_replaced_and_patched() {
        // parking_lot 0.4 (core 0.2), 0.11 (0.8) and 0.12 (0.9); core 0.1 (parking_lot 0.3)
        // has no replacement and is instrumented if it synchronises, like any crate.
        let meta = graph(&[
            ("user", "0.1.0", false, &[1, 3, 5, 7]),
            ("parking_lot", "0.4.8", true, &[2]),
            ("parking_lot_core", "0.2.14", true, &[]),
            ("parking_lot", "0.11.2", true, &[4]),
            ("parking_lot_core", "0.8.6", true, &[]),
            ("parking_lot", "0.12.5", true, &[6]),
            ("parking_lot_core", "0.9.12", true, &[]),
            ("parking_lot_core", "0.1.5", true, &[]),
        ]);
        assert_eq!(shimmed_core_minors(&meta), vec![2, 8, 9]);
        assert!(is_shimmed_parking_lot_core(&meta.packages[2]));
        assert!(!is_shimmed_parking_lot_core(&meta.packages[7]));
        let sel = Selection {
            shimmed_core_minors: shimmed_core_minors(&meta),
            ..Selection::default()
        };
        assert_eq!(sel.core_shim_versions(), ["0.2", "0.8", "0.9"]);
        let support = Support {
            root: PathBuf::from("/s"),
        };
        let patches = core_shim_patches(&sel, &support);
        let keys: Vec<(&str, Option<&str>, &Path)> = patches
            .iter()
            .map(|e| (e.key.as_str(), e.package.as_deref(), e.dir.as_path()))
            .collect();
        assert_eq!(
            keys,
            [
                (
                    "parking_lot_core",
                    None,
                    Path::new("/s/shim-parking-lot-core-0.2")
                ),
                (
                    "parking_lot_core-pulse-v0_8",
                    Some("parking_lot_core"),
                    Path::new("/s/shim-parking-lot-core-0.8")
                ),
                (
                    "parking_lot_core-pulse-v0_9",
                    Some("parking_lot_core"),
                    Path::new("/s/shim-parking-lot-core")
                ),
            ]
        );
        assert!(core_shim_patches(&Selection::default(), &support).is_empty());
    }

    #[test]
    fn a_shim_only_other_shims_depend_on_stands_for_no_registry_version() {
        // An earlier patched build: parking_lot 0.6 on pulse's 0.3, which re-exports pulse's
        // 0.2, which is built on pulse's 0.9. Only 0.3 replaced a registry version.
        let meta = graph(&[
            ("user", "0.1.0", false, &[1]),
            ("parking_lot", "0.6.4", true, &[2]),
            ("parking_lot_core", "0.3.99", false, &[3]),
            ("parking_lot_core", "0.2.99", false, &[4]),
            ("parking_lot_core", "0.9.99", false, &[]),
        ]);
        assert_eq!(shimmed_core_minors(&meta), vec![3]);
        assert!(
            !is_shimmed_parking_lot_core(&meta.packages[2]),
            "a shim is not the registry's"
        );
    }

    #[test]
    fn the_registry_s_old_parking_lot_cores_are_unlocked_too() {
        let reg = "source = \"registry+https://github.com/rust-lang/crates.io-index\"";
        let lock = format!(
            "version = 4\n\n[[package]]\nname = \"parking_lot_core\"\nversion = \"0.2.14\"\n{reg}\n\n\
             [[package]]\nname = \"parking_lot_core\"\nversion = \"0.8.6\"\n{reg}\n\n\
             [[package]]\nname = \"parking_lot_core\"\nversion = \"0.1.5\"\n{reg}\n"
        );
        let out = lock_for_mirror(&lock, &[], true);
        assert!(!out.contains("0.2.14") && !out.contains("0.8.6"), "{out}");
        assert!(
            out.contains("0.1.5"),
            "no replacement, locked as it was: {out}"
        );
    }

    #[test]
    fn an_instrumented_dependency_is_locked_as_the_path_package_it_becomes() {
        let reg = "source = \"registry+https://github.com/rust-lang/crates.io-index\"";
        let lock = format!(
            "version = 4\n\n[[package]]\nname = \"getrandom\"\nversion = \"0.3.4\"\n{reg}\nchecksum = \"a\"\n\n\
             [[package]]\nname = \"getrandom\"\nversion = \"0.4.3\"\n{reg}\nchecksum = \"b\"\n\n\
             [[package]]\nname = \"tempfile\"\nversion = \"3.27.0\"\n{reg}\nchecksum = \"c\"\ndependencies = [\n \"fastrand\",\n \"getrandom 0.4.3\",\n \"once_cell 1.21.4 (registry+https://github.com/rust-lang/crates.io-index)\",\n]\n"
        );
        let dep = |name: &str, version: &str| DepSource {
            name: name.into(),
            version: version.into(),
            src: PathBuf::new(),
            lib_dir: PathBuf::new(),
            build_scripts: vec![],
            facade_roots: vec![],
            crate_roots: vec![],
        };
        let out = lock_for_mirror(
            &lock,
            &[
                dep("getrandom", "0.4.3"),
                dep("tempfile", "3.27.0"),
                dep("once_cell", "1.21.4"),
            ],
            false,
        );
        let expected = format!(
            "version = 4\n\n[[package]]\nname = \"getrandom\"\nversion = \"0.3.4\"\n{reg}\nchecksum = \"a\"\n\n\
             [[package]]\nname = \"getrandom\"\nversion = \"0.4.3\"\n\n\
             [[package]]\nname = \"tempfile\"\nversion = \"3.27.0\"\ndependencies = [\n \"fastrand\",\n \"getrandom 0.4.3\",\n \"once_cell 1.21.4\",\n]\n"
        );
        assert_eq!(out, expected);
    }
}
