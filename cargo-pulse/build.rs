//! Embeds the support crates (pulse-protocol, pulse-runtime, pulse-shim-std, pulse-macros,
//! pulse-lincheck, pulse, and pulse's parking_lot_core 0.2 to 0.10) into the binary, so that
//! `cargo install --path cargo-pulse` yields a tool that keeps working after the
//! repository moves or is deleted: `support.rs` unpacks them on first use.
//!
//! Embedded per crate: `Cargo.toml`, an optional `build.rs` and README, and every file under
//! `src/`. The workspace manifest travels too, because the crates inherit fields from it.

use std::fs;
use std::path::{Path, PathBuf};

/// Directory in the repository -> directory in the support tree (kept the same).
const CRATES: &[&str] = &[
    "protocol",
    "runtime",
    "shim-std",
    "pulse-macros",
    "lincheck",
    "pulse",
    "shim-parking-lot-core",
    "shim-parking-lot-core-0.2",
    "shim-parking-lot-core-0.3",
    "shim-parking-lot-core-0.4",
    "shim-parking-lot-core-0.5",
    "shim-parking-lot-core-0.6",
    "shim-parking-lot-core-0.7",
    "shim-parking-lot-core-0.8",
    "shim-parking-lot-core-0.10",
];

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let repo = manifest_dir
        .parent()
        .expect("cargo-pulse lives inside the pulse repository");
    let mut files: Vec<(String, PathBuf)> = Vec::new();

    let ws_manifest = repo.join("Cargo.toml");
    println!("cargo:rerun-if-changed={}", ws_manifest.display());
    files.push(("workspace/Cargo.toml".into(), ws_manifest));
    for krate in CRATES {
        let dir = repo.join(krate);
        println!("cargo:rerun-if-changed={}", dir.display());
        for name in ["Cargo.toml", "build.rs", "README.md"] {
            let p = dir.join(name);
            if p.is_file() {
                files.push((format!("{krate}/{name}"), p));
            }
        }
        collect(&dir.join("src"), &format!("{krate}/src"), &mut files);
    }
    files.sort();

    // FNV-1a over names and contents: a content hash names the unpacked directory, so a
    // rebuilt binary with changed support sources never reuses a stale unpack.
    let mut hash: u64 = 0xcbf29ce484222325;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            hash ^= u64::from(*b);
            hash = hash.wrapping_mul(0x100000001b3);
        }
    };
    let mut table = String::from("pub static SUPPORT_FILES: &[(&str, &[u8])] = &[\n");
    for (name, path) in &files {
        let content = fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        feed(name.as_bytes());
        feed(&[0]);
        feed(&content);
        table.push_str(&format!(
            "    ({name:?}, include_bytes!({:?})),\n",
            path.display().to_string()
        ));
    }
    table.push_str("];\n");
    table.push_str(&format!(
        "pub const SUPPORT_HASH: &str = \"{hash:016x}\";\n"
    ));
    // The list itself, so support.rs's test checks the crates named in this one place.
    table.push_str(&format!(
        "#[cfg(test)]\npub const SUPPORT_CRATES: &[&str] = &{CRATES:?};\n"
    ));

    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("support_files.rs");
    fs::write(&out, table).unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
}

fn collect(dir: &Path, prefix: &str, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            collect(&path, &format!("{prefix}/{name}"), out);
        } else if path.is_file() {
            out.push((format!("{prefix}/{name}"), path));
        }
    }
}
