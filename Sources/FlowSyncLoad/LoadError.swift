/// A load-run failure with a message for the command line.
public struct LoadError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
