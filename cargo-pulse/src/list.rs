//! Enumerates the tests of each test binary with libtest's own `--list`, applying the user's
//! filters the way libtest does (by handing them to libtest), and marks `#[ignore]`d ones.

use std::collections::BTreeSet;
use std::sync::Arc;

use anyhow::{bail, Context, Result};

use crate::compile::TestBinary;

/// libtest's test selection flags.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    pub names: Vec<String>,
    pub exact: bool,
    pub skip: Vec<String>,
    pub ignored: bool,
    pub include_ignored: bool,
}

impl Filters {
    /// Whether libtest would select a test named `name`: a filter it contains (equals,
    /// with `--exact`) or none, and no `--skip` it contains.
    fn selects(&self, name: &str) -> bool {
        let hit = |f: &String| match self.exact {
            true => f == name,
            false => name.contains(f.as_str()),
        };
        (self.names.is_empty() || self.names.iter().any(hit))
            && !self.skip.iter().any(|s| name.contains(s.as_str()))
    }

    fn args(&self) -> Vec<String> {
        let mut a = self.names.clone();
        if self.exact {
            a.push("--exact".into());
        }
        for s in &self.skip {
            a.extend(["--skip".to_string(), s.clone()]);
        }
        a
    }
}

#[derive(Debug, Clone)]
pub struct TestCase {
    pub binary: Arc<TestBinary>,
    pub name: String,
    pub ignored: bool,
    /// Whether to run it (an ignored test is listed but not run unless asked).
    pub run: bool,
}

/// The one test of a `harness = false` target: its `main` (`cargo test` runs it whole).
pub const OWN_MAIN: &str = "main";

/// The selected tests of `binary`, in libtest's order.
pub fn list(binary: &Arc<TestBinary>, filters: &Filters) -> Result<Vec<TestCase>> {
    if binary.own_main {
        // No libtest to ask: `--list` would run `main` itself.
        let selected = filters.selects(OWN_MAIN) && !filters.ignored;
        return Ok(selected
            .then(|| TestCase {
                binary: binary.clone(),
                name: OWN_MAIN.to_string(),
                ignored: false,
                run: true,
            })
            .into_iter()
            .collect());
    }
    let all = list_names(binary, filters, false)?;
    let ignored: BTreeSet<String> = list_names(binary, filters, true)?.into_iter().collect();
    Ok(all
        .into_iter()
        .filter_map(|name| {
            let is_ignored = ignored.contains(&name);
            if filters.ignored && !is_ignored {
                return None;
            }
            let run = !is_ignored || filters.ignored || filters.include_ignored;
            Some(TestCase {
                binary: binary.clone(),
                name,
                ignored: is_ignored,
                run,
            })
        })
        .collect())
}

fn list_names(binary: &TestBinary, filters: &Filters, ignored_only: bool) -> Result<Vec<String>> {
    let mut cmd = binary.command();
    cmd.args(["--list", "--format", "terse"])
        .args(filters.args())
        .current_dir(&binary.mirror_dir);
    if ignored_only {
        cmd.arg("--ignored");
    }
    let out = cmd
        .output()
        .with_context(|| format!("listing the tests of {}", binary.executable.display()))?;
    if !out.status.success() {
        bail!(
            "`{} --list` failed ({}):\n{}",
            binary.executable.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(parse_terse(&String::from_utf8_lossy(&out.stdout)))
}

/// `name: test` lines; benchmarks are not tests.
fn parse_terse(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_harness_false_target_is_one_test_selected_as_libtest_would() {
        let binary = Arc::new(TestBinary {
            package: "q".into(),
            version_if_ambiguous: None,
            target: "custom".into(),
            kind: "test".into(),
            // Never started: `--list` would run its main.
            executable: "/nonexistent/custom".into(),
            mirror_dir: "/nonexistent".into(),
            lib_dirs: Vec::new(),
            doc_src: None,
            own_main: true,
        });
        let names = |f: Filters| -> Vec<String> {
            list(&binary, &f)
                .unwrap()
                .into_iter()
                .map(|c| c.name)
                .collect()
        };
        assert_eq!(names(Filters::default()), [OWN_MAIN]);
        let named = |n: &str, exact| Filters {
            names: vec![n.into()],
            exact,
            ..Filters::default()
        };
        assert_eq!(names(named("mai", false)), [OWN_MAIN]);
        assert!(names(named("mai", true)).is_empty());
        assert!(names(named("tests::x", false)).is_empty());
        let skipped = Filters {
            skip: vec!["main".into()],
            ..Filters::default()
        };
        assert!(names(skipped).is_empty());
    }

    #[test]
    fn parses_terse_listing() {
        let text = "tests::a: test\ntests::b: test\nbench_x: benchmark\n";
        assert_eq!(parse_terse(text), ["tests::a", "tests::b"]);
    }
}
