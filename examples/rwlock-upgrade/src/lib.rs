//! A shared document behind an `RwLock`. `append` renders the new text under the read
//! lock (so readers are not blocked while it works), drops the read guard, takes the write
//! guard and stores the rendered text, assuming the document has not changed in between.
//! `RwLock` has no atomic upgrade: another `append` can commit between the two guards, and
//! its line is overwritten (a lost update from a stale read).
//!
//! The fixed twin re-checks the version under the write lock and re-renders from the
//! current text if someone else committed first.

use std::sync::Arc;
use std::thread;

#[derive(Clone, Debug, Default)]
pub struct Doc {
    pub text: String,
    /// Number of committed appends.
    pub version: u64,
}

fn render(text: &str, line: &str) -> String {
    format!("{text}{line}\n")
}

pub mod buggy {
    use super::{render, Doc};
    use std::sync::RwLock;

    #[derive(Default)]
    pub struct SharedDoc {
        doc: RwLock<Doc>,
    }

    impl SharedDoc {
        pub fn new() -> Self {
            Self::default()
        }

        pub fn append(&self, line: &str) {
            let (seen_version, rendered) = {
                let doc = self.doc.read().unwrap();
                (doc.version, render(&doc.text, line))
            }; // read guard dropped here
            let mut doc = self.doc.write().unwrap();
            // BUG: assumes the document is still at `seen_version`. If another append
            // committed in between, its line is overwritten.
            doc.text = rendered;
            doc.version = seen_version + 1;
        }

        pub fn snapshot(&self) -> Doc {
            self.doc.read().unwrap().clone()
        }
    }
}

pub mod fixed {
    use super::{render, Doc};
    use std::sync::RwLock;

    #[derive(Default)]
    pub struct SharedDoc {
        doc: RwLock<Doc>,
    }

    impl SharedDoc {
        pub fn new() -> Self {
            Self::default()
        }

        pub fn append(&self, line: &str) {
            let (seen_version, rendered) = {
                let doc = self.doc.read().unwrap();
                (doc.version, render(&doc.text, line))
            };
            let mut doc = self.doc.write().unwrap();
            // Re-check under the write lock: if another append committed since the read,
            // the rendering is stale; redo it from the current text.
            doc.text = if doc.version == seen_version { rendered } else { render(&doc.text, line) };
            doc.version += 1;
        }

        pub fn snapshot(&self) -> Doc {
            self.doc.read().unwrap().clone()
        }
    }
}

/// Appends `editor 1` and `editor 2`.
fn edit<D>(doc: &D, append: fn(&D, &str), editor: &str) {
    for n in 1..=2 {
        append(doc, &format!("{editor} {n}"));
    }
}

/// The main thread writes the title, then Alice (on the main thread) and Bob (on another
/// thread) append two lines each. All five lines must be in the document, once each, and
/// the version must count five appends.
fn scenario<D: Send + Sync + 'static>(doc: D, append: fn(&D, &str), snapshot: fn(&D) -> Doc) {
    let doc = Arc::new(doc);
    append(&doc, "# minutes");

    let bob = {
        let doc = Arc::clone(&doc);
        thread::spawn(move || edit(&*doc, append, "bob"))
    };
    edit(&*doc, append, "alice");
    bob.join().expect("bob's editor panicked");

    let Doc { text, version } = snapshot(&doc);
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        ["# minutes", "alice 1", "alice 2", "bob 1", "bob 2"],
        "appends were lost: {text:?}"
    );
    assert_eq!(version, 5);
}

/// Runs the scenario against `buggy::SharedDoc`; panics when an append is lost.
pub fn scenario_buggy() {
    scenario(buggy::SharedDoc::new(), buggy::SharedDoc::append, buggy::SharedDoc::snapshot);
}

/// Runs the scenario against `fixed::SharedDoc`; never panics.
pub fn scenario_fixed() {
    scenario(fixed::SharedDoc::new(), fixed::SharedDoc::append, fixed::SharedDoc::snapshot);
}

