import FlowSyncServer
import Foundation

/// `flowsyncd --check-store [--repair]`: the offline check of every list in the data
/// directory (docs/STORAGE.md, "Checking a store"). Exit codes:
/// 0 every list is ok; 3 nothing is damaged but the next start would cut a torn tail;
/// 65 at least one list (or the clean-stop manifest) is damaged; 1 another flowsyncd
/// holds the store; 74 the store cannot be read; 2 a configuration error (as always).
enum StoreCheckCommand {
    static func run(_ configuration: ServerConfiguration, repair: Bool) -> Int32 {
        guard configuration.storageEngine == .file else {
            printError(
                "--check-store checks a file store; storage.engine is \"\(configuration.storageEngine.rawValue)\" (nothing is on disk)"
            )
            return 2
        }
        let directory = configuration.dataDirectory
        if repair {
            do throws(StoreError) {
                let report = try FileStore.repairOffline(
                    directory: directory, options: configuration.fileStoreOptions,
                    recovery: configuration.recoveryOptions)
                let what =
                    report.repairedBytes > 0
                    ? "dropped \(report.repairedBytes) damaged bytes"
                    : report.repairedAnything ? "repaired" : "nothing was damaged"
                print("flowsyncd: repair: \(what)")
                for note in report.notes { print("  \(note)") }
            } catch {
                return failure(error, directory: directory)
            }
        }
        let report: StoreCheckReport
        do throws(StoreError) {
            report = try FileStore.check(directory: directory, options: configuration.recoveryOptions)
        } catch {
            return failure(error, directory: directory)
        }
        print("flowsyncd: checking \(directory); previous stop: \(report.previousStop)")
        for detail in report.storeDetails { print("  store: \(detail)") }
        for list in report.lists {
            let name = list.listName.map { "\"\($0)\"" } ?? "lists/\(list.directory)"
            let verdict: String
            switch list.verdict {
            case .ok: verdict = "ok        "
            case .repairable: verdict = "repairable"
            case .damaged: verdict = "damaged   "
            }
            var line = "\(verdict) \(name)"
            if let position = list.position { line += " at \(position)" }
            if let code = list.exitCode { line += " (exit \(code) at start)" }
            print(line)
            for detail in list.details { print("    \(detail)") }
        }
        let counts = [StoreCheckReport.Verdict.ok, .repairable, .damaged].map { v in
            report.lists.filter { $0.verdict == v }.count
        }
        let manifest = report.storeVerdict == .damaged ? "; the clean-stop manifest is damaged" : ""
        print(
            "flowsyncd: \(report.lists.count) lists: \(counts[0]) ok, \(counts[1]) repairable, \(counts[2]) damaged\(manifest)"
        )
        switch report.verdict {
        case .ok: return 0
        case .repairable:
            print(
                "flowsyncd: the next start cuts the torn tails (acknowledged data is intact); --check-store --repair does it now"
            )
            return 3
        case .damaged:
            print(
                "flowsyncd: the daemon refuses this store; --repair (at start, or with --check-store) keeps each damaged list's valid prefix in a new epoch"
            )
            return 65
        }
    }

    private static func failure(_ error: StoreError, directory: String) -> Int32 {
        printError("cannot check the store in \(directory): \(error)")
        if error.isCorruption { return 65 }
        return error.errno == nil ? 1 : 74
    }

    private static func printError(_ text: String) {
        FileHandle.standardError.write(Data("flowsyncd: \(text)\n".utf8))
    }
}
