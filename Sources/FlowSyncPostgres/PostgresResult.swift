/// The outcome of one statement: its rows in text format and the affected-row count.
public struct PostgresResult: Sendable, Equatable {
    /// Column names.
    public var columns: [String]
    /// Rows of text values (`nil` is SQL NULL); `bytea` columns arrive as `\x…` hex text,
    /// see ``bytes(_:_:)``.
    public var rows: [[String?]]
    /// Rows inserted, updated or deleted (`PQcmdTuples`), 0 for other statements.
    public var affectedRows: Int
    /// The server's error, for a failed statement.
    public var error: PostgresError?

    public init(columns: [String] = [], rows: [[String?]] = [], affectedRows: Int = 0, error: PostgresError? = nil) {
        self.columns = columns
        self.rows = rows
        self.affectedRows = affectedRows
        self.error = error
    }

    var isError: Bool { error != nil }

    /// The integer in row `row`, column `column`, if it is one.
    public func int(_ row: Int, _ column: Int) -> Int64? {
        guard row < rows.count, column < rows[row].count, let text = rows[row][column] else { return nil }
        return Int64(text)
    }

    /// The bytes of a `bytea` value in row `row`, column `column` (hex output format).
    public func bytes(_ row: Int, _ column: Int) -> [UInt8]? {
        guard row < rows.count, column < rows[row].count, let text = rows[row][column] else { return nil }
        let utf8 = Array(text.utf8)
        guard utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x"), utf8.count % 2 == 0 else {
            return nil
        }
        var out: [UInt8] = []
        out.reserveCapacity((utf8.count - 2) / 2)
        var i = 2
        while i < utf8.count {
            guard let high = Self.hex(utf8[i]), let low = Self.hex(utf8[i + 1]) else { return nil }
            out.append(high << 4 | low)
            i += 2
        }
        return out
    }

    private static func hex(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

/// A statement parameter.
public enum PostgresValue: Sendable, Equatable {
    /// Text, converted by the server to the parameter's type.
    case text(String)
    /// Binary bytes, for a `bytea` parameter.
    case bytes([UInt8])
    /// SQL NULL.
    case null
}
