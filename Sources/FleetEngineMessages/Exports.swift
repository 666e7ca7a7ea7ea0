// Sources/FleetEngineMessages/Exports.swift - the codec API that comes with the messages
//
// Decoding and encoding a message (`Trip(serializedBytes:)`, `trip.serializedBytes()`) is
// ProtoWire's `ProtoMessage` API: whoever imports the messages gets it too.

@_exported public import protocol ProtoWire.ProtoEnum
@_exported public import protocol ProtoWire.ProtoMessage
@_exported public import struct ProtoWire.UnknownFields
@_exported public import struct ProtoWire.WireDecodingError
@_exported public import struct ProtoWire.WireDecodingOptions
