//! A schedule: the sequence of choices one execution made, in a compact printable form.
//!
//! Only decisions with more than one option are recorded (a forced step needs no memory),
//! so the same program replayed with the same choices takes the same path. The text form
//! is versioned (`p1:`) and run-length encoded, so it survives a copy-paste into a shell.

use std::fmt;
use std::str::FromStr;

/// The choices of one execution, in order. Thread choices are thread indices (0 = the
/// test's main thread); yes/no choices (spurious wakeup, weak CAS failure) are 0 or 1.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Schedule {
    pub choices: Vec<u32>,
}

impl Schedule {
    pub fn new(choices: Vec<u32>) -> Self {
        Schedule { choices }
    }
    pub fn len(&self) -> usize {
        self.choices.len()
    }
    pub fn is_empty(&self) -> bool {
        self.choices.is_empty()
    }
}

const PREFIX: &str = "p1:";

impl fmt::Display for Schedule {
    /// `p1:0*3.1.0*2` = choose 0 three times, then 1, then 0 twice.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(PREFIX)?;
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
        let body = s
            .trim()
            .strip_prefix(PREFIX)
            .ok_or_else(|| ParseScheduleError(format!("expected it to start with `{PREFIX}`")))?;
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
        Ok(Schedule { choices })
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
    fn empty_schedule_round_trips() {
        let s = Schedule::default();
        assert_eq!(s.to_string(), "p1:");
        assert_eq!("p1:".parse::<Schedule>().unwrap(), s);
    }

    #[test]
    fn rejects_garbage() {
        assert!("0.1".parse::<Schedule>().is_err());
        assert!("p1:x".parse::<Schedule>().is_err());
        assert!("p1:1*y".parse::<Schedule>().is_err());
    }
}
