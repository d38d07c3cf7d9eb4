import FlowSyncCore
import FlowSyncLoop
import FlowSyncProcess
import FlowSyncProtocol
import FlowSyncTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Scrapes the real daemon's Prometheus endpoint: names, types, and counters that move.
@Suite(.serialized, .timeLimit(.minutes(3))) struct MetricsTests {
    /// A blocking HTTP GET on 127.0.0.1 (plain sockets: no HTTP client in this repo).
    static func get(port: Int, path: String) throws -> (status: Int, body: String) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw POSIXError(.ECONNREFUSED) }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            response.append(contentsOf: buffer[0..<n])
        }
        let text = String(decoding: response, as: UTF8.self)
        let status = Int(text.split(separator: " ").dropFirst().first ?? "") ?? 0
        let body = text.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
        return (status, body)
    }

    /// The value of a sample line `name{labels} value` (or `name value`).
    static func value(_ body: String, _ name: String) -> Double? {
        for line in body.split(separator: "\n") where line.hasPrefix(name) && !line.hasPrefix("#") {
            let rest = line.dropFirst(name.count)
            if rest.first == " " || rest.first == "{" { return Double(line.split(separator: " ").last ?? "") }
        }
        return nil
    }

    @Test func scrapeShowsNamesTypesAndMovingCounters() async throws {
        var options = DaemonProcess.Options(binary: try DaemonProcessTests.binary())
        options.metrics = true
        let daemon = try await DaemonProcess.start(options)
        let clientPort = daemon.port
        let metricsPort = try #require(daemon.metricsPort)

        let before = try Self.get(port: metricsPort, path: "/metrics")
        #expect(before.status == 200)
        for (name, type) in [
            ("flowsync_connections_accepted_total", "counter"), ("flowsync_connections", "gauge"),
            ("flowsync_batches_total", "counter"), ("flowsync_loop_lag_seconds", "histogram"),
        ] {
            #expect(
                before.body.contains("# TYPE \(name) \(type)"), "\(name) as a \(type) in:\n\(before.body.prefix(2000))")
        }

        let thread = try EventLoopThread()
        let client = try await TestClient.connect(port: clientPort, on: thread, clientID: "metrics-test")
        client.send(.subscribe(Subscribe(listName: "m", resumeFrom: nil, digest: nil)))
        #expect(await client.waitFor { if case .snapshot = $0 { return true } else { return false } } != nil)
        client.send(
            .mutate(
                Mutate(
                    listName: "m", clientID: "metrics-test", seq: 1, base: ListVersion(epoch: 0, version: 0),
                    operations: [.insertSections([Section(id: "s")], at: 0)])))
        client.send(
            .mutate(
                Mutate(
                    listName: "m", clientID: "metrics-test", seq: 2, base: ListVersion(epoch: 0, version: 0),
                    operations: [.removeRows([.id("nope")])])))
        #expect(await client.waitFor { if case .reject(let r) = $0 { return r.seq == 2 } else { return false } } != nil)

        let after = try Self.get(port: metricsPort, path: "/metrics")
        #expect(Self.value(after.body, "flowsync_connections_accepted_total") ?? 0 >= 1)
        #expect(Self.value(after.body, "flowsync_connections") == 1)
        #expect(Self.value(after.body, "flowsync_batches_total") ?? 0 >= 1)
        #expect(Self.value(after.body, "flowsync_mutations_committed_total") ?? 0 >= 1)
        #expect(after.body.contains("flowsync_mutations_rejected_total{code=\"4003\"} 1"), "\(after.body.prefix(3000))")
        #expect(Self.value(after.body, "flowsync_frames_sent_total") ?? 0 >= 3)
        #expect(Self.value(after.body, "flowsync_lists") == 1)
        // Sampled once a second (a sum over every list).
        #expect(
            await eventually(timeout: 10) {
                (try? Self.get(port: metricsPort, path: "/metrics")).flatMap {
                    Self.value($0.body, "flowsync_subscriptions")
                } == 1
            })

        #expect(try Self.get(port: metricsPort, path: "/other").status == 404)
        client.close()
        #expect(thread.shutdown())
        #expect(await daemon.terminate() == .exited(0), "\(daemon.output)")
    }
}
