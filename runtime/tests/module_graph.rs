//! runtime/ reads bottom-up: no `crate::` import cycle between its modules (files). A
//! folder's `mod.rs` and its children may use each other through `super::`, which is not
//! counted: that is one module split in files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

#[test]
fn runtime_modules_have_no_import_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = module_graph(&src);
    assert!(graph.len() > 10, "read the modules: {:?}", graph.keys());
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "import cycle between runtime modules: {}",
            cycle.join(" -> ")
        );
    }
}

#[test]
fn the_checker_finds_a_cycle() {
    let graph: Graph = [("a", &["b"][..]), ("b", &["c"]), ("c", &["a"]), ("d", &[])]
        .iter()
        .map(|(m, to)| (m.to_string(), to.iter().map(|t| t.to_string()).collect()))
        .collect();
    assert_eq!(find_cycle(&graph).unwrap(), ["a", "b", "c", "a"]);
}

/// Module name (`report::failure`) to the modules it names through `crate::`.
fn module_graph(src: &Path) -> Graph {
    let files = rust_files(src);
    let modules: BTreeSet<String> = files.iter().map(|f| module_name(src, f)).collect();
    let mut graph = Graph::new();
    for file in &files {
        let from = module_name(src, file);
        let text = std::fs::read_to_string(file).unwrap();
        let code: String = text
            .lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        let edges = graph.entry(from.clone()).or_default();
        for (i, _) in code.match_indices("crate::") {
            for to in targets(&code[i + "crate::".len()..], &modules) {
                if to != from && !to.is_empty() {
                    edges.insert(to);
                }
            }
        }
    }
    graph
}

/// The modules a path after `crate::` names: its longest module prefix, or each module in a
/// trailing `{..}` group.
fn targets(rest: &str, modules: &BTreeSet<String>) -> Vec<String> {
    let mut module = String::new();
    let mut tail = rest;
    loop {
        let name: String = tail
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            break;
        }
        let candidate = if module.is_empty() {
            name.clone()
        } else {
            format!("{module}::{name}")
        };
        if !modules.contains(&candidate) {
            break;
        }
        module = candidate;
        tail = &tail[name.len()..];
        match tail.strip_prefix("::") {
            Some(t) => tail = t,
            None => break,
        }
    }
    if let Some(group) = tail.strip_prefix('{') {
        let group = &group[..group.find('}').unwrap_or(group.len())];
        let inner: Vec<String> = group
            .split(',')
            .map(|item| {
                item.trim()
                    .split("::")
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_string()
            })
            .map(|name| {
                if module.is_empty() {
                    name
                } else {
                    format!("{module}::{name}")
                }
            })
            .filter(|m| modules.contains(m))
            .collect();
        if !inner.is_empty() {
            return inner;
        }
    }
    vec![module]
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// `report/failure.rs` -> `report::failure`; `process/mod.rs` -> `process`; `lib.rs` -> ``.
fn module_name(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts.join("::")
}

/// A cycle as the modules along it, first repeated at the end.
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &Graph,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|n| n == node) {
            let mut cycle = path[start..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}
