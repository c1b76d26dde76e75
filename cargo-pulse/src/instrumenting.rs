//! The one place that calls the instrumenter: turns a Rust source file of the user's into its
//! instrumented text plus a JSON note (the file's report) kept with the mirror's state, and
//! summarizes those notes for people.
//!
//! A file syn cannot parse is mirrored unchanged: the compiler then reports the real error
//! against the user's file, which is more useful than our parse error.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::{Context as _, Result};
use pulse_instrument::{Cfgs, CrateContext, FileReport, Options};
use serde_json::{json, Value};

use crate::cli::CargoArgs;
use crate::copy_tree::Transformed;
use crate::workspace::UserWorkspace;

pub fn options(atomic_paths: &[String]) -> Options {
    Options {
        shim_root: "::pulse::std".to_string(),
        wrap_tests: true,
        atomic_paths: atomic_paths.to_vec(),
        ..Options::default()
    }
}

/// `opts` knowing that the registry crates `deps` (package names) are instrumented too, so
/// paths into them are not reported as foreign synchronisation. Left out of [`options_key`]:
/// the mirror re-instruments its files whenever the dependencies are chosen again.
pub fn with_instrumented_deps<'a>(
    opts: &Options,
    deps: impl IntoIterator<Item = &'a str>,
) -> Options {
    let mut opts = opts.clone();
    for d in deps {
        let name = d.replace('-', "_");
        if !opts.instrumented_crates.contains(&name) {
            opts.instrumented_crates.push(name);
        }
    }
    opts
}

/// A file's place in its package: in an edition-2015 crate (syn must read `try` and the like
/// as names), the root of a 2015 target (it declares the facade), the root of any target (it
/// re-exports the facade when the crate exports macros, see `Options::crate_root`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Place {
    pub in_2015_crate: bool,
    pub facade_root: bool,
    pub crate_root: bool,
}

impl Place {
    /// The place of `path` in a package whose edition-2015 crate roots are `facade_roots` and
    /// whose instrumented targets' roots are `crate_roots`. A package with any 2015 target is
    /// taken as a 2015 crate (targets inherit the package's edition; an instrumented
    /// dependency lists only its library's root).
    pub fn of(facade_roots: &[PathBuf], crate_roots: &[PathBuf], path: &Path) -> Place {
        let facade_root = facade_roots.iter().any(|r| r == path);
        Place {
            in_2015_crate: !facade_roots.is_empty(),
            facade_root,
            crate_root: facade_root || crate_roots.iter().any(|r| r == path),
        }
    }
}

/// A fingerprint of everything the instrumented text depends on besides the source: the
/// options, and the build's cfgs and crate contexts once [`configure`]d.
pub fn options_key(opts: &Options) -> String {
    let build = BUILD.get().map(Build::key).unwrap_or_default();
    format!(
        "{}|{}|{}|{}|{build}",
        opts.shim_root,
        opts.wrap_tests,
        opts.atomic_paths.join(","),
        opts.std_modules.join(",")
    )
}

/// What this `cargo pulse` run builds, for evaluating `#[cfg]`s as the build will: the
/// target's cfgs (`rustc --print cfg`, `--cfg` flags in RUSTFLAGS) and each workspace
/// package's enabled features (from the package selection and feature flags). `test` stays
/// undecided for the user's packages (their library is compiled with and without it) and is
/// false for registry dependencies, whose features are undecided.
#[derive(Debug, Clone, Default)]
pub struct Build {
    target: Cfgs,
    /// Package dir -> its enabled features.
    features: BTreeMap<PathBuf, BTreeSet<String>>,
    /// Package dirs of the user's workspace (innermost match wins).
    packages: Vec<PathBuf>,
    /// Library crate names of the user's packages: instrumented, so never foreign.
    crates: Vec<String>,
}

static BUILD: OnceLock<Build> = OnceLock::new();

/// Per crate directory: its context and cfgs, computed once per process.
type Facts = Arc<(CrateContext, Option<Cfgs>)>;
static FACTS: OnceLock<Mutex<HashMap<PathBuf, Facts>>> = OnceLock::new();

/// Tells instrumentation what this run builds. Called once by each command before it
/// instruments anything; without it cfgs are not evaluated (every branch rewritten).
pub fn configure(user: &UserWorkspace, cargo: &CargoArgs) -> Result<()> {
    let target = target_cfgs()?;
    let (features, mut crates) = package_features(user, cargo)?;
    crates.extend(user.packages.iter().map(|p| p.name.replace('-', "_")));
    crates.sort();
    crates.dedup();
    let build = Build {
        target,
        features,
        packages: user.packages.iter().map(|p| p.dir.clone()).collect(),
        crates,
    };
    let _ = BUILD.set(build);
    // The contexts go into the options key, so a change of an alias re-instruments the crate.
    for p in &user.packages {
        facts(&p.dir);
    }
    Ok(())
}

impl Build {
    fn key(&self) -> String {
        let features: Vec<String> = self
            .features
            .iter()
            .map(|(dir, f)| {
                let f: Vec<&str> = f.iter().map(String::as_str).collect();
                format!("{}:{}", dir.display(), f.join(","))
            })
            .collect();
        let contexts: Vec<String> = self.packages.iter().map(|dir| facts(dir).0.key()).collect();
        format!(
            "{}|{}|{}|{}",
            self.target.key(),
            features.join(";"),
            contexts.join(";"),
            self.crates.join(",")
        )
    }

    /// The cfgs of the crate in `dir`.
    fn cfgs(&self, dir: &Path) -> Cfgs {
        match self.features.get(dir) {
            Some(features) => self.target.clone().with_features(features.iter().cloned()),
            None if self.packages.iter().any(|p| p == dir) => self.target.clone(),
            // A registry dependency: never compiled as a test; its features are not known here.
            None => self.target.clone().with_name("test", false),
        }
    }
}

/// The crate directory a file belongs to: the innermost user package holding it, else the
/// nearest directory with a Cargo.toml (a registry dependency's source).
fn crate_dir(path: &Path) -> PathBuf {
    if let Some(build) = BUILD.get() {
        if let Some(dir) = build
            .packages
            .iter()
            .filter(|d| path.starts_with(d))
            .max_by_key(|d| d.components().count())
        {
            return dir.clone();
        }
    }
    path.ancestors()
        .skip(1)
        .find(|d| d.join("Cargo.toml").is_file())
        .unwrap_or_else(|| path.parent().unwrap_or(path))
        .to_path_buf()
}

/// The crate context and cfgs of the crate in `dir` (computed once).
fn facts(dir: &Path) -> Facts {
    let cache = FACTS.get_or_init(Default::default);
    if let Some(f) = cache.lock().unwrap().get(dir) {
        return f.clone();
    }
    let cfgs = BUILD.get().map(|b| b.cfgs(dir));
    let opts = Options {
        cfg: cfgs.clone(),
        ..Options::default()
    };
    let cx = CrateContext::scan(dir, &[], &opts).unwrap_or_else(|_| CrateContext::new(dir));
    let f = Arc::new((cx, cfgs));
    cache.lock().unwrap().insert(dir.to_path_buf(), f.clone());
    f
}

/// Instruments one file; `user_path` is where the user sees it (named in the report).
pub fn instrument_file(
    user_path: &Path,
    bytes: Vec<u8>,
    opts: &Options,
    place: Place,
) -> Transformed {
    let (bytes, report) = instrument_bytes(user_path, bytes, opts, place);
    let note = match &report {
        Ok(report) => serde_json::to_value(report).ok(),
        Err(e) => Some(json!({
            "path": user_path,
            "rewrites": [],
            "findings": [],
            "parse_error": { "line": e.line, "column": e.column, "message": e.message },
        })),
    };
    Transformed { bytes, note }
}

/// The one per-file function of both commands (`cargo pulse test`'s mirror and `cargo pulse
/// instrument`): the file's crate context (aliases declared anywhere in its crate) and its
/// crate's cfgs come from the file's place, so the two commands cannot disagree; so do the
/// crates instrumented with it (the workspace's, and the dependencies named in `opts`), which
/// are not foreign synchronisation. Returns the new contents and the report (`Err`: not
/// parsed, contents unchanged; not UTF-8: unchanged, an empty report).
pub fn instrument_bytes(
    user_path: &Path,
    bytes: Vec<u8>,
    opts: &Options,
    place: Place,
) -> (Vec<u8>, Result<FileReport, pulse_instrument::ParseError>) {
    let Ok(text) = std::str::from_utf8(&bytes) else {
        let report = FileReport {
            path: user_path.to_path_buf(),
            ..FileReport::default()
        };
        return (bytes, Ok(report));
    };
    let facts = facts(&crate_dir(user_path));
    let file_opts = file_options(&facts, opts, place);
    match pulse_instrument::instrument_file(text, user_path, &file_opts, &facts.0) {
        Ok(out) => {
            let mut report = out.report;
            report.path = user_path.to_path_buf();
            (out.text.into_bytes(), Ok(report))
        }
        Err(e) => (bytes, Err(e)),
    }
}

/// The options one file is instrumented with: the command's, its crate's cfgs, its place in
/// its package, the crates instrumented with it.
fn file_options(facts: &Facts, opts: &Options, place: Place) -> Options {
    let mut file_opts = Options {
        declare_facade: opts.declare_facade || place.facade_root,
        crate_root: opts.crate_root || place.crate_root,
        edition_2015: opts.edition_2015 || place.in_2015_crate,
        cfg: opts.cfg.clone().or_else(|| facts.1.clone()),
        ..opts.clone()
    };
    if let Some(build) = BUILD.get() {
        file_opts = with_instrumented_deps(&file_opts, build.crates.iter().map(String::as_str));
    }
    file_opts
}

/// Why [`instrument_file`] could not parse the file at `user_path`, if it could not: the same
/// reading, nothing rewritten (a dependency is instrumented whole or left alone).
pub fn parse_error(
    user_path: &Path,
    bytes: &[u8],
    opts: &Options,
    place: Place,
) -> Option<pulse_instrument::ParseError> {
    let text = std::str::from_utf8(bytes).ok()?;
    let facts = facts(&crate_dir(user_path));
    pulse_instrument::check_parse(text, &file_options(&facts, opts, place)).err()
}

/// The target's cfgs: `rustc --print cfg` plus `--cfg` flags in RUSTFLAGS.
fn target_cfgs() -> Result<Cfgs> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = std::process::Command::new(&rustc)
        .args(["--print", "cfg"])
        .output()
        .with_context(|| format!("running `{rustc} --print cfg`"))?;
    let mut cfgs = Cfgs::from_rustc_print(&String::from_utf8_lossy(&out.stdout));
    for flag in cfg_flags(&rustflags()) {
        cfgs = cfgs.with_cfg_flag(&flag);
    }
    Ok(cfgs)
}

fn rustflags() -> Vec<String> {
    if let Ok(enc) = std::env::var("CARGO_ENCODED_RUSTFLAGS") {
        return enc.split('\x1f').map(String::from).collect();
    }
    std::env::var("RUSTFLAGS")
        .unwrap_or_default()
        .split_whitespace()
        .map(String::from)
        .collect()
}

/// The values of `--cfg X` / `--cfg=X` among rustc flags.
fn cfg_flags(flags: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = flags.iter();
    while let Some(f) = it.next() {
        if f == "--cfg" {
            out.extend(it.next().cloned());
        } else if let Some(v) = f.strip_prefix("--cfg=") {
            out.push(v.to_owned());
        }
    }
    out
}

/// A package's feature table and its dependencies on other packages of the workspace, as
/// `cargo metadata --no-deps` tells them.
#[derive(Debug, Clone, Default)]
struct Pkg {
    name: String,
    dir: PathBuf,
    features: BTreeMap<String, Vec<String>>,
    /// (name the package uses for it, its package name, features asked, default features,
    /// optional, a dev-dependency)
    deps: Vec<Dep>,
}

#[derive(Debug, Clone, Default)]
struct Dep {
    local: String,
    package: String,
    features: Vec<String>,
    default: bool,
    optional: bool,
    dev: bool,
}

/// The enabled features of each workspace package for this run's selection and flags.
/// Package dir -> its enabled features.
type Features = BTreeMap<PathBuf, BTreeSet<String>>;

/// Also returns the library crate names of the workspace's packages.
fn package_features(user: &UserWorkspace, cargo: &CargoArgs) -> Result<(Features, Vec<String>)> {
    let meta = cargo_metadata::MetadataCommand::new()
        .manifest_path(&user.manifest)
        .no_deps()
        .exec()
        .with_context(|| format!("running `cargo metadata` on {}", user.manifest.display()))?;
    let pkgs: Vec<Pkg> = meta
        .packages
        .iter()
        .map(|p| Pkg {
            name: p.name.to_string(),
            dir: p
                .manifest_path
                .parent()
                .map(|d| d.as_std_path().to_path_buf())
                .unwrap_or_default(),
            features: p.features.clone().into_iter().collect(),
            deps: p
                .dependencies
                .iter()
                .filter(|d| d.path.is_some())
                .map(|d| Dep {
                    local: d
                        .rename
                        .clone()
                        .unwrap_or_else(|| d.name.clone())
                        .replace('-', "_"),
                    package: d.name.clone(),
                    features: d.features.clone(),
                    default: d.uses_default_features,
                    optional: d.optional,
                    dev: d.kind == cargo_metadata::DependencyKind::Development,
                })
                .collect(),
        })
        .collect();
    let root_pkg = pkgs
        .iter()
        .find(|p| p.dir.join("Cargo.toml") == user.manifest)
        .map(|p| p.name.clone());
    let selected: Vec<String> = if !cargo.packages.is_empty() {
        cargo
            .packages
            .iter()
            .map(|s| s.split('@').next().unwrap_or(s).to_owned())
            .collect()
    } else if cargo.workspace || root_pkg.is_none() {
        pkgs.iter()
            .map(|p| p.name.clone())
            .filter(|n| !cargo.exclude.contains(n))
            .collect()
    } else {
        root_pkg.into_iter().collect()
    };
    let requested: Vec<String> = cargo
        .features
        .iter()
        .flat_map(|f| f.split([' ', ',']))
        .filter(|f| !f.is_empty())
        .map(String::from)
        .collect();
    let libs = meta
        .packages
        .iter()
        .flat_map(|p| &p.targets)
        .filter(|t| {
            t.kind.iter().any(|k| {
                matches!(
                    k,
                    cargo_metadata::TargetKind::Lib
                        | cargo_metadata::TargetKind::RLib
                        | cargo_metadata::TargetKind::DyLib
                )
            })
        })
        .map(|t| t.name.replace('-', "_"))
        .collect();
    let features = resolve_features(
        &pkgs,
        &selected,
        &requested,
        cargo.all_features,
        cargo.no_default_features,
    );
    Ok((features, libs))
}

/// Feature resolution as cargo does it within a workspace: the selected packages get the
/// requested features (`pkg/feat` for a named one), `default` unless turned off, or all of
/// them; a feature enables what its table lists (`x` a feature, `x/y` and `x?/y` feature `y`
/// of dependency `x`, `dep:x` nothing to resolve here); a package depended on by a built one
/// gets the features the dependency asks for (dev-dependencies only from selected packages).
fn resolve_features(
    pkgs: &[Pkg],
    selected: &[String],
    requested: &[String],
    all: bool,
    no_default: bool,
) -> BTreeMap<PathBuf, BTreeSet<String>> {
    let index: HashMap<&str, &Pkg> = pkgs.iter().map(|p| (p.name.as_str(), p)).collect();
    let mut on: HashMap<&str, BTreeSet<String>> = HashMap::new();
    let mut built: BTreeSet<&str> = BTreeSet::new();
    let mut queue: Vec<(&str, String)> = Vec::new();
    let mut deps_to_visit: Vec<(&str, bool)> = Vec::new();
    for name in selected {
        let Some(p) = index.get(name.as_str()) else {
            continue;
        };
        deps_to_visit.push((p.name.as_str(), true));
        if all {
            queue.extend(p.features.keys().map(|f| (p.name.as_str(), f.clone())));
        }
        if !no_default {
            queue.push((p.name.as_str(), "default".into()));
        }
        for r in requested {
            match r.split_once('/') {
                Some((pkg, f)) if pkg == p.name => queue.push((p.name.as_str(), f.to_owned())),
                Some(_) => {}
                None => queue.push((p.name.as_str(), r.clone())),
            }
        }
    }
    loop {
        while let Some((name, dev)) = deps_to_visit.pop() {
            if !built.insert(name) && !dev {
                continue;
            }
            let p = index[name];
            for d in p.deps.iter().filter(|d| (dev || !d.dev) && !d.optional) {
                if let Some(target) = index.get(d.package.as_str()) {
                    let t = target.name.as_str();
                    if d.default {
                        queue.push((t, "default".into()));
                    }
                    queue.extend(d.features.iter().map(|f| (t, f.clone())));
                    deps_to_visit.push((t, false));
                }
            }
        }
        let Some((name, feature)) = queue.pop() else {
            break;
        };
        let p = index[name];
        let Some(entries) = p.features.get(&feature) else {
            continue;
        };
        if !on.entry(name).or_default().insert(feature) {
            continue;
        }
        for e in entries {
            if e.starts_with("dep:") {
                continue;
            }
            match e.split_once('/') {
                Some((dep, f)) => {
                    let weak = dep.ends_with('?');
                    let dep = dep.trim_end_matches('?');
                    if !weak && p.features.contains_key(dep) {
                        queue.push((name, dep.to_owned()));
                    }
                    if let Some(d) = p.deps.iter().find(|d| d.local == dep.replace('-', "_")) {
                        if let Some(target) = index.get(d.package.as_str()) {
                            queue.push((target.name.as_str(), f.to_owned()));
                            if d.optional && !weak {
                                deps_to_visit.push((target.name.as_str(), false));
                                if d.default {
                                    queue.push((target.name.as_str(), "default".into()));
                                }
                            }
                        }
                    }
                }
                None => queue.push((name, e.clone())),
            }
        }
    }
    pkgs.iter()
        .map(|p| {
            let features = on.remove(p.name.as_str()).unwrap_or_default();
            (p.dir.clone(), features)
        })
        .collect()
}

/// Counts over the notes of all mirrored files.
#[derive(Debug, Default, Clone)]
pub struct Summary {
    pub files: usize,
    pub rewrites: usize,
    /// (user file, line, column, message)
    pub findings: Vec<(String, u64, u64, String)>,
    pub parse_errors: Vec<(String, u64, u64, String)>,
    /// Distinct cfg predicates this build could not decide (every branch rewritten).
    pub cfg_undecided: BTreeSet<String>,
}

impl Summary {
    pub fn from_notes<'a>(notes: impl Iterator<Item = &'a Value>) -> Summary {
        let mut s = Summary::default();
        for note in notes {
            s.files += 1;
            let path = note
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string();
            s.rewrites += note
                .get("rewrites")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            let pos = |v: &Value| {
                (
                    v.get("line").and_then(Value::as_u64).unwrap_or(0),
                    v.get("column").and_then(Value::as_u64).unwrap_or(0),
                    v.get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                )
            };
            for f in note
                .get("findings")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let (l, c, m) = pos(f);
                s.findings.push((path.clone(), l, c, m));
            }
            for c in note
                .get("cfgs")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|c| c.get("value").is_some_and(Value::is_null))
            {
                if let Some(p) = c.get("predicate").and_then(Value::as_str) {
                    s.cfg_undecided.insert(p.to_owned());
                }
            }
            if let Some(e) = note.get("parse_error").filter(|e| !e.is_null()) {
                let (l, c, m) = pos(e);
                s.parse_errors.push((path.clone(), l, c, m));
            }
        }
        s.findings.sort();
        s.parse_errors.sort();
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_of_a_2015_crate_is_read_as_2015() {
        let roots = [PathBuf::from("/c/src/lib.rs")];
        let root = Place::of(&roots, &roots, Path::new("/c/src/lib.rs"));
        assert_eq!(
            (root.in_2015_crate, root.facade_root, root.crate_root),
            (true, true, true)
        );
        let module = Place::of(&roots, &roots, Path::new("/c/src/once.rs"));
        assert_eq!(
            (module.in_2015_crate, module.facade_root, module.crate_root),
            (true, false, false)
        );
        let later = Place::of(&[], &[], Path::new("/c/src/once.rs"));
        assert_eq!(later, Place::default());
        let later_root = Place::of(&[], &roots, Path::new("/c/src/lib.rs"));
        assert_eq!(
            later_root,
            Place {
                crate_root: true,
                ..Place::default()
            }
        );
        // spin 0.5.2's src/once.rs, as the mirror instruments it.
        let src = b"pub fn try(&self) -> Option<&std::sync::Mutex<u8>> { None }\n".to_vec();
        let opts = options(&[]);
        let (_, report) = instrument_bytes(Path::new("/c/src/once.rs"), src.clone(), &opts, later);
        assert!(report.is_err());
        let (text, report) = instrument_bytes(Path::new("/c/src/once.rs"), src, &opts, module);
        assert!(report.is_ok());
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "pub fn try(&self) -> Option<&::pulse::std::sync::Mutex<u8>> { None }\n"
        );
    }

    #[test]
    fn instrumented_dependencies_are_named_as_in_paths() {
        let opts = with_instrumented_deps(&options(&[]), ["crossbeam-channel", "spin"]);
        let opts = with_instrumented_deps(&opts, ["spin"]);
        assert_eq!(opts.instrumented_crates, ["crossbeam_channel", "spin"]);
        // Not part of the cache key: the mirror re-instruments when the choice changes.
        assert_eq!(options_key(&opts), options_key(&options(&[])));
    }

    fn pkg(name: &str, features: &[(&str, &[&str])], deps: Vec<Dep>) -> Pkg {
        Pkg {
            name: name.into(),
            dir: PathBuf::from("/ws").join(name),
            features: features
                .iter()
                .map(|(f, e)| (f.to_string(), e.iter().map(|s| s.to_string()).collect()))
                .collect(),
            deps,
        }
    }

    fn dep(package: &str, features: &[&str], default: bool, optional: bool, dev: bool) -> Dep {
        Dep {
            local: package.replace('-', "_"),
            package: package.into(),
            features: features.iter().map(|s| s.to_string()).collect(),
            default,
            optional,
            dev,
        }
    }

    fn on(m: &BTreeMap<PathBuf, BTreeSet<String>>, name: &str) -> Vec<String> {
        m[&PathBuf::from("/ws").join(name)]
            .iter()
            .cloned()
            .collect()
    }

    #[test]
    fn features_resolve_as_cargo_enables_them() {
        let pkgs = vec![
            pkg(
                "app",
                &[
                    ("default", &["std"]),
                    ("std", &["util/std"]),
                    ("shuttle", &["dep:shuttle"]),
                    ("extra", &["util?/fast"]),
                ],
                vec![
                    dep("util", &["base"], false, false, false),
                    dep("helper", &[], true, false, true),
                ],
            ),
            pkg(
                "util",
                &[
                    ("default", &["fast"]),
                    ("std", &[]),
                    ("base", &[]),
                    ("fast", &[]),
                ],
                vec![],
            ),
            pkg("helper", &[("default", &["h"]), ("h", &[])], vec![]),
            pkg("other", &[("default", &["o"]), ("o", &[])], vec![]),
        ];
        let sel = ["app".to_string()];
        let m = resolve_features(&pkgs, &sel, &[], false, false);
        assert_eq!(on(&m, "app"), ["default", "std"]);
        assert_eq!(on(&m, "util"), ["base", "std"], "no default features asked");
        assert_eq!(
            on(&m, "helper"),
            ["default", "h"],
            "a dev-dependency of a selected package"
        );
        assert!(on(&m, "other").is_empty(), "not built");
        let m = resolve_features(&pkgs, &sel, &["extra".into()], false, true);
        assert_eq!(on(&m, "app"), ["extra"]);
        assert_eq!(on(&m, "util"), ["base", "fast"]);
        let m = resolve_features(&pkgs, &sel, &["util/fast".into()], false, true);
        assert!(on(&m, "app").is_empty());
        let m = resolve_features(&pkgs, &sel, &[], true, false);
        assert_eq!(on(&m, "app"), ["default", "extra", "shuttle", "std"]);
    }

    #[test]
    fn cfg_flags_are_read_from_rustflags() {
        let flags: Vec<String> = ["-C", "opt-level=1", "--cfg", "loom", "--cfg=tokio_unstable"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(cfg_flags(&flags), ["loom", "tokio_unstable"]);
    }
}
