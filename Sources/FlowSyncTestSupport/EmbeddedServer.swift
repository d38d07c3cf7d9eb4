import FlowSyncCore
import FlowSyncLoop
import FlowSyncServer
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// A real `Server` on its own loop thread, listening on 127.0.0.1 port 0, for
/// end-to-end tests. ``stop()`` shuts it down gracefully and reports whether the loop
/// closed cleanly.
public final class EmbeddedServer: Sendable {
    public let thread: EventLoopThread
    public let port: Int
    private let server: LoopConfined<Server>

    /// The store a test server uses.
    public enum Storage: Sendable {
        /// A fresh ``InMemoryStore`` (the default: fast, nothing on disk).
        case memory
        /// A ``FileStore`` in `directory` (the configuration's `[storage]` policy),
        /// through `io` when given (fault injection).
        case file(directory: String, io: (@Sendable () -> FileIO)? = nil)
        /// The store built by `make` on the loop thread — e.g. one ``InMemoryStore``
        /// handed from one server to the next to simulate a restart.
        case custom(@Sendable () -> ListStore)
        /// The store the configuration names, as `flowsyncd` builds it
        /// (`ServerConfiguration.makeStore`): cluster mode's store with `[cluster]`.
        case configured
    }

    /// The first store failure the server reported (its fatal hook), if any; the
    /// daemon would have exited with EX_IOERR here.
    public var storageFailure: StoreError? { failure.get() }
    private let failure = Shared<StoreError?>(nil)
    /// What recovery found at start.
    public let recoveryNotes: [String]

    /// Starts a server with `configuration` (host and port are forced to 127.0.0.1:0)
    /// over `storage`; recovery runs first (`repair` as `flowsyncd --repair`).
    public init(
        configuration: ServerConfiguration = ServerConfiguration(), storage: Storage = .memory, repair: Bool = false,
        logLevel: Logger.Level = .warning
    ) async throws {
        var configuration = configuration
        configuration.host = "127.0.0.1"
        configuration.port = 0
        let thread = try EventLoopThread()
        let started = Shared<Result<Int, Error>?>(nil)
        let box = LoopConfined<Server?>(nil)
        let failure = self.failure
        let notes = Shared<[String]>([])
        thread.loop.execute { [configuration] in
            var logger = Logger(label: "flowsyncd-test")
            logger.logLevel = logLevel
            let store: ListStore?
            switch storage {
            case .memory: store = InMemoryStore(snapshotEveryBatches: configuration.snapshotEveryBatches)
            case .file(let directory, let io):
                store = FileStore(
                    directory: directory, options: configuration.fileStoreOptions, io: io?() ?? PosixFileIO())
            case .custom(let make): store = make()
            case .configured: store = nil
            }
            let server = Server(configuration: configuration, loop: thread.loop, logger: logger, store: store)
            server.onFatalStorageError = { error in failure.set(error) }
            box.value = server
            do {
                let report = try server.recover(repair: repair)
                notes.set(report.notes)
                started.set(.success(try server.start()))
            } catch {
                started.set(.failure(error))
            }
        }
        guard await eventually({ started.get() != nil }), let result = started.get() else {
            _ = thread.shutdown()
            throw UVError(code: -1, operation: "embedded server did not start")
        }
        if case .failure = result {
            // Close the server's store (its lock) with the loop.
            thread.loop.execute { box.value = nil }
            _ = thread.shutdown()
        }
        self.thread = thread
        self.port = try result.get()
        self.recoveryNotes = notes.get()
        self.server = LoopConfined(box.value!)
    }

    /// Runs `body` on the loop thread with the server and returns its result.
    public func withServer<T: Sendable>(_ body: @escaping @Sendable (Server) -> T) async -> T {
        let result = Shared<T?>(nil)
        let server = self.server
        thread.loop.execute { result.set(body(server.value)) }
        _ = await eventually(timeout: 30) { result.get() != nil }
        return result.get()!
    }

    /// Stops like a killed process: the store's files are released without a sync or a
    /// clean-stop mark, the loop stops, clients see their connections drop.
    public func crash() {
        let server = self.server
        let done = Shared(false)
        thread.loop.execute {
            server.value.store.abandon()
            done.set(true)
        }
        for _ in 0..<5_000 where !done.get() { usleep(1_000) }
        _ = thread.shutdown(timeout: 10)
    }

    /// Shuts the server down gracefully as soon as it has committed `batches` batches,
    /// decided on the server's own loop thread (a timer checks every 5 ms), so "stop it
    /// in the middle of the load" happens in the middle of the load however late the
    /// calling task gets a thread. Returns like ``stop()``, once the stop is done.
    @discardableResult
    public func stop(afterBatches batches: Int) async -> Bool {
        let done = Shared(false)
        let server = self.server
        let loop = thread.loop
        loop.execute {
            let timer = LoopTimer(loop: loop)
            timer.start(after: 0, repeat: 5) {
                guard server.value.statistics.batchesCommitted >= batches else { return }
                timer.close()
                server.value.shutdown { done.set(true) }
            }
        }
        _ = await eventually(timeout: 120) { done.get() }
        let finished = thread.shutdown(timeout: 10)
        return done.get() && finished && thread.loop.handlesOpenAtStop == 0 && thread.loop.closeResult == 0
    }

    /// Graceful shutdown; returns `true` when the loop closed with no handle left open.
    @discardableResult
    public func stop() async -> Bool {
        let done = Shared(false)
        let server = self.server
        let loop = thread.loop
        loop.execute { server.value.shutdown { done.set(true) } }
        _ = await eventually(timeout: 15) { done.get() }
        let finished = thread.shutdown(timeout: 10)
        return done.get() && finished && thread.loop.handlesOpenAtStop == 0 && thread.loop.closeResult == 0
    }
}
