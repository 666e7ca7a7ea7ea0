// Sources/FleetEngineMessages/Wrappers+JSON.swift - the wrapper messages as JSON
//
// A wrapper prints as the bare value it wraps, in that value's JSON form (so
// Int64Value and UInt64Value as strings, DoubleValue NaN as "NaN"), and a present
// wrapper holding the default prints that default: presence is what it says.

extension DoubleValue: ProtoJSONEncodable {
  public func writeJSON(to writer: inout ProtoJSONWriter) { writer.writeDouble(value) }
}

extension FloatValue: ProtoJSONEncodable {
  public func writeJSON(to writer: inout ProtoJSONWriter) { writer.writeFloat(value) }
}

extension Int64Value: ProtoJSONEncodable {
  public func writeJSON(to writer: inout ProtoJSONWriter) { writer.writeInt64(value) }
}

extension UInt64Value: ProtoJSONEncodable {
  public func writeJSON(to writer: inout ProtoJSONWriter) { writer.writeUInt64(value) }
}

extension Int32Value: ProtoJSONEncodable {
  public func writeJSON(to writer: inout ProtoJSONWriter) { writer.writeInt32(value) }
}

extension UInt32Value: ProtoJSONEncodable {
  public func writeJSON(to writer: inout ProtoJSONWriter) { writer.writeUInt32(value) }
}

extension BoolValue: ProtoJSONEncodable {
  public func writeJSON(to writer: inout ProtoJSONWriter) { writer.writeBool(value) }
}

extension StringValue: ProtoJSONEncodable {
  public func writeJSON(to writer: inout ProtoJSONWriter) { writer.writeString(value) }
}

extension BytesValue: ProtoJSONEncodable {
  public func writeJSON(to writer: inout ProtoJSONWriter) { writer.writeBytes(value) }
}
