//! The support crates (`pulse`, `pulse-protocol`, `pulse-runtime`, `pulse-shim-std`,
//! `pulse-macros`) that every instrumented crate links against, and pulse's `parking_lot_core`
//! 0.2 to 0.10, patched in for the registry's. They are embedded in the binary by `build.rs` and unpacked
//! on first use, so an installed `cargo-pulse` never depends on where the repository was.
//!
//! The unpacked directory is named by version and content hash, and shared by every workspace on
//! the machine (`$CARGO_HOME/pulse/`): cargo then sees the same path dependency everywhere, and a
//! shared `--pulse-target-dir` builds pulse once for all of them.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::manifest;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/support_files.rs"));
}

/// An unpacked support tree.
#[derive(Debug, Clone)]
pub struct Support {
    pub root: PathBuf,
}

impl Support {
    /// The `pulse` crate that mirrors depend on.
    pub fn pulse_dir(&self) -> PathBuf {
        self.root.join("pulse")
    }

    /// pulse's `parking_lot_core` 0.`minor` (0.9: the implementation, its parking goes to the
    /// scheduler; 0.2 to 0.8 and 0.10: that version's API over the 0.9 one).
    pub fn parking_lot_core_dir(&self, minor: u64) -> PathBuf {
        if minor == 9 {
            self.root.join("shim-parking-lot-core")
        } else {
            self.root.join(format!("shim-parking-lot-core-0.{minor}"))
        }
    }

    /// A string that appears in every path inside an unpacked support tree.
    pub fn root_marker() -> String {
        format!(
            "support-{}-{}",
            env!("CARGO_PKG_VERSION"),
            embedded::SUPPORT_HASH
        )
    }

    /// A short identity of the embedded sources, for cache keys.
    pub fn hash() -> &'static str {
        embedded::SUPPORT_HASH
    }

    /// Unpacks the support crates (once per content hash) and returns where they are.
    /// `fallback` (inside the user's target dir) is used when `$CARGO_HOME` is not writable.
    pub fn ensure(fallback: &Path) -> Result<Support> {
        let name = Self::root_marker();
        let mut candidates = Vec::new();
        if let Some(dir) = std::env::var_os("CARGO_PULSE_SUPPORT_DIR") {
            candidates.push(PathBuf::from(dir));
        } else if let Some(home) = cargo_home() {
            candidates.push(home.join("pulse"));
        }
        candidates.push(fallback.to_path_buf());
        let mut last_err = None;
        for base in candidates {
            let root = base.join(&name);
            if root.join(".complete").is_file() {
                return Ok(Support { root });
            }
            match unpack(&base, &name) {
                Ok(()) => return Ok(Support { root }),
                Err(e) => last_err = Some(e),
            }
        }
        Err(last_err
            .unwrap()
            .context("unpacking pulse's support crates"))
    }
}

fn cargo_home() -> Option<PathBuf> {
    if let Some(h) = std::env::var_os("CARGO_HOME") {
        return Some(PathBuf::from(h));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo"))
}

/// Writes the tree to a temporary sibling and renames it into place, so a concurrent
/// `cargo pulse` never sees a half-written support tree.
fn unpack(base: &Path, name: &str) -> Result<()> {
    let tmp = base.join(format!("{name}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let root = base.join(name);
    // Manifests name their siblings by their final place, not the temporary one.
    write_tree(&tmp, &root).inspect_err(|_| {
        let _ = std::fs::remove_dir_all(&tmp);
    })?;
    match std::fs::rename(&tmp, &root) {
        Ok(()) => Ok(()),
        // Another process won the race; its tree is identical.
        Err(_) if root.join(".complete").is_file() => {
            let _ = std::fs::remove_dir_all(&tmp);
            Ok(())
        }
        Err(e) => {
            Err(e).with_context(|| format!("renaming {} to {}", tmp.display(), root.display()))
        }
    }
}

fn write_tree(root: &Path, final_root: &Path) -> Result<()> {
    let ws_text = file_text("workspace/Cargo.toml")?;
    let ws = manifest::parse(&ws_text, Path::new("<embedded workspace Cargo.toml>"))?;
    for (name, bytes) in embedded::SUPPORT_FILES {
        if name.starts_with("workspace/") {
            continue;
        }
        let dest = root.join(name);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        let contents: Vec<u8> = if name.ends_with("/Cargo.toml") {
            standalone_manifest(std::str::from_utf8(bytes)?, &ws, final_root)?.into_bytes()
        } else {
            bytes.to_vec()
        };
        std::fs::write(&dest, contents).with_context(|| format!("writing {}", dest.display()))?;
    }
    std::fs::write(root.join(".complete"), Support::hash())
        .with_context(|| format!("writing {}/.complete", root.display()))?;
    Ok(())
}

/// A support crate's manifest made standalone: inherited fields inlined (the workspace's
/// `path = "runtime"` entries land inside `root`), dev-only sections dropped.
fn standalone_manifest(text: &str, ws: &toml_edit::DocumentMut, root: &Path) -> Result<String> {
    let mut doc = manifest::parse(text, Path::new("<embedded Cargo.toml>"))?;
    manifest::inline_workspace_inheritance(&mut doc, ws, root);
    manifest::strip_dev_targets(&mut doc);
    Ok(doc.to_string())
}

fn file_text(name: &str) -> Result<String> {
    let (_, bytes) = embedded::SUPPORT_FILES
        .iter()
        .find(|(n, _)| *n == name)
        .with_context(|| format!("{name} is not embedded"))?;
    Ok(String::from_utf8(bytes.to_vec())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_support_crate_is_embedded_with_a_standalone_manifest() {
        let dir = tempfile::tempdir().unwrap();
        write_tree(dir.path(), dir.path()).unwrap();
        for krate in embedded::SUPPORT_CRATES {
            let text = std::fs::read_to_string(dir.path().join(krate).join("Cargo.toml")).unwrap();
            assert!(
                !text.contains("workspace = true") && !text.contains(".workspace"),
                "{krate}: {text}"
            );
            assert!(
                dir.path().join(krate).join("src/lib.rs").is_file(),
                "{krate}"
            );
        }
        // One pulse-runtime for all: the shim's `current()` must see the executions pulse runs.
        let runtime_path = dir.path().join("runtime").display().to_string();
        for krate in ["pulse", "shim-parking-lot-core"] {
            let text = std::fs::read_to_string(dir.path().join(krate).join("Cargo.toml")).unwrap();
            assert!(text.contains(&runtime_path), "{krate}: {text}");
        }
    }
}
