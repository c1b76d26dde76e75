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
    let user = UserWorkspace::discover(args.manifest_path.as_deref())?;
    let (src, build_scripts, facade_roots, inherits_from) =
        match user.packages.iter().find(|p| p.name == args.krate) {
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
                    p.facade_roots.clone(),
                    ws,
                )
            }
            None => {
                // A registry dependency: resolve the graph in the mirror, never in the user's tree.
                let m = Mirror::prepare(
                    user.clone(),
                    &MirrorOptions {
                        offline: args.offline,
                        ..Default::default()
                    },
                )?;
                let deps = mirror::resolve_deps(
                    &m.root.join("Cargo.toml"),
                    std::slice::from_ref(&args.krate),
                    args.offline,
                )?;
                let d = deps
                    .into_iter()
                    .next()
                    .expect("resolve_deps returns the crate or fails");
                (d.src, d.build_scripts, d.facade_roots, None)
            }
        };
    let out = std::path::absolute(&args.out)
        .with_context(|| format!("resolving {}", args.out.display()))?;
    if out.starts_with(&src) {
        bail!(
            "--out {} is inside the crate being instrumented",
            out.display()
        );
    }
    let support = Support::ensure(&user.target_dir.join("pulse").join("support"))?;

    // Copy, with the manifest made standalone.
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

    let skip: Vec<PathBuf> = build_scripts
        .iter()
        .filter_map(|b| b.strip_prefix(&src).ok())
        .map(|r| out.join(r))
        .collect();
    let roots: Vec<PathBuf> = facade_roots
        .iter()
        .filter_map(|r| r.strip_prefix(&src).ok())
        .map(|r| out.join(r))
        .collect();
    let opts = instrumenting::options(&user.atomic_paths);
    let report = pulse_instrument::instrument_tree(&out, &skip, &roots, &opts)
        .with_context(|| format!("instrumenting {}", out.display()))?;
    let mut stdout = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut stdout, &report)?;
        writeln!(stdout)?;
    } else {
        write!(stdout, "{report}")?;
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
