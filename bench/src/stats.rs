//! Medians and number formatting for the tables.

use std::time::Duration;

/// Median of a non-empty sample (mean of the two middle values for an even count).
pub fn median(mut xs: Vec<f64>) -> f64 {
    assert!(!xs.is_empty(), "median of an empty sample");
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

pub fn median_duration(xs: &[Duration]) -> Duration {
    Duration::from_secs_f64(median(xs.iter().map(|d| d.as_secs_f64()).collect()))
}

/// `1234567` -> `1,234,567`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rate or count with three significant digits and thousands separators.
pub fn sig3(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    if x >= 1000.0 {
        let mag = 10f64.powi((x.log10().floor() as i32) - 2);
        thousands(((x / mag).round() * mag) as u64)
    } else if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else if x >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// Seconds for a table cell: `0.0012 s`, `3.41 s`.
pub fn secs(d: f64) -> String {
    if d == 0.0 {
        "0 ms".into()
    } else if d < 0.001 {
        format!("{:.2} ms", d * 1e3)
    } else if d < 1.0 {
        format!("{:.1} ms", d * 1e3)
    } else {
        format!("{d:.2} s")
    }
}

/// A ratio like `3.2x` / `0.41x`.
pub fn ratio(x: f64) -> String {
    if !x.is_finite() {
        "-".into()
    } else if x >= 10.0 {
        format!("{x:.0}x")
    } else if x >= 1.0 {
        format!("{x:.1}x")
    } else {
        format!("{x:.2}x")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    #[test]
    fn formatting() {
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(12), "12");
        assert_eq!(sig3(123456.0), "123,000");
        assert_eq!(sig3(12.34), "12.3");
    }
}
