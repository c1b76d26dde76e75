//! Every history of the shared benchmark data (`../shared/data/linearizability/`, Jepsen's
//! etcd register logs and the key-value histories) gets the verdict its `VERDICTS.tsv` gives.
//! Skipped, with a message, when the data is not on this machine (`PULSE_LIN_DATA` points
//! elsewhere).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use pulse_lincheck::history::{parse_jepsen_register, parse_kv};
use pulse_lincheck::models::{Kv, Register};
use pulse_lincheck::{check_parallel, check_with_timeout, Verdict};

fn data_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("PULSE_LIN_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/linearizability")
        });
    if dir.join("jepsen/VERDICTS.tsv").is_file() {
        Some(dir)
    } else {
        eprintln!("skipped: no linearizability data at {}", dir.display());
        None
    }
}

fn verdicts(path: PathBuf) -> Vec<(String, bool)> {
    let text = std::fs::read_to_string(&path).unwrap();
    text.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (file, v) = l.split_once('\t').unwrap();
            (file.to_string(), v.trim() == "true")
        })
        .collect()
}

/// Generous: the whole set takes well under a second; this only bounds a regression.
const LIMIT: Duration = Duration::from_secs(60);

fn assert_verdict(file: &str, verdict: Verdict, expected: bool) {
    match verdict {
        Verdict::Linearizable => assert!(expected, "{file}: linearizable, expected not"),
        Verdict::NotLinearizable(_) => {
            assert!(!expected, "{file}: not linearizable, expected it to be")
        }
        Verdict::Unknown(why) => panic!("{file}: unknown ({why})"),
    }
}

#[test]
fn every_etcd_history_gets_its_known_verdict() {
    let Some(dir) = data_dir() else { return };
    let list = verdicts(dir.join("jepsen/VERDICTS.tsv"));
    assert_eq!(list.len(), 102);
    assert_eq!(list.iter().filter(|(_, ok)| *ok).count(), 23);
    let started = Instant::now();
    for (file, expected) in list {
        let text = std::fs::read_to_string(dir.join("jepsen").join(&file)).unwrap();
        let history = parse_jepsen_register(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_verdict(
            &file,
            check_with_timeout(&Register, &history, LIMIT),
            expected,
        );
    }
    eprintln!("102 etcd histories checked in {:?}", started.elapsed());
}

#[test]
fn every_kv_history_gets_its_known_verdict_partitioned_by_key() {
    let Some(dir) = data_dir() else { return };
    let list = verdicts(dir.join("kv/VERDICTS.tsv"));
    assert_eq!(list.len(), 6);
    for (file, expected) in list {
        let text = std::fs::read_to_string(dir.join("kv").join(&file)).unwrap();
        let history = parse_kv(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        let started = Instant::now();
        assert_verdict(
            &file,
            check_with_timeout(&Kv::default(), &history, LIMIT),
            expected,
        );
        eprintln!("{file}: {:?}", started.elapsed());
    }
}

#[test]
fn small_kv_histories_get_the_same_verdict_without_partitioning() {
    let Some(dir) = data_dir() else { return };
    for (file, expected) in [("c01-ok.txt", true), ("c01-bad.txt", false)] {
        let text = std::fs::read_to_string(dir.join("kv").join(file)).unwrap();
        let history = parse_kv(&text).unwrap();
        let whole = Kv { partitioned: false };
        assert_verdict(file, check_with_timeout(&whole, &history, LIMIT), expected);
    }
}

#[test]
fn a_tiny_deadline_gives_unknown_never_a_wrong_verdict() {
    let Some(dir) = data_dir() else { return };
    let text = std::fs::read_to_string(dir.join("kv/c10-ok.txt")).unwrap();
    let history = parse_kv(&text).unwrap();
    let whole = Kv { partitioned: false };
    match check_with_timeout(&whole, &history, Duration::from_millis(1)) {
        Verdict::Unknown(_) | Verdict::Linearizable => {}
        v => panic!("c10-ok.txt with a 1 ms deadline: {v:?}"),
    }
}

#[test]
fn partitions_checked_on_two_threads_get_the_same_verdicts() {
    let Some(dir) = data_dir() else { return };
    for (file, expected) in verdicts(dir.join("kv/VERDICTS.tsv")) {
        let text = std::fs::read_to_string(dir.join("kv").join(&file)).unwrap();
        let history = parse_kv(&text).unwrap();
        assert_verdict(
            &file,
            check_parallel(&Kv::default(), &history, LIMIT, 2),
            expected,
        );
    }
}
