// Sources/FleetSim/Simulation/SimulationRandom.swift - the simulation's own seeded generator
//
// The system generator is never used: trips must be a pure function of the seed.
// The standard library's `random(in:using:)` is avoided too, because its
// algorithm may change between toolchains; these helpers are fixed here.

/// SplitMix64 (Steele, Lea and Flood), with the helpers the planner needs.
struct SimulationRandom {
  private var state: UInt64

  /// A generator whose sequence is fixed by `seed`.
  init(seed: UInt64) { state = seed }

  /// A generator for stream `stream` of `seed`: distinct streams of one seed are unrelated.
  init(seed: UInt64, stream: UInt64) {
    state = Self.mix(seed &+ 0x9E37_79B9_7F4A_7C15) ^ Self.mix(stream &* 0xD1B5_4A32_D192_ED03 &+ 0x2545_F491_4F6C_DD1D)
  }

  /// SplitMix64's output function: a bijective 64-bit mixer.
  static func mix(_ value: UInt64) -> UInt64 {
    var z = value
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }

  /// The next 64 random bits.
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    return Self.mix(state)
  }

  /// Uniform in [0, 1), with 53 random bits.
  mutating func unit() -> Double { Double(next() >> 11) * 0x1p-53 }

  /// Uniform in [lower, upper).
  mutating func uniform(_ lower: Double, _ upper: Double) -> Double { lower + (upper - lower) * unit() }

  /// Uniform in lower...upper (the tiny modulo bias is irrelevant for a simulation).
  mutating func integer(_ lower: Int, _ upper: Int) -> Int {
    precondition(lower <= upper)
    return lower + Int(next() % UInt64(upper - lower + 1))
  }

  /// `true` with probability `probability`.
  mutating func chance(_ probability: Double) -> Bool { unit() < probability }
}
