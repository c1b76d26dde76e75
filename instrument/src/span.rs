//! Line/column <-> byte offset conversion for the original source text.
//!
//! proc-macro2 reports span positions as (1-based line, 0-based column counted in *chars*),
//! but edits are byte ranges into the original `&str`. A line containing non-ASCII text has
//! columns that are not byte offsets, so every conversion goes through this index.

use proc_macro2::{LineColumn, Span};
use std::ops::Range;

/// Byte offset of every line start, plus whether each line is pure ASCII (then column ==
/// byte offset within the line and no char walk is needed).
#[derive(Debug)]
pub(crate) struct LineIndex<'a> {
    text: &'a str,
    starts: Vec<usize>,
    ascii: Vec<bool>,
}

impl<'a> LineIndex<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        let mut ascii = Vec::new();
        let mut line_ascii = true;
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                ascii.push(line_ascii);
                line_ascii = true;
                starts.push(i + 1);
            } else if b >= 0x80 {
                line_ascii = false;
            }
        }
        ascii.push(line_ascii);
        LineIndex {
            text,
            starts,
            ascii,
        }
    }

    /// Byte offset of a proc-macro2 position. Out-of-range positions clamp to the nearest
    /// valid char boundary instead of panicking.
    pub(crate) fn offset(&self, lc: LineColumn) -> usize {
        if lc.line == 0 {
            return 0;
        }
        let Some(&start) = self.starts.get(lc.line - 1) else {
            return self.text.len();
        };
        let end = self
            .starts
            .get(lc.line)
            .map_or(self.text.len(), |&next| next);
        if self.ascii[lc.line - 1] {
            return (start + lc.column).min(end);
        }
        self.text[start..end]
            .char_indices()
            .nth(lc.column)
            .map_or(end, |(i, _)| start + i)
    }

    pub(crate) fn start(&self, span: Span) -> usize {
        self.offset(span.start())
    }

    pub(crate) fn end(&self, span: Span) -> usize {
        self.offset(span.end())
    }

    /// Byte range from the start of `first` to the end of `last`.
    pub(crate) fn range(&self, first: Span, last: Span) -> Range<usize> {
        let start = self.start(first);
        start..self.end(last).max(start)
    }

    /// (1-based line, 1-based column in chars) of a byte offset, for reports.
    pub(crate) fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = self.starts.partition_point(|&s| s <= offset).max(1);
        let start = self.starts[line - 1];
        let col = if self.ascii[line - 1] {
            offset - start
        } else {
            self.text
                .get(start..offset)
                .map_or(0, |s| s.chars().count())
        };
        (line, col + 1)
    }

    pub(crate) fn text(&self) -> &'a str {
        self.text
    }

    /// The source text of a byte range (empty if the range is not on char boundaries).
    pub(crate) fn slice(&self, range: Range<usize>) -> &'a str {
        self.text.get(range).unwrap_or("")
    }
}

/// Text whose chars sit at the same (line, column) as in `src` but which the Rust lexer
/// accepts: a byte order mark and a `#!` shebang line become spaces, as rustc ignores them.
pub(crate) fn lexable(src: &str) -> std::borrow::Cow<'_, str> {
    let bom = src.starts_with('\u{feff}');
    let body = if bom { &src[3..] } else { src };
    let shebang_end = shebang_len(body);
    if !bom && shebang_end == 0 {
        return std::borrow::Cow::Borrowed(src);
    }
    let mut out = String::with_capacity(src.len());
    if bom {
        out.push(' ');
    }
    out.extend(body[..shebang_end].chars().map(|_| ' '));
    out.push_str(&body[shebang_end..]);
    std::borrow::Cow::Owned(out)
}

/// Length of a leading `#!...` line that is a shebang, not an inner attribute `#![...]`.
fn shebang_len(text: &str) -> usize {
    let Some(rest) = text.strip_prefix("#!") else {
        return 0;
    };
    if rest.trim_start().starts_with('[') {
        return 0;
    }
    text.find('\n').unwrap_or(text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lc(line: usize, column: usize) -> LineColumn {
        LineColumn { line, column }
    }

    #[test]
    fn columns_are_chars_not_bytes() {
        let text = "let é = 1;\nlet ü = \"ß\"; x\n";
        let ix = LineIndex::new(text);
        assert_eq!(ix.offset(lc(1, 0)), 0);
        // `=` is the 7th char of line 1 but 'é' is two bytes.
        assert_eq!(&text[ix.offset(lc(1, 6))..ix.offset(lc(1, 6)) + 1], "=");
        let x = ix.offset(lc(2, 13));
        assert_eq!(&text[x..x + 1], "x");
        assert_eq!(ix.line_col(x), (2, 14));
    }

    #[test]
    fn agrees_with_proc_macro2_on_non_ascii_source() {
        let text = "fn f() { let s = \"日本語\"; std::thread::yield_now(); }\n// ü\nfn g() {}";
        let ts: proc_macro2::TokenStream = text.parse().unwrap();
        let ix = LineIndex::new(text);
        fn walk(ts: proc_macro2::TokenStream, ix: &LineIndex, text: &str) {
            for tt in ts {
                let r = ix.start(tt.span())..ix.end(tt.span());
                assert_eq!(r, tt.span().byte_range(), "{tt}");
                if let proc_macro2::TokenTree::Group(g) = &tt {
                    walk(g.stream(), ix, text);
                } else {
                    assert_eq!(&text[r], tt.to_string());
                }
            }
        }
        walk(ts, &ix, text);
    }

    #[test]
    fn out_of_range_positions_clamp() {
        let ix = LineIndex::new("ab\ncd");
        assert_eq!(ix.offset(lc(9, 0)), 5);
        assert_eq!(ix.offset(lc(1, 99)), 3);
        assert_eq!(ix.offset(lc(0, 0)), 0);
        assert_eq!(ix.line_col(99), (2, 3));
    }

    #[test]
    fn bom_and_shebang_keep_positions() {
        let src = "\u{feff}#!/usr/bin/env run-cargo-script\nfn main() {}\n";
        let lex = lexable(src);
        assert_eq!(lex.lines().count(), src.lines().count());
        assert!(lex.parse::<proc_macro2::TokenStream>().is_ok());
        assert_eq!(lexable("#![allow(x)]\n"), "#![allow(x)]\n");
    }
}
