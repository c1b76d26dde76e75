//! Edits to copied `Cargo.toml` files, made with toml_edit so that everything we do not touch
//! (comments, order, formatting) stays as the user wrote it.
//!
//! A copied manifest must still build from its new place: relative `path =` entries are
//! re-pointed (to the mirrored copy when there is one, else to the original), the `pulse`
//! dependency that instrumented code names is added, the mirror's root becomes a workspace of its
//! own, and instrumented registry crates (each version under a key of its own) and pulse's
//! `parking_lot_core` are patched in. For crates that leave their workspace (the
//! support crates, `cargo pulse instrument --out`), workspace-inherited fields are inlined.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use toml_edit::{DocumentMut, InlineTable, Item, Table, TableLike, Value};

use crate::workspace::normalize;

pub fn parse(text: &str, path: &Path) -> Result<DocumentMut> {
    text.parse::<DocumentMut>()
        .with_context(|| format!("parsing {}", path.display()))
}

/// Whether the manifest turns libtest's harness off for the target of `kind` (`lib`, `bin`,
/// `test`, `bench`, `example`) named `name`: `harness = false` in `[lib]` or in its
/// `[[bin]]`/`[[test]]`/`[[bench]]`/`[[example]]` entry. Such a target runs its own `main`.
pub fn harness_off(doc: &DocumentMut, kind: &str, name: &str) -> bool {
    let off = |t: &dyn TableLike| {
        t.get("harness")
            .and_then(Item::as_bool)
            .is_some_and(|on| !on)
    };
    if kind == "lib" {
        return doc
            .get("lib")
            .and_then(Item::as_table_like)
            .is_some_and(off);
    }
    let Some(entries) = doc.get(kind).and_then(Item::as_array_of_tables) else {
        return false;
    };
    // Cargo's target names may spell `-` as `_`.
    let same = |n: &str| n.replace('-', "_") == name.replace('-', "_");
    entries
        .iter()
        .any(|t| t.get("name").and_then(Item::as_str).is_some_and(same) && off(t))
}

/// Every dependency table of a manifest, as (table) mutable references: `[dependencies]`,
/// `[dev-dependencies]`, `[build-dependencies]`, their `[target.'cfg'.*]` forms,
/// `[workspace.dependencies]`, `[patch.*]` and `[replace]`.
fn for_each_dep_table(doc: &mut DocumentMut, f: &mut dyn FnMut(&str, &mut dyn TableLike)) {
    const KINDS: [&str; 5] = [
        "dependencies",
        "dev-dependencies",
        "dev_dependencies",
        "build-dependencies",
        "build_dependencies",
    ];
    for kind in KINDS {
        if let Some(t) = doc.get_mut(kind).and_then(Item::as_table_like_mut) {
            f(kind, t);
        }
    }
    if let Some(targets) = doc.get_mut("target").and_then(Item::as_table_like_mut) {
        for (_, target) in targets.iter_mut() {
            if let Some(target) = target.as_table_like_mut() {
                for kind in KINDS {
                    if let Some(t) = target.get_mut(kind).and_then(Item::as_table_like_mut) {
                        f(kind, t);
                    }
                }
            }
        }
    }
    if let Some(t) = doc
        .get_mut("workspace")
        .and_then(|w| w.get_mut("dependencies"))
        .and_then(Item::as_table_like_mut)
    {
        f("workspace.dependencies", t);
    }
    if let Some(patches) = doc.get_mut("patch").and_then(Item::as_table_like_mut) {
        for (_, registry) in patches.iter_mut() {
            if let Some(t) = registry.as_table_like_mut() {
                f("patch", t);
            }
        }
    }
    if let Some(t) = doc.get_mut("replace").and_then(Item::as_table_like_mut) {
        f("replace", t);
    }
}

/// Re-points every relative or absolute `path =` dependency: `map` receives the absolute,
/// normalized path the entry meant in the original tree (relative to `orig_dir`) and returns
/// where it should point now.
pub fn repoint_paths(doc: &mut DocumentMut, orig_dir: &Path, map: &dyn Fn(&Path) -> PathBuf) {
    for_each_dep_table(doc, &mut |_, table| {
        for (_, dep) in table.iter_mut() {
            let Some(dep) = dep.as_table_like_mut() else {
                continue;
            };
            let Some(path) = dep.get("path").and_then(Item::as_str) else {
                continue;
            };
            let meant = normalize(&orig_dir.join(path));
            let now = map(&meant);
            dep.insert("path", toml_edit::value(now.display().to_string()));
        }
    });
}

/// For a registry crate's manifest copied out of cargo's cache: a dependency with both a
/// `path` and a `version` (manifests published by old cargo kept the path, e.g. openssl 0.7's
/// `openssl-sys = { version = "0.7.14", path = "../openssl-sys" }`) is the registry's version,
/// as cargo reads a registry package; the path, pointing nowhere in the cache, is dropped.
pub fn drop_published_paths(doc: &mut DocumentMut) {
    for_each_dep_table(doc, &mut |_, table| {
        for (_, dep) in table.iter_mut() {
            let Some(dep) = dep.as_table_like_mut() else {
                continue;
            };
            if dep.contains_key("path") && dep.contains_key("version") {
                dep.remove("path");
            }
        }
    });
}

/// Makes every dependency on `pulse` point at the unpacked support crate, and adds one to
/// `[dependencies]` when there is none: instrumented code names `::pulse::std::...`.
pub fn add_pulse_dependency(doc: &mut DocumentMut, pulse_dir: &Path) {
    let path = pulse_dir.display().to_string();
    let mut in_normal_deps = false;
    for_each_dep_table(doc, &mut |kind, table| {
        if kind.starts_with("patch") || kind == "replace" || kind == "workspace.dependencies" {
            return;
        }
        let keys: Vec<String> = table.iter().map(|(k, _)| k.to_string()).collect();
        for key in keys {
            let item = table.get_mut(&key).unwrap();
            let is_pulse = key == "pulse" && item.get("package").is_none()
                || item.get("package").and_then(Item::as_str) == Some("pulse");
            if !is_pulse {
                continue;
            }
            if kind == "dependencies" {
                in_normal_deps = true;
            }
            let mut spec = InlineTable::new();
            if let Some(t) = item.as_table_like() {
                for (k, v) in t.iter() {
                    if matches!(
                        k,
                        "version"
                            | "git"
                            | "branch"
                            | "tag"
                            | "rev"
                            | "registry"
                            | "path"
                            | "workspace"
                    ) {
                        continue;
                    }
                    if let Some(v) = v.as_value() {
                        let mut v = v.clone();
                        v.decor_mut().clear();
                        spec.insert(k, v);
                    }
                }
            }
            spec.insert("path", Value::from(path.clone()));
            spec.fmt();
            *item = Item::Value(Value::InlineTable(spec));
        }
    });
    if !in_normal_deps {
        let deps = doc
            .entry("dependencies")
            .or_insert_with(|| Item::Table(Table::new()));
        if let Some(deps) = deps.as_table_like_mut() {
            let mut spec = InlineTable::new();
            spec.insert("path", Value::from(path));
            deps.insert("pulse", Item::Value(Value::InlineTable(spec)));
        }
    }
}

/// Gives the manifest a `[workspace]` table if it has none, so that cargo treats the mirror as
/// a workspace root instead of looking upwards into the user's tree.
pub fn ensure_workspace(doc: &mut DocumentMut) {
    if doc.get("workspace").is_none() {
        doc.insert("workspace", Item::Table(Table::new()));
    }
}

/// Adds `[patch.crates-io] key = { path = dir }` (with `package = "<package>"` when the key is
/// not the crate's name: a second version of one crate), replacing any patch under that key.
pub fn add_crates_io_patch(doc: &mut DocumentMut, key: &str, package: Option<&str>, dir: &Path) {
    let patch = doc.entry("patch").or_insert_with(|| {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    });
    let Some(patch) = patch.as_table_like_mut() else {
        return;
    };
    let registry = patch
        .entry("crates-io")
        .or_insert(Item::Table(Table::new()));
    if let Some(registry) = registry.as_table_like_mut() {
        let mut spec = InlineTable::new();
        spec.insert("path", Value::from(dir.display().to_string()));
        if let Some(package) = package {
            spec.insert("package", Value::from(package));
        }
        registry.insert(key, Item::Value(Value::InlineTable(spec)));
    }
}

/// Inlines `x.workspace = true` fields and dependencies from the workspace manifest `ws`
/// (whose directory is `ws_root`), so the package builds outside that workspace.
pub fn inline_workspace_inheritance(doc: &mut DocumentMut, ws: &DocumentMut, ws_root: &Path) {
    let ws_package = ws
        .get("workspace")
        .and_then(|w| w.get("package"))
        .and_then(Item::as_table_like);
    let ws_deps = ws
        .get("workspace")
        .and_then(|w| w.get("dependencies"))
        .and_then(Item::as_table_like);

    if let Some(package) = doc.get_mut("package").and_then(Item::as_table_like_mut) {
        let keys: Vec<String> = package.iter().map(|(k, _)| k.to_string()).collect();
        for key in keys {
            if !inherits(package.get(&key).unwrap()) {
                continue;
            }
            match ws_package
                .and_then(|p| p.get(&key))
                .and_then(Item::as_value)
            {
                Some(v) => {
                    let mut v = v.clone();
                    // Paths in [workspace.package] are relative to the workspace root.
                    if matches!(key.as_str(), "readme" | "license-file") {
                        if let Some(s) = v.as_str() {
                            v = Value::from(ws_root.join(s).display().to_string());
                        }
                    }
                    v.decor_mut().clear();
                    package.insert(&key, Item::Value(v));
                }
                None => {
                    package.remove(&key);
                }
            }
        }
    }

    // `[lints] workspace = true`: the lint levels the project builds itself with. A crate
    // built as a dependency has its lints capped anyway, so outside the workspace it keeps
    // rustc's and clippy's defaults.
    if doc.get("lints").is_some_and(inherits) {
        doc.remove("lints");
    }

    for_each_dep_table(doc, &mut |kind, table| {
        if kind == "workspace.dependencies" {
            return;
        }
        let keys: Vec<String> = table.iter().map(|(k, _)| k.to_string()).collect();
        for key in keys {
            let item = table.get_mut(&key).unwrap();
            if !inherits(item) {
                continue;
            }
            let mut spec = InlineTable::new();
            match ws_deps.and_then(|d| d.get(&key)) {
                Some(Item::Value(Value::String(v))) => {
                    spec.insert("version", Value::from(v.value().clone()));
                }
                Some(base) => {
                    if let Some(base) = base.as_table_like() {
                        for (k, v) in base.iter() {
                            if let Some(v) = v.as_value() {
                                let mut v = v.clone();
                                if k == "path" {
                                    if let Some(s) = v.as_str() {
                                        v = Value::from(
                                            normalize(&ws_root.join(s)).display().to_string(),
                                        );
                                    }
                                }
                                v.decor_mut().clear();
                                spec.insert(k, v);
                            }
                        }
                    }
                }
                None => continue,
            }
            // The member may add features and make the dependency optional.
            if let Some(member) = item.as_table_like() {
                for (k, v) in member.iter() {
                    match (k, v.as_value()) {
                        ("workspace", _) => {}
                        ("features", Some(Value::Array(extra))) => {
                            let mut all = spec
                                .get("features")
                                .and_then(Value::as_array)
                                .cloned()
                                .unwrap_or_default();
                            for f in extra.iter() {
                                all.push(f.clone());
                            }
                            spec.insert("features", Value::Array(all));
                        }
                        (k, Some(v)) => {
                            let mut v = v.clone();
                            v.decor_mut().clear();
                            spec.insert(k, v);
                        }
                        _ => {}
                    }
                }
            }
            spec.fmt();
            *item = Item::Value(Value::InlineTable(spec));
        }
    });

    if doc.get("lints").is_some_and(inherits) {
        match ws.get("workspace").and_then(|w| w.get("lints")) {
            Some(lints) => {
                doc.insert("lints", lints.clone());
            }
            None => {
                doc.remove("lints");
            }
        }
    }
}

/// Drops what only the crate's own tests, benches and examples need: the support crates travel
/// with `src/` only.
pub fn strip_dev_targets(doc: &mut DocumentMut) {
    for key in [
        "dev-dependencies",
        "dev_dependencies",
        "test",
        "bench",
        "example",
    ] {
        doc.remove(key);
    }
    if let Some(targets) = doc.get_mut("target").and_then(Item::as_table_like_mut) {
        for (_, t) in targets.iter_mut() {
            if let Some(t) = t.as_table_like_mut() {
                t.remove("dev-dependencies");
                t.remove("dev_dependencies");
            }
        }
    }
}

fn inherits(item: &Item) -> bool {
    item.get("workspace").and_then(Item::as_bool) == Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use indoc::indoc;

    #[test]
    fn harness_false_is_read_per_target() {
        let doc = parse(
            indoc! {r#"
                [package]
                name = "q"
                [lib]
                harness = false
                [[test]]
                name = "custom-main"
                harness = false
                [[test]]
                name = "plain"
                [[bin]]
                name = "tool"
                harness = true
            "#},
            Path::new("Cargo.toml"),
        )
        .unwrap();
        assert!(harness_off(&doc, "lib", "q"));
        assert!(harness_off(&doc, "test", "custom-main"));
        assert!(harness_off(&doc, "test", "custom_main"));
        assert!(!harness_off(&doc, "test", "plain"));
        assert!(!harness_off(&doc, "test", "other"));
        assert!(!harness_off(&doc, "bin", "tool"));
        let plain = parse("[package]\nname = \"q\"\n", Path::new("Cargo.toml")).unwrap();
        assert!(!harness_off(&plain, "lib", "q"));
    }

    #[test]
    fn a_published_path_beside_a_version_is_dropped() {
        let mut doc = parse(
            indoc! {r#"
                [dependencies]
                openssl-sys = { version = "0.7.14", path = "../openssl-sys" }
                local = { path = "../local" }
                [target.'cfg(unix)'.dependencies.extras]
                version = "0.7"
                path = "../extras"
            "#},
            Path::new("Cargo.toml"),
        )
        .unwrap();
        drop_published_paths(&mut doc);
        let text = doc.to_string();
        assert!(
            !text.contains("../openssl-sys") && !text.contains("../extras"),
            "{text}"
        );
        assert!(text.contains("\"../local\""), "a path alone stays: {text}");
    }

    fn doc(s: &str) -> DocumentMut {
        s.parse().unwrap()
    }

    #[test]
    fn repoints_relative_paths_and_keeps_the_rest() {
        let mut d = doc(indoc! {r#"
            [package]
            name = "app" # the app
            version = "0.1.0"

            [dependencies]
            util = { path = "../util", features = ["x"] }
            serde = "1"

            [target.'cfg(unix)'.dev-dependencies.helper]
            path = "helper"
        "#});
        repoint_paths(&mut d, Path::new("/ws/app"), &|p| {
            PathBuf::from("/mirror").join(p.strip_prefix("/ws").unwrap())
        });
        let out = d.to_string();
        assert!(
            out.contains(r#"util = { path = "/mirror/util", features = ["x"] }"#),
            "{out}"
        );
        assert!(out.contains(r#"path = "/mirror/app/helper""#), "{out}");
        assert!(out.contains("# the app"), "{out}");
        assert!(out.contains(r#"serde = "1""#));
    }

    #[test]
    fn adds_pulse_or_replaces_its_source() {
        let mut d = doc("[package]\nname = \"a\"\n");
        add_pulse_dependency(&mut d, Path::new("/s/pulse"));
        assert!(
            d.to_string().contains(r#"pulse = { path = "/s/pulse" }"#),
            "{d}"
        );

        let mut d = doc("[package]\nname = \"a\"\n[dependencies]\npulse = { version = \"0.1\", features = [\"f\"] }\n");
        add_pulse_dependency(&mut d, Path::new("/s/pulse"));
        let out = d.to_string();
        assert!(
            out.contains(r#"pulse = { features = ["f"], path = "/s/pulse" }"#),
            "{out}"
        );
        assert_eq!(out.matches("pulse =").count(), 1, "{out}");
    }

    #[test]
    fn ensures_workspace_and_patches() {
        let mut d = doc("[package]\nname = \"a\"\n");
        ensure_workspace(&mut d);
        add_crates_io_patch(
            &mut d,
            "once_cell",
            None,
            Path::new("/t/deps/once_cell-1.0.0"),
        );
        add_crates_io_patch(
            &mut d,
            "spin-pulse-v0_5_2",
            Some("spin"),
            Path::new("/t/deps/spin-0.5.2"),
        );
        let out = d.to_string();
        assert!(out.contains("[workspace]"), "{out}");
        assert!(
            out.contains("[patch.crates-io]\nonce_cell = { path = \"/t/deps/once_cell-1.0.0\" }"),
            "{out}"
        );
        assert!(
            out.contains(
                "spin-pulse-v0_5_2 = { path = \"/t/deps/spin-0.5.2\", package = \"spin\" }"
            ),
            "{out}"
        );
    }

    #[test]
    fn inlines_workspace_inheritance() {
        let ws = doc(indoc! {r#"
            [workspace]
            members = ["a"]
            [workspace.package]
            version = "0.3.0"
            edition = "2021"
            [workspace.dependencies]
            serde = { version = "1", features = ["derive"] }
            itoa = "1"
            sib = { path = "sib", version = "0.3.0" }
        "#});
        let mut d = doc(indoc! {r#"
            [package]
            name = "a"
            version.workspace = true
            edition = { workspace = true }
            [dependencies]
            serde = { workspace = true, features = ["rc"], optional = true }
            itoa.workspace = true
            sib.workspace = true
        "#});
        inline_workspace_inheritance(&mut d, &ws, Path::new("/ws"));
        let out = d.to_string();
        assert!(out.contains(r#"version = "0.3.0""#), "{out}");
        assert!(out.contains(r#"edition = "2021""#), "{out}");
        assert!(
            out.contains(
                r#"serde = { version = "1", features = ["derive", "rc"], optional = true }"#
            ),
            "{out}"
        );
        assert!(out.contains(r#"itoa = { version = "1" }"#), "{out}");
        assert!(
            out.contains(r#"sib = { path = "/ws/sib", version = "0.3.0" }"#),
            "{out}"
        );
        assert!(!out.contains("workspace"), "{out}");
    }
}
