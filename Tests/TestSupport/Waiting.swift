// Tests/TestSupport/Waiting.swift - waiting for a condition, the one way every suite does
//
// A bound on waiting, never a performance assertion: conditions usually hold in milliseconds, and the bounds are
// generous because the whole suite runs in parallel on two cores, and four times longer under ThreadSanitizer.

#if canImport(Glibc)
  import Glibc
#endif

/// Whether ThreadSanitizer instruments this process (then everything runs several times slower).
public let underThreadSanitizer: Bool = {
  guard let process = dlopen(nil, RTLD_NOW) else { return false }
  return dlsym(process, "__tsan_init") != nil
}()

/// `timeout`, four times longer under ThreadSanitizer.
public func scaledForSanitizers(_ timeout: Duration) -> Duration {
  underThreadSanitizer ? timeout * 4 : timeout
}

/// Polls `condition` every `interval` until it holds or `timeout` passes (scaled for sanitizers); returns whether
/// it held.
public func eventually(
  timeout: Duration = .seconds(20), interval: Duration = .milliseconds(10), _ condition: () async throws -> Bool
) async rethrows -> Bool {
  let clock = ContinuousClock()
  let end = clock.now.advanced(by: scaledForSanitizers(timeout))
  while true {
    if try await condition() { return true }
    if clock.now >= end { return false }
    try? await Task.sleep(for: interval)
  }
}

/// Blocks the calling thread, polling `condition` every millisecond until it holds or `timeout` passes (scaled for
/// sanitizers); returns the condition's last value. For tests of threads, off the cooperative pool.
@discardableResult
@available(*, noasync, message: "blocks its thread: in async code, use eventually")
public func waitUntil(timeout: Duration = .seconds(60), _ condition: () -> Bool) -> Bool {
  let clock = ContinuousClock()
  let end = clock.now.advanced(by: scaledForSanitizers(timeout))
  while !condition() {
    if clock.now >= end { return condition() }
    usleep(1000)
  }
  return true
}
