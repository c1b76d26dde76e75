//! How locations are shown: a dependency's path from its crate directory on, a line in the
//! same file as its neighbour as `:line`.

/// `file:line:col` shortened to `:line` when it is in the same file as `near`, else as
/// [`display_location`] shows it.
pub(super) fn short_location(loc: Option<&str>, near: Option<&str>) -> String {
    let Some(loc) = loc else {
        return "?".into();
    };
    let file = |l: &str| {
        let mut parts = l.rsplitn(3, ':');
        let _col = parts.next();
        let line = parts.next().unwrap_or("").to_string();
        (parts.next().unwrap_or("").to_string(), line)
    };
    let (f, line) = file(loc);
    match near.map(file) {
        Some((g, _)) if g == f && !f.is_empty() => format!(":{line}"),
        _ => display_location(loc),
    }
}

/// `text` with every path into a downloaded dependency (registry or git checkout) shown
/// as [`display_location`] shows it; for a failure report's lines (`thread 'main' at
/// .../parking_lot-0.12.5/src/raw_mutex.rs:262:17`, a backtrace's frames).
pub fn display_locations_in(text: &str) -> String {
    let stop = |c: char| c.is_whitespace() || matches!(c, '(' | ')' | '\'' | '"' | '`' | ',');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let hit = ["/registry/src/", "/git/checkouts/"]
            .iter()
            .filter_map(|m| rest.find(m))
            .min();
        let Some(m) = hit else {
            out.push_str(rest);
            return out;
        };
        let start = rest[..m]
            .char_indices()
            .rev()
            .find(|&(_, c)| stop(c))
            .map_or(0, |(i, c)| i + c.len_utf8());
        let end = rest[m..].find(stop).map_or(rest.len(), |e| m + e);
        out.push_str(&rest[..start]);
        out.push_str(&display_location(&rest[start..end]));
        rest = &rest[end..];
    }
}

/// Where a dependency's sources live in a path: after cargo's registry index directory
/// (`~/.cargo/registry/src/<index>/parking_lot-0.13.0/src/raw_mutex.rs`), its git
/// checkouts (`~/.cargo/git/checkouts/<repo>-<hash>/<rev>/src/lib.rs`) or cargo-pulse's
/// instrumented copies (`<target>/pulse/[<workspace>-<hash>/]deps/parking_lot-0.13.0/src/raw_mutex.rs`). Returns the
/// dependency's name as shown (`parking_lot-0.13.0`, `repo@rev`) and the rest of the path.
fn split_dependency(loc: &str) -> Option<(String, &str)> {
    if let Some(i) = loc.find("/registry/src/") {
        let rest = &loc[i + "/registry/src/".len()..];
        let (_index, rest) = rest.split_once('/')?;
        let (krate, rest) = rest.split_once('/')?;
        return Some((krate.to_string(), rest));
    }
    // cargo-pulse's instrumented copy of a dependency (`<target>/pulse/deps/<crate>/`, or
    // `<target>/pulse/<workspace>-<hash>/deps/<crate>/` in a target dir shared with other
    // workspaces), where the traced replay runs it: the console's race line and table are
    // made there, before cargo-pulse maps the paths back to the registry's.
    if let Some(rest) = after_pulse_deps(loc) {
        let (krate, rest) = rest.split_once('/')?;
        return Some((krate.to_string(), rest));
    }
    if let Some(i) = loc.find("/git/checkouts/") {
        let rest = &loc[i + "/git/checkouts/".len()..];
        let (repo, rest) = rest.split_once('/')?;
        let (rev, rest) = rest.split_once('/')?;
        let repo = match repo.rsplit_once('-') {
            Some((name, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => name,
            _ => repo,
        };
        return Some((format!("{repo}@{rev}"), rest));
    }
    None
}

/// The path after `/pulse/deps/` or `/pulse/<name>-<16 hex digits>/deps/`.
fn after_pulse_deps(loc: &str) -> Option<&str> {
    loc.match_indices("/pulse/").find_map(|(i, m)| {
        let rest = &loc[i + m.len()..];
        if let Some(rest) = rest.strip_prefix("deps/") {
            return Some(rest);
        }
        let (dir, rest) = rest.split_once('/')?;
        let (_, hash) = dir.rsplit_once('-')?;
        (hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()))
            .then(|| rest.strip_prefix("deps/"))
            .flatten()
    })
}

/// The dependency a location is inside (`parking_lot-0.13.0`, `repo@rev` for a git
/// dependency), `None` for any other path.
pub fn dependency_of(loc: &str) -> Option<String> {
    split_dependency(loc).map(|(d, _)| d)
}

/// Whether a location is a line of the user's own code: not inside a dependency cargo
/// downloaded (registry or git checkout) nor std (pulse's own paths never reach a trace:
/// the runtime replaces them with the thread's last user location).
pub fn is_user_location(loc: &str) -> bool {
    split_dependency(loc).is_none()
        && !loc.starts_with("/rustc/")
        && !loc.contains("/lib/rustlib/src/rust/library/")
}

/// A location as the tables and the race line show it: a dependency's path from its
/// crate directory on (`parking_lot-0.13.0/src/raw_mutex.rs:62:14`), any other unchanged.
/// The trace file and the HTML viewer's hover keep the full path.
pub fn display_location(loc: &str) -> String {
    match split_dependency(loc) {
        Some((dep, rest)) => format!("{dep}/{rest}"),
        None => loc.to_string(),
    }
}
