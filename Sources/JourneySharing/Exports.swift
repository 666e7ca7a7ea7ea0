// Sources/JourneySharing/Exports.swift - what `import JourneySharing` brings with it
//
// A subscriber's callbacks take Fleet Engine message types (Trip, TripStatus,
// VehicleLocation, TripWaypoint, …) and the per-update step's types (TripSnapshot,
// TripPropertyFields, TripLimits), and report failures as GRPCError: all are part of this
// module's API, so importing it is enough to write one, as grpc-swift-2's transports
// re-export the core types their users need.

@_exported public import FleetEngineMessages
@_exported public import JourneySharingCore

@_exported public import struct GRPCProtocol.GRPCError
@_exported public import struct GRPCProtocol.GRPCMetadata
@_exported public import struct GRPCProtocol.GRPCStatus
@_exported public import enum GRPCProtocol.GRPCStatusCode
@_exported public import struct GRPCProtocol.GRPCTransportStatistics
@_exported public import struct GRPCProtocol.RetryBackoff
