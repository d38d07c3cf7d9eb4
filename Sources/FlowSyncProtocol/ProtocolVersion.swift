/// Protocol version numbers and the Hello magic.
///
/// The version is negotiated once, in the handshake, and not repeated in every frame:
/// it cannot change during a connection, and a byte per frame would be paid by every
/// 100-byte diff for nothing. The layout of the frame header and of the Hello, Welcome
/// and Error bodies is frozen across versions, so any two versions can at least
/// negotiate or refuse cleanly.
public enum ProtocolVersion {
    /// The version this build prefers.
    public static let current: UInt16 = 1
    /// The oldest version this build speaks.
    public static let minimum: UInt16 = 1
    /// The first four bytes of a Hello body, ASCII `FSYN`: a server that reads anything
    /// else is not talking to a FlowSync client and closes at once.
    public static let helloMagic: [UInt8] = [0x46, 0x53, 0x59, 0x4E]

    /// The version a server speaking `minimum...current` picks for a client's range, or
    /// `nil` when the ranges do not overlap.
    public static func negotiate(
        clientMin: UInt16, clientMax: UInt16, serverMin: UInt16 = minimum, serverMax: UInt16 = current
    ) -> UInt16? {
        let best = min(clientMax, serverMax)
        return best >= max(clientMin, serverMin) ? best : nil
    }
}
