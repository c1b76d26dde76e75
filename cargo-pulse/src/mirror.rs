//! Builds and refreshes the instrumented mirror of the user's workspace under
//! `target/pulse/mirror/`: the workspace root and every outside path dependency are copied with
//! their relative layout kept (so relative `path =` entries between them still hold), Rust
//! sources are instrumented, manifests are patched to link pulse, and the registry crates that
//! synchronise ([`deps`]: all of them by default, `--instrument-deps`) are copied to
//! `target/pulse/deps/<name>-<version>/`, instrumented and patched in, each version under a
//! `[patch]` key of its own. `parking_lot_core` 0.2 to 0.10 are replaced by pulse's shims.
//!
//! The user's tree is only read. Everything written lives under the user's target dir.

mod deps;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::copy_tree::{write_if_changed, MirrorState, SyncStats, Transformed, TreeJob};
use crate::instrumenting::{self, Summary};
use crate::manifest;
use crate::path_map::PathMap;
use crate::support::Support;
use crate::workspace::{self, UserWorkspace};

pub use deps::DepsMode;

#[derive(Debug, Clone, Default)]
pub struct MirrorOptions {
    /// `--instrument-deps` values: empty or `auto` (every synchronising dependency), `none`, or
    /// crate names (with `auto`: in addition). Crates named in `[package.metadata.pulse]
    /// instrument` are added; see [`DepsMode::from_flags`].
    pub instrument_deps: Vec<String>,
    pub offline: bool,
    /// Where the mirror is built; defaults to `target/pulse/target`.
    pub build_target_dir: Option<PathBuf>,
}

/// A registry crate copied into the mirror and patched in.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DepSource {
    pub name: String,
    pub version: String,
    /// Its source in cargo's registry cache.
    pub src: PathBuf,
    /// The directory of its library's crate root: the files instrumented.
    #[serde(default)]
    pub lib_dir: PathBuf,
    pub build_scripts: Vec<PathBuf>,
    /// Its library's crate root when that target is edition 2015 (see `UserPackage`).
    #[serde(default)]
    pub facade_roots: Vec<PathBuf>,
    /// Its library's crate root, any edition (see `UserPackage`).
    #[serde(default)]
    pub crate_roots: Vec<PathBuf>,
}

impl DepSource {
    fn lib_dir(&self) -> PathBuf {
        if self.lib_dir.as_os_str().is_empty() {
            self.src.join("src")
        } else {
            self.lib_dir.clone()
        }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct DepCache {
    fingerprint: String,
    #[serde(default)]
    selection: deps::Selection,
    #[serde(default)]
    scans: deps::ScanCache,
}

/// Which dependencies were instrumented and what it cost, for the console and the JSON events.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DepsReport {
    /// `auto`, `auto+a,b`, `a,b` or `none`.
    pub mode: String,
    /// `name version` of each instrumented registry crate.
    pub instrumented: Vec<String>,
    /// `parking_lot_core` (0.2 to 0.10) was replaced by pulse's shim.
    pub parking_lot_core_shim: bool,
    /// The versions replaced: `0.2`, ..., `0.10`.
    pub parking_lot_core_shim_versions: Vec<String>,
    /// Synchronising crates left alone because pulse itself depends on them.
    pub held_back: Vec<String>,
    /// Synchronising crates left as they are because a file of theirs does not parse for the
    /// instrumenter: `name version (file:line:column: message)`.
    pub not_parsed: Vec<String>,
    /// Registry crates of the test graph left alone because they name nothing pulse rewrites.
    pub not_synchronising: Vec<String>,
    /// The graph was resolved and scanned on this run (false: taken from the cache).
    pub resolved: bool,
    /// Seconds spent resolving and scanning the graph (0 when cached).
    pub resolve_secs: f64,
    /// Seconds spent copying and instrumenting the dependencies' sources.
    pub copy_secs: f64,
    /// Dependency files instrumented on this run (0 when nothing changed).
    pub files_instrumented: usize,
}

impl DepsReport {
    /// The crates of `not_parsed` as they appear in symbols (`parking_lot_core`).
    pub fn not_parsed_crates(&self) -> Vec<String> {
        symbol_names(&self.not_parsed)
    }

    /// The crates instrumented, and the `parking_lot_core` pulse replaced, as in symbols.
    pub fn instrumented_crates(&self) -> Vec<String> {
        let mut out = symbol_names(&self.instrumented);
        if self.parking_lot_core_shim {
            out.push("parking_lot_core".to_string());
        }
        out.sort();
        out.dedup();
        out
    }
}

/// `name version ...` entries' names as symbols spell them (`-` is `_`).
fn symbol_names(entries: &[String]) -> Vec<String> {
    entries
        .iter()
        .filter_map(|d| d.split_whitespace().next())
        .map(|name| name.replace('-', "_"))
        .collect()
}

impl DepsReport {
    /// Each decision with its reason, one line each, for `cargo pulse instrument`.
    pub fn decisions(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut add = |what: &str, crates: &[String]| {
            if !crates.is_empty() {
                out.push(format!("{what}: {}", crates.join(", ")));
            }
        };
        add(
            "instrumented (they name std's sync/thread/time, core::sync, thread_local! or epoll_wait)",
            &self.instrumented,
        );
        let shims: Vec<String> = self
            .parking_lot_core_shim_versions
            .iter()
            .map(|v| format!("parking_lot_core {v}"))
            .collect();
        add(
            "replaced by pulse's (parking goes to the scheduler)",
            &shims,
        );
        add(
            "not instrumented, pulse itself depends on them",
            &self.held_back,
        );
        add("not instrumented, a file does not parse", &self.not_parsed);
        add(
            "not instrumented, they name nothing pulse rewrites",
            &self.not_synchronising,
        );
        if out.is_empty() {
            out.push(format!("none (--instrument-deps {})", self.mode));
        }
        out
    }

    /// One line for people: `3 instrumented (auto): a 1.0, b 2.0, ...; from cache in 0.01s`.
    ///
    /// `built`: the instrumented crates' `name-version` directories the build compiled (or
    /// found fresh). The graph is read with every feature on, so crates only a feature this
    /// build leaves off reaches (or only a package it does not test) are named apart.
    pub fn line(&self, built: Option<&BTreeSet<String>>) -> String {
        let (used, unused): (Vec<&String>, Vec<&String>) = match built {
            Some(built) => {
                (self.instrumented.iter()).partition(|d| built.contains(&d.replacen(' ', "-", 1)))
            }
            None => (self.instrumented.iter().collect(), Vec::new()),
        };
        let mut what = used
            .iter()
            .map(|d| d.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        if self.parking_lot_core_shim {
            if !what.is_empty() {
                what.push_str("; ");
            }
            what.push_str(&format!(
                "parking_lot_core replaced by pulse's ({})",
                self.parking_lot_core_shim_versions.join(", ")
            ));
        }
        let how = if self.resolved {
            format!(
                "graph scanned in {:.2}s, {} of their files copied in {:.2}s",
                self.resolve_secs, self.files_instrumented, self.copy_secs
            )
        } else if self.files_instrumented > 0 {
            format!(
                "from cache, {} of their files copied in {:.2}s",
                self.files_instrumented, self.copy_secs
            )
        } else {
            format!("from cache, checked in {:.2}s", self.copy_secs)
        };
        let mut line = format!(
            "{} instrumented ({}){}{what}",
            used.len(),
            self.mode,
            if what.is_empty() { "" } else { ": " }
        );
        if !unused.is_empty() {
            let names: Vec<&str> = unused.iter().map(|d| d.as_str()).collect();
            line.push_str(&format!(
                "; {} more not in this build (reached only by features it leaves off or \
                 packages it does not test): {}",
                unused.len(),
                names.join(", ")
            ));
        }
        line.push_str(&format!("; {how}"));
        if !self.held_back.is_empty() {
            line.push_str(&format!(
                "; not instrumented, pulse depends on them: {}",
                self.held_back.join(", ")
            ));
        }
        if !self.not_parsed.is_empty() {
            line.push_str(&format!(
                "; not instrumented, a file does not parse: {}",
                self.not_parsed.join(", ")
            ));
        }
        line
    }
}

/// Where mirrored things go.
#[derive(Debug, Clone)]
struct Layout {
    /// Common ancestor of all mirrored user directories.
    anchor: PathBuf,
    /// `target/pulse/mirror`: the anchor's mirror.
    base: PathBuf,
    /// User directories that are mirrored (the workspace root and outside path deps).
    roots: Vec<PathBuf>,
}

impl Layout {
    fn map(&self, user_path: &Path) -> Option<PathBuf> {
        if !self.roots.iter().any(|r| user_path.starts_with(r)) {
            return None;
        }
        // (`join("")` would add a trailing slash, which breaks prefix mapping.)
        let rel = user_path.strip_prefix(&self.anchor).ok()?;
        Some(if rel.as_os_str().is_empty() {
            self.base.clone()
        } else {
            self.base.join(rel)
        })
    }
}

#[derive(Debug)]
pub struct Mirror {
    pub user: UserWorkspace,
    /// `target/pulse` of the user's workspace: mirror, state, failures.
    pub pulse_dir: PathBuf,
    /// The mirror of the user's workspace root.
    pub root: PathBuf,
    /// The mirror of the manifest cargo would use in the user's tree.
    pub manifest: PathBuf,
    /// Target dir of the instrumented build.
    pub target_dir: PathBuf,
    pub failures_dir: PathBuf,
    pub paths: PathMap,
    pub summary: Summary,
    pub stats: SyncStats,
    /// The registry crates instrumented, every version of each.
    pub deps: Vec<DepSource>,
    pub deps_report: DepsReport,
    /// pulse's own crates the mirror depends on (`Support::root`).
    support_root: PathBuf,
    /// Held for the whole run (released when the process exits).
    _lock: std::fs::File,
}

/// What the manifests' patching needs to know about the dependencies.
struct Patching<'a> {
    deps: &'a [DepSource],
    deps_base: &'a Path,
    /// pulse's `parking_lot_core` replacements, patched in (the registry's then unlocked,
    /// `deps::lock_for_mirror`).
    core_shims: Vec<deps::PatchEntry>,
}

impl Mirror {
    /// The packages cargo would treat as foreign (their lints capped) had they not been
    /// patched in by path: the instrumented registry crates and pulse's own.
    pub fn foreign_dirs(&self) -> Vec<PathBuf> {
        vec![deps_dir_in(&self.pulse_dir), self.support_root.clone()]
    }

    /// Creates or refreshes the mirror of `user`.
    pub fn prepare(user: UserWorkspace, opts: &MirrorOptions) -> Result<Mirror> {
        let pulse_dir = pulse_dir_for(&user);
        std::fs::create_dir_all(&pulse_dir)
            .with_context(|| format!("creating {}", pulse_dir.display()))?;
        // One `cargo pulse` at a time per workspace: they would share the mirror and run dirs.
        let lock_path = pulse_dir.join(".lock");
        let lock = std::fs::File::create(&lock_path)
            .with_context(|| format!("creating {}", lock_path.display()))?;
        if lock.try_lock().is_err() {
            eprintln!(
                "    Blocking waiting for another `cargo pulse` in this workspace ({})",
                lock_path.display()
            );
            lock.lock()
                .with_context(|| format!("locking {}", lock_path.display()))?;
        }
        // Like cargo's target dir: backup tools (and our own tree walks) skip it.
        let tag = pulse_dir.join("CACHEDIR.TAG");
        if !tag.exists() {
            std::fs::write(
                &tag,
                "Signature: 8a477f597d28d172789f06886806bc55
# cargo-pulse's mirror and build
",
            )
            .with_context(|| format!("writing {}", tag.display()))?;
        }
        let support = Support::ensure(&pulse_dir.join("support"))?;

        let mut roots = vec![user.root.clone()];
        roots.extend(user.outside_dirs());
        let anchor = common_ancestor(&roots);
        let layout = Layout {
            anchor,
            base: pulse_dir.join("mirror"),
            roots: roots.clone(),
        };
        let root = layout
            .map(&user.root)
            .expect("the workspace root is mirrored");
        let manifest = layout
            .map(&user.manifest)
            .with_context(|| format!("{} is outside the workspace", user.manifest.display()))?;

        let mode = DepsMode::from_flags(&opts.instrument_deps, &user.metadata_instrument_deps);

        let opts_i = instrumenting::options(&user.atomic_paths);
        // Which files are crate roots (of edition 2015 or any) changes their text without
        // changing them.
        let crate_roots: Vec<String> = user
            .packages
            .iter()
            .flat_map(|p| {
                let facade = p
                    .facade_roots
                    .iter()
                    .map(|r| format!("2015:{}", r.display()));
                facade.chain(p.crate_roots.iter().map(|r| r.display().to_string()))
            })
            .collect();
        let key = format!(
            "{}|{}|{}|{:016x}",
            tool_fingerprint(),
            Support::hash(),
            instrumenting::options_key(&opts_i),
            fnv(crate_roots.join("|").as_bytes())
        );
        let jobs: Vec<TreeJob> = roots
            .iter()
            .map(|r| TreeJob {
                src: r.clone(),
                dst: layout.map(r).unwrap(),
            })
            .collect();
        // The target dir, and any `target/` beside a manifest (a stale one from before the user
        // set CARGO_TARGET_DIR, say): build output is never source.
        let mut excluded = vec![user.target_dir.clone(), pulse_dir.clone()];
        excluded.extend(roots.iter().map(|r| r.join("target")));
        excluded.extend(user.packages.iter().map(|p| p.dir.join("target")));
        let state_file = pulse_dir.join("mirror-state.json");
        let mut state = MirrorState::load(&state_file, &key);

        // Registry crates to instrument: resolved once per change of the user's manifests or
        // lock (or of the mode, or of cargo-pulse), then taken from the cache.
        let dep_cache_file = pulse_dir.join("instrument-deps.json");
        let fingerprint = deps_fingerprint(&user, &mode.describe());
        let mut cache: DepCache = std::fs::read(&dep_cache_file)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        let cached = mode == DepsMode::None || cache.fingerprint == fingerprint;
        let mut selection = match &mode {
            DepsMode::None => deps::Selection::default(),
            _ if cached => cache.selection.clone(),
            _ => deps::Selection::default(),
        };
        // Paths into the instrumented dependencies are not foreign synchronisation.
        let dep_names = |s: &deps::Selection| -> Vec<String> {
            s.deps.iter().map(|d| d.name.clone()).collect()
        };
        let mut opts_i = instrumenting::with_instrumented_deps(
            &opts_i,
            dep_names(&selection).iter().map(String::as_str),
        );
        let deps_base = deps_dir_in(&pulse_dir);
        let is_manifest = |p: &Path| p.file_name().is_some_and(|n| n == "Cargo.toml");
        let user_lock = user.root.join("Cargo.lock");

        let mut stats = {
            let patching = Patching {
                deps: &selection.deps,
                deps_base: &deps_base,
                core_shims: deps::core_shim_patches(&selection, &support),
            };
            let mut transform = |src: &Path, bytes: Vec<u8>| {
                mirror_transform(&user, &layout, &support, &patching, &opts_i, src, bytes)
            };
            state.sync(&jobs, &excluded, &is_manifest, &mut transform)?
        };
        let mut report = DepsReport {
            mode: mode.describe(),
            ..DepsReport::default()
        };
        if !cached {
            let t = Instant::now();
            // Resolve what the user's lock says, not what a previous patched build left.
            if let Ok(bytes) = std::fs::read(&user_lock) {
                write_if_changed(&root.join("Cargo.lock"), &bytes)?;
            }
            selection = deps::select(
                &root.join("Cargo.toml"),
                &mode,
                opts.offline,
                &mut cache.scans,
            )?;
            cache.fingerprint = fingerprint;
            cache.selection = selection.clone();
            std::fs::write(&dep_cache_file, serde_json::to_vec_pretty(&cache)?)
                .with_context(|| format!("writing {}", dep_cache_file.display()))?;
            report.resolved = true;
            report.resolve_secs = t.elapsed().as_secs_f64();
            // Re-patch the manifests now that the dependencies' places are known, and
            // re-instrument the sources now that the instrumented dependencies are.
            opts_i = instrumenting::with_instrumented_deps(
                &opts_i,
                dep_names(&selection).iter().map(String::as_str),
            );
            let resync = |p: &Path| is_manifest(p) || user.should_instrument(p);
            let patching = Patching {
                deps: &selection.deps,
                deps_base: &deps_base,
                core_shims: deps::core_shim_patches(&selection, &support),
            };
            let mut transform = |src: &Path, bytes: Vec<u8>| {
                mirror_transform(&user, &layout, &support, &patching, &opts_i, src, bytes)
            };
            let again = state.sync(&jobs, &excluded, &resync, &mut transform)?;
            stats.written += again.written;
            // The lock (the user's, or the one cargo made in the mirror) as it reads with the
            // copies and shims patched in, or cargo resolves around them.
            let mirror_lock = root.join("Cargo.lock");
            if let Ok(text) = std::fs::read_to_string(&mirror_lock) {
                let unlock_core = !patching.core_shims.is_empty();
                let lock = deps::lock_for_mirror(&text, patching.deps, unlock_core);
                write_if_changed(&mirror_lock, lock.as_bytes())?;
            }
        }
        state.save(&state_file)?;

        // The registry crates themselves.
        let t = Instant::now();
        let deps = selection.deps.clone();
        let deps_state_file = pulse_dir.join("deps-state.json");
        // (parking_lot's instrumentation depends on whether the shim replaces its core.)
        let deps_key = format!(
            "{key}|{}|{}",
            selection.core_shim_versions().join(","),
            dep_names(&selection).join(",")
        );
        let mut deps_state = MirrorState::load(&deps_state_file, &deps_key);
        let dep_jobs: Vec<TreeJob> = deps
            .iter()
            .map(|d| TreeJob {
                src: d.src.clone(),
                dst: dep_dir(&deps_base, d),
            })
            .collect();
        let dep_stats = {
            let mut parses = BTreeMap::new();
            let mut transform = |src: &Path, bytes: Vec<u8>| {
                dep_transform(&deps, &support, &opts_i, &mut parses, src, bytes)
            };
            deps_state.sync(&dep_jobs, &[], &is_manifest, &mut transform)?
        };
        deps_state.save(&deps_state_file)?;
        for d in &deps {
            // Lets `resolve_deps` map a patched-in copy back to its registry source.
            write_if_changed(
                &dep_dir(&deps_base, d).join(ORIGIN_FILE),
                &serde_json::to_vec_pretty(d)?,
            )?;
        }
        stats.files += dep_stats.files;
        stats.transformed += dep_stats.transformed;
        stats.written += dep_stats.written;
        // A dependency with a file the instrumenter cannot parse was copied as it is (its note
        // names the file): half an instrumented crate does not build.
        let unparsed: Vec<(&DepSource, String)> = deps_state
            .notes()
            .filter_map(|(path, n)| {
                let e = n.get("parse_error").filter(|e| !e.is_null())?;
                let d = deps.iter().find(|d| path.starts_with(&d.src))?;
                let rel = path.strip_prefix(&d.src).unwrap_or(path);
                Some((
                    d,
                    format!(
                        "{} {} ({}:{}:{}: {})",
                        d.name,
                        d.version,
                        rel.display(),
                        e["line"],
                        e["column"],
                        e["message"].as_str().unwrap_or_default()
                    ),
                ))
            })
            .collect();
        report.instrumented = deps
            .iter()
            .filter(|d| !unparsed.iter().any(|(u, _)| u == d))
            .map(|d| format!("{} {}", d.name, d.version))
            .collect();
        report.not_parsed = unparsed.into_iter().map(|(_, why)| why).collect();
        report.parking_lot_core_shim_versions = selection.core_shim_versions();
        report.parking_lot_core_shim = !report.parking_lot_core_shim_versions.is_empty();
        report.held_back = selection.held_back.clone();
        report.not_synchronising = selection.not_synchronising.clone();
        report.files_instrumented = dep_stats.transformed.saturating_sub(deps.len());
        report.copy_secs = t.elapsed().as_secs_f64();

        let mut paths = PathMap::default();
        for r in &roots {
            paths.add(&layout.map(r).unwrap(), r);
        }
        for d in &deps {
            paths.add(&dep_dir(&deps_base, d), &d.src);
        }
        // A dependency's file the instrumenter cannot parse stays as it is; that is news for
        // the instrument report (and -v), not a warning about the user's code.
        let dep_notes: Vec<serde_json::Value> = deps_state
            .notes()
            .map(|(_, n)| {
                let mut n = n.clone();
                if let Some(m) = n.as_object_mut() {
                    m.remove("parse_error");
                }
                n
            })
            .collect();
        let summary = Summary::from_notes(state.notes().map(|(_, n)| n).chain(&dep_notes));
        let report_file = pulse_dir.join("instrument-report.json");
        let notes: Vec<&serde_json::Value> = state
            .notes()
            .chain(deps_state.notes())
            .map(|(_, n)| n)
            .collect();
        std::fs::write(
            &report_file,
            serde_json::to_vec_pretty(&serde_json::json!({ "files": notes }))?,
        )
        .with_context(|| format!("writing {}", report_file.display()))?;

        let target_dir = opts
            .build_target_dir
            .clone()
            .or_else(|| std::env::var_os("CARGO_PULSE_TARGET_DIR").map(PathBuf::from))
            .unwrap_or_else(|| pulse_dir.join("target"));
        let target_dir = std::path::absolute(&target_dir)
            .with_context(|| format!("resolving {}", target_dir.display()))?;
        let failures_dir = pulse_dir.join("failures");
        Ok(Mirror {
            user,
            pulse_dir,
            root,
            manifest,
            target_dir,
            failures_dir,
            paths,
            summary,
            stats,
            deps,
            deps_report: report,
            support_root: support.root.clone(),
            _lock: lock,
        })
    }
}

/// Written beside each instrumented dependency's copy: its [`DepSource`].
const ORIGIN_FILE: &str = ".pulse-dep.json";

/// `target/pulse`, or a per-workspace subdirectory of it when the target dir is shared with
/// other workspaces (it lies outside this one, e.g. a global `CARGO_TARGET_DIR`).
fn pulse_dir_for(user: &UserWorkspace) -> PathBuf {
    let base = user.target_dir.join("pulse");
    if user.target_dir.starts_with(&user.root) {
        return base;
    }
    let name = user
        .root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    base.join(format!(
        "{name}-{:016x}",
        fnv(user.root.display().to_string().as_bytes())
    ))
}

fn mirror_transform(
    user: &UserWorkspace,
    layout: &Layout,
    support: &Support,
    patching: &Patching,
    opts: &pulse_instrument::Options,
    src: &Path,
    bytes: Vec<u8>,
) -> Result<Transformed> {
    if src == user.root.join("Cargo.lock") {
        if let Ok(text) = std::str::from_utf8(&bytes) {
            let unlock_core = !patching.core_shims.is_empty();
            return Ok(Transformed {
                bytes: deps::lock_for_mirror(text, patching.deps, unlock_core).into_bytes(),
                note: None,
            });
        }
    }
    if src.file_name().is_some_and(|n| n == "Cargo.toml") {
        let dir = src.parent().unwrap();
        let package = user.packages.iter().find(|p| p.dir == dir);
        let is_root = dir == user.root;
        if package.is_none() && !is_root {
            // Some unrelated crate that happens to live in the tree (a fixture, a template).
            return Ok(Transformed { bytes, note: None });
        }
        let text =
            String::from_utf8(bytes).with_context(|| format!("{} is not UTF-8", src.display()))?;
        let mut doc = manifest::parse(&text, src)?;
        if let Some(ws_root) = package.and_then(|p| p.inherits_from.as_ref()) {
            let ws_path = ws_root.join("Cargo.toml");
            let ws_text = std::fs::read_to_string(&ws_path)
                .with_context(|| format!("reading {}", ws_path.display()))?;
            let ws = manifest::parse(&ws_text, &ws_path)?;
            manifest::inline_workspace_inheritance(&mut doc, &ws, ws_root);
        }
        manifest::repoint_paths(&mut doc, dir, &|meant| {
            layout.map(meant).unwrap_or_else(|| meant.to_path_buf())
        });
        if let Some(p) = package {
            if !p.proc_macro && p.name != "pulse" {
                manifest::add_pulse_dependency(&mut doc, &support.pulse_dir());
            }
        }
        if is_root {
            manifest::ensure_workspace(&mut doc);
            for e in deps::patch_entries(patching.deps, |d| dep_dir(patching.deps_base, d)) {
                manifest::add_crates_io_patch(&mut doc, &e.key, e.package.as_deref(), &e.dir);
            }
            for e in &patching.core_shims {
                manifest::add_crates_io_patch(&mut doc, &e.key, e.package.as_deref(), &e.dir);
            }
        }
        return Ok(Transformed {
            bytes: doc.to_string().into_bytes(),
            note: None,
        });
    }
    if user.should_instrument(src) {
        let place = user.place_of(src);
        return Ok(instrumenting::instrument_file(src, bytes, opts, place));
    }
    Ok(Transformed { bytes, note: None })
}

/// A dependency's first file that does not parse for the instrumenter, with the note naming
/// it (`None`: every file parses).
type ParseCheck = Option<(PathBuf, serde_json::Value)>;

/// Checks every library file of `dep` with the instrumenter's reading, first failure first.
fn check_dep_parses(dep: &DepSource, opts: &pulse_instrument::Options) -> ParseCheck {
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(dep.lib_dir())
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .filter(|p| !dep.build_scripts.iter().any(|b| b == p))
        .collect();
    files.sort();
    files.into_iter().find_map(|path| {
        let bytes = std::fs::read(&path).ok()?;
        let place = instrumenting::Place::of(&dep.facade_roots, &dep.crate_roots, &path);
        let e = instrumenting::parse_error(&path, &bytes, opts, place)?;
        let note = serde_json::json!({
            "path": path,
            "rewrites": [],
            "findings": [],
            "parse_error": { "line": e.line, "column": e.column, "message": e.message },
        });
        Some((path, note))
    })
}

fn dep_transform(
    deps: &[DepSource],
    support: &Support,
    opts: &pulse_instrument::Options,
    parses: &mut BTreeMap<PathBuf, ParseCheck>,
    src: &Path,
    bytes: Vec<u8>,
) -> Result<Transformed> {
    let Some(dep) = deps.iter().find(|d| src.starts_with(&d.src)) else {
        return Ok(Transformed { bytes, note: None });
    };
    if src == dep.src.join("Cargo.toml") {
        let text =
            String::from_utf8(bytes).with_context(|| format!("{} is not UTF-8", src.display()))?;
        let mut doc = manifest::parse(&text, src)?;
        manifest::drop_published_paths(&mut doc);
        manifest::repoint_paths(&mut doc, &dep.src, &|meant| meant.to_path_buf());
        manifest::add_pulse_dependency(&mut doc, &support.pulse_dir());
        return Ok(Transformed {
            bytes: doc.to_string().into_bytes(),
            note: None,
        });
    }
    // Only the library's sources: a dependency's tests, examples and benches are never built.
    let in_lib = src.starts_with(dep.lib_dir());
    if in_lib
        && src.extension().is_some_and(|e| e == "rs")
        && !dep.build_scripts.iter().any(|b| b == src)
    {
        // Instrumented whole or not at all: a crate whose root does not parse lacks its
        // `extern crate pulse;` while its other files name `::pulse::`. (Checked when one of
        // its files changes, so once per copy; the note stays with the file that failed.)
        let unparsed = parses
            .entry(dep.src.clone())
            .or_insert_with(|| check_dep_parses(dep, opts));
        if let Some((path, note)) = unparsed {
            let note = (path == src).then(|| note.clone());
            return Ok(Transformed { bytes, note });
        }
        let place = instrumenting::Place::of(&dep.facade_roots, &dep.crate_roots, src);
        return Ok(instrumenting::instrument_file(src, bytes, opts, place));
    }
    Ok(Transformed { bytes, note: None })
}

/// Where the instrumented registry crates are copied.
fn deps_dir_in(pulse_dir: &Path) -> PathBuf {
    pulse_dir.join("deps")
}

fn dep_dir(base: &Path, d: &DepSource) -> PathBuf {
    base.join(format!("{}-{}", d.name, d.version))
}

/// Finds the registry sources of `wanted` (every version of each) in the mirror's resolved
/// dependency graph. A crate the mirror already patches in (an instrumented copy) is found
/// through the [`ORIGIN_FILE`] beside that copy.
pub fn resolve_deps(
    mirror_manifest: &Path,
    wanted: &[String],
    offline: bool,
) -> Result<Vec<DepSource>> {
    let meta = deps::metadata(mirror_manifest, offline, false)?;
    let registry = workspace::registry_packages(&meta);
    let mut out = Vec::new();
    for name in wanted {
        if let Some(pkgs) = registry.get(name) {
            for p in pkgs {
                if p.targets
                    .iter()
                    .any(|t| t.kind.contains(&cargo_metadata::TargetKind::ProcMacro))
                {
                    bail!("--instrument-dep {name}: `{name}` is a proc-macro crate; it runs in the compiler, not under the scheduler");
                }
                out.push(deps::dep_source(p));
            }
            continue;
        }
        let copies: Vec<DepSource> = meta
            .packages
            .iter()
            .filter(|p| p.source.is_none() && p.name == *name)
            .filter_map(|p| {
                let origin = p.manifest_path.parent()?.join(ORIGIN_FILE);
                serde_json::from_slice(&std::fs::read(origin).ok()?).ok()
            })
            .collect();
        if copies.is_empty() {
            bail!(
                "--instrument-dep {name}: no registry crate named `{name}` in the workspace's dependencies \
                 (only crates.io dependencies can be instrumented; path dependencies already are)"
            );
        }
        out.extend(copies);
    }
    Ok(out)
}

/// Changes when the user's manifests or lock file change (and so may resolve differently), when
/// the mode changes, and with every build of cargo-pulse (its support crates and its scan).
fn deps_fingerprint(user: &UserWorkspace, mode: &str) -> String {
    let mut bytes = format!("{mode}|{}|{}|", tool_fingerprint(), Support::hash()).into_bytes();
    let mut files: Vec<PathBuf> = user
        .packages
        .iter()
        .map(|p| p.dir.join("Cargo.toml"))
        .collect();
    files.push(user.root.join("Cargo.toml"));
    files.push(user.root.join("Cargo.lock"));
    for f in files {
        bytes.extend(std::fs::read(&f).unwrap_or_default());
    }
    format!("{:016x}", fnv(&bytes))
}

/// Identifies this build of cargo-pulse (and so of the instrumenter it contains): a reinstall
/// re-instruments everything.
fn tool_fingerprint() -> String {
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| std::fs::metadata(p).ok());
    let stamp = exe
        .map(|m| {
            (
                m.len(),
                m.modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos()),
            )
        })
        .unwrap_or_default();
    format!("{}-{}-{}", env!("CARGO_PKG_VERSION"), stamp.0, stamp.1)
}

pub fn fnv(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

fn common_ancestor(paths: &[PathBuf]) -> PathBuf {
    let mut anchor = paths[0].clone();
    for p in &paths[1..] {
        while !p.starts_with(&anchor) {
            if !anchor.pop() {
                break;
            }
        }
    }
    anchor
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The graph is read with every feature on: crates this build never compiled are named
    /// apart, not counted as instrumented for it.
    #[test]
    fn the_dependencies_line_names_crates_outside_the_build_apart() {
        let report = DepsReport {
            mode: "auto".into(),
            instrumented: vec![
                "loom 0.7.2".into(),
                "sdd 4.8.11".into(),
                "spin 0.9.8".into(),
            ],
            ..DepsReport::default()
        };
        let built: BTreeSet<String> = ["sdd-4.8.11".to_string(), "spin-0.9.8".to_string()].into();
        let line = report.line(Some(&built));
        assert!(
            line.starts_with(
                "2 instrumented (auto): sdd 4.8.11, spin 0.9.8; 1 more not in this build"
            ),
            "{line}"
        );
        assert!(
            line.contains("packages it does not test): loom 0.7.2;"),
            "{line}"
        );
        // A build that failed did not get to every crate: no split.
        let line = report.line(None);
        assert!(
            line.starts_with("3 instrumented (auto): loom 0.7.2, sdd"),
            "{line}"
        );
        assert!(!line.contains("not in this build"), "{line}");
    }

    #[test]
    fn layout_keeps_relative_positions() {
        let roots = vec![
            PathBuf::from("/home/u/proj"),
            PathBuf::from("/home/u/shared/lib"),
        ];
        let l = Layout {
            anchor: common_ancestor(&roots),
            base: PathBuf::from("/home/u/proj/target/pulse/mirror"),
            roots,
        };
        assert_eq!(l.anchor, PathBuf::from("/home/u"));
        assert_eq!(l.map(Path::new("/home/u")), None);
        let single = Layout {
            anchor: "/p".into(),
            base: "/p/target/pulse/mirror".into(),
            roots: vec!["/p".into()],
        };
        assert_eq!(
            single.map(Path::new("/p")).unwrap().as_os_str(),
            "/p/target/pulse/mirror"
        );
        assert_eq!(
            l.map(Path::new("/home/u/proj/src/lib.rs")),
            Some(PathBuf::from(
                "/home/u/proj/target/pulse/mirror/proj/src/lib.rs"
            ))
        );
        assert_eq!(
            l.map(Path::new("/home/u/shared/lib")),
            Some(PathBuf::from("/home/u/proj/target/pulse/mirror/shared/lib"))
        );
        assert_eq!(l.map(Path::new("/home/u/elsewhere")), None);
    }

    #[test]
    fn a_dependency_with_a_file_that_does_not_parse_is_left_whole_and_that_file_named() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::create_dir_all(src.join("nightly")).unwrap();
        std::fs::write(
            src.join("lib.rs"),
            "use std::sync::Mutex;\npub static M: Mutex<u8> = Mutex::new(0);\n",
        )
        .unwrap();
        let dep = DepSource {
            name: "odd".into(),
            version: "1.0.0".into(),
            src: dir.path().to_path_buf(),
            lib_dir: src.clone(),
            build_scripts: vec![],
            facade_roots: vec![],
            crate_roots: vec![src.join("lib.rs")],
        };
        let opts = pulse_instrument::Options::default();
        assert!(check_dep_parses(&dep, &opts).is_none(), "every file parses");
        // Syntax syn does not read yet (unstable `gen` blocks): the crate is copied as it is.
        let gen = src.join("nightly/gen.rs");
        std::fs::write(&gen, "pub fn f() {\n    let _ = async gen {};\n}\n").unwrap();
        let (path, note) = check_dep_parses(&dep, &opts).expect("gen.rs does not parse");
        assert_eq!(path, gen);
        assert_eq!(note["parse_error"]["line"], 2, "{note}");
        let lib = std::fs::read(src.join("lib.rs")).unwrap();
        let mut parses = BTreeMap::new();
        let support = Support {
            root: dir.path().join("support"),
        };
        let out = dep_transform(
            &[dep],
            &support,
            &opts,
            &mut parses,
            &src.join("lib.rs"),
            lib.clone(),
        )
        .unwrap();
        assert_eq!(out.bytes, lib, "no file of it is rewritten");
        assert!(
            out.note.is_none(),
            "the note stays with the file that failed"
        );
    }
}
