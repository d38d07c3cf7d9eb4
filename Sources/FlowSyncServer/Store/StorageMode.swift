/// How the server stores, decided once at init from the store and the configuration
/// (issue #30: the server kept five optional views of one store — `committingStore`,
/// `onDemandStore`, `loopLoadingStore`, `replicatingStore` and the store itself — found
/// by `as?` casts at eight sites). Every cast of the server is here.
///
/// | mode | commits | lists come | a store of it |
/// | --- | --- | --- | --- |
/// | ``Kind/appending`` | append in the seal, sync before the flush | all at start | ``InMemoryStore``, ``FileStore`` |
/// | ``Kind/onDemand`` | the same | at first use, read on a worker | ``FileStore`` with `lists.on_demand` |
/// | ``Kind/committing`` | later, through the commit gate | all at start | a test's held store |
/// | ``Kind/cluster`` | later, through the commit gate | at first use, claimed or followed on the loop | ``ClusterStore`` |
/// A cluster node's store: it commits later and loads lists on the loop.
typealias ClusterStorage = CommittingStore & LoopLoadingStore

struct StorageMode {
    enum Kind {
        case appending(DirectorStore)
        case onDemand(OnDemandStore, ListLoader)
        case committing(CommittingStore)
        /// The same object twice, in practice (``ClusterStore``): the server commits and
        /// loads through `store` and coordinates through `node`.
        case cluster(store: ClusterStorage, node: ClusterNode)
    }

    let kind: Kind
    /// The store, whatever the mode.
    let store: ListStore
    /// Compactions written to a temporary file off the loop (``FileStore``).
    let stagedCompaction: StagedCompactionStore?
    /// Catch-ups older than memory read from the log (``FileStore``).
    let logCatchUp: LogCatchUpStore?

    /// The mode of `store` under `configuration` (`lists.on_demand` asks for loads on
    /// demand from a store that can).
    init(store: ListStore, configuration: ServerConfiguration) {
        self.store = store
        if let node = store as? ClusterNode, let cluster = store as? ClusterStorage {
            kind = .cluster(store: cluster, node: node)
        } else if let committing = store as? CommittingStore {
            kind = .committing(committing)
        } else if let onDemand = store as? OnDemandStore, Self.opensOnDemand(onDemand, configuration) {
            kind = .onDemand(onDemand, ListLoader())
        } else if let appending = store as? DirectorStore {
            kind = .appending(appending)
        } else {
            preconditionFailure(
                "Internal inconsistency in StorageMode: a store that neither appends nor commits (\(type(of: store)))")
        }
        stagedCompaction = store as? StagedCompactionStore
        logCatchUp = store as? LogCatchUpStore
    }

    /// Whether `store` opens on demand under `configuration`: `lists.on_demand = "auto"`
    /// counts the stored lists up to `eager_max_lists` + 1 (a `readdir` that stops there,
    /// so the decision costs O(eager_max_lists), never O(lists stored)).
    static func opensOnDemand(_ store: OnDemandStore, _ configuration: ServerConfiguration) -> Bool {
        switch configuration.storage.listLoading {
        case .onDemand: return true
        case .atStart: return false
        case .auto: return store.holdsMoreLists(than: configuration.eagerMaxLists)
        }
    }

    /// The store that appends (and syncs), if the mode appends.
    var appending: DirectorStore? {
        switch kind {
        case .appending(let store): return store
        case .onDemand(let store, _): return store
        case .committing, .cluster: return nil
        }
    }

    /// The store that commits later, if the mode does.
    var committing: CommittingStore? {
        switch kind {
        case .committing(let store): return store
        case .cluster(let store, _): return store
        case .appending, .onDemand: return nil
        }
    }

    /// The store whose lists load on a worker, and the workers, in on-demand mode.
    var onDemand: (store: OnDemandStore, loader: ListLoader)? {
        if case .onDemand(let store, let loader) = kind { return (store, loader) }
        return nil
    }

    /// The cluster node's store (commits, loads on the loop), in cluster mode.
    var cluster: ClusterStorage? {
        if case .cluster(let store, _) = kind { return store }
        return nil
    }

    /// The cluster node (replicas, forwarded writes, take-overs), in cluster mode.
    var node: ClusterNode? {
        if case .cluster(_, let node) = kind { return node }
        return nil
    }

    /// Whether lists load at first use (on demand, or cluster mode).
    var loadsOnDemand: Bool {
        switch kind {
        case .onDemand, .cluster: return true
        case .appending, .committing: return false
        }
    }
}
