//! How virtual time passes: pulse_time's parameters (`pulse-time-stress-testing-time.txt`
//! §2.1.3), its named modes (§2.1.4), and pulse's default, a portfolio over them.
//!
//! A *timed transition* is a timed wait (sleep, `wait_timeout`, `recv_timeout`,
//! `park_timeout`) ending because its deadline came; every other step is *untimed*. The
//! parameters say when a timed transition may happen while untimed ones are enabled.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::options::ParseOptionError;

/// Nanoseconds standing for "no bound".
pub const UNBOUNDED: u64 = u64::MAX;

/// One fixed treatment of time (pulse_time's low-level parameters).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct TimeParams {
    /// `timeoutInterval`: a timer may fire ahead of an enabled untimed step only if its
    /// deadline is at most this far (ns) past the moment that step became enabled; 0 means
    /// untimed steps always go first, `UNBOUNDED` that any pending timer may.
    pub interval: u64,
    /// `timeoutPrecedence`: a timer allowed by `interval` fires before the untimed steps
    /// (true), or competes with them as one more scheduler choice (false).
    pub precedence: bool,
    /// `timeoutJitter`: timers whose deadlines are this close (ns) may fire in either order
    /// (the earlier one then fires late); `pulse::max_wait` bounds how late.
    pub jitter: u64,
    /// `timeIncrement`: virtual ns each untimed step costs; `None` keeps the run's setting
    /// (1 µs unless `Builder::step_time` says otherwise).
    pub increment: Option<u64>,
}

impl TimeParams {
    /// `infinitely-fast`: untimed steps always go first; the clock jumps to the next deadline
    /// only when no thread can run.
    pub const INFINITELY_FAST: TimeParams = TimeParams::named(0, false);
    /// `infinitely-slow`: every due timer fires before any untimed step.
    pub const INFINITELY_SLOW: TimeParams = TimeParams::named(UNBOUNDED, true);
    /// `time-random`: any pending timer competes with the untimed steps.
    pub const TIME_RANDOM: TimeParams = TimeParams::named(UNBOUNDED, false);

    const fn named(interval: u64, precedence: bool) -> TimeParams {
        TimeParams {
            interval,
            precedence,
            jitter: 0,
            increment: None,
        }
    }

    /// `quite-slow=N`: timers due within `n` of an enabled untimed step fire before it.
    pub fn quite_slow(n: Duration) -> TimeParams {
        TimeParams::named(nanos(n), true)
    }

    /// `quite-slow-random=N`: timers due within `n` of an enabled untimed step compete with it.
    pub fn quite_slow_random(n: Duration) -> TimeParams {
        TimeParams::named(nanos(n), false)
    }

    /// Whether a timer may ever fire while an untimed step is enabled.
    pub fn timers_compete(&self) -> bool {
        self.interval != 0
    }
}

/// The modes pulse's default portfolio draws from, each execution one of them by its seed.
/// Chosen by measurement (ARCHITECTURE decision 20): `infinitely-fast` keeps exact-timing
/// programs exact; `quite-slow-random=50ms` plays a loaded machine, where a thread can be
/// overtaken by timers due within 50 ms (slow-thread and late-reply bugs), while waits of
/// 100 ms or more for work already under way (a test's "let the workers start" sleep, a
/// generous timeout) are never cut short.
pub const PORTFOLIO: &[TimeParams] = &[TimeParams::INFINITELY_FAST, LOADED_MACHINE];

/// `quite-slow-random=50ms`, the portfolio's loaded machine. Its schedules include every
/// `infinitely-fast` one: where its coin never lets a timer go first, time passes as there.
const LOADED_MACHINE: TimeParams = TimeParams {
    interval: 50_000_000,
    precedence: false,
    jitter: 0,
    increment: None,
};

/// The `--time` option: one fixed treatment of time, or the portfolio (the default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TimeMode {
    /// Each execution draws one of `PORTFOLIO` from its seed (the drawn mode is written into
    /// its schedule, so replay needs nothing else).
    #[default]
    Portfolio,
    Fixed(TimeParams),
}

impl TimeMode {
    pub const VALUES: &'static [&'static str] = &[
        "portfolio",
        "infinitely-fast",
        "infinitely-slow",
        "time-random",
        "quite-slow=DURATION",
        "quite-slow-random=DURATION",
        "MODE,jitter=DURATION",
        "MODE,increment=DURATION",
    ];
    pub const INFINITELY_FAST: TimeMode = TimeMode::Fixed(TimeParams::INFINITELY_FAST);
    pub const INFINITELY_SLOW: TimeMode = TimeMode::Fixed(TimeParams::INFINITELY_SLOW);
    pub const TIME_RANDOM: TimeMode = TimeMode::Fixed(TimeParams::TIME_RANDOM);

    /// The treatment of time for the execution run from `seed`.
    pub fn params_for(&self, seed: u64) -> TimeParams {
        match self {
            TimeMode::Fixed(p) => *p,
            TimeMode::Portfolio => PORTFOLIO[portfolio_index(seed)],
        }
    }

    /// The one treatment of time a systematic search (which replays prefixes of earlier
    /// executions, so every execution must choose under the same rules) explores: the
    /// portfolio's loaded machine, whose schedules include the exact machine's.
    pub fn for_systematic_search(&self) -> TimeParams {
        match self {
            TimeMode::Fixed(p) => *p,
            TimeMode::Portfolio => LOADED_MACHINE,
        }
    }
}

/// Which portfolio entry a seed draws: a mix of the seed's bits, so consecutive seeds
/// (a search runs seed, seed+1, ...) alternate without a pattern the strategies share.
fn portfolio_index(seed: u64) -> usize {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z % PORTFOLIO.len() as u64) as usize
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(UNBOUNDED)
}

fn bad(value: &str) -> ParseOptionError {
    ParseOptionError {
        option: "time mode",
        value: value.to_string(),
        expected: TimeMode::VALUES,
    }
}

/// `250ms`, `1s`, `10us`, `5ns`, `2m`, or `inf`.
pub fn parse_duration_nanos(s: &str) -> Option<u64> {
    let s = s.trim();
    if s == "inf" {
        return Some(UNBOUNDED);
    }
    let split = s.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = s.split_at(split);
    let number: u64 = number.parse().ok()?;
    let scale = match unit {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        _ => return None,
    };
    number.checked_mul(scale)
}

/// The shortest exact spelling of `ns` that `parse_duration_nanos` reads back.
pub fn format_duration_nanos(ns: u64) -> String {
    if ns == UNBOUNDED {
        return "inf".to_string();
    }
    for (scale, unit) in [
        (60_000_000_000, "m"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
    ] {
        if ns != 0 && ns.is_multiple_of(scale) {
            return format!("{}{unit}", ns / scale);
        }
    }
    format!("{ns}ns")
}

impl FromStr for TimeParams {
    type Err = ParseOptionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut parts = s.trim().split(',');
        let base = parts.next().unwrap_or_default().trim();
        let mut params = match base.split_once('=') {
            // Earlier spellings, kept so old replay lines still work.
            None if base == "infinitely-fast" || base == "idle" => TimeParams::INFINITELY_FAST,
            None if base == "infinitely-slow" => TimeParams::INFINITELY_SLOW,
            None if base == "time-random" || base == "random" => TimeParams::TIME_RANDOM,
            Some(("quite-slow", n)) => {
                TimeParams::named(parse_duration_nanos(n).ok_or_else(|| bad(s))?, true)
            }
            Some(("quite-slow-random", n)) => {
                TimeParams::named(parse_duration_nanos(n).ok_or_else(|| bad(s))?, false)
            }
            _ => return Err(bad(s)),
        };
        for modifier in parts {
            let (key, value) = modifier.trim().split_once('=').ok_or_else(|| bad(s))?;
            let ns = parse_duration_nanos(value).ok_or_else(|| bad(s))?;
            match key.trim() {
                "jitter" => params.jitter = ns,
                "increment" if ns != UNBOUNDED => params.increment = Some(ns),
                _ => return Err(bad(s)),
            }
        }
        Ok(params)
    }
}

impl fmt::Display for TimeParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.interval, self.precedence) {
            (0, _) => f.write_str("infinitely-fast")?,
            (UNBOUNDED, true) => f.write_str("infinitely-slow")?,
            (UNBOUNDED, false) => f.write_str("time-random")?,
            (n, true) => write!(f, "quite-slow={}", format_duration_nanos(n))?,
            (n, false) => write!(f, "quite-slow-random={}", format_duration_nanos(n))?,
        }
        if self.jitter != 0 {
            write!(f, ",jitter={}", format_duration_nanos(self.jitter))?;
        }
        if let Some(inc) = self.increment {
            write!(f, ",increment={}", format_duration_nanos(inc))?;
        }
        Ok(())
    }
}

impl FromStr for TimeMode {
    type Err = ParseOptionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "portfolio" => Ok(TimeMode::Portfolio),
            other => other.parse().map(TimeMode::Fixed),
        }
    }
}

impl fmt::Display for TimeMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimeMode::Portfolio => f.write_str("portfolio"),
            TimeMode::Fixed(p) => p.fmt(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_modes_round_trip() {
        for text in [
            "portfolio",
            "infinitely-fast",
            "infinitely-slow",
            "time-random",
            "quite-slow=250ms",
            "quite-slow-random=1s",
            "infinitely-fast,jitter=inf",
            "quite-slow=5s,jitter=2ms,increment=50us",
        ] {
            let mode: TimeMode = text.parse().unwrap();
            assert_eq!(mode.to_string(), text);
        }
    }

    #[test]
    fn old_spellings_still_parse() {
        assert_eq!(
            "idle".parse::<TimeMode>().unwrap(),
            TimeMode::INFINITELY_FAST
        );
        assert_eq!("random".parse::<TimeMode>().unwrap(), TimeMode::TIME_RANDOM);
    }

    #[test]
    fn bad_modes_are_refused_with_the_valid_ones() {
        for text in [
            "fast",
            "quite-slow",
            "quite-slow=ten",
            "time-random,jitter",
            "x=1s",
        ] {
            let e = text.parse::<TimeMode>().unwrap_err();
            assert!(e.to_string().contains("`quite-slow=DURATION`"), "{e}");
        }
    }

    #[test]
    fn durations_print_exactly() {
        for ns in [
            0,
            5,
            1_500,
            2_000_000,
            1_000_000_000,
            90_000_000_000,
            UNBOUNDED,
        ] {
            assert_eq!(parse_duration_nanos(&format_duration_nanos(ns)), Some(ns));
        }
    }

    #[test]
    fn the_portfolio_uses_every_mode_over_consecutive_seeds() {
        let mut seen = vec![0; PORTFOLIO.len()];
        for seed in 1000..1100 {
            seen[portfolio_index(seed)] += 1;
        }
        assert!(seen.iter().all(|&n| n > 20), "{seen:?}");
        assert_eq!(
            TimeMode::Portfolio.params_for(7),
            TimeMode::Portfolio.params_for(7)
        );
    }
}
