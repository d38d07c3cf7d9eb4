import Foundation

/// A header or footer read as a plain title, for a table without a header adapter: a
/// JSON string (`"Friends"`), or a JSON object with a `"title"` string
/// (`{"title":"Friends"}`, what `set(header: ["title": "Friends"])` writes).
struct SupplementaryTitle: Decodable {
    let text: String

    private enum Keys: String, CodingKey { case title }

    init(from decoder: any Decoder) throws {
        if let single = try? decoder.singleValueContainer(), let text = try? single.decode(String.self) {
            self.text = text
            return
        }
        text = try decoder.container(keyedBy: Keys.self).decode(String.self, forKey: .title)
    }

    /// Decodes `bytes`. Once per header version: the presenter caches the result.
    static func decode(_ bytes: [UInt8]) throws -> Any {
        try JSONDecoder().decode(SupplementaryTitle.self, from: Data(bytes))
    }
}
