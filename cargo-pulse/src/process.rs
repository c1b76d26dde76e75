//! Starting, watching and stopping one test process. Output goes to files rather than pipes, so
//! a chatty test can never block on a full pipe while we poll its progress, and a killed test
//! still leaves what it printed.

use std::fs::File;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};

use anyhow::{Context, Result};

pub struct TestProcess {
    child: Child,
}

impl TestProcess {
    /// Spawns `cmd` with stdout and stderr captured into `dir` (or inherited when `inherit`).
    pub fn spawn(mut cmd: Command, dir: &Path, inherit: bool) -> Result<TestProcess> {
        let stdout = dir.join("stdout");
        let stderr = dir.join("stderr");
        if inherit {
            cmd.stdout(Stdio::inherit()).stderr(Stdio::inherit());
        } else {
            cmd.stdout(
                File::create(&stdout).with_context(|| format!("creating {}", stdout.display()))?,
            );
            cmd.stderr(
                File::create(&stderr).with_context(|| format!("creating {}", stderr.display()))?,
            );
        }
        cmd.stdin(Stdio::null());
        let child = cmd
            .spawn()
            .with_context(|| format!("starting {:?}", cmd.get_program()))?;
        Ok(TestProcess { child })
    }

    pub fn try_wait(&mut self) -> Result<Option<ExitStatus>> {
        self.child.try_wait().context("waiting for a test process")
    }

    /// Waits for the process to end.
    pub fn wait(&mut self) -> Result<ExitStatus> {
        self.child.wait().context("waiting for a test process")
    }

    /// Stops the process (it is ours: started by `spawn`) and reaps it.
    pub fn kill(&mut self) -> Result<ExitStatus> {
        let _ = self.child.kill();
        self.child.wait().context("reaping a killed test process")
    }
}

/// Reads a progress file (`pulse_protocol::env::PROGRESS`): `done total`.
pub fn read_progress(path: &Path) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut it = text.split_whitespace();
    let done = it.next()?.parse().ok()?;
    let total = it.next()?.parse().ok()?;
    Some((done, total))
}

/// libtest's closing line, `test result: ok. 1 passed; 0 failed; 0 ignored; ...`:
/// (passed, failed, ignored).
pub fn libtest_counts(stdout: &str) -> Option<(u64, u64, u64)> {
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with("test result:"))?;
    let num = |word: &str| -> Option<u64> {
        let before = line.split(&format!(" {word}")).next()?;
        before
            .rsplit([' ', '.', ';'])
            .find(|s| !s.is_empty())?
            .parse()
            .ok()
    };
    Some((num("passed")?, num("failed")?, num("ignored")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_libtest_counts() {
        let out = "running 1 test\ntest a ... ok\n\ntest result: ok. 1 passed; 0 failed; 2 ignored; 0 measured; 5 filtered out; finished in 0.00s\n";
        assert_eq!(libtest_counts(out), Some((1, 0, 2)));
        assert_eq!(
            libtest_counts("test result: FAILED. 0 passed; 1 failed; 0 ignored;"),
            Some((0, 1, 0))
        );
        assert_eq!(libtest_counts("nothing"), None);
    }
}
