//! Maps paths in the mirror back to the user's files, in any text we show: compiler messages,
//! panic locations, failure reports. The instrumenter preserves line numbers, so replacing the
//! directory prefix is all it takes for `file:line:col` to point at the user's own source.
//!
//! (We map text rather than pass `--remap-path-prefix`: changing RUSTFLAGS per workspace would
//! rebuild pulse and every dependency whenever two workspaces share a pulse target dir.)

use std::path::Path;

#[derive(Debug, Clone, Default)]
pub struct PathMap {
    /// (mirror prefix, user prefix), longest mirror prefix first.
    pairs: Vec<(String, String)>,
}

impl PathMap {
    pub fn add(&mut self, mirror: &Path, user: &Path) {
        self.pairs
            .push((mirror.display().to_string(), user.display().to_string()));
        self.pairs.sort_by_key(|(m, _)| std::cmp::Reverse(m.len()));
    }

    /// Replaces every mirror prefix in `text` with the user's directory.
    pub fn map_text(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (m, u) in &self.pairs {
            if out.contains(m.as_str()) {
                out = out.replace(m.as_str(), u);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_wins() {
        let mut m = PathMap::default();
        m.add(Path::new("/u/target/pulse/mirror"), Path::new("/u"));
        m.add(
            Path::new("/u/target/pulse/deps/foo-1.0.0"),
            Path::new("/home/.cargo/registry/src/foo-1.0.0"),
        );
        assert_eq!(
            m.map_text("--> /u/target/pulse/mirror/src/lib.rs:3:5 and /u/target/pulse/deps/foo-1.0.0/src/lib.rs:1:1"),
            "--> /u/src/lib.rs:3:5 and /home/.cargo/registry/src/foo-1.0.0/src/lib.rs:1:1"
        );
    }
}
