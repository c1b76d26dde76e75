//! Mirrors source trees into the scratch area, file by file, passing each file through a
//! transform (instrumentation for Rust sources, patching for manifests).
//!
//! Re-runs are cheap: a state file remembers each source file's size and mtime, so unchanged
//! files are neither read nor transformed; and a file is only written when its new contents
//! differ, so cargo's mtime-based fingerprints see nothing new and rebuild nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use walkdir::WalkDir;

/// Directory names never mirrored: version control data.
const SKIP_NAMES: &[&str] = &[".git", ".hg", ".svn", ".jj", ".pijul"];

/// One tree to mirror.
#[derive(Debug, Clone)]
pub struct TreeJob {
    pub src: PathBuf,
    pub dst: PathBuf,
}

/// What a transform produced for one file.
pub struct Transformed {
    pub bytes: Vec<u8>,
    /// Kept in the state and handed back on later runs when the file is unchanged (the
    /// instrumentation report of that file).
    pub note: Option<serde_json::Value>,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
struct Entry {
    src: PathBuf,
    len: u64,
    mtime_ns: u128,
    note: Option<serde_json::Value>,
}

/// The persisted knowledge of what the mirror holds.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct MirrorState {
    /// Everything besides a file's own bytes that its transform depends on; a change re-runs
    /// every transform.
    key: String,
    entries: BTreeMap<PathBuf, Entry>,
}

#[derive(Debug, Default, Clone, Copy)]
pub struct SyncStats {
    pub files: usize,
    pub transformed: usize,
    pub written: usize,
    pub removed: usize,
}

impl MirrorState {
    pub fn load(path: &Path, key: &str) -> MirrorState {
        let state: MirrorState = std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        if state.key == key {
            state
        } else {
            // Keep entries (so stale files still get removed) but forget their fingerprints.
            let entries = state
                .entries
                .into_iter()
                .map(|(k, e)| {
                    (
                        k,
                        Entry {
                            src: e.src,
                            ..Entry::default()
                        },
                    )
                })
                .collect();
            MirrorState {
                key: key.to_string(),
                entries,
            }
        }
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        let bytes = serde_json::to_vec(self)?;
        std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
    }

    /// The notes of every mirrored file, by source path.
    pub fn notes(&self) -> impl Iterator<Item = (&Path, &serde_json::Value)> {
        self.entries
            .values()
            .filter_map(|e| e.note.as_ref().map(|n| (e.src.as_path(), n)))
    }

    /// Mirrors `jobs`, skipping `excluded` directories (absolute) and any directory holding a
    /// `CACHEDIR.TAG` (cargo target dirs). `transform(src, bytes)` makes the mirrored contents;
    /// files for which `always(src)` holds are transformed even when unchanged (manifests,
    /// whose patching depends on more than the file).
    pub fn sync(
        &mut self,
        jobs: &[TreeJob],
        excluded: &[PathBuf],
        always: &dyn Fn(&Path) -> bool,
        transform: &mut dyn FnMut(&Path, Vec<u8>) -> Result<Transformed>,
    ) -> Result<SyncStats> {
        let mut stats = SyncStats::default();
        let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
        for job in jobs {
            let walker = WalkDir::new(&job.src)
                .follow_links(false)
                .sort_by_file_name()
                .into_iter()
                .filter_entry(|e| {
                    if !e.file_type().is_dir() {
                        return true;
                    }
                    let p = e.path();
                    let name = e.file_name().to_string_lossy();
                    !(SKIP_NAMES.contains(&name.as_ref())
                        || excluded.iter().any(|x| x == p)
                        || (e.depth() > 0 && p.join("CACHEDIR.TAG").is_file()))
                });
            for entry in walker {
                let entry = entry.with_context(|| format!("walking {}", job.src.display()))?;
                let src = entry.path();
                let rel = src
                    .strip_prefix(&job.src)
                    .expect("walkdir stays under its root");
                let dst = job.dst.join(rel);
                if entry.file_type().is_dir() {
                    std::fs::create_dir_all(&dst)
                        .with_context(|| format!("creating {}", dst.display()))?;
                    continue;
                }
                if entry.file_type().is_symlink() && src.is_dir() {
                    link_dir(src, &dst)?;
                    continue;
                }
                stats.files += 1;
                seen.insert(dst.clone());
                let meta = std::fs::metadata(src)
                    .with_context(|| format!("reading metadata of {}", src.display()))?;
                let len = meta.len();
                let mtime_ns = meta
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                if let Some(e) = self.entries.get(&dst) {
                    if e.len == len
                        && e.mtime_ns == mtime_ns
                        && e.mtime_ns != 0
                        && e.src == src
                        && !always(src)
                        && dst.exists()
                    {
                        continue;
                    }
                }
                let bytes =
                    std::fs::read(src).with_context(|| format!("reading {}", src.display()))?;
                let out = transform(src, bytes)
                    .with_context(|| format!("preparing the mirror of {}", src.display()))?;
                stats.transformed += 1;
                if write_if_changed(&dst, &out.bytes)? {
                    stats.written += 1;
                }
                self.entries.insert(
                    dst,
                    Entry {
                        src: src.to_path_buf(),
                        len,
                        mtime_ns,
                        note: out.note,
                    },
                );
            }
        }
        // Files whose source is gone.
        let stale: Vec<PathBuf> = self
            .entries
            .keys()
            .filter(|k| !seen.contains(*k))
            .cloned()
            .collect();
        for dst in stale {
            self.entries.remove(&dst);
            if dst.is_file() {
                std::fs::remove_file(&dst)
                    .with_context(|| format!("removing stale {}", dst.display()))?;
                stats.removed += 1;
            }
        }
        Ok(stats)
    }
}

/// Writes `bytes` to `path` unless it already holds exactly them; returns whether it wrote.
pub fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<bool> {
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(false);
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))?;
    Ok(true)
}

/// A symlinked directory is mirrored as a link to the original's target.
fn link_dir(src: &Path, dst: &Path) -> Result<()> {
    let target =
        std::fs::canonicalize(src).with_context(|| format!("resolving link {}", src.display()))?;
    if std::fs::read_link(dst).is_ok_and(|t| t == target) {
        return Ok(());
    }
    let _ = std::fs::remove_file(dst);
    #[cfg(unix)]
    std::os::unix::fs::symlink(&target, dst)
        .with_context(|| format!("linking {}", dst.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upper(_: &Path, b: Vec<u8>) -> Result<Transformed> {
        Ok(Transformed {
            bytes: b.to_ascii_uppercase(),
            note: None,
        })
    }

    #[test]
    fn copies_transforms_and_skips_unchanged_and_excluded() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        let dst = tmp.path().join("dst");
        std::fs::create_dir_all(src.join("a/.git")).unwrap();
        std::fs::create_dir_all(src.join("target")).unwrap();
        std::fs::create_dir_all(src.join("other-target")).unwrap();
        std::fs::write(src.join("other-target/CACHEDIR.TAG"), "x").unwrap();
        std::fs::write(src.join("a/f.rs"), "hello").unwrap();
        std::fs::write(src.join("a/.git/HEAD"), "x").unwrap();
        std::fs::write(src.join("target/big"), "x").unwrap();
        let jobs = [TreeJob {
            src: src.clone(),
            dst: dst.clone(),
        }];
        let state_file = tmp.path().join("state.json");

        let mut st = MirrorState::load(&state_file, "k1");
        let s = st
            .sync(&jobs, &[src.join("target")], &|_| false, &mut upper)
            .unwrap();
        st.save(&state_file).unwrap();
        assert_eq!((s.files, s.transformed, s.written), (1, 1, 1));
        assert_eq!(
            std::fs::read_to_string(dst.join("a/f.rs")).unwrap(),
            "HELLO"
        );
        assert!(
            !dst.join("a/.git").exists()
                && !dst.join("target").exists()
                && !dst.join("other-target").exists()
        );

        let mut st = MirrorState::load(&state_file, "k1");
        let s = st
            .sync(&jobs, &[src.join("target")], &|_| false, &mut upper)
            .unwrap();
        assert_eq!((s.files, s.transformed, s.written), (1, 0, 0));

        // A new key re-runs transforms but writes nothing that did not change.
        let mut st = MirrorState::load(&state_file, "k2");
        let s = st
            .sync(&jobs, &[src.join("target")], &|_| false, &mut upper)
            .unwrap();
        st.save(&state_file).unwrap();
        assert_eq!((s.transformed, s.written), (1, 0));

        std::fs::remove_file(src.join("a/f.rs")).unwrap();
        let mut st = MirrorState::load(&state_file, "k2");
        let s = st
            .sync(&jobs, &[src.join("target")], &|_| false, &mut upper)
            .unwrap();
        assert_eq!(s.removed, 1);
        assert!(!dst.join("a/f.rs").exists());
    }
}
