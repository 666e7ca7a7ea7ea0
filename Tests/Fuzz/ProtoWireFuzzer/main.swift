// Tests/Fuzz/ProtoWireFuzzer/main.swift - libFuzzer target for ProtoWire and the Fleet Engine messages
//
// The first input byte picks a top-level message type; the rest is decoded as
// that type. Most inputs are rejected, which is fine: a decode may fail but
// never crash. Whatever decodes must survive a round trip:
//
// - `encodedSize()` equals the number of bytes `serializedBytes()` writes;
// - the encoding decodes again, to an equal message;
// - encoding that message again gives the same bytes (the encoding is stable);
// - the encoding concatenated with itself decodes (concatenation is merging).
//
// Every input is also decoded with element limits (WireDecodingOptions.maxRepeatedCount and the
// trip budgets, route points and stops), small ones picked from the input's bytes so that they
// are reached: a budgeted decode that succeeds gives the unlimited decode's message, and one that
// fails for another reason than a limit fails exactly as the unlimited decode does.
//
// Built by scripts/build-fuzzer.sh and run by scripts/fuzz.sh; a violated
// invariant traps, and libFuzzer saves the input as a crash artifact.

import FleetEngineMessages
import ProtoWire

/// The message types an input can select, by its first byte modulo the count: every
/// `ProtoMessage` in FleetEngineMessages, nested ones included.
/// Append only: the seed corpus's first bytes index into this list.
let messageTypes: [any ProtoMessage.Type] = [
  Trip.self,  // 0: maps.fleetengine.v1.Trip
  VehicleLocation.self,  // 1: maps.fleetengine.v1.VehicleLocation
  TripWaypoint.self,  // 2: maps.fleetengine.v1.TripWaypoint
  GetTripRequest.self,  // 3: maps.fleetengine.v1.GetTripRequest
  TerminalLocation.self,  // 4: maps.fleetengine.v1.TerminalLocation
  ConsumableTrafficPolyline.self,  // 5: maps.fleetengine.v1.ConsumableTrafficPolyline
  TripUpdate.self,  // 6: journeysharing.v1.TripUpdate
  StreamTripRequest.self,  // 7: journeysharing.v1.StreamTripRequest
  RequestHeader.self,  // 8: maps.fleetengine.v1.RequestHeader
  SpeedReadingInterval.self,  // 9: maps.fleetengine.v1.SpeedReadingInterval
  TrafficPolylineData.self,  // 10: maps.fleetengine.v1.TrafficPolylineData
  VisualTrafficReportPolylineRendering.self,  // 11: maps.fleetengine.v1.VisualTrafficReportPolylineRendering
  VisualTrafficReportPolylineRendering.RoadStretch.self,  // 12: ….VisualTrafficReportPolylineRendering.RoadStretch
  TerminalPointId.self,  // 13: maps.fleetengine.v1.TerminalPointId
  StopLocation.self,  // 14: maps.fleetengine.v1.StopLocation
  TripAttribute.self,  // 15: maps.fleetengine.v1.TripAttribute
  VehicleAttribute.self,  // 16: maps.fleetengine.v1.VehicleAttribute
  Timestamp.self,  // 17: google.protobuf.Timestamp
  ProtobufDuration.self,  // 18: google.protobuf.Duration
  LatLng.self,  // 19: google.type.LatLng
  FieldMask.self,  // 20: google.protobuf.FieldMask
  DoubleValue.self,  // 21: google.protobuf.DoubleValue
  FloatValue.self,  // 22: google.protobuf.FloatValue
  Int64Value.self,  // 23: google.protobuf.Int64Value
  UInt64Value.self,  // 24: google.protobuf.UInt64Value
  Int32Value.self,  // 25: google.protobuf.Int32Value
  UInt32Value.self,  // 26: google.protobuf.UInt32Value
  BoolValue.self,  // 27: google.protobuf.BoolValue
  StringValue.self,  // 28: google.protobuf.StringValue
  BytesValue.self,  // 29: google.protobuf.BytesValue
]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  guard size > 0 else { return 0 }
  let type = messageTypes[Int(data[0]) % messageTypes.count]
  // Safe: libFuzzer keeps `data` alive for the duration of this call, and the body is borrowed only within it.
  let body = UnsafeRawBufferPointer(start: data + 1, count: size - 1)
  checkRoundTrip(type, body)
  checkBudgets(type, body)
  return 0
}

/// Small element limits chosen from the input's bytes (not from any one byte, so the seeds keep their meaning).
func budgetedOptions(_ input: UnsafeRawBufferPointer) -> WireDecodingOptions {
  var hash: UInt32 = 2_166_136_261
  for byte in input { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
  var options = WireDecodingOptions.trip(maxRoutePoints: Int(hash & 0x3F), maxStops: Int((hash >> 6) & 0x7))
  if hash & (1 << 9) != 0 { options.maxRepeatedCount = Int((hash >> 10) & 0x1F) }
  return options
}

func checkBudgets<M: ProtoMessage>(_: M.Type, _ input: UnsafeRawBufferPointer) {
  let name = M.protoMessageName
  let options = budgetedOptions(input)
  let unlimited = Result { () throws(WireDecodingError) -> M in try M(serializedBuffer: input) }
  do {
    let budgeted = try M(serializedBuffer: input, options: options)
    guard case .success(let full) = unlimited else {
      fatalError("\(name): the budgeted decode succeeded but the unlimited one failed")
    }
    // Equal unless a NaN is held (then neither decode equals itself); the encodings must agree anyway.
    require(
      budgeted == full || budgeted.serializedBytes() == full.serializedBytes(),
      "\(name): the budgeted decode differs from the unlimited one")
  } catch {
    switch error.kind {
    case .elementLimitExceeded(_, let limit, let budget):
      require(error.isResourceLimit, "\(name): a limit error is not a resource limit")
      let limits = [options.maxRepeatedCount, options.limit(of: .routePoints), options.limit(of: .tripStops)]
      require(limits.contains(limit), "\(name): limit \(limit) (\(budget)) is none of the options' \(limits)")
    default:
      guard case .failure(let unlimitedError) = unlimited else {
        fatalError("\(name): the budgeted decode failed (\(error)) but the unlimited one succeeded")
      }
      require(
        unlimitedError == error,
        "\(name): budgeted and unlimited decodes fail differently: \(error) vs \(unlimitedError)")
    }
  }
}

/// Traps with `message` unless `condition` holds (`precondition` drops its message under -O).
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
  if !condition { fatalError(message()) }
}

func checkRoundTrip<M: ProtoMessage>(_: M.Type, _ input: UnsafeRawBufferPointer) {
  let name = M.protoMessageName
  let first: M
  do {
    first = try M(serializedBuffer: input)
  } catch {
    // Rejected input must be rejected the same way when it arrives as an array.
    do {
      _ = try M(serializedBytes: Array(input))
      fatalError("\(name): buffer decode failed (\(error)) but array decode succeeded")
    } catch let again {
      require(again == error, "\(name): buffer and array decodes disagree: \(error) vs \(again)")
    }
    return
  }
  // Decoding is deterministic, so a second decode differs only where a NaN (never
  // equal to itself) is held. Arrays compare equal without looking at their elements
  // when they share storage, so `first == first` cannot tell; two decodes can.
  let comparable: Bool
  do {
    comparable = try M(serializedBytes: Array(input)) == first
  } catch {
    fatalError("\(name): buffer decode succeeded but array decode failed: \(error)")
  }

  let size = first.encodedSize()
  let bytes = first.serializedBytes()
  require(size == bytes.count, "\(name): encodedSize() \(size) but \(bytes.count) bytes written")

  let second: M
  do {
    second = try M(serializedBytes: bytes)
  } catch {
    fatalError("\(name): the re-encoding of a decoded message does not decode: \(error)")
  }
  if comparable {
    require(first == second, "\(name): the round trip changed the message:\n\(first)\n\(second)")
  }
  let again = second.serializedBytes()
  require(again == bytes, "\(name): re-encoding is not stable:\n\(bytes)\n\(again)")

  do {
    _ = try M(serializedBytes: bytes + bytes)
  } catch {
    fatalError("\(name): an encoding concatenated with itself does not decode: \(error)")
  }
}
