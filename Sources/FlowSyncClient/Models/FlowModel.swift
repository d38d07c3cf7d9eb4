import FlowSyncCore
import Foundation

/// A typed model of a list row — the counterpart of a FlowKit model with its adapter.
///
/// Any `Codable & Identifiable` type can be a model: its `id` (as text) becomes the
/// row ID, which must be unique in the whole list, and the model travels as JSON in the
/// row's payload. ``flowKind`` is the row's `kind`: the tag that tells readers which type
/// (cell, adapter) a row is, so one section can hold several kinds.
///
/// ```swift
/// struct Contact: FlowModel {
///     static let flowKind = "contact"
///     var id: String
///     var name: String
/// }
/// ```
public protocol FlowModel: Codable, Identifiable, Sendable {
    /// The row kind this type is stored under. Defaults to the type's name; set it
    /// explicitly when other platforms read the list, since it is part of the data.
    static var flowKind: String { get }
}

extension FlowModel {
    public static var flowKind: String { String(describing: Self.self) }

    /// The row ID of this model: its `id` as text.
    public var rowID: String { String(describing: id) }
}

/// JSON coding of models into row payloads, shared by every client.
///
/// Keys are sorted so that equal models give equal bytes: the row's content hash then
/// decides "updated" correctly, and re-setting an unchanged model is no visible change.
enum ModelCoding {
    static func row<M: FlowModel>(_ model: M) throws(FlowSyncError) -> Row {
        Row(id: model.rowID, kind: M.flowKind, payload: try encode(model))
    }

    static func encode<T: Encodable>(_ value: T) throws(FlowSyncError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        do {
            return Array(try encoder.encode(value))
        } catch {
            throw .modelCoding("cannot encode \(T.self): \(error)")
        }
    }

    static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws(FlowSyncError) -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(bytes))
        } catch {
            throw .modelCoding("cannot decode \(T.self): \(error)")
        }
    }

    /// `model` as a row of whatever concrete type it has (for heterogeneous arrays).
    static func row(any model: any FlowModel) throws(FlowSyncError) -> Row {
        func open<M: FlowModel>(_ m: M) throws(FlowSyncError) -> Row { try row(m) }
        return try open(model)
    }
}

/// Which Swift type reads each row kind, for sections that mix kinds.
///
/// Register a type once per client (``FlowSyncClient/register(_:)``), as FlowKit
/// registers adapters; typed reads of one kind (``SectionSnapshot/models(as:)``) need no
/// registration.
public struct ModelRegistry: Sendable {
    // Untyped throws here: a typed-throws closure stored in a dictionary crashes the
    // Swift 6.3 compiler (SILGen); the error is always a FlowSyncError.
    private var decoders: [String: @Sendable ([UInt8]) throws -> any FlowModel] = [:]

    public init() {}

    /// Reads rows of `M.flowKind` as `M`.
    public mutating func register<M: FlowModel>(_ type: M.Type) {
        decoders[M.flowKind] = { bytes in try ModelCoding.decode(M.self, from: bytes) }
    }

    /// Whether a type is registered for `kind`.
    public func knows(kind: String) -> Bool { decoders[kind] != nil }

    /// The row as its registered type, or `nil` when its kind is not registered.
    public func model(of row: Row) throws(FlowSyncError) -> (any FlowModel)? {
        guard let decode = decoders[row.kind] else { return nil }
        do {
            return try decode(row.payload)
        } catch let error as FlowSyncError {
            throw error
        } catch {
            throw .modelCoding("\(error)")
        }
    }
}
