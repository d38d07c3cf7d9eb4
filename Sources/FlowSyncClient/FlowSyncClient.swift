// Placeholder until the SDK lands (issue #6).
