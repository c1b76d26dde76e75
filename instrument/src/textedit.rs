//! Span-preserving text patches, applied once to the original source.
//!
//! Rewriting by reprinting the syntax tree would lose comments, formatting and line numbers;
//! instead every change is a set of byte-range replacements on the original text. A change
//! (one rewrite in the report) may need several edits that only make sense together (an
//! opening and a closing insertion), so changes are accepted or dropped whole.

use std::ops::Range;

/// Replace `range` of the original text with `text`. An empty range is an insertion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Edit {
    pub(crate) range: Range<usize>,
    pub(crate) text: String,
    /// Orders insertions at the same offset: lower first. Wrappers that nest give their
    /// opening a lower order than an inner wrapper's, and their closing a higher one.
    pub(crate) order: u8,
}

impl Edit {
    pub(crate) fn replace(range: Range<usize>, text: impl Into<String>) -> Self {
        Edit {
            range,
            text: text.into(),
            order: 50,
        }
    }

    pub(crate) fn insert(at: usize, text: impl Into<String>, order: u8) -> Self {
        Edit {
            range: at..at,
            text: text.into(),
            order,
        }
    }
}

/// Order keys for insertions that can land on the same offset.
pub(crate) mod order {
    pub(crate) const TEST_OPEN: u8 = 10;
    pub(crate) const ATOMIC_OPEN: u8 = 20;
    pub(crate) const ATOMIC_CLOSE: u8 = 80;
    pub(crate) const SEMICOLON: u8 = 85;
    pub(crate) const TEST_CLOSE: u8 = 90;
    pub(crate) const EXTERN_CRATE: u8 = 95;
    pub(crate) const MACRO_FACADE: u8 = 96;
}

/// Which changes (by index) were dropped because an edit overlapped an earlier change.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    pub(crate) text: String,
    pub(crate) dropped: Vec<usize>,
}

/// Applies every change's edits to `src`. An edit that overlaps an edit of an earlier change
/// drops its whole change (reported by index); identical duplicate edits are applied once.
pub(crate) fn apply(src: &str, changes: &[Vec<Edit>]) -> Applied {
    // A change with an edit outside the text or off a char boundary is dropped, not applied
    // in part (and never panics).
    let mut dropped: Vec<usize> = (0..changes.len())
        .filter(|&i| !changes[i].iter().all(|e| valid(src, e)))
        .collect();
    loop {
        let mut all: Vec<(usize, &Edit)> = changes
            .iter()
            .enumerate()
            .filter(|(i, _)| !dropped.contains(i))
            .flat_map(|(i, edits)| edits.iter().map(move |e| (i, e)))
            .collect();
        all.sort_by_key(|(i, e)| (e.range.start, e.range.end, e.order, *i));
        all.dedup_by(|b, a| {
            a.1.range == b.1.range && a.1.text == b.1.text && !a.1.range.is_empty()
        });
        match first_conflict(&all) {
            Some(change) => dropped.push(change),
            None => {
                let mut text = String::with_capacity(src.len() + 64 * all.len());
                let mut pos = 0;
                for (_, e) in &all {
                    text.push_str(&src[pos..e.range.start]);
                    // `let g:std::sync::MutexGuard` (no space) would become `g:::pulse`,
                    // which lexes as `::` then `:`.
                    if e.text.starts_with("::") && text.ends_with(':') {
                        text.push(' ');
                    }
                    text.push_str(&e.text);
                    pos = e.range.end;
                }
                text.push_str(&src[pos..]);
                dropped.sort_unstable();
                return Applied { text, dropped };
            }
        }
    }
}

fn valid(src: &str, e: &Edit) -> bool {
    e.range.start <= e.range.end
        && e.range.end <= src.len()
        && src.is_char_boundary(e.range.start)
        && src.is_char_boundary(e.range.end)
}

/// The change owning the later of the first pair of overlapping edits (two edits of one
/// change overlapping drop that change too). Edits are sorted, so an edit overlaps if it
/// starts inside the furthest range covered so far.
fn first_conflict(sorted: &[(usize, &Edit)]) -> Option<usize> {
    let mut covered_end = 0;
    for &(change, e) in sorted {
        if e.range.start < covered_end {
            return Some(change);
        }
        covered_end = covered_end.max(e.range.end);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_and_inserts_in_order() {
        let src = "let x = f(a);";
        let changes = vec![
            vec![
                Edit::insert(8, "wrap(|| ", order::ATOMIC_OPEN),
                Edit::insert(12, ")", order::ATOMIC_CLOSE),
            ],
            vec![Edit::replace(8..9, "g")],
        ];
        let out = apply(src, &changes);
        assert_eq!(out.text, "let x = wrap(|| g(a));");
        assert!(out.dropped.is_empty());
    }

    #[test]
    fn nested_insertions_at_one_offset() {
        let src = "{f()}";
        let changes = vec![
            vec![
                Edit::insert(1, "T(", order::TEST_OPEN),
                Edit::insert(4, ")", order::TEST_CLOSE),
            ],
            vec![
                Edit::insert(1, "A(", order::ATOMIC_OPEN),
                Edit::insert(4, ")", order::ATOMIC_CLOSE),
            ],
        ];
        assert_eq!(apply(src, &changes).text, "{T(A(f()))}");
    }

    #[test]
    fn overlap_drops_the_later_change_whole() {
        let src = "abcdef";
        let changes = vec![
            vec![Edit::replace(1..4, "X")],
            vec![Edit::insert(0, "<", 10), Edit::replace(2..3, "Y")],
        ];
        let out = apply(src, &changes);
        assert_eq!(out.text, "aXef");
        assert_eq!(out.dropped, vec![1]);
    }

    #[test]
    fn a_change_overlapping_itself_is_dropped() {
        let out = apply(
            "abcdef",
            &[
                vec![Edit::replace(0..3, "x"), Edit::replace(2..4, "y")],
                vec![Edit::replace(5..6, "z")],
            ],
        );
        assert_eq!(out.text, "abcdez");
        assert_eq!(out.dropped, vec![0]);
    }

    #[test]
    fn duplicates_apply_once_and_bad_ranges_drop_their_change() {
        let src = "é std";
        let changes = vec![
            vec![Edit::replace(3..6, "::p::std")],
            vec![Edit::replace(3..6, "::p::std")],
            vec![Edit::insert(0, "ok", 10), Edit::replace(1..2, "x")],
            vec![Edit::replace(5..99, "y")],
        ];
        let out = apply(src, &changes);
        assert_eq!(out.text, "é ::p::std");
        assert_eq!(out.dropped, vec![2, 3]);
    }
}
