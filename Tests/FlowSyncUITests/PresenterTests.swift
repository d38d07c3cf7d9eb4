import FlowSyncClient
import FlowSyncCore
import FlowSyncTestSupport
import FlowSyncUI
import Foundation
import Testing

/// The presenter's decisions, without a view toolkit: routing by kind with a fallback,
/// decode once per row version, what an event at an index path means, handles for
/// deferred actions, header titles, sizing and the once-per-section header refresh.
@Suite(.timeLimit(.minutes(1))) struct PresenterTests {
    struct Contact: FlowModel {
        static let flowKind = "contact"
        var id: String
        var name: String
    }

    static func contactRow(_ id: String, _ name: String) -> Row {
        Row(id: id, kind: "contact", text: #"{"id":"\#(id)","name":"\#(name)"}"#)
    }

    static let list0 = try! Director(sections: [
        Section(
            id: "friends", header: Array(#""Friends""#.utf8), footer: Array(#"{"title":"2 friends"}"#.utf8),
            rows: [contactRow("ann", "Ann"), Row(id: "ad", kind: "banner", text: "{}"), contactRow("bob", "Bob")]),
        Section(id: "raw", header: Array("not json".utf8), rows: [Row(id: "odd", kind: "contact", text: "[1,2")]),
    ])

    /// A presenter fed by hand (no list) on a simulated view showing `list0`.
    func presenter() -> (ListPresenter<SimulatedListView, String>, SimulatedListView) {
        let view = SimulatedListView(displaying: Director())
        let presenter = ListPresenter<SimulatedListView, String>(list: nil, target: view)
        view.dataSource = { presenter.snapshot.director }
        presenter.register("contact-adapter", forKind: Contact.flowKind) { row in
            try JSONDecoder().decode(Contact.self, from: Data(row.payload))
        }
        presenter.apply(
            ListChange(
                cause: .initial, previous: ListSnapshot(name: ""),
                changeset: Changeset.diff(from: Director(), to: Self.list0),
                snapshot: ListSnapshot(name: "l", director: Self.list0)))
        return (presenter, view)
    }

    @Test func rowsGoToTheAdapterOfTheirKindAndUnknownKindsToNone() throws {
        let (presenter, view) = presenter()
        #expect(view.problems.isEmpty && view.displayed == Self.list0)
        let ann = try #require(presenter.item(at: RowPath(section: 0, row: 0)))
        #expect(ann.adapter == "contact-adapter")
        #expect(ann.model(as: Contact.self)?.name == "Ann")
        let banner = try #require(presenter.item(at: RowPath(section: 0, row: 1)))
        #expect(banner.adapter == nil && banner.model == nil)  // the director's fallback shows it
        #expect(presenter.item(at: RowPath(section: 0, row: 3)) == nil)
        #expect(presenter.item(at: RowPath(section: 5, row: 0)) == nil)
        #expect(presenter.numberOfRows(inSection: 9) == 0)
    }

    @Test func aRowThatDoesNotDecodeFallsBackOnceAndNeverTraps() throws {
        let (presenter, _) = presenter()
        var reported: [ModelDecodingFailure] = []
        presenter.onDecodingFailure = { reported.append($0) }
        for _ in 0..<5 {
            let odd = try #require(presenter.item(at: RowPath(section: 1, row: 0)))
            #expect(odd.adapter == "contact-adapter")
            guard case .failure? = odd.model else {
                Issue.record("decoded")
                return
            }
            #expect(odd.model(as: Contact.self) == nil)
        }
        #expect(reported.count == 1 && reported.first?.rowID == "odd")
    }

    @Test func modelsAreDecodedOncePerRowVersion() throws {
        let (presenter, view) = presenter()
        for _ in 0..<10 {
            _ = presenter.item(at: RowPath(section: 0, row: 0))
            _ = presenter.item(at: RowPath(section: 0, row: 2))
        }
        #expect(presenter.models.decodes == 2)
        // Bob is renamed and moved: decoded again, once; Ann is not.
        var next = Self.list0
        let changeset = try next.apply([
            .replaceRow(.id("bob"), with: Self.contactRow("bob", "Robert")),
            .moveRow(.id("bob"), toSection: .id("friends"), at: 0),
        ])
        presenter.apply(
            ListChange(
                cause: .remote, previous: presenter.snapshot, changeset: changeset,
                snapshot: ListSnapshot(name: "l", director: next)))
        #expect(view.problems.isEmpty)
        for _ in 0..<10 {
            #expect(presenter.item(at: RowPath(section: 0, row: 0))?.model(as: Contact.self)?.name == "Robert")
            #expect(presenter.item(at: RowPath(section: 0, row: 1))?.model(as: Contact.self)?.name == "Ann")
        }
        #expect(presenter.models.decodes == 3)
        // A new registration forgets the decoded models.
        presenter.register("v2", forKind: Contact.flowKind) { _ in Contact(id: "?", name: "v2") }
        #expect(presenter.item(at: RowPath(section: 0, row: 1))?.model(as: Contact.self)?.name == "v2")
    }

    @Test func anEventMeansTheRowTheViewShowsAndAHandleFollowsItsRow() throws {
        let (presenter, _) = presenter()
        let handle = try #require(presenter.item(at: RowPath(section: 0, row: 2))).handle
        #expect(handle.rowID == "bob" && handle.sectionID == "friends")
        // A remote insert at the top shifts Bob: the index path now means another row,
        // the handle still means Bob.
        var next = Self.list0
        let changeset = try next.apply([.insertRows([Self.contactRow("cy", "Cy")], in: .id("friends"), at: 0)])
        presenter.apply(
            ListChange(
                cause: .remote, previous: presenter.snapshot, changeset: changeset,
                snapshot: ListSnapshot(name: "l", director: next)))
        #expect(presenter.item(at: RowPath(section: 0, row: 2))?.row.id == "ad")
        #expect(presenter.path(of: handle) == RowPath(section: 0, row: 3))
        // Gone: no path, so a deferred action does nothing.
        var gone = next
        let removal = try gone.apply([.removeRows([.id("bob")])])
        presenter.apply(
            ListChange(
                cause: .remote, previous: presenter.snapshot, changeset: removal,
                snapshot: ListSnapshot(name: "l", director: gone)))
        #expect(presenter.path(of: handle) == nil)
        // No list: removing through a handle writes nothing.
        #expect(try presenter.remove(handle) == nil)
    }

    @Test func headerTitlesAreAJSONStringOrATitleField() {
        let (presenter, _) = presenter()
        #expect(presenter.title(.header, inSection: 0) == "Friends")
        #expect(presenter.title(.footer, inSection: 0) == "2 friends")
        #expect(presenter.title(.header, inSection: 1) == nil)  // raw bytes are not JSON
        #expect(presenter.title(.footer, inSection: 1) == nil)  // none
        #expect(presenter.title(.header, inSection: 7) == nil)
    }

    @Test func aStageChangingHeaderAndFooterTouchesTheSectionOnce() throws {
        let (presenter, view) = presenter()
        var next = Self.list0
        let changeset = try next.apply([
            .setHeader(.id("friends"), Array(#""Pals""#.utf8)),
            .setFooter(.id("friends"), Array(#""3 pals""#.utf8)),
            .setHeader(.id("raw"), nil),
        ])
        let updates = changeset.stages.flatMap(\.supplementaryUpdates)
        #expect(updates.count == 3)
        #expect(
            SupplementaryRefresh.grouping(updates) == [
                SupplementaryRefresh(section: 0, header: true, footer: true),
                SupplementaryRefresh(section: 1, header: true, footer: false),
            ])
        // With the states around the stage: the raw header went (its layout changes); the
        // others only changed (refreshed in place).
        #expect(
            SupplementaryRefresh.grouping(updates, before: Self.list0, after: next)
                == [
                    SupplementaryRefresh(section: 0, header: true, footer: true),
                    SupplementaryRefresh(section: 1, header: true, footer: false, headerPresenceChanged: true),
                ])
        presenter.apply(
            ListChange(
                cause: .remote, previous: presenter.snapshot, changeset: changeset,
                snapshot: ListSnapshot(name: "l", director: next)))
        #expect(view.problems.isEmpty, "\(view.problems)")  // SimulatedListView fails a section refreshed twice
        #expect(presenter.title(.header, inSection: 0) == "Pals")
        #expect(presenter.title(.footer, inSection: 0) == "3 pals")
    }

    @Test func sizingPolicies() {
        let automatic: CGFloat = -1
        #expect(RowSizing.default.height(viewDefault: 44, automaticDimension: automatic) == 44)
        #expect(RowSizing.fixed(60).height(viewDefault: 44, automaticDimension: automatic) == 60)
        #expect(RowSizing.automatic(estimated: 80).height(viewDefault: 44, automaticDimension: automatic) == automatic)
        #expect(RowSizing.default.estimatedHeight(viewDefault: 0) == 0)
        #expect(RowSizing.fixed(60).estimatedHeight(viewDefault: 0) == 60)
        #expect(RowSizing.automatic(estimated: 80).estimatedHeight(viewDefault: 0) == 80)
        let layout = CGSize(width: 50, height: 50)
        #expect(ItemSizing.default.size(layoutDefault: layout) == layout)
        #expect(
            ItemSizing.fixed(CGSize(width: 10, height: 20)).size(layoutDefault: layout) == CGSize(width: 10, height: 20)
        )
        #expect(
            ItemSizing.automatic(estimated: CGSize(width: 300, height: 44)).size(layoutDefault: layout).height == 44)
        #expect(ItemSizing.automatic(estimated: .zero).isAutomatic && !ItemSizing.default.isAutomatic)
    }

    @Test func refreshStepsTouchASectionOnceAndReloadOnlyWhatChangesLayout() {
        let steps = SupplementaryRefresh.steps([
            SupplementaryRefresh(section: 0, header: true, footer: true),
            SupplementaryRefresh(section: 1, header: true, footer: true, footerPresenceChanged: true),
            SupplementaryRefresh(section: 2, header: false, footer: true),
        ])
        #expect(
            steps == [
                .refreshInPlace(section: 0, element: .header), .refreshInPlace(section: 0, element: .footer),
                .reloadSection(1), .refreshInPlace(section: 2, element: .footer),
            ])
    }

    final class Adapter {
        let name: String
        init(_ name: String) { self.name = name }
    }

    @Test func prefetchGroupsRowsByAdapterAndTypedModelsSkipWhatDoesNotDecode() throws {
        let view = SimulatedListView(displaying: Director())
        let presenter = ListPresenter<SimulatedListView, Adapter>(list: nil, target: view)
        view.dataSource = { presenter.snapshot.director }
        let contacts = Adapter("contacts"), banners = Adapter("banners")
        presenter.register(contacts, forKind: Contact.flowKind) { row in
            try JSONDecoder().decode(Contact.self, from: Data(row.payload))
        }
        presenter.register(banners, forKind: "banner") { row in row.id }
        presenter.apply(
            ListChange(
                cause: .initial, previous: ListSnapshot(name: ""),
                changeset: Changeset.diff(from: Director(), to: Self.list0),
                snapshot: ListSnapshot(name: "l", director: Self.list0)))
        let paths = [
            RowPath(section: 0, row: 1), RowPath(section: 0, row: 0), RowPath(section: 1, row: 0),
            RowPath(section: 0, row: 2),
            RowPath(section: 9, row: 0),
        ]
        let groups = presenter.items(at: paths, groupedBy: { ObjectIdentifier($0) })
        #expect(groups.map(\.adapter.name) == ["banners", "contacts"])
        #expect(groups[1].items.map(\.row.id) == ["ann", "odd", "bob"])
        let (models, modelPaths) = PresentedRow.models(of: groups[1].items, as: Contact.self)
        #expect(models.map(\.name) == ["Ann", "Bob"])  // "odd" does not decode
        #expect(modelPaths == [RowPath(section: 0, row: 0), RowPath(section: 0, row: 2)])
        // A header adapter's value, decoded once per version; none where there is no header.
        let registrations: [SupplementaryUpdate.Element: SupplementaryRegistration<Adapter>] = [
            .header: SupplementaryRegistration(adapter: contacts) { bytes in String(decoding: bytes, as: UTF8.self) }
        ]
        #expect(
            presenter.supplementary(.header, inSection: 0, registrations: registrations)?.value as? String
                == #""Friends""#)
        #expect(presenter.supplementary(.header, inSection: 0, registrations: registrations)?.sectionID == "friends")
        #expect(presenter.supplementary(.footer, inSection: 0, registrations: registrations) == nil)
        #expect(presenter.supplementary(.header, inSection: 7, registrations: registrations) == nil)
    }
}
