import FlowSyncProcess
import Foundation
import HummingbirdWSClient
import Logging
import NIOCore
import NIOPosix

@testable import FlowSyncGateway

/// Headless Chromium driven over the DevTools protocol (CDP): a tiny client on the
/// browser's WebSocket, in flat session mode, with just what the browser test needs
/// (open a page, evaluate JavaScript and await its promise). Every call is bounded.
final class ChromiumDevTools: Sendable {
    /// `chromium` (or `chromium-browser`) on PATH; `make test` apt-installs it.
    static let path: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            for name in ["chromium", "chromium-browser"]
            where FileManager.default.isExecutableFile(atPath: "\(directory)/\(name)") {
                return "\(directory)/\(name)"
            }
        }
        return nil
    }()

    /// `CI=true`: the browser test must run, so a missing Chromium fails it.
    static let isRequired = ProcessInfo.processInfo.environment["CI"] == "true"

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private let process: ChildProcess
    private let directory: String
    private let outgoing: AsyncStream<String>.Continuation
    private let connection: Task<Void, Never>
    private let state = Locked((nextID: 1, waiting: [Int: OneShot<Data>]()))

    private init(
        process: ChildProcess, directory: String, outgoing: AsyncStream<String>.Continuation,
        connection: Task<Void, Never>
    ) {
        self.process = process
        self.directory = directory
        self.outgoing = outgoing
        self.connection = connection
    }

    /// Starts Chromium with a profile of its own and connects to its DevTools socket.
    static func launch() async throws -> ChromiumDevTools {
        guard let browser = path else {
            throw Failure(description: "chromium is not installed (apt-get install chromium; `make test` installs it)")
        }
        let directory = NSTemporaryDirectory() + "chromium-cdp-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // Port 0: Chromium picks a free port and writes it to DevToolsActivePort.
        let process = try await ChildProcess.start(
            browser,
            arguments: [
                "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
                "--disable-background-networking", "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
                "--remote-allow-origins=*",
                "--user-data-dir=\(directory)/profile", "about:blank",
            ], separateStandardError: true)
        let portFile = directory + "/profile/DevToolsActivePort"
        let deadline = ContinuousClock.now + .seconds(30)
        var lines: [Substring] = []
        while ContinuousClock.now < deadline {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8) {
                lines = text.split(separator: "\n")
                if lines.count >= 2 { break }
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        guard lines.count >= 2, let port = Int(lines[0]) else {
            _ = await process.stop(gracePeriod: .seconds(5), signal: SIGKILL)
            throw Failure(
                description: "chromium wrote no DevToolsActivePort within 30 s: \(process.output.suffix(500))")
        }
        let url = "ws://127.0.0.1:\(port)\(lines[1])"
        let (stream, continuation) = AsyncStream<String>.makeStream()
        let connected = OneShot<Void>()
        let box = Locked<ChromiumDevTools?>(nil)
        var logger = Logger(label: "cdp")
        logger.logLevel = .critical
        let connection = Task {
            do {
                try await WebSocketClient.connect(
                    url: url, configuration: .init(maxFrameSize: 1 << 24), logger: logger
                ) { inbound, outbound, _ in
                    connected.succeed(())
                    let writer = Task { for await text in stream { try await outbound.write(.text(text)) } }
                    defer { writer.cancel() }
                    for try await message in inbound.messages(maxSize: 1 << 24) {
                        guard case .text(let text) = message,
                            let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any],
                            let id = object["id"] as? Int
                        else { continue }
                        box.withLock { $0 }?.answered(id, Data(text.utf8))
                    }
                }
            } catch {
                connected.fail(error)
            }
            connected.fail(Failure(description: "the DevTools socket ended"))
        }
        let tools = ChromiumDevTools(
            process: process, directory: directory, outgoing: continuation, connection: connection)
        box.withLock { $0 = tools }
        let timer = MultiThreadedEventLoopGroup.singleton.next().scheduleTask(in: .seconds(20)) {
            connected.fail(Failure(description: "no DevTools connection within 20 s"))
        }
        defer { timer.cancel() }
        try await connected.value
        return tools
    }

    private func answered(_ id: Int, _ object: Data) {
        let waiter = state.withLock { $0.waiting.removeValue(forKey: id) }
        waiter?.succeed(object)
    }

    /// Sends one CDP command and waits (bounded) for its answer's `result`.
    func send(
        _ method: String, _ params: [String: Any] = [:], session: String? = nil, timeout: Duration = .seconds(20)
    ) async throws -> [String: Any] {
        let answer = OneShot<Data>()
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            state.waiting[state.nextID] = answer
            return state.nextID
        }
        var message: [String: Any] = ["id": id, "method": method, "params": params]
        if let session { message["sessionId"] = session }
        let data = try JSONSerialization.data(withJSONObject: message)
        outgoing.yield(String(decoding: data, as: UTF8.self))
        let timer = MultiThreadedEventLoopGroup.singleton.next().scheduleTask(
            in: .nanoseconds(Int64(timeout.components.seconds) * 1_000_000_000)
        ) {
            answer.fail(Failure(description: "\(method): no answer within \(timeout)"))
        }
        defer { timer.cancel() }
        let object = (try JSONSerialization.jsonObject(with: try await answer.value)) as? [String: Any] ?? [:]
        if let error = object["error"] { throw Failure(description: "\(method): \(error)") }
        return object["result"] as? [String: Any] ?? [:]
    }

    /// Opens `url` in a new page and returns its session.
    func open(_ url: String) async throws -> String {
        let target = try await send("Target.createTarget", ["url": url])
        guard let targetID = target["targetId"] as? String else { throw Failure(description: "no targetId") }
        let attached = try await send("Target.attachToTarget", ["targetId": targetID, "flatten": true])
        guard let session = attached["sessionId"] as? String else { throw Failure(description: "no sessionId") }
        return session
    }

    /// Evaluates `expression` in the page (awaiting a promise) and returns its JSON value.
    func evaluate(_ expression: String, in session: String) async throws -> Any? {
        let result = try await send(
            "Runtime.evaluate", ["expression": expression, "awaitPromise": true, "returnByValue": true],
            session: session)
        if let exception = result["exceptionDetails"] as? [String: Any] {
            throw Failure(description: "\(expression.prefix(80)): \(exception["text"] ?? "")  \(exception)")
        }
        return (result["result"] as? [String: Any])?["value"]
    }

    /// Polls `expression` (every 50 ms, at most `timeout`) until it evaluates to true.
    func waitUntil(_ expression: String, in session: String, timeout: Duration = .seconds(15)) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if (try? await evaluate(expression, in: session)) as? Bool == true { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return (try? await evaluate(expression, in: session)) as? Bool == true
    }

    /// Ends the browser (bounded) and removes its profile.
    func close() async {
        outgoing.finish()
        connection.cancel()
        _ = await connection.value
        _ = await process.stop(gracePeriod: .seconds(5), signal: SIGTERM)
        try? FileManager.default.removeItem(atPath: directory)
    }
}
