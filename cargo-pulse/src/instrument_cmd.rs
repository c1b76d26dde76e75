//! `cargo pulse instrument --crate NAME --out DIR [--json]`: writes one crate, instrumented and
//! buildable on its own, to DIR and prints the instrumenter's report. For reading what pulse
//! does to a crate, or for building it by hand.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::cli::InstrumentArgs;
use crate::copy_tree::{MirrorState, Transformed, TreeJob};
use crate::instrumenting;
use crate::manifest;
use crate::mirror::{self, Mirror, MirrorOptions};
use crate::support::Support;
use crate::workspace::UserWorkspace;

pub fn run(args: InstrumentArgs) -> Result<i32> {
    let user = UserWorkspace::discover(args.manifest_path.as_deref(), None)?;
    instrumenting::configure(&user, &Default::default())?;
    // The dependencies `cargo pulse test` would instrument, decided the same way (and cached
    // with it): they are reported, and paths into them are not foreign synchronisation.
    let mirror = Mirror::prepare(
        user.clone(),
        &MirrorOptions {
            instrument_deps: args.instrument_deps.clone(),
            offline: args.offline,
            ..Default::default()
        },
    )?;
    let package = user.packages.iter().find(|p| p.name == args.krate);
    let (src, build_scripts, (facade_roots, crate_roots), inherits_from) = match package {
        Some(p) if p.proc_macro => bail!(
            "`{}` is a proc-macro crate: it runs in the compiler and is not instrumented",
            p.name
        ),
        Some(p) => {
            let ws = if p.member && p.dir != user.root {
                Some(user.root.clone())
            } else {
                p.inherits_from.clone()
            };
            (
                p.dir.clone(),
                p.build_scripts.clone(),
                (p.facade_roots.clone(), p.crate_roots.clone()),
                ws,
            )
        }
        None => {
            // A registry dependency: resolve the graph in the mirror, never in the user's tree.
            let deps = mirror::resolve_deps(
                &mirror.root.join("Cargo.toml"),
                std::slice::from_ref(&args.krate),
                args.offline,
            )?;
            let d = deps
                .into_iter()
                .next()
                .expect("resolve_deps returns the crate or fails");
            (
                d.src,
                d.build_scripts,
                (d.facade_roots, d.crate_roots),
                None,
            )
        }
    };
    // (`..` resolved: `absolute` keeps it, and `crate/../out` is not inside `crate`.)
    let out = crate::workspace::normalize(
        &std::path::absolute(&args.out)
            .with_context(|| format!("resolving {}", args.out.display()))?,
    );
    if out.starts_with(&src) {
        bail!(
            "--out {} is inside the crate being instrumented",
            out.display()
        );
    }
    check_out_dir(&out, &user, args.force)?;
    let support = Support::ensure(&user.target_dir.join("pulse").join("support"))?;

    // Copy, with the manifest made standalone and each Rust file instrumented by the same
    // per-file function as `cargo pulse test`'s mirror (same crate context, same cfgs).
    // The crate itself is instrumented: paths into it are not foreign synchronisation.
    let opts = instrumenting::with_instrumented_deps(
        &instrumenting::options(&user.atomic_paths),
        std::iter::once(args.krate.as_str()).chain(mirror.deps.iter().map(|d| d.name.as_str())),
    );
    let mut report = pulse_instrument::TreeReport::default();
    // Rust files no target of the user's crate compiles (fixtures), copied as written as
    // `cargo pulse test` copies them.
    let mut not_compiled: Vec<PathBuf> = Vec::new();
    let mut state = MirrorState::default();
    let jobs = [TreeJob {
        src: src.clone(),
        dst: out.clone(),
    }];
    let root_manifest = src.join("Cargo.toml");
    state.sync(
        &jobs,
        std::slice::from_ref(&user.target_dir),
        &|_| true,
        &mut |path: &Path, bytes: Vec<u8>| {
            let rust = instrumented_here(path, &src, &build_scripts);
            if rust && !package.is_none_or(|p| p.compiles(path)) {
                not_compiled.push(path.strip_prefix(&src).unwrap_or(path).to_path_buf());
            } else if rust {
                let place = instrumenting::Place::of(&facade_roots, &crate_roots, path);
                let (bytes, file_report) =
                    instrumenting::instrument_bytes(path, bytes, &opts, place);
                let shown = path.strip_prefix(&src).unwrap_or(path).to_path_buf();
                let file_report = match file_report {
                    Ok(r) => pulse_instrument::FileReport { path: shown, ..r },
                    Err(e) => pulse_instrument::FileReport {
                        path: shown,
                        parse_error: Some(e),
                        ..Default::default()
                    },
                };
                if !file_report.is_empty() {
                    report.files.push(file_report);
                }
                return Ok(Transformed { bytes, note: None });
            }
            if path != root_manifest {
                return Ok(Transformed { bytes, note: None });
            }
            let text = String::from_utf8(bytes)?;
            let mut doc = manifest::parse(&text, path)?;
            if let Some(ws_root) = &inherits_from {
                let ws_path = ws_root.join("Cargo.toml");
                let ws_text = std::fs::read_to_string(&ws_path)
                    .with_context(|| format!("reading {}", ws_path.display()))?;
                manifest::inline_workspace_inheritance(
                    &mut doc,
                    &manifest::parse(&ws_text, &ws_path)?,
                    ws_root,
                );
            }
            manifest::repoint_paths(&mut doc, &src, &|meant| meant.to_path_buf());
            manifest::add_pulse_dependency(&mut doc, &support.pulse_dir());
            manifest::ensure_workspace(&mut doc);
            Ok(Transformed {
                bytes: doc.to_string().into_bytes(),
                note: None,
            })
        },
    )?;
    report.files.sort_by(|a, b| a.path.cmp(&b.path));
    not_compiled.sort();
    let marker = out.join(MARKER);
    std::fs::write(&marker, "written by `cargo pulse instrument`\n")
        .with_context(|| format!("writing {}", marker.display()))?;
    let mut stdout = std::io::stdout().lock();
    let deps = &mirror.deps_report;
    if args.json {
        let mut v = serde_json::to_value(&report)?;
        if let Some(m) = v.as_object_mut() {
            m.insert("dependencies".into(), serde_json::to_value(deps)?);
            m.insert("not_compiled".into(), serde_json::to_value(&not_compiled)?);
        }
        serde_json::to_writer_pretty(&mut stdout, &v)?;
        writeln!(stdout)?;
    } else {
        write!(stdout, "{report}")?;
        for path in &not_compiled {
            writeln!(
                stdout,
                "{}: copied as written: no target compiles it (a fixture a test reads or \
                 compiles itself)",
                path.display()
            )?;
        }
        writeln!(
            stdout,
            "dependencies, as `cargo pulse test` instruments them (--instrument-deps {}):",
            deps.mode
        )?;
        for line in deps.decisions() {
            writeln!(stdout, "  {line}")?;
        }
        writeln!(
            stdout,
            "instrumented `{}` from {} into {}",
            args.krate,
            src.display(),
            out.display()
        )?;
    }
    Ok(crate::exit_code::SUCCESS)
}

/// The Rust files of the crate at `src` that run under the scheduler: not its build scripts
/// (`build.rs` beside a manifest included), not those of packages nested in it.
fn instrumented_here(path: &Path, src: &Path, build_scripts: &[PathBuf]) -> bool {
    path.extension().is_some_and(|e| e == "rs")
        && !build_scripts.iter().any(|b| b == path)
        && !(path.file_name().is_some_and(|n| n == "build.rs")
            && path
                .parent()
                .is_some_and(|d| d.join("Cargo.toml").is_file()))
        && path
            .ancestors()
            .skip(1)
            .take_while(|d| *d != src)
            .all(|d| !d.join("Cargo.toml").is_file())
}

/// Left in every `--out` directory: a later run may write there again.
const MARKER: &str = ".cargo-pulse-instrument";

/// `--out` never overwrites what pulse did not write: the workspace root, a package's
/// directory (or a directory holding one), and any non-empty directory without [`MARKER`] are
/// refused unless `force`.
fn check_out_dir(out: &Path, user: &UserWorkspace, force: bool) -> Result<()> {
    if force {
        return Ok(());
    }
    let hint = "choose a new or empty directory, or pass --force";
    if out == user.root || user.root.starts_with(out) {
        bail!(
            "--out {} would write over the workspace at {}: {hint}",
            out.display(),
            user.root.display()
        );
    }
    if let Some(p) = user.packages.iter().find(|p| p.dir.starts_with(out)) {
        bail!(
            "--out {} would write over the package `{}` at {}: {hint}",
            out.display(),
            p.name,
            p.dir.display()
        );
    }
    let non_empty = match std::fs::read_dir(out) {
        Ok(mut entries) => entries.next().is_some(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(e).with_context(|| format!("reading {}", out.display())),
    };
    if non_empty && !out.join(MARKER).is_file() {
        bail!(
            "--out {} is not empty and was not written by `cargo pulse instrument`: {hint}",
            out.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::UserPackage;

    fn user(root: &Path) -> UserWorkspace {
        UserWorkspace {
            root: root.to_path_buf(),
            target_dir: root.join("target"),
            manifest: root.join("Cargo.toml"),
            packages: vec![UserPackage {
                name: "member".into(),
                dir: root.join("crates/member"),
                member: true,
                proc_macro: false,
                build_scripts: vec![],
                facade_roots: vec![],
                crate_roots: vec![],
                inherits_from: None,
                compiled: None,
            }],
            metadata_instrument_deps: vec![],
            atomic_paths: vec![],
        }
    }

    #[test]
    fn out_never_overwrites_what_pulse_did_not_write() {
        let tmp = std::env::temp_dir().join(format!("cargo-pulse-out-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let ws = tmp.join("ws");
        let u = user(&ws);
        let refused = |out: &Path| check_out_dir(out, &u, false).is_err();
        // The workspace, a member, a directory holding them.
        assert!(refused(&ws));
        assert!(refused(&ws.join("crates/member")));
        assert!(refused(&ws.join("crates")));
        assert!(refused(&tmp));
        // New or empty: fine.
        assert!(!refused(&tmp.join("new")));
        let other = tmp.join("other");
        std::fs::create_dir_all(&other).unwrap();
        assert!(!refused(&other));
        // Someone else's files: refused, unless forced; ours: fine.
        std::fs::write(other.join("notes.txt"), "mine").unwrap();
        assert!(refused(&other));
        assert!(check_out_dir(&other, &u, true).is_ok());
        std::fs::write(other.join(MARKER), "").unwrap();
        assert!(!refused(&other));
        let _ = std::fs::remove_dir_all(&tmp);
    }
}
