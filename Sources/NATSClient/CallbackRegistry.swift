// Sources/NATSClient/CallbackRegistry.swift - what libnats' C callbacks find through their closure pointer
//
// libnats calls back (connection events, asynchronous errors, publish acks) on its own threads, with the
// `void *closure` it was given. Handing it a pointer to a Swift object would leave the question of when
// that object may be freed: a callback can still be on its way after the object's owner is gone. So the
// closure is a number instead, and the callback looks the number up here; a number whose object has
// been removed finds nothing and the callback does nothing (beyond freeing what libnats handed over).

internal import Primitives

/// The number a callback target is registered under; libnats gets it as the callback's closure pointer.
struct CallbackID: Sendable, Hashable {
  let number: UInt

  /// The closure pointer to give libnats: not a real pointer, a number libnats hands back untouched.
  var closure: UnsafeMutableRawPointer { UnsafeMutableRawPointer(bitPattern: number)! }
}

/// Numbers handed to libnats as callback closures, mapped to the objects that handle the callbacks.
final class CallbackRegistry<Target: AnyObject & Sendable>: Sendable {
  private let state = Locked<(next: UInt, targets: [UInt: Target])>((1, [:]))

  /// Registers `target` under a new number (never 0, so its closure pointer is never NULL).
  func register(_ target: Target) -> CallbackID {
    state.withLock { state in
      let number = state.next
      state.next += 1
      state.targets[number] = target
      return CallbackID(number: number)
    }
  }

  /// The target registered under `closure`, if it is still registered.
  func target(for closure: UnsafeMutableRawPointer?) -> Target? {
    guard let closure else { return nil }
    let number = UInt(bitPattern: closure)
    return state.withLock { $0.targets[number] }
  }

  /// Forgets the target registered under `id`; later callbacks with it find nothing.
  func remove(_ id: CallbackID) {
    _ = state.withLock { $0.targets.removeValue(forKey: id.number) }
  }
}
