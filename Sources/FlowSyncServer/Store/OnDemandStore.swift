import FlowSyncCore

/// A ``DirectorStore`` that can open without reading any list, then load and unload
/// lists one at a time (docs/STORAGE.md, "Lists on demand"). ``FileStore`` is one;
/// ``InMemoryStore`` is not (memory is all it has, so it keeps every list).
///
/// Threading: every method runs on the loop thread except ``ListLoadJob/run()``, which
/// runs on a worker: it reads (and, under the recovery rules, truncates or sets aside)
/// the files of its one list and returns a value. The caller makes sure nothing else
/// touches that list meanwhile: no append, compaction or unload of a list being loaded.
public protocol OnDemandStore: DirectorStore {
    /// Opens the store for writing without reading any list: takes the lock, reads how
    /// the previous run stopped, writes `RUNNING`. Call once, instead of
    /// ``DirectorStore/recover(_:)``. The options (repair, limits) apply to every load.
    func openOnDemand(_ options: RecoveryOptions) throws(StoreError) -> RecoveryReport

    /// What loading the list `name` takes, decided on the loop; run it on a worker.
    func prepareLoad(of name: String) -> ListLoadJob

    /// Registers a loaded list's files (loop thread) and returns the list: `nil` when
    /// the store holds nothing under that name. Throws the load's error — damage found
    /// in that list (its refusal, not the store's failure) or an I/O error reading it.
    func finishLoad(_ outcome: ListLoadOutcome) throws(StoreError) -> RecoveredList?

    /// Forgets a loaded list: its active segment synced and closed, what it left
    /// remembered for the clean-stop manifest. It loads again through
    /// ``prepareLoad(of:)``. A failure is the store's (a sync failed).
    func unload(_ name: String) throws(StoreError)

    /// Counts the stored lists (directory entries, loaded or not) when called: one
    /// `readdir`, O(lists), so call it on a worker (for a metric sampled now and then).
    func storedListCounter() -> @Sendable () -> Int

    // MARK: A backup of lists not loaded

    /// The key under which list `name` is stored (the file store's directory entry):
    /// what ``storedListKeys()`` lists and ``prepareBackupRead(of:)`` reads.
    func storageKey(for name: String) -> String

    /// Lists the key of every stored list, loaded or not, when called: one `readdir`,
    /// O(lists), so call it on a worker.
    func storedListKeys() -> @Sendable () -> Result<[String], StoreError>

    /// What reading the lists stored under `keys` for a backup takes, decided on the
    /// loop; run it on a worker. It changes no file. The caller makes sure that none of
    /// these lists is loaded, or loads, until the read has returned. A key with nothing
    /// stored is skipped; a damaged list fails the whole read, naming it.
    func prepareBackupRead(of keys: [String]) -> @Sendable () -> Result<[BackupList], StoreError>

    // MARK: The background check (issue #33)

    /// The walk that checks every stored list on a worker (``StoredListCheck``), or
    /// `nil` when the store has none.
    func makeStoredListCheck() -> StoredListCheck?

    /// Whether this run loaded, created or wrote the list stored under `key`: then its
    /// own load checked it, and a background verdict on it is stale.
    func wasTouchedThisRun(key: String) -> Bool

    /// Whether more than `count` lists are stored (`lists.on_demand = "auto"`): reads at
    /// most `count` + 1 directory entries. Called once, before the store opens.
    func holdsMoreLists(than count: Int) -> Bool
}

extension OnDemandStore {
    public func holdsMoreLists(than count: Int) -> Bool { false }
    public func makeStoredListCheck() -> StoredListCheck? { nil }
    public func wasTouchedThisRun(key: String) -> Bool { false }
}

/// One list's load, as a value a worker runs: ``run()`` reads the list's files.
public struct ListLoadJob: Sendable {
    /// The list's name.
    public let name: String
    let work: @Sendable () -> ListLoadOutcome

    /// Reads the list (blocking file I/O: call it on a worker thread, never the loop).
    public func run() -> ListLoadOutcome { work() }
}

/// What a ``ListLoadJob`` found, handed back to the loop.
public struct ListLoadOutcome: Sendable {
    public let name: String
    let result: Result<LoadedList?, StoreError>
    /// Time spent reading and replaying, on the worker.
    public let nanoseconds: UInt64
}

/// A list as a worker loaded it, before the loop adopts its files.
struct LoadedList: Sendable {
    var files: RecoveredListFiles
    /// The directory entry whose `OPENED` marker the load wrote (the manifest recorded
    /// the list): a clean stop that records the list again removes it.
    var markedEntry: String?
    var notes: [String]
}
