import Foundation

/// A line chart as inline SVG: pure (no I/O, no clock), so its output can be checked in
/// a unit test and rendered by any browser with no script and no network.
///
/// Each series is a `<g class="series" data-series="ID" data-points="N">` holding one
/// `<polyline>` per run of consecutive points (a `nil` value breaks the line), so a test
/// or a reader of the page's source finds every series by its ID. Axes are linear or
/// log₁₀; points that cannot be drawn on a log axis (≤ 0) are dropped, and `data-points`
/// counts only the points drawn.
///
/// What it does not do: interaction, stacked or bar charts, or a y axis per series.
public struct SVGChart: Sendable {
    /// An axis scale.
    public enum Scale: Sendable {
        case linear
        case log10
    }

    /// One line: its ID (`data-series`), legend label, colour, and points (x, y), where a
    /// `nil` y leaves a gap.
    public struct Series: Sendable {
        public var id: String
        public var label: String
        public var color: String
        public var points: [(x: Double, y: Double?)]

        public init(id: String, label: String, color: String, points: [(x: Double, y: Double?)]) {
            self.id = id
            self.label = label
            self.color = color
            self.points = points
        }
    }

    /// A tick on an axis: where (in data units) and its label.
    public struct Tick: Sendable {
        public var value: Double
        public var label: String

        public init(_ value: Double, _ label: String) {
            self.value = value
            self.label = label
        }
    }

    /// The chart's ID (the `<svg>`'s `id`), title and axis labels.
    public var id: String
    public var title: String
    public var xLabel: String
    public var yLabel: String
    public var xScale: Scale = .linear
    public var yScale: Scale = .linear
    /// Explicit x ticks (else about six "nice" ones).
    public var xTicks: [Tick]?
    /// Formats a y tick's value (default: ``LoadReport/number(_:)``).
    public var yFormat: @Sendable (Double) -> String = { LoadReport.number($0) }
    /// Values the x axis must include besides the data (0 for a time axis).
    public var xIncludes: [Double] = []
    /// An x range to shade, with its label (the measured window).
    public var band: (from: Double, to: Double, label: String)?
    public var series: [Series]
    public var width = 900.0
    public var height = 340.0

    public init(id: String, title: String, xLabel: String, yLabel: String, series: [Series]) {
        self.id = id
        self.title = title
        self.xLabel = xLabel
        self.yLabel = yLabel
        self.series = series
    }

    // Plot area inside the SVG: room for the title, the tick labels and the legend.
    private var left: Double { 78 }
    private var right: Double { width - 20 }
    private var top: Double { 40 }
    private var bottom: Double { height - 74 }

    /// The SVG element (well-formed XML; `viewBox` 0 0 width height).
    ///
    /// - Complexity: O(points).
    public func render() -> String {
        let drawable = series.map { s in
            s.points.map { p in
                (x: p.x, y: p.y.flatMap { y in Self.usable(y, yScale) && Self.usable(p.x, xScale) ? y : nil })
            }
        }
        let xs =
            series.flatMap { $0.points.map(\.x) }.filter { Self.usable($0, xScale) } + (xTicks ?? []).map(\.value)
            + xIncludes
        let ys = drawable.flatMap { $0.compactMap(\.y) }
        let xRange = Self.range(xs, scale: xScale, fallback: (0, 1))
        let yRange = Self.range(
            ys + (yScale == .linear ? [0] : []), scale: yScale, fallback: yScale == .log10 ? (1, 10) : (0, 1))
        func px(_ x: Double) -> Double {
            left + (Self.position(x, xScale) - Self.position(xRange.0, xScale))
                / (Self.position(xRange.1, xScale) - Self.position(xRange.0, xScale)) * (right - left)
        }
        func py(_ y: Double) -> Double {
            bottom - (Self.position(y, yScale) - Self.position(yRange.0, yScale))
                / (Self.position(yRange.1, yScale) - Self.position(yRange.0, yScale)) * (bottom - top)
        }

        var svg =
            "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"\(Self.escape(id))\" class=\"chart\" viewBox=\"0 0 \(Self.f(width)) \(Self.f(height))\" width=\"\(Self.f(width))\" height=\"\(Self.f(height))\" role=\"img\" aria-label=\"\(Self.escape(title))\">\n"
        svg += "<title>\(Self.escape(title))</title>\n"
        svg += "<rect x=\"0\" y=\"0\" width=\"\(Self.f(width))\" height=\"\(Self.f(height))\" fill=\"#ffffff\"/>\n"
        svg +=
            "<text x=\"\(Self.f(left))\" y=\"24\" font-size=\"16\" font-weight=\"bold\" fill=\"#222222\">\(Self.escape(title))</text>\n"
        if let band, band.to > band.from {
            let a = px(max(band.from, xRange.0)), b = px(min(band.to, xRange.1))
            svg +=
                "<g class=\"band\"><rect x=\"\(Self.f(a))\" y=\"\(Self.f(top))\" width=\"\(Self.f(max(0, b - a)))\" height=\"\(Self.f(bottom - top))\" fill=\"#eef3fb\"/>"
            svg +=
                "<text x=\"\(Self.f(a + 4))\" y=\"\(Self.f(top + 14))\" font-size=\"11\" fill=\"#5577aa\">\(Self.escape(band.label))</text></g>\n"
        }
        // Grid and ticks.
        svg += "<g class=\"axes\" font-size=\"11\" fill=\"#444444\" stroke-width=\"1\">\n"
        for tick in Self.ticks(yRange, scale: yScale, format: yFormat) {
            let y = py(tick.value)
            svg +=
                "<line x1=\"\(Self.f(left))\" y1=\"\(Self.f(y))\" x2=\"\(Self.f(right))\" y2=\"\(Self.f(y))\" stroke=\"#dddddd\"/>"
            svg +=
                "<text x=\"\(Self.f(left - 6))\" y=\"\(Self.f(y + 4))\" text-anchor=\"end\">\(Self.escape(tick.label))</text>\n"
        }
        for tick in xTicks ?? Self.ticks(xRange, scale: xScale, format: { LoadReport.number($0) }) {
            let x = px(tick.value)
            svg +=
                "<line x1=\"\(Self.f(x))\" y1=\"\(Self.f(top))\" x2=\"\(Self.f(x))\" y2=\"\(Self.f(bottom))\" stroke=\"#eeeeee\"/>"
            svg +=
                "<text x=\"\(Self.f(x))\" y=\"\(Self.f(bottom + 16))\" text-anchor=\"middle\">\(Self.escape(tick.label))</text>\n"
        }
        svg +=
            "<line x1=\"\(Self.f(left))\" y1=\"\(Self.f(bottom))\" x2=\"\(Self.f(right))\" y2=\"\(Self.f(bottom))\" stroke=\"#888888\"/>"
        svg +=
            "<line x1=\"\(Self.f(left))\" y1=\"\(Self.f(top))\" x2=\"\(Self.f(left))\" y2=\"\(Self.f(bottom))\" stroke=\"#888888\"/>\n"
        svg +=
            "<text x=\"\(Self.f((left + right) / 2))\" y=\"\(Self.f(bottom + 34))\" text-anchor=\"middle\">\(Self.escape(xLabel))</text>"
        svg +=
            "<text x=\"16\" y=\"\(Self.f((top + bottom) / 2))\" text-anchor=\"middle\" transform=\"rotate(-90 16 \(Self.f((top + bottom) / 2)))\">\(Self.escape(yLabel))</text>\n"
        svg += "</g>\n"
        // Series, then the legend under the plot.
        for (s, points) in zip(series, drawable) {
            var runs: [[String]] = [[]]
            for p in points {
                if let y = p.y {
                    runs[runs.count - 1].append("\(Self.f(px(p.x))),\(Self.f(py(y)))")
                } else if !runs[runs.count - 1].isEmpty {
                    runs.append([])
                }
            }
            runs = runs.filter { !$0.isEmpty }
            svg +=
                "<g class=\"series\" data-series=\"\(Self.escape(s.id))\" data-points=\"\(runs.reduce(0) { $0 + $1.count })\" stroke=\"\(Self.escape(s.color))\" fill=\"\(Self.escape(s.color))\">"
            for run in runs {
                svg +=
                    run.count == 1
                    ? "<circle cx=\"\(run[0].split(separator: ",")[0])\" cy=\"\(run[0].split(separator: ",")[1])\" r=\"2.5\"/>"
                    : "<polyline fill=\"none\" stroke-width=\"2\" points=\"\(run.joined(separator: " "))\"/>"
            }
            svg += "</g>\n"
        }
        svg += "<g class=\"legend\" font-size=\"12\" fill=\"#222222\">"
        var x = left
        for s in series {
            svg +=
                "<rect x=\"\(Self.f(x))\" y=\"\(Self.f(height - 18))\" width=\"14\" height=\"4\" fill=\"\(Self.escape(s.color))\"/>"
            svg += "<text x=\"\(Self.f(x + 20))\" y=\"\(Self.f(height - 13))\">\(Self.escape(s.label))</text>"
            x += 28 + Double(s.label.count) * 6.6
        }
        svg += "</g>\n</svg>"
        return svg
    }

    // MARK: Scales

    static func usable(_ value: Double, _ scale: Scale) -> Bool { value.isFinite && (scale == .linear || value > 0) }

    static func position(_ value: Double, _ scale: Scale) -> Double {
        scale == .linear ? value : Foundation.log10(value)
    }

    /// The range to draw: the data's, widened to whole decades on a log scale and to a
    /// non-empty span on either.
    static func range(_ values: [Double], scale: Scale, fallback: (Double, Double)) -> (Double, Double) {
        let usable = values.filter { self.usable($0, scale) }
        guard var low = usable.min(), var high = usable.max() else { return fallback }
        if scale == .log10 {
            low = pow(10, Foundation.floor(Foundation.log10(low)))
            high = pow(10, Foundation.ceil(Foundation.log10(high)))
            if high <= low { high = low * 10 }
        } else if high <= low {
            high = low + max(1, abs(low))
        }
        return (low, high)
    }

    /// About six ticks at 1, 2 or 5 × 10ⁿ steps (linear), or one per decade (log).
    static func ticks(_ range: (Double, Double), scale: Scale, format: (Double) -> String) -> [Tick] {
        if scale == .log10 {
            var ticks: [Tick] = []
            var v = range.0
            while v <= range.1 * 1.000001 {
                ticks.append(Tick(v, format(v)))
                v *= 10
            }
            return ticks
        }
        let raw = (range.1 - range.0) / 6
        let magnitude = pow(10, Foundation.floor(Foundation.log10(raw)))
        let step = [1.0, 2, 5, 10].map { $0 * magnitude }.first { $0 >= raw } ?? raw
        var ticks: [Tick] = []
        var v = Foundation.ceil(range.0 / step) * step
        while v <= range.1 + step * 1e-9 {
            ticks.append(Tick(v, format(v)))
            v += step
        }
        return ticks
    }

    // MARK: Text

    /// A coordinate with one decimal (SVG needs no more at this size).
    static func f(_ value: Double) -> String { String(format: "%.1f", value) }

    /// `text` safe in XML character data and attribute values.
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for c in text {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(c)
            }
        }
        return out
    }
}
