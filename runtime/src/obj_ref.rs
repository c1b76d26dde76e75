//! How traces and reports name an object of an execution: its kind and a number.

/// Names one object within an execution, for traces and deadlock reports.
#[derive(Clone, Copy, Debug)]
pub struct ObjRef {
    pub kind: &'static str,
    pub id: u32,
}

/// Compared on every waiter scan: ids first, then the kind by address before content
/// (a kind is almost always the same `&'static str`).
impl PartialEq for ObjRef {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && (std::ptr::eq(self.kind, other.kind) || self.kind == other.kind)
    }
}

impl Eq for ObjRef {}

/// Consistent with `eq`: equal refs have equal ids. The kind is left out (ids are numbered
/// per execution, not per kind; hashing its text byte by byte cost more than the id).
impl std::hash::Hash for ObjRef {
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

impl ObjRef {
    /// A thread as something to wait for (`join`).
    pub fn thread(tid: u32) -> ObjRef {
        ObjRef {
            kind: "Thread",
            id: tid,
        }
    }

    /// The number strategies know the object by (`Scheduler::pending`): nonzero, equal for
    /// the same object within an execution. From the kind's text, not its address: the same
    /// in every process (a seed replays).
    #[inline]
    pub fn resource(self) -> u64 {
        let first = self.kind.as_bytes().first().copied().unwrap_or(0) as u64;
        (self.id as u64 + 1) << 24 | (self.kind.len() as u64 & 0xffff) << 8 | first
    }

    /// A thread's park token.
    pub fn park(tid: u32) -> ObjRef {
        ObjRef {
            kind: "Park",
            id: tid,
        }
    }
}

impl std::fmt::Display for ObjRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}#{}", self.kind, self.id)
    }
}
