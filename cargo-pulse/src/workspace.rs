//! What the user's workspace is made of: its root, its target dir, its members and the path
//! dependencies that live outside it, and which files of each must not be instrumented.
//!
//! Only `cargo metadata --no-deps` is run on the user's tree: a full resolve would write a
//! `Cargo.lock` into it when there is none, and the user's tree is never written. Path
//! dependencies outside the workspace are found by reading each package's dependency list and
//! asking cargo about those directories in turn.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use cargo_metadata::{Metadata, MetadataCommand, TargetKind};

/// A package whose source is mirrored and instrumented.
#[derive(Debug, Clone)]
pub struct UserPackage {
    pub name: String,
    /// Directory holding the package's Cargo.toml, in the user's tree.
    pub dir: PathBuf,
    /// True for workspace members; false for path dependencies outside the workspace root.
    pub member: bool,
    /// A proc-macro crate runs in the compiler, not under the scheduler: never instrumented.
    pub proc_macro: bool,
    /// Build scripts run at build time: never instrumented.
    pub build_scripts: Vec<PathBuf>,
    /// Crate roots of the package's edition-2015 targets (lib, bins, tests, benches,
    /// examples): `::pulse` resolves from the crate root there, so each declares the facade.
    pub facade_roots: Vec<PathBuf>,
    /// Crate roots of all the package's instrumented targets, any edition: where the crate
    /// exports macros, each re-exports the facade for them (`Options::crate_root`).
    pub crate_roots: Vec<PathBuf>,
    /// Workspace root of an outside path dependency that inherits fields from it.
    pub inherits_from: Option<PathBuf>,
    /// The files its targets compile (`module_tree::compiled_files`); `None` when that could
    /// not be told (a file that does not lex).
    pub compiled: Option<BTreeSet<PathBuf>>,
}

#[derive(Debug, Clone)]
pub struct UserWorkspace {
    pub root: PathBuf,
    pub target_dir: PathBuf,
    /// The manifest cargo would use here (the nearest Cargo.toml, or --manifest-path).
    pub manifest: PathBuf,
    pub packages: Vec<UserPackage>,
    /// Registry crates named in `[package.metadata.pulse] instrument = [..]` or
    /// `[workspace.metadata.pulse] instrument = [..]`.
    pub metadata_instrument_deps: Vec<String>,
    /// Paths given in `[package.metadata.pulse] atomic = [..]`, treated as single steps.
    pub atomic_paths: Vec<String>,
}

impl UserWorkspace {
    /// Discovers the workspace around `manifest_path` (or the current directory); its target
    /// dir is `target_dir` when given (`--target-dir`), else cargo's.
    pub fn discover(
        manifest_path: Option<&Path>,
        target_dir: Option<&Path>,
    ) -> Result<UserWorkspace> {
        let manifest = match manifest_path {
            Some(p) => {
                std::path::absolute(p).with_context(|| format!("resolving {}", p.display()))?
            }
            None => nearest_manifest()?,
        };
        let meta = metadata_no_deps(&manifest)?;
        let root = meta.workspace_root.clone().into_std_path_buf();
        let target_dir = match target_dir {
            Some(d) => normalize(
                &std::path::absolute(d).with_context(|| format!("resolving {}", d.display()))?,
            ),
            None => meta.target_directory.clone().into_std_path_buf(),
        };

        let mut packages = Vec::new();
        let mut metadata_instrument_deps = Vec::new();
        let mut atomic_paths = Vec::new();
        read_pulse_metadata(
            &meta.workspace_metadata,
            &mut metadata_instrument_deps,
            &mut atomic_paths,
        );
        let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
        let mut pending: Vec<PathBuf> = Vec::new();
        for pkg in meta.workspace_packages() {
            let p = user_package(pkg, true, None);
            read_pulse_metadata(
                &pkg.metadata,
                &mut metadata_instrument_deps,
                &mut atomic_paths,
            );
            seen.insert(p.dir.clone());
            pending.extend(outside_path_deps(pkg, &root));
            packages.push(p);
        }
        // Outside path dependencies, transitively.
        while let Some(dir) = pending.pop() {
            if !seen.insert(dir.clone()) {
                continue;
            }
            let dep_manifest = dir.join("Cargo.toml");
            let dep_meta = metadata_no_deps(&dep_manifest)?;
            let Some(pkg) = dep_meta
                .packages
                .iter()
                .find(|p| p.manifest_path.as_std_path() == dep_manifest)
            else {
                anyhow::bail!(
                    "cargo metadata on {} did not list its package",
                    dep_manifest.display()
                );
            };
            let ws_root = dep_meta.workspace_root.as_std_path();
            let inherits = (ws_root != dir.as_path()).then(|| ws_root.to_path_buf());
            pending.extend(outside_path_deps(pkg, &root));
            packages.push(user_package(pkg, false, inherits));
        }
        metadata_instrument_deps.sort();
        metadata_instrument_deps.dedup();
        atomic_paths.sort();
        atomic_paths.dedup();
        Ok(UserWorkspace {
            root,
            target_dir,
            manifest,
            packages,
            metadata_instrument_deps,
            atomic_paths,
        })
    }

    /// Directories outside the workspace root that must be mirrored too.
    pub fn outside_dirs(&self) -> Vec<PathBuf> {
        self.packages
            .iter()
            .filter(|p| !p.member)
            .map(|p| p.dir.clone())
            .collect()
    }

    /// The innermost package containing `path` (a file in the user's tree), if any.
    pub fn package_of(&self, path: &Path) -> Option<&UserPackage> {
        self.packages
            .iter()
            .filter(|p| path.starts_with(&p.dir))
            .max_by_key(|p| p.dir.components().count())
    }

    /// The place of the file at `path` (in the user's tree) in its package.
    pub fn place_of(&self, path: &Path) -> crate::instrumenting::Place {
        self.package_of(path)
            .map(|p| crate::instrumenting::Place::of(&p.facade_roots, &p.crate_roots, path))
            .unwrap_or_default()
    }

    /// Whether the file at `path` (in the user's tree) is Rust code that runs under the
    /// scheduler and so gets instrumented.
    pub fn should_instrument(&self, path: &Path) -> bool {
        if path.extension().is_none_or(|e| e != "rs") {
            return false;
        }
        match self.package_of(path) {
            Some(pkg) => {
                !pkg.proc_macro
                    && !pkg.build_scripts.iter().any(|b| b == path)
                    && pkg.compiles(path)
            }
            None => false,
        }
    }
}

impl UserPackage {
    /// Whether a target of this package compiles the file at `path`: any file under `src/`
    /// (a module a macro names in a way the scan cannot follow stays instrumented), and
    /// elsewhere the files its targets reach. A fixture under `tests/` that a test reads as
    /// text or compiles with rustc itself is copied as written.
    pub fn compiles(&self, path: &Path) -> bool {
        path.starts_with(self.dir.join("src"))
            || self
                .compiled
                .as_ref()
                .is_none_or(|c| c.contains(&normalize(path)))
    }
}

fn user_package(
    pkg: &cargo_metadata::Package,
    member: bool,
    inherits_from: Option<PathBuf>,
) -> UserPackage {
    let dir = pkg
        .manifest_path
        .parent()
        .expect("manifest has a parent")
        .to_path_buf()
        .into_std_path_buf();
    UserPackage {
        name: pkg.name.clone(),
        dir,
        member,
        proc_macro: pkg
            .targets
            .iter()
            .any(|t| t.kind.contains(&TargetKind::ProcMacro)),
        build_scripts: pkg
            .targets
            .iter()
            .filter(|t| t.kind.contains(&TargetKind::CustomBuild))
            .map(|t| t.src_path.clone().into_std_path_buf())
            .collect(),
        facade_roots: facade_roots(pkg, |_| true),
        crate_roots: crate_roots(pkg, |_| true),
        inherits_from,
        compiled: crate::module_tree::compiled_files(&crate_roots(pkg, |_| true)),
    }
}

/// Crate roots of `pkg`'s edition-2015 targets chosen by `want` (never build scripts: they
/// are not instrumented).
pub fn facade_roots(
    pkg: &cargo_metadata::Package,
    want: impl Fn(&cargo_metadata::Target) -> bool,
) -> Vec<PathBuf> {
    crate_roots(pkg, |t| {
        t.edition == cargo_metadata::Edition::E2015 && want(t)
    })
}

/// Crate roots of `pkg`'s targets chosen by `want`, any edition (never build scripts).
pub fn crate_roots(
    pkg: &cargo_metadata::Package,
    want: impl Fn(&cargo_metadata::Target) -> bool,
) -> Vec<PathBuf> {
    pkg.targets
        .iter()
        .filter(|t| !t.kind.contains(&TargetKind::CustomBuild) && want(t))
        .map(|t| normalize(t.src_path.as_std_path()))
        .collect()
}

/// Path dependencies of `pkg` whose directory is not inside the workspace root.
fn outside_path_deps(pkg: &cargo_metadata::Package, root: &Path) -> Vec<PathBuf> {
    pkg.dependencies
        .iter()
        .filter_map(|d| d.path.as_ref())
        .map(|p| normalize(p.as_std_path()))
        .filter(|p| !p.starts_with(root))
        .collect()
}

fn read_pulse_metadata(
    value: &serde_json::Value,
    deps: &mut Vec<String>,
    atomic: &mut Vec<String>,
) {
    let strings = |key: &str| -> Vec<String> {
        value
            .pointer(&format!("/pulse/{key}"))
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    deps.extend(strings("instrument"));
    atomic.extend(strings("atomic"));
}

fn metadata_no_deps(manifest: &Path) -> Result<Metadata> {
    MetadataCommand::new()
        .manifest_path(manifest)
        .no_deps()
        .exec()
        .with_context(|| {
            format!(
                "running `cargo metadata --no-deps` on {}",
                manifest.display()
            )
        })
}

/// The Cargo.toml cargo would pick from the current directory: the nearest one upwards.
fn nearest_manifest() -> Result<PathBuf> {
    let cwd = std::env::current_dir().context("reading the current directory")?;
    cwd.ancestors()
        .map(|d| d.join("Cargo.toml"))
        .find(|m| m.is_file())
        .with_context(|| {
            format!(
                "could not find Cargo.toml in {} or any parent directory",
                cwd.display()
            )
        })
}

/// Removes `.` and `..` components without touching the file system (cargo's paths in
/// metadata are absolute but may contain `..` from relative `path =` entries).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Registry packages of a resolved mirror, by name: used to find `--instrument-dep` sources.
pub fn registry_packages(meta: &Metadata) -> BTreeMap<String, Vec<&cargo_metadata::Package>> {
    let mut out: BTreeMap<String, Vec<&cargo_metadata::Package>> = BTreeMap::new();
    for p in &meta.packages {
        if p.source.as_ref().is_some_and(|s| {
            s.is_crates_io() || s.repr.starts_with("registry+") || s.repr.starts_with("sparse+")
        }) {
            out.entry(p.name.clone()).or_default().push(p);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_drops_dots() {
        assert_eq!(
            normalize(Path::new("/a/b/../c/./d")),
            PathBuf::from("/a/c/d")
        );
    }
}
