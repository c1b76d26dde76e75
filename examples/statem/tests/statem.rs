//! One sequential model per component, and a `pulse::statem` property for each twin. Under
//! `cargo pulse test` the buggy twins fail with a shrunk counterexample and the fixed ones
//! pass; under plain `cargo test` nothing interleaves inside a command (std's locks are not
//! scheduled), so every property passes.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::marker::PhantomData;

use pulse::statem::proptest::prelude::*;
use pulse::statem::proptest::sample::select;
use pulse::statem::{self, BoxedStrategy, Config, Env, StateMachine, Var};
use statem_examples::kv::{self, KvStore};
use statem_examples::queue::{self, Fifo};
use statem_examples::table::{self, ShardedTable};

/// The cases buggy twins get: enough that a random seed finds the race.
fn hunt() -> Config {
    Config::default().tests(300)
}

// ---- the process registry (the PULSE paper's proc_reg) ----

use proc_reg::{Pid, RegError};

/// What both registries do.
trait Registry: Sync + Default {
    fn register(&self, name: &str, pid: &Pid) -> Result<(), RegError>;
    fn unregister(&self, name: &str) -> Result<(), RegError>;
    fn whereis(&self, name: &str) -> Option<Pid>;
}

macro_rules! registry {
    ($t:ty) => {
        impl Registry for $t {
            fn register(&self, name: &str, pid: &Pid) -> Result<(), RegError> {
                <$t>::register(self, name, pid)
            }
            fn unregister(&self, name: &str) -> Result<(), RegError> {
                <$t>::unregister(self, name)
            }
            fn whereis(&self, name: &str) -> Option<Pid> {
                <$t>::whereis(self, name)
            }
        }
    };
}
registry!(proc_reg::buggy::Registry);
registry!(proc_reg::fixed::Registry);

#[derive(Clone, Debug)]
enum RegCmd {
    Spawn,
    Kill(Var),
    Register(&'static str, Var),
    Unregister(&'static str),
    Whereis(&'static str),
}

#[derive(Clone, Debug, PartialEq)]
enum RegResp {
    Pid(Pid),
    Done,
    Reg(Result<(), RegError>),
    Where(Option<Pid>),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
struct RegState {
    spawned: Vec<Var>,
    dead: BTreeSet<Var>,
    names: BTreeMap<&'static str, Var>,
}

impl RegState {
    /// The live holder of `name`.
    fn holder(&self, name: &str) -> Option<Var> {
        self.names
            .get(name)
            .copied()
            .filter(|p| !self.dead.contains(p))
    }
}

struct RegModel<R>(PhantomData<fn() -> R>);

const NAMES: [&str; 2] = ["a", "b"];

impl<R: Registry> StateMachine for RegModel<R> {
    type State = RegState;
    type Command = RegCmd;
    type Response = RegResp;
    type Sut = R;

    fn initial_state(&self) -> RegState {
        RegState::default()
    }

    fn commands(&self, s: &RegState) -> BoxedStrategy<RegCmd> {
        let name = select(&NAMES[..]);
        if s.spawned.is_empty() {
            return prop_oneof![Just(RegCmd::Spawn), name.prop_map(RegCmd::Whereis)].boxed();
        }
        let pid = select(s.spawned.clone());
        prop_oneof![
            1 => Just(RegCmd::Spawn),
            1 => pid.clone().prop_map(RegCmd::Kill),
            3 => (name.clone(), pid).prop_map(|(n, p)| RegCmd::Register(n, p)),
            1 => name.clone().prop_map(RegCmd::Unregister),
            2 => name.prop_map(RegCmd::Whereis),
        ]
        .boxed()
    }

    fn precondition(&self, s: &RegState, cmd: &RegCmd) -> bool {
        match cmd {
            RegCmd::Kill(p) | RegCmd::Register(_, p) => s.spawned.contains(p),
            _ => true,
        }
    }

    fn next_state(&self, s: &RegState, cmd: &RegCmd, var: Var) -> RegState {
        let mut s = s.clone();
        match cmd {
            RegCmd::Spawn => s.spawned.push(var),
            RegCmd::Kill(p) => {
                s.dead.insert(*p);
            }
            RegCmd::Register(n, p) => {
                if !s.dead.contains(p) && s.holder(n).is_none() {
                    s.names.insert(n, *p);
                }
            }
            RegCmd::Unregister(n) => {
                s.names.remove(n);
            }
            RegCmd::Whereis(_) => {}
        }
        s
    }

    fn postcondition(
        &self,
        s: &RegState,
        cmd: &RegCmd,
        resp: &RegResp,
        env: &Env<'_, RegResp>,
    ) -> bool {
        let pid = |v: Var| match env.get(v) {
            Some(RegResp::Pid(p)) => Some(p.clone()),
            _ => None,
        };
        match (cmd, resp) {
            (RegCmd::Spawn, RegResp::Pid(_)) | (RegCmd::Kill(_), RegResp::Done) => true,
            (RegCmd::Register(n, p), RegResp::Reg(r)) => {
                let expected = if s.dead.contains(p) || s.holder(n).is_none() {
                    Ok(())
                } else {
                    Err(RegError::AlreadyRegistered)
                };
                *r == expected
            }
            (RegCmd::Unregister(n), RegResp::Reg(r)) => {
                *r == if s.holder(n).is_some() {
                    Ok(())
                } else {
                    Err(RegError::NotRegistered)
                }
            }
            (RegCmd::Whereis(n), RegResp::Where(w)) => *w == s.holder(n).and_then(pid),
            _ => false,
        }
    }

    fn setup(&self) -> R {
        R::default()
    }

    fn run(&self, reg: &R, cmd: &RegCmd, env: &Env<'_, RegResp>) -> RegResp {
        let pid = |v: &Var| match env.get(*v) {
            Some(RegResp::Pid(p)) => p.clone(),
            other => panic!("v{} is not a pid: {other:?}", v.0),
        };
        match cmd {
            RegCmd::Spawn => RegResp::Pid(Pid::spawn(0)),
            RegCmd::Kill(p) => {
                pid(p).kill();
                RegResp::Done
            }
            RegCmd::Register(n, p) => RegResp::Reg(reg.register(n, &pid(p))),
            RegCmd::Unregister(n) => RegResp::Reg(reg.unregister(n)),
            RegCmd::Whereis(n) => RegResp::Where(reg.whereis(n)),
        }
    }
}

#[test]
fn registry_names_have_one_live_holder() {
    statem::check(&RegModel::<proc_reg::buggy::Registry>(PhantomData), hunt());
}

#[test]
fn registry_names_have_one_live_holder_fixed() {
    statem::check(
        &RegModel::<proc_reg::fixed::Registry>(PhantomData),
        Config::default(),
    );
}

// ---- the sharded table ----

#[derive(Clone, Debug)]
enum TableCmd {
    Insert(u8, u32),
    Get(u8),
    DeleteAll,
    ToVec,
}

#[derive(Clone, Debug, PartialEq)]
enum TableResp {
    Done,
    Value(Option<u32>),
    Entries(Vec<(u8, u32)>),
}

struct TableModel<T> {
    make: fn() -> T,
}

impl<T: ShardedTable> StateMachine for TableModel<T> {
    type State = BTreeMap<u8, u32>;
    type Command = TableCmd;
    type Response = TableResp;
    type Sut = T;

    fn initial_state(&self) -> Self::State {
        BTreeMap::new()
    }

    fn commands(&self, _: &Self::State) -> BoxedStrategy<TableCmd> {
        let key = 0u8..6;
        prop_oneof![
            4 => (key.clone(), 0u32..4).prop_map(|(k, v)| TableCmd::Insert(k, v)),
            1 => key.prop_map(TableCmd::Get),
            1 => Just(TableCmd::DeleteAll),
            2 => Just(TableCmd::ToVec),
        ]
        .boxed()
    }

    fn next_state(&self, s: &Self::State, cmd: &TableCmd, _: Var) -> Self::State {
        let mut s = s.clone();
        match cmd {
            TableCmd::Insert(k, v) => {
                s.insert(*k, *v);
            }
            TableCmd::DeleteAll => s.clear(),
            TableCmd::Get(_) | TableCmd::ToVec => {}
        }
        s
    }

    fn expected(
        &self,
        s: &Self::State,
        cmd: &TableCmd,
        _: &Env<'_, TableResp>,
    ) -> Option<TableResp> {
        Some(match cmd {
            TableCmd::Insert(..) | TableCmd::DeleteAll => TableResp::Done,
            TableCmd::Get(k) => TableResp::Value(s.get(k).copied()),
            TableCmd::ToVec => TableResp::Entries(s.iter().map(|(k, v)| (*k, *v)).collect()),
        })
    }

    fn setup(&self) -> T {
        (self.make)()
    }

    fn run(&self, t: &T, cmd: &TableCmd, _: &Env<'_, TableResp>) -> TableResp {
        match cmd {
            TableCmd::Insert(k, v) => {
                t.insert(*k, *v);
                TableResp::Done
            }
            TableCmd::Get(k) => TableResp::Value(t.get(*k)),
            TableCmd::DeleteAll => {
                t.delete_all();
                TableResp::Done
            }
            TableCmd::ToVec => TableResp::Entries(t.to_vec()),
        }
    }
}

#[test]
fn table_to_vec_is_a_snapshot() {
    statem::check(
        &TableModel {
            make: table::Buggy::default,
        },
        hunt(),
    );
}

#[test]
fn table_to_vec_is_a_snapshot_fixed() {
    statem::check(
        &TableModel {
            make: table::Table::default,
        },
        Config::default(),
    );
}

fn file_table() -> table::FileTable {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("statem-file-table-{}-{n}", std::process::id()));
    table::FileTable::new(dir)
}

#[test]
fn file_table_to_vec_is_a_snapshot_fixed() {
    statem::check(
        &TableModel { make: file_table },
        Config::default().tests(40),
    );
}

// ---- the FIFO queue ----

#[derive(Clone, Debug)]
enum QueueCmd {
    Push(u32),
    Pop,
}

#[derive(Clone, Debug, PartialEq)]
enum QueueResp {
    Done,
    Popped(Option<u32>),
}

struct QueueModel<Q>(PhantomData<fn() -> Q>);

impl<Q: Fifo + Default> StateMachine for QueueModel<Q> {
    type State = VecDeque<u32>;
    type Command = QueueCmd;
    type Response = QueueResp;
    type Sut = Q;

    fn initial_state(&self) -> Self::State {
        VecDeque::new()
    }

    fn commands(&self, _: &Self::State) -> BoxedStrategy<QueueCmd> {
        prop_oneof![(0u32..10).prop_map(QueueCmd::Push), Just(QueueCmd::Pop)].boxed()
    }

    fn next_state(&self, s: &Self::State, cmd: &QueueCmd, _: Var) -> Self::State {
        let mut s = s.clone();
        match cmd {
            QueueCmd::Push(v) => s.push_back(*v),
            QueueCmd::Pop => {
                s.pop_front();
            }
        }
        s
    }

    fn expected(
        &self,
        s: &Self::State,
        cmd: &QueueCmd,
        _: &Env<'_, QueueResp>,
    ) -> Option<QueueResp> {
        Some(match cmd {
            QueueCmd::Push(_) => QueueResp::Done,
            QueueCmd::Pop => QueueResp::Popped(s.front().copied()),
        })
    }

    fn setup(&self) -> Q {
        Q::default()
    }

    fn run(&self, q: &Q, cmd: &QueueCmd, _: &Env<'_, QueueResp>) -> QueueResp {
        match cmd {
            QueueCmd::Push(v) => {
                q.push(*v);
                QueueResp::Done
            }
            QueueCmd::Pop => QueueResp::Popped(q.pop()),
        }
    }
}

#[test]
fn queue_pops_in_push_order() {
    statem::check(&QueueModel::<queue::Buggy>(PhantomData), hunt());
}

#[test]
fn queue_pops_in_push_order_fixed() {
    statem::check(&QueueModel::<queue::Queue>(PhantomData), Config::default());
}

// ---- the key-value store ----

#[derive(Clone, Debug)]
enum KvCmd {
    Get(&'static str),
    Put(&'static str, &'static str),
    Append(&'static str, &'static str),
}

#[derive(Clone, Debug, PartialEq)]
enum KvResp {
    Done,
    Value(String),
}

struct KvModel<S>(PhantomData<fn() -> S>);

impl<S: KvStore + Default> StateMachine for KvModel<S> {
    type State = BTreeMap<&'static str, String>;
    type Command = KvCmd;
    type Response = KvResp;
    type Sut = S;

    fn initial_state(&self) -> Self::State {
        BTreeMap::new()
    }

    fn commands(&self, _: &Self::State) -> BoxedStrategy<KvCmd> {
        let key = select(&["x", "y"][..]);
        let value = select(&["1", "2", "3"][..]);
        prop_oneof![
            2 => key.clone().prop_map(KvCmd::Get),
            1 => (key.clone(), value.clone()).prop_map(|(k, v)| KvCmd::Put(k, v)),
            3 => (key, value).prop_map(|(k, v)| KvCmd::Append(k, v)),
        ]
        .boxed()
    }

    fn next_state(&self, s: &Self::State, cmd: &KvCmd, _: Var) -> Self::State {
        let mut s = s.clone();
        match cmd {
            KvCmd::Get(_) => {}
            KvCmd::Put(k, v) => {
                s.insert(k, v.to_string());
            }
            KvCmd::Append(k, v) => s.entry(k).or_default().push_str(v),
        }
        s
    }

    fn expected(&self, s: &Self::State, cmd: &KvCmd, _: &Env<'_, KvResp>) -> Option<KvResp> {
        Some(match cmd {
            KvCmd::Get(k) => KvResp::Value(s.get(k).cloned().unwrap_or_default()),
            _ => KvResp::Done,
        })
    }

    fn setup(&self) -> S {
        S::default()
    }

    fn run(&self, store: &S, cmd: &KvCmd, _: &Env<'_, KvResp>) -> KvResp {
        match cmd {
            KvCmd::Get(k) => KvResp::Value(store.get(k)),
            KvCmd::Put(k, v) => {
                store.put(k, v);
                KvResp::Done
            }
            KvCmd::Append(k, v) => {
                store.append(k, v);
                KvResp::Done
            }
        }
    }
}

#[test]
fn kv_appends_are_never_lost() {
    statem::check(&KvModel::<kv::Buggy>(PhantomData), hunt());
}

#[test]
fn kv_appends_are_never_lost_fixed() {
    statem::check(&KvModel::<kv::Store>(PhantomData), Config::default());
}
