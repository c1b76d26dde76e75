//! Shows the compiler's rendered diagnostics on the instrumented mirror as if they were about
//! the user's own files: the instrumenter keeps every line where it was, but a rewritten line
//! is longer (`std::sync::Mutex` became `::pulse::std::sync::Mutex`), so rustc's columns, its
//! source snippets and the markers under them describe text the user never wrote.
//!
//! For each `--> file:line:col` and each snippet line of a mirrored file whose text differs
//! from the user's, the user's line is shown instead and every column is moved through an
//! alignment of the two lines (a token diff that matches user tokens as late as possible, so
//! inserted prefixes such as `::pulse::` stay unmatched). A span wholly inside inserted text
//! (an error on `pulse` itself) is shown on the user token that follows it. Lines rustc
//! abbreviated (very long ones) are left as rustc printed them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A file's lines as the user wrote them and as the mirror holds them.
type Versions = (Vec<String>, Vec<String>);

/// Where the two versions of a file the compiler names are.
pub struct DiagnosticMap<'a> {
    /// Relative file names in diagnostics are relative to this (the mirror's workspace root).
    pub mirror_root: &'a Path,
    /// Maps a mirror path to the user's.
    pub to_user: &'a dyn Fn(&Path) -> PathBuf,
    /// `None`: the file is not mirrored, or identical.
    files: HashMap<PathBuf, Option<Versions>>,
}

impl<'a> DiagnosticMap<'a> {
    pub fn new(mirror_root: &'a Path, to_user: &'a dyn Fn(&Path) -> PathBuf) -> Self {
        DiagnosticMap {
            mirror_root,
            to_user,
            files: HashMap::new(),
        }
    }

    /// (user lines, mirror lines) of a file named in a diagnostic, when they differ.
    fn lines(&mut self, name: &str) -> Option<&Versions> {
        let mirror = self.mirror_root.join(name);
        let to_user = self.to_user;
        self.files
            .entry(mirror.clone())
            .or_insert_with(|| {
                let user = to_user(&mirror);
                if user == mirror {
                    return None;
                }
                let m = std::fs::read_to_string(&mirror).ok()?;
                let u = std::fs::read_to_string(&user).ok()?;
                (m != u).then(|| {
                    (
                        u.lines().map(str::to_owned).collect(),
                        m.lines().map(str::to_owned).collect(),
                    )
                })
            })
            .as_ref()
    }

    /// The rendered diagnostic with the user's columns and source text.
    pub fn map(&mut self, rendered: &str) -> String {
        let mut out = String::with_capacity(rendered.len());
        let mut file: Option<String> = None;
        // The last snippet line shown: (prefix width, user line, mirror line), both expanded.
        let mut last: Option<(usize, String, String)> = None;
        for line in rendered.split_inclusive('\n') {
            let (raw, nl) = match line.strip_suffix('\n') {
                Some(b) => (b, "\n"),
                None => (line, ""),
            };
            // Coloured output is parsed without its escapes; a line that is remapped loses
            // its colour, the others keep it.
            let plain = strip_ansi(raw);
            let body = plain.as_str();
            let mapped = self
                .location_line(body, &mut file)
                .or_else(|| {
                    let name = file.clone()?;
                    let (user, mirror) = self.lines(&name)?;
                    snippet_line(body, user, mirror, &mut last)
                })
                .or_else(|| {
                    let l = last.as_ref()?;
                    marker_line(body, l)
                });
            if !is_marker_or_snippet(body) {
                last = None;
            }
            out.push_str(mapped.as_deref().unwrap_or(raw));
            out.push_str(nl);
        }
        out
    }

    /// ` --> file:line:col` or ` ::: file:line:col`: remembers the file, maps the column.
    fn location_line(&mut self, body: &str, file: &mut Option<String>) -> Option<String> {
        let trimmed = body.trim_start();
        let arrow = ["--> ", "::: "]
            .into_iter()
            .find(|a| trimmed.starts_with(a))?;
        let indent = &body[..body.len() - trimmed.len()];
        let loc = &trimmed[arrow.len()..];
        let mut parts = loc.rsplitn(3, ':');
        let (col, line, name) = (parts.next()?, parts.next()?, parts.next()?);
        let (line_no, col_no) = (line.parse::<usize>().ok()?, col.parse::<usize>().ok()?);
        *file = Some(name.to_string());
        let (user, mirror) = self.lines(name)?;
        let (u, m) = (user.get(line_no - 1)?, mirror.get(line_no - 1)?);
        if u == m {
            return None;
        }
        let (start, _) = Alignment::new(u, m).span(col_no - 1, col_no);
        Some(format!("{indent}{arrow}{name}:{line_no}:{}", start + 1))
    }
}

/// `text` without ANSI escape sequences (`ESC [ ... letter`).
fn strip_ansi(text: &str) -> String {
    if !text.contains('\x1b') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn is_marker_or_snippet(body: &str) -> bool {
    gutter(body).is_some()
}

/// Splits `NN | rest` or `   | rest` into (line number, text after `| `).
fn gutter(body: &str) -> Option<(Option<usize>, &str)> {
    let bar = body.find('|')?;
    let head = body[..bar].trim();
    let number = if head.is_empty() {
        None
    } else {
        Some(head.parse::<usize>().ok()?)
    };
    if !body[..bar].ends_with(' ') {
        return None;
    }
    let rest = &body[bar + 1..];
    Some((number, rest.strip_prefix(' ').unwrap_or(rest)))
}

/// rustc shows tabs as four spaces.
fn expand(s: &str) -> String {
    s.replace('\t', "    ")
}

fn snippet_line(
    body: &str,
    user: &[String],
    mirror: &[String],
    last: &mut Option<(usize, String, String)>,
) -> Option<String> {
    let (Some(n), content) = gutter(body)? else {
        return None;
    };
    let (u, m) = (expand(user.get(n - 1)?), expand(mirror.get(n - 1)?));
    let prefix = content.strip_suffix(m.as_str())?;
    if !prefix.chars().all(|c| " |/\\_".contains(c)) {
        return None;
    }
    let head = &body[..body.len() - content.len()];
    let width = prefix.chars().count();
    let shown = format!("{head}{prefix}{u}");
    *last = Some((width, u, m));
    Some(shown.trim_end().to_string())
}

/// Moves the markers, labels and connectors under a mapped snippet line.
fn marker_line(body: &str, (width, user, mirror): &(usize, String, String)) -> Option<String> {
    let (None, content) = gutter(body)? else {
        return None;
    };
    if user == mirror || content.trim().is_empty() {
        return None;
    }
    let head = &body[..body.len() - content.len()];
    let align = Alignment::new(user, mirror);
    let chars: Vec<char> = content.chars().collect();
    let mut out: Vec<char> = chars.iter().take(*width).copied().collect();
    // Pads to `at` and writes `text` there (after what is there already, if that is longer).
    let place = |out: &mut Vec<char>, at: usize, text: &[char]| {
        while out.len() < at {
            out.push(' ');
        }
        out.extend_from_slice(text);
    };
    let mut i = *width;
    // The last marker run on this line: (old end, new end).
    let mut prev_marker_end: Option<(usize, usize)> = None;
    while i < chars.len() {
        let c = chars[i];
        if c == ' ' {
            i += 1;
            continue;
        }
        let col = i - width;
        if "^-~".contains(c) {
            let mut j = i;
            while j < chars.len() && chars[j] == c {
                j += 1;
            }
            let (s, e) = align.span(col, j - width);
            let e = e.max(s + 1);
            let run: Vec<char> = std::iter::repeat_n(c, e - s).collect();
            place(&mut out, width + s, &run);
            prev_marker_end = Some((j, width + e));
            i = j;
        } else if let Some((old_end, new_end)) = prev_marker_end.filter(|_| c != '|') {
            // The label of the last marker: the rest of the line, as far from it as it was.
            place(&mut out, new_end + (i - old_end), &chars[i..]);
            break;
        } else {
            // A connector, or a label under one: moved to its span's start. Labels side by
            // side are two or more spaces apart.
            let mut j = i + 1;
            if c != '|' {
                while j < chars.len() && !(chars[j] == ' ' && chars.get(j + 1) == Some(&' ')) {
                    j += 1;
                }
            }
            let (s, _) = align.span(col, col + 1);
            place(&mut out, width + s, &chars[i..j]);
            i = j;
        }
    }
    let text: String = out.into_iter().collect();
    Some(format!("{head}{}", text.trim_end()).trim_end().to_string())
}

/// A token alignment of a user line with its instrumented version.
struct Alignment {
    /// For each mirror char: the user char it is, if it came from the user's text.
    to_user: Vec<Option<usize>>,
    /// For each mirror char: the user token (start, end) of the next matched char at or after it.
    next: Vec<Option<(usize, usize)>>,
    user_len: usize,
}

impl Alignment {
    fn new(user: &str, mirror: &str) -> Alignment {
        let (ut, mt) = (tokens(user), tokens(mirror));
        let (n, m) = (ut.len(), mt.len());
        // lcs[i][j]: longest common subsequence of ut[i..] and mt[j..].
        let mut lcs = vec![vec![0u32; m + 1]; n + 1];
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                lcs[i][j] = if ut[i].text == mt[j].text {
                    lcs[i + 1][j + 1] + 1
                } else {
                    lcs[i + 1][j].max(lcs[i][j + 1])
                };
            }
        }
        let mirror_len = mirror.chars().count();
        let mut to_user = vec![None; mirror_len];
        let mut token_of: Vec<Option<(usize, usize)>> = vec![None; mirror_len];
        let (mut i, mut j) = (0, 0);
        while i < n && j < m {
            if lcs[i][j + 1] == lcs[i][j] {
                j += 1; // match as late as possible: inserted text comes before the user's
            } else if ut[i].text == mt[j].text {
                for k in 0..mt[j].len {
                    to_user[mt[j].start + k] = Some(ut[i].start + k);
                    token_of[mt[j].start + k] = Some((ut[i].start, ut[i].start + ut[i].len));
                }
                i += 1;
                j += 1;
            } else {
                i += 1;
            }
        }
        let mut next = vec![None; mirror_len];
        let mut ahead = None;
        for k in (0..mirror_len).rev() {
            if token_of[k].is_some() && !mt_is_space(mirror, k) {
                ahead = token_of[k];
            }
            next[k] = ahead;
        }
        Alignment {
            to_user,
            next,
            user_len: user.chars().count(),
        }
    }

    /// The user's columns (0-based, end exclusive) for mirror columns `start..end`.
    fn span(&self, start: usize, end: usize) -> (usize, usize) {
        let matched: Vec<usize> = (start..end.min(self.to_user.len()))
            .filter_map(|k| self.to_user[k])
            .collect();
        if let (Some(a), Some(b)) = (matched.iter().min(), matched.iter().max()) {
            return (*a, b + 1);
        }
        match self.next.get(start).copied().flatten() {
            Some(token) => token,
            None => (self.user_len, self.user_len + 1),
        }
    }
}

fn mt_is_space(s: &str, k: usize) -> bool {
    s.chars().nth(k).is_some_and(char::is_whitespace)
}

struct Token {
    text: String,
    /// In chars.
    start: usize,
    len: usize,
}

/// Identifier/number runs, whitespace runs and single other chars.
fn tokens(s: &str) -> Vec<Token> {
    let class = |c: char| {
        if c.is_alphanumeric() || c == '_' {
            0
        } else if c.is_whitespace() {
            1
        } else {
            2
        }
    };
    let mut out: Vec<Token> = Vec::new();
    let mut prev = None;
    for (k, c) in s.chars().enumerate() {
        let cl = class(c);
        match out.last_mut() {
            Some(t) if prev == Some(cl) && cl != 2 => {
                t.text.push(c);
                t.len += 1;
            }
            _ => out.push(Token {
                text: c.to_string(),
                start: k,
                len: 1,
            }),
        }
        prev = Some(cl);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapped(user: &str, mirror: &str, rendered: &str) -> String {
        let dir = std::env::temp_dir().join(format!(
            "cargo-pulse-diag-{}-{}",
            std::process::id(),
            rendered.len()
        ));
        let (u, m) = (dir.join("user"), dir.join("mirror"));
        std::fs::create_dir_all(u.join("src")).unwrap();
        std::fs::create_dir_all(m.join("src")).unwrap();
        std::fs::write(u.join("src/lib.rs"), user).unwrap();
        std::fs::write(m.join("src/lib.rs"), mirror).unwrap();
        let to_user = |p: &Path| u.join(p.strip_prefix(&m).unwrap_or(p));
        let out = DiagnosticMap::new(&m, &to_user).map(rendered);
        let _ = std::fs::remove_dir_all(&dir);
        out
    }

    #[test]
    fn an_error_on_a_rewritten_line_shows_the_users_text_and_columns() {
        let user = "fn f() {}\nuse std::sync::{Arc, Mutex};\n";
        let mirror = "fn f() {}\nuse ::pulse::std::sync::{Arc, Mutex};\n";
        let rendered = "\
error[E0433]: cannot find module or crate `pulse` in the crate root
 --> src/lib.rs:2:7
  |
2 | use ::pulse::std::sync::{Arc, Mutex};
  |       ^^^^^ use of unresolved module or unlinked crate `pulse`
";
        assert_eq!(
            mapped(user, mirror, rendered),
            "\
error[E0433]: cannot find module or crate `pulse` in the crate root
 --> src/lib.rs:2:5
  |
2 | use std::sync::{Arc, Mutex};
  |     ^^^ use of unresolved module or unlinked crate `pulse`
"
        );
    }

    #[test]
    fn markers_labels_and_connectors_move_with_the_text() {
        let user = "    let m: std::sync::Mutex<u32> = std::sync::Mutex::new(\"x\");\n";
        let mirror =
            "    let m: ::pulse::std::sync::Mutex<u32> = ::pulse::std::sync::Mutex::new(\"x\");\n";
        let rendered = "\
error[E0308]: mismatched types
 --> src/lib.rs:1:78
  |
1 |     let m: ::pulse::std::sync::Mutex<u32> = ::pulse::std::sync::Mutex::new(\"x\");
  |            ------------------------------   ------------------------------ ^^^ expected `u32`, found `&str`
  |            |                                |
  |            expected due to this             arguments to this function are incorrect
";
        let out = mapped(user, mirror, rendered);
        assert!(!out.contains("::pulse"), "{out}");
        assert_eq!(
            out,
            "\
error[E0308]: mismatched types
 --> src/lib.rs:1:60
  |
1 |     let m: std::sync::Mutex<u32> = std::sync::Mutex::new(\"x\");
  |            ---------------------   --------------------- ^^^ expected `u32`, found `&str`
  |            |                       |
  |            expected due to this    arguments to this function are incorrect
"
        );
    }

    #[test]
    fn coloured_output_is_mapped_too() {
        let user = "use std::sync::Mutex;\n";
        let mirror = "use ::pulse::std::sync::Mutex;\n";
        let rendered = "\x1b[0m\x1b[1m\x1b[38;5;12m --> \x1b[0m\x1b[0msrc/lib.rs:1:7\x1b[0m\n\x1b[0m\x1b[1m\x1b[38;5;12m1\x1b[0m \x1b[0m\x1b[1m\x1b[38;5;12m|\x1b[0m \x1b[0muse ::pulse::std::sync::Mutex;\x1b[0m\n";
        assert_eq!(
            mapped(user, mirror, rendered),
            " --> src/lib.rs:1:5\n1 | use std::sync::Mutex;\n"
        );
    }

    #[test]
    fn unchanged_lines_and_other_files_are_left_alone() {
        let user = "use std::sync::Mutex;\nfn f() { let x: u32 = \"a\"; }\n";
        let mirror = "use ::pulse::std::sync::Mutex;\nfn f() { let x: u32 = \"a\"; }\n";
        let rendered = "\
error[E0308]: mismatched types
 --> src/lib.rs:2:23
  |
2 | fn f() { let x: u32 = \"a\"; }
  |                 ---   ^^^ expected `u32`, found `&str`
 --> src/other.rs:1:1
";
        assert_eq!(mapped(user, mirror, rendered), rendered);
    }
}
