//! Ending a run early and still reporting it: `--time-budget` runs out, or cargo-pulse gets
//! SIGINT (Ctrl-C) or SIGTERM (`timeout`, a CI job's cancel). Either way no new test starts,
//! the test processes running are stopped, and the run ends with its summary table: what
//! finished, and each test stopped or not started as `STOPPED` with the schedules it passed.
//! A second signal ends cargo-pulse at once (exit 128 + signal), as without the handler.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Why the run is ending early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// `--time-budget` ran out.
    Budget(Duration),
    /// cargo-pulse got this signal.
    Signal(i32),
}

impl Stop {
    /// For people: `the --time-budget of 60s ran out`, `interrupted (SIGINT)`.
    pub fn describe(self) -> String {
        match self {
            Stop::Budget(d) => format!("the --time-budget of {} ran out", show(d)),
            Stop::Signal(s) => format!("interrupted ({})", signal_name(s)),
        }
    }

    /// The run's exit code when it was stopped: a signal's is the shell's `128 + signal`;
    /// a budget's is the verdict on what ran (`None`).
    pub fn exit_code(self) -> Option<i32> {
        match self {
            Stop::Budget(_) => None,
            Stop::Signal(s) => Some(128 + s),
        }
    }
}

static SIGNAL: AtomicI32 = AtomicI32::new(0);
static BUDGET: OnceLock<(Instant, Duration)> = OnceLock::new();

/// The run may take `budget` from `started` (the command's start: building counts).
pub fn set_budget(started: Instant, budget: Duration) {
    let _ = BUDGET.set((started, budget));
}

/// Whether (and why) the run must end now.
pub fn requested() -> Option<Stop> {
    let s = SIGNAL.load(Ordering::Relaxed);
    if s != 0 {
        return Some(Stop::Signal(s));
    }
    let (started, budget) = BUDGET.get()?;
    (started.elapsed() >= *budget).then_some(Stop::Budget(*budget))
}

/// From here on SIGINT and SIGTERM stop the run instead of killing cargo-pulse. Installed when
/// the tests start: during the build, the default (cargo and cargo-pulse end at once) is right.
pub fn install_handlers() {
    extern "C" fn on_signal(signal: libc::c_int) {
        // The second one: the user insists.
        if SIGNAL.swap(signal, Ordering::Relaxed) != 0 {
            // SAFETY: `_exit` is async-signal-safe.
            unsafe { libc::_exit(128 + signal) };
        }
    }
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only touches an atomic and calls `_exit`, both async-signal-safe;
        // the sigaction struct is zeroed and then filled as sigaction(2) requires.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut action.sa_mask);
            action.sa_flags = libc::SA_RESTART;
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

fn signal_name(s: i32) -> String {
    match s {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        _ => format!("signal {s}"),
    }
}

fn show(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 3600.0 && s % 3600.0 == 0.0 {
        format!("{}h", s / 3600.0)
    } else if s >= 60.0 && s % 60.0 == 0.0 {
        format!("{}m", s / 60.0)
    } else {
        format!("{s}s")
    }
}

/// `--time-budget` values: `90`, `90s`, `1.5m`, `2h`, `500ms`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let n: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (e.g. 90s, 10m, 1h)"))?;
    let secs = match unit.trim() {
        "" | "s" => n,
        "ms" => n / 1000.0,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        other => return Err(format!("`{other}` is not a unit of time (ms, s, m, h)")),
    };
    if !(secs > 0.0 && secs.is_finite()) {
        return Err(format!("`{text}`: the budget must be more than zero"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A time limit, or none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit(pub Option<Duration>);

/// A duration as `parse_duration` reads it, or `none` (also `0`, `0s`) for no limit.
pub fn parse_limit(text: &str) -> Result<Limit, String> {
    let t = text.trim();
    let number = t.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    if t == "none" || number.parse() == Ok(0.0) {
        return Ok(Limit(None));
    }
    parse_duration(text).map(|d| Limit(Some(d)))
}

/// A step budget, or none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Steps(pub Option<u64>);

/// A count of steps (`100000000`, `100_000_000`, `100M`, `5k`), or `none` (also `0`) for no
/// budget.
pub fn parse_steps(text: &str) -> Result<Steps, String> {
    let t = text.trim().replace('_', "");
    if t == "none" {
        return Ok(Steps(None));
    }
    let (digits, scale) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1_000),
        Some((i, 'M')) => (&t[..i], 1_000_000),
        Some((i, 'G')) => (&t[..i], 1_000_000_000),
        _ => (t.as_str(), 1),
    };
    let n: u64 = digits.parse().map_err(|_| {
        format!("`{text}` is not a number of steps (e.g. `100000000`, `100M`, or `none`)")
    })?;
    let steps = n
        .checked_mul(scale)
        .ok_or_else(|| format!("`{text}` is too many steps"))?;
    Ok(Steps((steps > 0).then_some(steps)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_people_write() {
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("0").is_err());
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("5 days").is_err());
        assert_eq!(
            Stop::Budget(Duration::from_secs(120)).describe(),
            "the --time-budget of 2m ran out"
        );
    }

    #[test]
    fn a_step_budget_is_a_count_or_none() {
        assert_eq!(parse_steps("100M"), Ok(Steps(Some(100_000_000))));
        assert_eq!(parse_steps("100_000_000"), Ok(Steps(Some(100_000_000))));
        assert_eq!(parse_steps("5k"), Ok(Steps(Some(5_000))));
        assert_eq!(parse_steps("42"), Ok(Steps(Some(42))));
        for none in ["none", "0", "0M"] {
            assert_eq!(parse_steps(none), Ok(Steps(None)), "{none}");
        }
        for bad in ["lots", "1.5M", "-3", "99999999999G"] {
            assert!(parse_steps(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_limit_is_a_duration_or_none() {
        let secs = |n| Ok(Limit(Some(Duration::from_secs(n))));
        assert_eq!(parse_limit("60s"), secs(60));
        assert_eq!(parse_limit("5m"), secs(300));
        for none in ["none", "0", "0s", "0ms"] {
            assert_eq!(parse_limit(none), Ok(Limit(None)), "{none}");
        }
        assert!(parse_limit("soon").is_err());
    }
}
