// Sources/FleetSim/Exports.swift - what `import FleetSim` brings with it
//
// FleetSim serves gRPC's health service; its messages and method paths (grpc.health.v1) are part of what a
// user of the simulator checks it with.

@_exported public import GRPCHealth
