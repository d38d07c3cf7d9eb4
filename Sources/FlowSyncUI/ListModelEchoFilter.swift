import FlowSyncClient

/// Which of the changes a ``ListModel`` receives it already shows.
///
/// After an edit made through the model, the model shows the director's state with
/// that edit at once (SwiftUI needs the data changed inside `onMove`/`onDelete`),
/// while the director's changes that lead to that state are still on their way to the
/// main actor. They end with the write's own change, cause `.local(seq)`, its *echo*:
/// every change up to and including the echo is already on screen and is skipped;
/// from the next one on, the model is in step again.
///
/// ```
///            showedWrite(seq)                  received(.local(≥ seq))
///   inStep ───────────────────▶ ahead(seq) ─────────────────────────────▶ inStep
///     ▲  received(any): show       │  ▲  received(other): skip
///     └────────────────────┘       └──┘  showedWrite(later seq): wait for that one
/// ```
///
/// Rules, each with its reason:
/// 1. A write's echo is delivered to every change stream and unsilenced observer,
///    synchronously with the write (under the client's lock), so it comes after every
///    change the state the model shows contains and before any it does not.
/// 2. Seqs rise with every write of the client, so an echo at or past the awaited seq
///    ends the wait (the model's later writes are shown in the same state).
/// 3. A rollback at or past the awaited seq is shown, not skipped, and ends the wait:
///    it cannot precede its write's echo (rule 1), so one that does means the echo was
///    lost, and showing the rollback is the only way back to the director's state.
///
/// Not guaranteed: a model fed by an observer registered *after* its write never sees
/// the echo and stays ahead (``ListModel/apply(_:)`` says so).
struct ListModelEchoFilter: Sendable, Equatable {
    /// What the model does with a received change.
    enum Action: Sendable, Equatable {
        /// Show the change's snapshot.
        case show
        /// The model already shows it (or a later state).
        case skip
    }

    private enum State: Sendable, Equatable {
        /// The model shows the last change it received.
        case inStep
        /// The model shows the director's state right after write `seq`; changes up to
        /// that write's echo are skipped.
        case ahead(awaitingEchoOf: UInt64)
    }

    private var state = State.inStep

    init() {}

    /// Whether the model shows a state ahead of the changes it received.
    var isAhead: Bool { state != .inStep }

    /// The model now shows the director's state right after its write `seq`.
    mutating func showedWrite(seq: UInt64) {
        switch state {
        case .inStep:
            state = .ahead(awaitingEchoOf: seq)
        case .ahead(let awaited):
            // The later write's state contains the earlier one's (rule 2).
            state = .ahead(awaitingEchoOf: max(awaited, seq))
        }
    }

    /// The model receives the director's next change, caused by `cause`.
    mutating func received(_ cause: ListChange.Cause) -> Action {
        guard case .ahead(let awaited) = state else { return .show }
        switch cause {
        case .local(let seq) where seq >= awaited:
            state = .inStep
            return .skip
        case .rollback(let seq, _) where seq >= awaited:
            state = .inStep
            return .show
        default:
            return .skip
        }
    }
}
