import FlowSyncCore

/// A backup's read of the lists that are not loaded (lists on demand; docs/STORAGE.md,
/// "Backup and restore"): each list is recovered by the rules its load would apply —
/// the same expectation, the same code — but over a ``ReadOnlyFileIO``, so the read
/// changes no file (no torn tail cut, no `OPENED` marker written). What a load would
/// change, the list's next load still does.
extension FileStore {
    public func storageKey(for name: String) -> String { StoreFormat.directoryName(for: name) }

    public func storedListKeys() -> @Sendable () -> Result<[String], StoreError> {
        let io = self.io
        let directory = listsDirectory
        return {
            do throws(StoreError) {
                return .success(try io.listDirectory(directory).filter { !$0.hasPrefix(".") })
            } catch {
                return .failure(error)
            }
        }
    }

    public func prepareBackupRead(of keys: [String]) -> @Sendable () -> Result<[BackupList], StoreError> {
        guard let state = onDemand else {
            preconditionFailure("Internal inconsistency in FileStore: a backup read before openOnDemand()")
        }
        // Taken on the loop: what this run knows of each list (its record if it was
        // written and unloaded, whether it was marked). The caller keeps every one of
        // these lists from loading until the read is done, so none of it changes.
        let jobs = keys.map { key in
            (
                key: key, unloaded: state.unloaded[key],
                unchangedSinceMarked: state.unloaded[key] == nil && state.marked.contains(key)
            )
        }
        let start = state.start
        // A repair writes (sets files aside); a backup never does. A damaged list fails
        // the backup, naming it.
        let options = {
            var o = state.options
            o.repair = false
            return o
        }()
        let manifest = cleanStopManifest
        let listsDirectory = self.listsDirectory
        let io = ReadOnlyFileIO(over: self.io)
        return {
            var lists: [BackupList] = []
            lists.reserveCapacity(jobs.count)
            for job in jobs {
                let directory = listsDirectory + "/" + job.key
                do throws(StoreError) {
                    let (expectation, newEpoch, _) = try Self.expectation(
                        forEntry: job.key, directory: directory, start: start, unloadedRecord: job.unloaded,
                        unchangedSinceMarked: job.unchangedSinceMarked, manifest: manifest, io: io)
                    var report = RecoveryReport()
                    guard
                        let files = try Self.readList(
                            at: directory, expecting: expectation, options: options, io: io, report: &report)
                    else { continue }
                    var sequencer = files.list.sequencer
                    if newEpoch || files.list.needsNewEpoch {
                        // Its stored history may not be what clients saw (the rule a
                        // load applies): the backup gives it a new epoch of its own, so
                        // a client of the restored daemon resyncs from a snapshot.
                        sequencer.startEpoch(UInt64.random(in: 1...UInt64.max))
                    }
                    lists.append(BackupList(name: files.name, sequencer: sequencer))
                } catch {
                    return .failure(error)
                }
            }
            return .success(lists)
        }
    }
}

/// One list as a backup takes it: its name and its state at a committed version.
public struct BackupList: Sendable {
    public var name: String
    public var sequencer: Sequencer

    public init(name: String, sequencer: Sequencer) {
        self.name = name
        self.sequencer = sequencer
    }
}
