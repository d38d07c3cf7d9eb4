import FlowSyncCore
import FlowSyncLoop
import FlowSyncServer
import Logging

/// A real `Server` on its own loop thread, listening on 127.0.0.1 port 0, for
/// end-to-end tests. ``stop()`` shuts it down gracefully and reports whether the loop
/// closed cleanly.
public final class EmbeddedServer: Sendable {
    public let thread: EventLoopThread
    public let port: Int
    private let server: LoopConfined<Server>

    /// Starts a server with `configuration` (host and port are forced to 127.0.0.1:0).
    public init(configuration: ServerConfiguration = ServerConfiguration(), logLevel: Logger.Level = .warning) async throws {
        var configuration = configuration
        configuration.host = "127.0.0.1"
        configuration.port = 0
        let thread = try EventLoopThread()
        let started = Shared<Result<Int, UVError>?>(nil)
        let box = LoopConfined<Server?>(nil)
        thread.loop.execute { [configuration] in
            var logger = Logger(label: "flowsyncd-test")
            logger.logLevel = logLevel
            let server = Server(configuration: configuration, loop: thread.loop, logger: logger)
            box.value = server
            do throws(UVError) {
                started.set(.success(try server.start()))
            } catch {
                started.set(.failure(error))
            }
        }
        guard await eventually({ started.get() != nil }), let result = started.get() else {
            _ = thread.shutdown()
            throw UVError(code: -1, operation: "embedded server did not start")
        }
        self.thread = thread
        self.port = try result.get()
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
