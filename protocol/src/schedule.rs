//! A schedule: the sequence of choices one execution made, in a compact printable form.
//!
//! Only decisions with more than one option are recorded (a forced step needs no memory),
//! so the same program replayed with the same choices takes the same path. The text form
//! is versioned (`p1:`) and run-length encoded, so it survives a copy-paste into a shell.
//! An execution whose time was not `infinitely-fast` names its time mode after `@`
//! (`p1@quite-slow-random=50ms:0*2.1`): the choices only mean something under it. An
//! execution under the relaxed memory model says so first (`p1@relaxed:0.1`,
//! `p1@relaxed@quite-slow-random=50ms:0.1`): its choices include which store loads read.

use std::fmt;
use std::str::FromStr;

use crate::time::TimeParams;

/// The choices of one execution, in order. Thread choices are thread indices (0 = the
/// test's main thread); yes/no choices (spurious wakeup, weak CAS failure) are 0 or 1.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Schedule {
    pub choices: Vec<u32>,
    /// The treatment of time the choices were made under; `None` is `infinitely-fast`.
    pub time: Option<TimeParams>,
    /// Made under the relaxed memory model (`Memory::Relaxed`), where loads choose stores.
    pub relaxed: bool,
}

impl Schedule {
    pub fn new(choices: Vec<u32>) -> Self {
        Schedule {
            choices,
            time: None,
            relaxed: false,
        }
    }

    /// The same choices, made under the relaxed memory model if `relaxed`.
    pub fn with_relaxed(mut self, relaxed: bool) -> Self {
        self.relaxed = relaxed;
        self
    }

    /// The same choices, made under `time` (stored only when it is not `infinitely-fast`).
    pub fn with_time(mut self, time: TimeParams) -> Self {
        self.time = (time != TimeParams::INFINITELY_FAST).then_some(time);
        self
    }

    /// The treatment of time to replay these choices under.
    pub fn time_params(&self) -> TimeParams {
        self.time.unwrap_or(TimeParams::INFINITELY_FAST)
    }

    pub fn len(&self) -> usize {
        self.choices.len()
    }
    pub fn is_empty(&self) -> bool {
        self.choices.is_empty()
    }

    /// The schedule's text if it is at most `limit` characters long, else (`Err`) its first
    /// `limit`: written no further than that, so asking whether a 100,000,000-choice
    /// schedule fits a command line does not write its 300 MB.
    pub fn text_within(&self, limit: usize) -> Result<String, String> {
        let mut capped = Capped {
            text: String::new(),
            limit,
        };
        match fmt::write(&mut capped, format_args!("{self}")) {
            Ok(()) => Ok(capped.text),
            Err(fmt::Error) => Err(capped.text),
        }
    }
}

/// A `fmt::Write` that takes `limit` characters and then fails.
struct Capped {
    text: String,
    limit: usize,
}

impl fmt::Write for Capped {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = self.limit - self.text.len();
        if s.len() <= room {
            self.text.push_str(s);
            return Ok(());
        }
        let cut = (0..=room)
            .rev()
            .find(|&i| s.is_char_boundary(i))
            .unwrap_or(0);
        self.text.push_str(&s[..cut]);
        Err(fmt::Error)
    }
}

const VERSION: &str = "p1";
const PREFIX: &str = "p1:";

impl fmt::Display for Schedule {
    /// `p1:0*3.1.0*2` = choose 0 three times, then 1, then 0 twice.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let relaxed = if self.relaxed { "@relaxed" } else { "" };
        match &self.time {
            Some(time) => write!(f, "{VERSION}{relaxed}@{time}:")?,
            None => write!(f, "{VERSION}{relaxed}:")?,
        }
        let mut first = true;
        let mut i = 0;
        while i < self.choices.len() {
            let value = self.choices[i];
            let run = self.choices[i..]
                .iter()
                .take_while(|&&c| c == value)
                .count();
            if !first {
                f.write_str(".")?;
            }
            first = false;
            if run > 1 {
                write!(f, "{value}*{run}")?;
            } else {
                write!(f, "{value}")?;
            }
            i += run;
        }
        Ok(())
    }
}

/// Why a schedule string was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseScheduleError(pub String);

impl fmt::Display for ParseScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid pulse schedule: {}", self.0)
    }
}

impl std::error::Error for ParseScheduleError {}

impl FromStr for Schedule {
    type Err = ParseScheduleError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let relaxed = s.starts_with("p1@relaxed:") || s.starts_with("p1@relaxed@");
        let owned;
        let s = if relaxed {
            owned = format!("{VERSION}{}", &s["p1@relaxed".len()..]);
            owned.as_str()
        } else {
            s
        };
        let (time, body) = if let Some(rest) = s.strip_prefix(PREFIX) {
            (None, rest)
        } else if let Some((mode, rest)) = s
            .strip_prefix(VERSION)
            .and_then(|r| r.strip_prefix('@'))
            .and_then(|r| r.split_once(':'))
        {
            let time: TimeParams = mode
                .parse()
                .map_err(|e| ParseScheduleError(format!("its time mode: {e}")))?;
            (Some(time), rest)
        } else {
            return Err(ParseScheduleError(format!(
                "expected it to start with `{PREFIX}` (or `{VERSION}@TIME-MODE:`)"
            )));
        };
        let mut choices = Vec::new();
        for token in body.split('.').filter(|t| !t.is_empty()) {
            let (value, run) = match token.split_once('*') {
                Some((v, r)) => (v, r),
                None => (token, "1"),
            };
            let value: u32 = value
                .parse()
                .map_err(|_| ParseScheduleError(format!("`{token}` is not a choice")))?;
            let run: usize = run
                .parse()
                .map_err(|_| ParseScheduleError(format!("`{token}` has a bad repeat count")))?;
            choices.extend(std::iter::repeat_n(value, run));
        }
        Ok(Schedule::new(choices)
            .with_time(time.unwrap_or(TimeParams::INFINITELY_FAST))
            .with_relaxed(relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_with_runs() {
        let s = Schedule::new(vec![0, 0, 0, 1, 0, 0, 12, 1]);
        let text = s.to_string();
        assert_eq!(text, "p1:0*3.1.0*2.12.1");
        assert_eq!(text.parse::<Schedule>().unwrap(), s);
    }

    #[test]
    fn text_within_a_limit_is_the_text_or_its_start() {
        let s = Schedule::new(vec![0, 0, 0, 1, 0, 0, 2]);
        assert_eq!(s.text_within(100), Ok("p1:0*3.1.0*2.2".to_string()));
        assert_eq!(s.text_within(14), Ok("p1:0*3.1.0*2.2".to_string()));
        assert_eq!(s.text_within(13), Err("p1:0*3.1.0*2.".to_string()));
        assert_eq!(s.text_within(0), Err(String::new()));
        // Alternating choices do not compress: a long schedule stops at the limit.
        let long = Schedule::new((0..10_000_000).map(|i| i % 2).collect());
        let start = long.text_within(1000).unwrap_err();
        assert_eq!(start.len(), 1000);
        assert!(long.to_string().starts_with(&start));
    }

    #[test]
    fn empty_schedule_round_trips() {
        let s = Schedule::default();
        assert_eq!(s.to_string(), "p1:");
        assert_eq!("p1:".parse::<Schedule>().unwrap(), s);
    }

    #[test]
    fn a_time_mode_travels_with_the_choices() {
        let s = Schedule::new(vec![0, 1]).with_time(TimeParams::quite_slow_random(
            std::time::Duration::from_secs(1),
        ));
        let text = s.to_string();
        assert_eq!(text, "p1@quite-slow-random=1s:0.1");
        assert_eq!(text.parse::<Schedule>().unwrap(), s);
        let fast = Schedule::new(vec![2]).with_time(TimeParams::INFINITELY_FAST);
        assert_eq!(fast.to_string(), "p1:2");
        assert!("p1@slow:0".parse::<Schedule>().is_err());
    }

    #[test]
    fn the_relaxed_model_travels_with_the_choices() {
        let s = Schedule::new(vec![0, 1]).with_relaxed(true);
        assert_eq!(s.to_string(), "p1@relaxed:0.1");
        assert_eq!("p1@relaxed:0.1".parse::<Schedule>().unwrap(), s);
        let slow = s.with_time(TimeParams::quite_slow_random(
            std::time::Duration::from_millis(50),
        ));
        let text = slow.to_string();
        assert_eq!(text, "p1@relaxed@quite-slow-random=50ms:0.1");
        assert_eq!(text.parse::<Schedule>().unwrap(), slow);
        assert!(!"p1:0.1".parse::<Schedule>().unwrap().relaxed);
    }

    #[test]
    fn rejects_garbage() {
        assert!("0.1".parse::<Schedule>().is_err());
        assert!("p1:x".parse::<Schedule>().is_err());
        assert!("p1:1*y".parse::<Schedule>().is_err());
    }
}
