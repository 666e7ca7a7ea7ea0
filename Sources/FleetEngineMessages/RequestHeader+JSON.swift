// Sources/FleetEngineMessages/RequestHeader+JSON.swift - RequestHeader as JSON

extension RequestHeader: ProtoJSONEncodable {
  public func writeJSON(to writer: inout ProtoJSONWriter) {
    writer.beginObject()
    writer.stringField("language_code", languageCode)
    writer.stringField("region_code", regionCode)
    writer.stringField("sdk_version", sdkVersion)
    writer.stringField("os_version", osVersion)
    writer.stringField("device_model", deviceModel)
    writer.enumField("sdk_type", sdkType)
    writer.stringField("maps_sdk_version", mapsSdkVersion)
    writer.stringField("nav_sdk_version", navSdkVersion)
    writer.enumField("platform", platform)
    writer.stringField("manufacturer", manufacturer)
    writer.int32Field("android_api_level", androidApiLevel)
    writer.stringField("trace_id", traceId)
    writer.endObject()
  }
}
