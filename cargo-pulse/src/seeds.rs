//! Which seeds a run explores: a random first seed by default (printed, so any run can be
//! repeated), `--seed S` for a fixed one, or `--seeds FROM..TO` for one shard of a long search
//! spread over many machines (shard k of n runs `--seeds k*M..(k+1)*M`).

use std::fmt;
use std::str::FromStr;

/// Seeds `from..to`, end exclusive; schedule i of every test runs seed `from + i`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeedRange {
    pub from: u64,
    pub to: u64,
}

impl SeedRange {
    pub fn len(&self) -> u64 {
        self.to - self.from
    }

    /// For prose: "seed 7", "seeds 7 to 26" (the `FROM..TO` form's end is exclusive, which
    /// a sentence does not say).
    pub fn in_words(&self) -> String {
        match self.len() {
            1 => format!("seed {}", self.from),
            _ => format!("seeds {} to {}", self.from, self.to - 1),
        }
    }
}

impl FromStr for SeedRange {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (a, b) = s
            .split_once("..")
            .ok_or_else(|| format!("expected FROM..TO, got `{s}`"))?;
        let from = a
            .trim()
            .parse::<u64>()
            .map_err(|e| format!("bad FROM `{a}`: {e}"))?;
        let to = b
            .trim()
            .parse::<u64>()
            .map_err(|e| format!("bad TO `{b}`: {e}"))?;
        if to <= from {
            return Err(format!(
                "empty seed range `{s}`: TO must be greater than FROM"
            ));
        }
        Ok(SeedRange { from, to })
    }
}

impl fmt::Display for SeedRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.from, self.to)
    }
}

/// Resolves the flags into the seeds to run: (first seed, number of schedules).
pub fn resolve(seed: Option<u64>, seeds: Option<SeedRange>, schedules: u64) -> SeedRange {
    if let Some(r) = seeds {
        return r;
    }
    let from = seed.unwrap_or_else(random_seed);
    SeedRange {
        from,
        to: from.saturating_add(schedules.max(1)),
    }
}

/// A fresh seed from std's per-process random hasher keys; small enough to type back in.
fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish() % 1_000_000_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ranges() {
        assert_eq!(
            "0..100".parse::<SeedRange>().unwrap(),
            SeedRange { from: 0, to: 100 }
        );
        assert!("5..5".parse::<SeedRange>().is_err());
        assert!("5".parse::<SeedRange>().is_err());
        assert_eq!("3..9".parse::<SeedRange>().unwrap().len(), 6);
    }

    #[test]
    fn resolve_prefers_range_then_seed() {
        let r = SeedRange { from: 10, to: 20 };
        assert_eq!(resolve(Some(1), Some(r), 5), r);
        assert_eq!(resolve(Some(7), None, 5), SeedRange { from: 7, to: 12 });
        assert_eq!(resolve(None, None, 5).len(), 5);
    }

    #[test]
    fn a_range_in_words_names_its_last_seed() {
        assert_eq!(SeedRange { from: 1, to: 2 }.in_words(), "seed 1");
        assert_eq!(SeedRange { from: 7, to: 27 }.in_words(), "seeds 7 to 26");
    }
}
