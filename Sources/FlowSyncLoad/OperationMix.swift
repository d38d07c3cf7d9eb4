/// The share of each kind of operation a load writer generates, in percent.
///
/// Written on the command line as `insert=40,remove=30,move=10,update=15,cross=5,section=0`
/// (names may be abbreviated to their first letters as listed in ``Kind/names``; `:`
/// works as well as `=`; kinds left out are 0). The shares must add up to 100.
public struct OperationMix: Hashable, Sendable, Codable, CustomStringConvertible {
    /// One kind of generated operation.
    public enum Kind: String, CaseIterable, Sendable, Codable {
        /// Insert one row into a section.
        case insert
        /// Remove one row.
        case remove
        /// Move one row within its section.
        case move
        /// Replace one row's payload (an update, a reload in UIKit terms).
        case update
        /// Move one row to another section.
        case crossSectionMove = "cross"
        /// A section-level op: insert a section, remove one, or set its header.
        case section

        /// The names accepted on the command line for this kind.
        public var names: [String] {
            switch self {
            case .insert: return ["insert", "ins", "i"]
            case .remove: return ["remove", "rm", "delete", "del", "r"]
            case .move: return ["move", "mv", "m"]
            case .update: return ["update", "upd", "u", "reload"]
            case .crossSectionMove: return ["cross", "cross-section", "xmove", "x"]
            case .section: return ["section", "sec", "s"]
            }
        }
    }

    /// Percent per kind; the values add up to 100.
    public private(set) var percent: [Kind: Int]

    /// Parse or validation failure, with a message for the command line.
    public struct ParseError: Error, CustomStringConvertible, Equatable {
        /// What is wrong.
        public let description: String
    }

    /// A mix from explicit shares. - Throws: ``ParseError`` when they do not add up to 100.
    public init(_ percent: [Kind: Int]) throws(ParseError) {
        for (kind, value) in percent where value < 0 || value > 100 {
            throw ParseError(description: "mix: \(kind.rawValue)=\(value) is not within 0…100")
        }
        let total = percent.values.reduce(0, +)
        guard total == 100 else { throw ParseError(description: "mix: the shares add up to \(total), not 100") }
        self.percent = percent.filter { $0.value > 0 }
    }

    /// Parses `insert=40,remove=30,…`. - Throws: ``ParseError`` naming the bad part.
    public init(parsing text: String) throws(ParseError) {
        var shares: [Kind: Int] = [:]
        for part in text.split(separator: ",", omittingEmptySubsequences: true) {
            let pieces = part.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "=" || $0 == ":" })
            guard pieces.count == 2 else { throw ParseError(description: "mix: '\(part)' is not NAME=PERCENT") }
            let name = pieces[0].trimmingWhitespace().lowercased()
            guard let kind = Kind.allCases.first(where: { $0.names.contains(name) }) else {
                throw ParseError(
                    description: "mix: unknown kind '\(name)' (insert, remove, move, update, cross, section)")
            }
            guard let value = Int(pieces[1].trimmingWhitespace()) else {
                throw ParseError(description: "mix: '\(pieces[1])' is not a whole percentage")
            }
            guard shares[kind] == nil else { throw ParseError(description: "mix: \(kind.rawValue) given twice") }
            shares[kind] = value
        }
        try self.init(shares)
    }

    /// The default mix: a churning feed whose row count stays about constant.
    public static let `default` = try! OperationMix([
        .insert: 35, .remove: 35, .move: 10, .update: 15, .crossSectionMove: 5,
    ])
    /// Only updates (row count and order stay fixed): the fan-out figure's shape.
    public static let updatesOnly = try! OperationMix([.update: 100])
    /// Every kind, section ops included (the `mixed` scenario).
    public static let everything = try! OperationMix([
        .insert: 30, .remove: 25, .move: 10, .update: 20, .crossSectionMove: 10, .section: 5,
    ])

    /// The share of `kind`, in percent.
    public subscript(kind: Kind) -> Int { percent[kind] ?? 0 }

    /// The kind for a uniform draw `roll` in 0..<100 (cumulative, in ``Kind/allCases`` order).
    public func kind(forRoll roll: Int) -> Kind {
        precondition((0..<100).contains(roll), "roll must be in 0..<100")
        var edge = 0
        for kind in Kind.allCases {
            edge += self[kind]
            if roll < edge { return kind }
        }
        preconditionFailure("Internal inconsistency in OperationMix: shares add up to \(edge)")
    }

    /// `insert=35,remove=35,…` in ``Kind/allCases`` order, zero shares left out.
    public var description: String {
        Kind.allCases.filter { self[$0] > 0 }.map { "\($0.rawValue)=\(self[$0])" }.joined(separator: ",")
    }

    // Codable as its description (the JSON report shows it as the command line does).
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        try self.init(parsing: text)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

extension Substring {
    func trimmingWhitespace() -> String {
        var s = self[...]
        while let c = s.first, c.isWhitespace { s = s.dropFirst() }
        while let c = s.last, c.isWhitespace { s = s.dropLast() }
        return String(s)
    }
}
