//! Where sheets and rulesets are kept: the [`Store`] trait, the domain types it stores, and its
//! two implementations: the embedded redb store ([`RedbStore`], one file in the data directory,
//! the default) and the PostgreSQL store ([`PostgresStore`], which several servers share).
//!
//! What a store keeps:
//! - rulesets: where each loads from and its current version ([`RulesetRecord`]), and the exact
//!   content each version was compiled from ([`RulesetVersion`]), so past revisions replay against
//!   the rules they were made with;
//! - sheets ([`SheetRecord`]), each with its log: one [`Logged`] revision per accepted change
//!   (the operations, the ruleset version, what changed), and [`Snapshot`]s of every value at
//!   revision 0 and every [`SNAPSHOT_EVERY`] revisions.
//!
//! The log is the truth: a sheet's state is its log replayed. Snapshots plus the logged changes
//! answer "values at revision r" without replaying.
//!
//! The contract, for every implementation:
//! - Every write is atomic and durable before the method returns.
//! - [`Store::append`] checks that the sheet's last revision is the one the writer expected, in
//!   the same transaction as the write, and answers [`StoreError::Conflict`] otherwise — so
//!   several servers over one networked store never interleave a sheet's revisions.
//! - Methods block. The engine calls them from blocking threads, never from an async task, so an
//!   implementation over an async driver (PostgreSQL, say) runs its future to completion inside
//!   the call — unless it says [`Store::runs_in_place`]: then a call that is alone may run on
//!   the runtime's own thread (it must only make system calls, never enter a runtime). Everything passed is owned or borrowed for the call only, and `Store: Send + Sync`.
//! - A record that cannot be read back is [`StoreError::Damaged`], naming it; a store that cannot
//!   be reached is [`StoreError::Failed`].

mod journal;
mod postgres;
mod records;
mod redb;
mod seal;

pub use self::postgres::PostgresStore;
pub use self::redb::{Damage, RedbStore, verify};
pub use records::{FileRecord, RulesetRecord, RulesetVersion, SheetRecord};

use data::history::Revision;
use data::record::{Change, Variable};

/// A full snapshot of values is stored every this many revisions.
pub const SNAPSHOT_EVERY: u64 = 32;

/// One logged revision: what made it and what it changed (a move to another ruleset version
/// first, then the operations' changes, in order).
#[derive(Clone, Debug)]
pub struct Logged {
    pub revision: Revision,
    pub changes: Vec<Change>,
    /// The game step that made the revision, when it was an emit, choose or roll (its rules'
    /// operations are `revision.operations`); `None` for a batch of operations.
    pub step: Option<events::Step>,
}

/// Every value of a sheet at a revision.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    pub revision: u64,
    pub values: Vec<Variable>,
}

/// A store failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// The store could not be read or written (I/O, a full disk, the network), with what was
    /// being done.
    Failed(String),
    /// A record is damaged: its checksum or its decoding fails.
    Damaged(String),
    /// A write found the store other than the writer expected: the sheet already exists, or its
    /// last revision is not the expected one.
    Conflict(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Failed(m) | StoreError::Damaged(m) | StoreError::Conflict(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for StoreError {}

/// A change another server made to a store several servers share, for the engine to follow
/// ([`Store::changes`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreChange {
    /// Sheet `id` has revisions up to `revision` (0 when it was just created).
    Sheet { id: String, revision: u64 },
    /// Sheet `id` was deleted.
    Deleted { id: String },
    /// Ruleset `id` is at `version`.
    Ruleset { id: String, version: u64 },
    /// Changes may have been missed (the connection they come through was lost, and is back):
    /// compare everything with the store.
    Resync,
}

/// A record read from a table keyed by id: decoded, or its id and why it could not be.
pub type Record<M> = Result<M, (String, StoreError)>;

/// Where sheets and rulesets are kept. See the module documentation for the contract.
pub trait Store: Send + Sync {
    /// Where the store is, for people (a file path, a database URL without credentials).
    fn location(&self) -> String;

    /// Whether its methods may run on an async runtime's thread: they only make system calls
    /// (file writes, fsync) and never start or enter a runtime. The gRPC layer then runs a call
    /// that finds no other call running in place, saving two thread wake-ups (see
    /// `grpc::api::Api::run_blocking`). No, unless an implementation says so.
    fn runs_in_place(&self) -> bool {
        false
    }

    /// Every ruleset record; a damaged one comes as its id and the damage.
    fn rulesets(&self) -> Result<Vec<Record<RulesetRecord>>, StoreError>;

    /// Saves a ruleset's record, and the content of its current version when given, together.
    /// `Conflict` when the stored record is at a later version, or when that version was stored
    /// with other content (another server saved it first); saving the same again is harmless.
    fn put_ruleset(&self, record: &RulesetRecord, content: Option<&RulesetVersion>)
    -> Result<(), StoreError>;

    /// The content of one version of a ruleset, if it was kept.
    fn ruleset_version(&self, id: &str, version: u64) -> Result<Option<RulesetVersion>, StoreError>;

    /// Every sheet record; a damaged one comes as its id and the damage.
    fn sheets(&self) -> Result<Vec<Record<SheetRecord>>, StoreError>;

    /// Whether a sheet record exists (served or not).
    fn has_sheet(&self, id: &str) -> Result<bool, StoreError>;

    /// Takes the next number for a generated sheet id (never the same twice).
    fn next_sheet_number(&self) -> Result<u64, StoreError>;

    /// Records a new sheet with its revision 0 and its first snapshot, together; `Conflict`
    /// when the id is taken.
    fn create_sheet(
        &self,
        sheet: &SheetRecord,
        first: &Logged,
        snapshot: &Snapshot,
    ) -> Result<(), StoreError>;

    /// Appends revision `entry.revision.number` (and a snapshot, when given), together, if and
    /// only if the sheet's last logged revision is `entry.revision.number - 1`; `Conflict`
    /// otherwise.
    fn append(&self, sheet: &str, entry: &Logged, snapshot: Option<&Snapshot>) -> Result<(), StoreError>;

    /// The first `max` logged revisions in `from..=to` of a sheet, in order.
    fn log(&self, sheet: &str, from: u64, to: u64, max: usize) -> Result<Vec<Logged>, StoreError>;

    /// The latest snapshot at or before `revision`.
    fn snapshot_at_or_before(&self, sheet: &str, revision: u64) -> Result<Option<Snapshot>, StoreError>;

    /// Removes a sheet with its log and snapshots.
    fn delete_sheet(&self, sheet: &str) -> Result<(), StoreError>;

    /// Each sheet's last revision.
    fn heads(&self) -> Result<Vec<(String, u64)>, StoreError>;

    /// A sheet's last revision; `None` when there is no such sheet.
    fn head(&self, id: &str) -> Result<Option<u64>, StoreError>;

    /// One sheet's record; `None` when there is no such sheet.
    fn sheet_record(&self, id: &str) -> Result<Option<SheetRecord>, StoreError> {
        for r in self.sheets()? {
            match r {
                Ok(r) if r.id == id => return Ok(Some(r)),
                Err((rid, e)) if rid == id => return Err(e),
                _ => {}
            }
        }
        Ok(None)
    }

    /// Whether other servers write this store too (then the engine checks a sheet's head before
    /// using its copy, and follows [`Store::changes`]). No, unless an implementation says so.
    fn shared(&self) -> bool {
        false
    }

    /// For a shared store, the changes other servers make, as they are committed (taken once);
    /// `None` for a store only this process writes.
    fn changes(&self) -> Option<std::sync::mpsc::Receiver<StoreChange>> {
        None
    }
}

/// Every logged revision in `from..=to` of a sheet.
pub fn log_all(store: &dyn Store, sheet: &str, from: u64, to: u64) -> Result<Vec<Logged>, StoreError> {
    store.log(sheet, from, to, usize::MAX)
}
