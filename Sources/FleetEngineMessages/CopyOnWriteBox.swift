// Sources/FleetEngineMessages/CopyOnWriteBox.swift - the one copy-on-write box of rarely present fields

/// A class holding a message's rarely present fields: `nil` in a message until one of them is set, shared
/// between copies of the message until one of them changes it (`VehicleLocation`, `TerminalLocation`, `Trip`).
protocol CopyOnWriteBox: AnyObject {
  /// A box with every field at its default.
  init()
  /// A box with `other`'s fields.
  init(copying other: Self)
}

extension Optional where Wrapped: CopyOnWriteBox {
  /// The box, made its holder's own first: created when there is none, copied when another holder shares it.
  ///
  /// No local binding of the box comes before the uniqueness check: it would hold a second reference, and the
  /// check would then copy the box on every change.
  @inline(__always)
  mutating func unique() -> Wrapped {
    if self == nil {
      self = Wrapped()
    } else if !isKnownUniquelyReferenced(&self) {
      self = Wrapped(copying: self!)
    }
    return self!
  }
}
