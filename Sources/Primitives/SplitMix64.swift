// Sources/Primitives/SplitMix64.swift - the one small seeded random number generator
//
// Jitter, FleetSim's simulation and injected faults, and the tests' reproducible inputs all draw from it. The
// helpers below are fixed here rather than taken from the standard library's `random(in:using:)`, whose
// algorithm may change between toolchains: a simulation must stay a pure function of its seed.

/// SplitMix64 (Steele, Lea and Flood): a fast seeded generator. Not for anything secret.
package struct SplitMix64: RandomNumberGenerator, Sendable {
  private var state: UInt64

  /// A generator whose sequence `seed` fixes.
  package init(seed: UInt64) { state = seed }

  /// A generator for stream `stream` of `seed`: distinct streams of one seed are unrelated.
  package init(seed: UInt64, stream: UInt64) {
    state = Self.mix(seed &+ 0x9E37_79B9_7F4A_7C15) ^ Self.mix(stream &* 0xD1B5_4A32_D192_ED03 &+ 0x2545_F491_4F6C_DD1D)
  }

  /// SplitMix64's output function: a bijective 64-bit mixer.
  package static func mix(_ value: UInt64) -> UInt64 {
    var z = value
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }

  /// The next 64 random bits.
  package mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    return Self.mix(state)
  }

  /// Uniform in [0, 1), with 53 random bits.
  package mutating func unit() -> Double { Double(next() >> 11) * 0x1p-53 }

  /// Uniform in [lower, upper).
  package mutating func uniform(_ lower: Double, _ upper: Double) -> Double { lower + (upper - lower) * unit() }

  /// Uniform in lower...upper (the tiny modulo bias is irrelevant for a simulation).
  package mutating func integer(_ lower: Int, _ upper: Int) -> Int {
    precondition(lower <= upper)
    return lower + Int(next() % UInt64(upper - lower + 1))
  }

  /// `true` with probability `probability`.
  package mutating func chance(_ probability: Double) -> Bool { unit() < probability }
}
