extension CompressionDictionary {
    /// The standard dictionary of protocol version 1 (2,028 bytes), used when a server is not
    /// configured with one of its own.
    ///
    /// Why a dictionary: a one-row diff is about 250 bytes, too short for deflate to find
    /// repeats in itself; priming the window with the strings such frames are made of
    /// (JSON keys and punctuation, common kinds and ID prefixes, ISO dates, URLs) lets
    /// deflate replace them with back-references from the first byte. The measured gain
    /// is in `docs/BENCHMARKS.md`; a server whose payloads have other keys should
    /// configure a dictionary built from samples of its own rows, which it announces in
    /// the Welcome exactly like this one.
    ///
    /// Frozen: changing these bytes changes every compressed golden vector. Its Adler-32
    /// is in `docs/PROTOCOL.md`.
    public static let standard = CompressionDictionary(Array(standardText.utf8))

    /// The text of ``standard``. zlib reaches back 32 KiB, and nearer strings cost fewer
    /// bits, so the most common fragments come last.
    static let standardText: String = [
        "application/json;charset=utf-8 text/plain image/png image/jpeg video/mp4 ",
        "https://cdn. https://www. https://api. https://img. .com/ .org/ .net/ .io/ ",
        ".png\" .jpg\" .jpeg\" .webp\" .svg\" .gif\" ?width= &height= ",
        "Monday Tuesday Wednesday Thursday Friday Saturday Sunday ",
        "January February March April May June July August September October November December ",
        "the and for with that this from have you your are was not but all new more about ",
        "\"currency\":\"USD\",\"currency\":\"EUR\",\"price\":\"amount\":\"quantity\":\"total\":",
        "\"latitude\":\"longitude\":\"address\":\"city\":\"country\":\"email\":\"phone\":",
        "\"width\":\"height\":\"duration\":\"size\":\"position\":\"index\":\"order\":\"rank\":",
        "\"color\":\"#\",\"icon\":\"badge\":\"style\":\"theme\":\"accent\":\"background\":",
        "\"visible\":\"hidden\":\"enabled\":\"disabled\":\"selected\":\"pinned\":\"archived\":",
        "\"tags\":[\"labels\":[\"items\":[\"children\":[\"attachments\":[\"reactions\":{",
        "\"likes\":\"comments\":\"replies\":\"views\":\"shares\":\"score\":\"rating\":\"votes\":",
        "\"status\":\"active\",\"status\":\"pending\",\"status\":\"done\",\"state\":\"open\",",
        "\"priority\":\"high\",\"priority\":\"low\",\"priority\":\"medium\",\"progress\":",
        "\"read\":false,\"read\":true,\"unread\":\"done\":false,\"done\":true,\"completed\":",
        "\"user\":{\"owner\":{\"author\":{\"sender\":{\"assignee\":{\"userId\":\"username\":\"",
        "\"avatar\":\"https://\",\"avatarUrl\":\"https://\",\"imageUrl\":\"https://\",\"url\":\"https://",
        "\"image\":\"https://\",\"thumbnail\":\"https://\",\"link\":\"https://\",\"href\":\"",
        "\"createdAt\":\"2025-\",\"updatedAt\":\"2025-\",\"createdAt\":\"2026-\",\"updatedAt\":\"2026-",
        "\"timestamp\":\"date\":\"time\":\"dueDate\":\"startDate\":\"endDate\":\"expiresAt\":\"",
        "T00:00:00Z\",T12:00:00.000Z\",:00Z\",:00.000Z\",\"",
        "\"description\":\"\",\"summary\":\"\",\"detail\":\"\",\"message\":\"\",\"content\":\"",
        "\"count\":0,\"count\":1,\"value\":\"value\":0,\"number\":\"amount\":0,\"unit\":\"",
        "\"type\":\"\",\"kind\":\"\",\"category\":\"\",\"section\":\"\",\"group\":\"",
        "null,true,false,null},null],true},false},\"\"},\"\"],",
        "\"name\":\"\",\"firstName\":\"\",\"lastName\":\"\",\"displayName\":\"\",\"label\":\"",
        "\"text\":\"\",\"body\":\"\",\"caption\":\"\",\"subtitle\":\"\",\"title\":\"",
        "cell header footer item card row section message post comment task product contact ",
        "item- row- section- msg- post- user- task- card- id- r s ",
        "{\"id\":\"",
    ].joined()
}
