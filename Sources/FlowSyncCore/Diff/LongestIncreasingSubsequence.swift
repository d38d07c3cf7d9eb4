/// Marks the elements of a longest strictly increasing subsequence of `values`.
///
/// Used by the diff to decide which common elements stay put: those on the LIS keep
/// their relative order, every other one is reported as a move, so the number of moves
/// is the minimum possible for the matched elements.
/// - Complexity: O(n log n) time, O(n) space (patience sorting).
func longestIncreasingSubsequenceMask(_ values: [Int]) -> [Bool] {
    let n = values.count
    var mask = [Bool](repeating: false, count: n)
    guard n > 0 else { return mask }
    var tailIndices: [Int] = []  // index into values of the smallest tail of each length
    tailIndices.reserveCapacity(n)
    var predecessor = [Int](repeating: -1, count: n)
    for i in 0..<n {
        let v = values[i]
        var lo = 0, hi = tailIndices.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if values[tailIndices[mid]] < v { lo = mid + 1 } else { hi = mid }
        }
        if lo > 0 { predecessor[i] = tailIndices[lo - 1] }
        if lo == tailIndices.count { tailIndices.append(i) } else { tailIndices[lo] = i }
    }
    var k = tailIndices.last!
    while k >= 0 {
        mask[k] = true
        k = predecessor[k]
    }
    return mask
}
