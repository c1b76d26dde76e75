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

/// The selected tests of `binary`, in libtest's order.
pub fn list(binary: &Arc<TestBinary>, filters: &Filters) -> Result<Vec<TestCase>> {
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
    fn parses_terse_listing() {
        let text = "tests::a: test\ntests::b: test\nbench_x: benchmark\n";
        assert_eq!(parse_terse(text), ["tests::a", "tests::b"]);
    }
}
