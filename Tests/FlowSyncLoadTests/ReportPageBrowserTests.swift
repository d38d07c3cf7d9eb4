import FlowSyncLoad
import FlowSyncProcess
import Foundation
import Testing

/// Where headless Chromium is, and whether it must be (kept apart from the suite: its
/// traits cannot refer to the suite's own members).
enum HeadlessChromium {
    /// `CI=true`: the browser test must run, so a missing Chromium fails it.
    static let isRequired = ProcessInfo.processInfo.environment["CI"] == "true"

    /// `chromium` (or `chromium-browser`) on PATH.
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
}

/// The HTML report in a real browser: headless Chromium (Debian's `chromium`, which
/// `make deps` installs) takes a screenshot of the page and dumps the DOM it built
/// (issue #20). Outside CI a machine without Chromium skips these tests, saying so;
/// with `CI=true` they always run, and a missing Chromium fails them.
@Suite(
    .serialized, .timeLimit(.minutes(3)),
    .enabled(
        if: HeadlessChromium.path != nil || HeadlessChromium.isRequired,
        "skipped: no chromium on PATH (apt-get install chromium, or `make deps`); under CI=true this test runs and fails instead"
    ))
struct ReportPageBrowserTests {
    /// Runs headless Chromium on `page` with `arguments` (a profile of its own in
    /// `directory`; `--no-sandbox` because the tests may run as root); killed after 90 s.
    static func chromium(_ arguments: [String], page: String, directory: String) async throws -> ChildProcess.Completed
    {
        let browser = try #require(
            HeadlessChromium.path, "chromium is not installed (CI=true: `make deps` installs it with apt)")
        return try await ChildProcess.run(
            browser,
            arguments: [
                "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                "--no-first-run", "--disable-extensions", "--user-data-dir=\(directory)/profile",
            ]
                + arguments + ["file://\(page)"],
            separateStandardError: true, timeout: .seconds(90))
    }

    /// Decodes an 8-bit RGB(A) PNG with Python's zlib and prints, as JSON: its size, the
    /// number of distinct colours, the share of pixels that are not white, and how many
    /// pixels are close to each series colour of the page. Standard library only; the
    /// pixels are tallied in a `Counter` (a few seconds of CPU for 2.3 M pixels).
    static let pngStatistics = #"""
        import collections, json, struct, sys, zlib
        data = open(sys.argv[1], "rb").read()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
        pos, idat = 8, b""
        while pos < len(data):
            length, kind = struct.unpack(">I4s", data[pos:pos + 8])
            body = data[pos + 8:pos + 8 + length]
            if kind == b"IHDR":
                width, height, depth, colour = struct.unpack(">IIBB", body[:10])
                assert depth == 8 and colour in (2, 6), f"depth {depth} colour type {colour}"
                bpp = 3 if colour == 2 else 4
            elif kind == b"IDAT":
                idat += body
            pos += 12 + length
        raw, stride = zlib.decompress(idat), width * bpp
        previous, pixels, i = bytes(stride), collections.Counter(), 0
        for _ in range(height):
            kind, line = raw[i], raw[i + 1:i + 1 + stride]; i += 1 + stride
            if kind == 2:
                line = bytes([(x + y) & 255 for x, y in zip(line, previous)])
            elif kind != 0:
                out = bytearray(line)
                for x in range(stride):
                    a = out[x - bpp] if x >= bpp else 0
                    b = previous[x]
                    if kind == 1: out[x] = (out[x] + a) & 255
                    elif kind == 3: out[x] = (out[x] + ((a + b) >> 1)) & 255
                    else:
                        c = previous[x - bpp] if x >= bpp else 0
                        p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                        out[x] = (out[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
                line = bytes(out)
            pixels.update(zip(line[0::bpp], line[1::bpp], line[2::bpp]))
            previous = line
        targets = {name: tuple(int(h[k:k + 2], 16) for k in (1, 3, 5)) for name, h in json.loads(sys.argv[2]).items()}
        near = {name: sum(n for px, n in pixels.items() if sum(abs(px[k] - t[k]) for k in range(3)) <= 60) for name, t in targets.items()}
        non_white = width * height - pixels[(255, 255, 255)]
        print(json.dumps({"width": width, "height": height, "colours": len(pixels), "nonWhite": non_white / (width * height), "near": near}))
        """#

    @Test func chromiumRendersTheChartsAndTheirSeries() async throws {
        let directory = NSTemporaryDirectory() + "report-page-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let page = directory + "/report.html"
        try LoadReportPage.html(for: ReportPageTests.sampleReport()).write(
            toFile: page, atomically: true, encoding: .utf8)

        // One run (a browser start is a large part of the test's cost): the DOM the
        // browser built from the page on stdout, and a screenshot of the window's top
        // 1,400 px (the tables and the first two charts: every pixel is decoded below).
        let shot = directory + "/shot.png"
        let run = try await Self.chromium(
            ["--dump-dom", "--screenshot=\(shot)", "--window-size=1000,1400"], page: page, directory: directory)
        #expect(
            run.status == 0 && FileManager.default.fileExists(atPath: shot),
            "\(run.termination)\n\(run.errorOutput.suffix(2000))")
        // The DOM holds every chart and series.
        for chart in LoadReportPage.ChartID.allCases {
            #expect(run.output.contains("id=\"\(chart.rawValue)\""), "\(chart) not in the DOM")
            for series in LoadReportPage.seriesIDs[chart]! {
                #expect(run.output.contains("data-series=\"\(series)\""), "\(series) not in the DOM")
            }
        }
        #expect(run.output.components(separatedBy: "<polyline").count - 1 >= 9)

        // The screenshot is not blank, and the first two series colours were painted.
        let colours = ##"{"blue": "#1f77b4", "red": "#d62728"}"##
        let decoded = try await ChildProcess.run(
            "/usr/bin/env", arguments: ["python3", "-c", Self.pngStatistics, shot, colours],
            separateStandardError: true, timeout: .seconds(60))
        #expect(decoded.status == 0, "\(decoded)")
        struct Statistics: Decodable {
            var width: Int
            var height: Int
            var colours: Int
            var nonWhite: Double
            var near: [String: Int]
        }
        let stats = try JSONDecoder().decode(Statistics.self, from: Data(decoded.output.utf8))
        #expect(stats.width == 1000 && stats.height == 1400, "\(stats)")
        #expect(stats.colours >= 50, "a blank or flat screenshot: \(stats)")
        #expect(stats.nonWhite >= 0.05, "mostly white: \(stats)")
        // Lines 2 px wide over ~800 px in two charts: thousands of pixels each.
        #expect(
            stats.near["blue", default: 0] >= 1_000 && stats.near["red", default: 0] >= 500,
            "series lines not painted: \(stats)")
    }
}
