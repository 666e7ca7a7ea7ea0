// Sources/FleetSim/Simulation/SimulationRandom.swift - the simulation's seeded generator
//
// The system generator is never used: trips must be a pure function of the seed. The generator is the package's
// one SplitMix64, whose helpers are fixed (not the standard library's `random(in:using:)`).

import Primitives

/// The generator the planner draws from.
typealias SimulationRandom = SplitMix64
