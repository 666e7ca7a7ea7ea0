// Command tripload-go is the grpc-go anchor of tripload's end-to-end benchmark: it follows the trips of
// a tripload server the way a Go backend would with grpc-go, and reports the same figures as
// `tripload client` (progress on standard error, then `RESULT {json}` on standard output), so that
// `tripload run` puts it in every row beside JourneySharing and grpc-swift-2.
//
// It measures as tripload's clients do (getrusage of the whole process, /proc/self/statm, a 1 µs latency
// histogram against the update's send_time), with one difference: grpc-go decodes a message inside Recv, so
// the receive time is taken after decoding (a few microseconds later than grpc-swift-2's, before it).
//
// Streaming (--kind grpc-go): one server-streaming journeysharing.v1.TripStreamService/GetTrip per trip,
// spread round-robin over --connections grpc.ClientConns, each message decoded into the generated
// TripUpdate and merged into the trip's own Trip (a full trip replaces it; otherwise every field named in
// updated_fields is replaced, or cleared when absent). A stream that fails is opened again after 50 ms,
// doubling to 1 s, as the grpc-swift-2 follower does.
//
// Polling (--kind grpc-go-poll): one unary maps.fleetengine.v1.TripService/GetTrip per trip every
// --poll-interval seconds (the first at a random point of the first interval), sending the *_version
// fields of the last answer; an answer without a version-gated field keeps the one held.
//
// Built by Benchmarks/scripts/build-go-client.sh from Debian's golang-go, golang-google-grpc-dev and
// protobuf packages in GOPATH mode, with the messages and stubs generated from Protos/ by protoc.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/reflect/protoreflect"

	fe "tripload/fleetengine"
	js "tripload/journeysharing"
)

// bucketCount is the latency histogram's range: 1 µs buckets up to 2 s, as tripload's.
const bucketCount = 2_000_000

// recorder counts what the trips' goroutines see; each trip's slot has one writer at a time.
type recorder struct {
	buckets      []uint32
	overflow     int64
	maxMicros    int64
	delivered    int64
	gaps         int64
	duplicates   int64
	restarts     int64
	tripsStarted int64
	streamErrors int64
	recording    int32
	lastSequence []uint64
}

// newRecorder makes the counters and writes every one of them, so that their pages are resident before the
// baseline is taken, as tripload's LoadRecorder initializes its buckets (8 MiB; untouched, Go's zeroed pages
// would be faulted in during the run and counted as the trips' memory).
func newRecorder(trips int) *recorder {
	r := &recorder{buckets: make([]uint32, bucketCount), lastSequence: make([]uint64, trips)}
	for i := range r.buckets {
		r.buckets[i] = 0
	}
	for i := range r.lastSequence {
		r.lastSequence[i] = 0
	}
	return r
}

func (r *recorder) isRecording() bool { return atomic.LoadInt32(&r.recording) != 0 }

// record counts update number `sequence` of trip `trip`, sent at `sentAt` (0: unknown), seen at `now`.
func (r *recorder) record(trip int, sequence uint64, sentAt, now float64) {
	last := r.lastSequence[trip]
	r.lastSequence[trip] = sequence
	if last == 0 {
		atomic.AddInt64(&r.tripsStarted, 1)
	}
	if !r.isRecording() {
		return
	}
	atomic.AddInt64(&r.delivered, 1)
	switch {
	case sequence <= 1 || last == 0:
		if last != 0 {
			atomic.AddInt64(&r.restarts, 1)
		}
	case sequence <= last:
		atomic.AddInt64(&r.duplicates, 1)
	case sequence > last+1:
		atomic.AddInt64(&r.gaps, int64(sequence-last-1))
	}
	if sentAt > 0 {
		micros := int64((now-sentAt)*1e6 + 0.5)
		if micros < 0 {
			micros = 0
		}
		r.recordLatency(micros)
	}
}

// markStarted marks a polled trip as answered once.
func (r *recorder) markStarted(trip int) {
	if r.lastSequence[trip] == 0 {
		r.lastSequence[trip] = 1
		atomic.AddInt64(&r.tripsStarted, 1)
	}
}

// recordPoll counts one answered poll and its round trip, while recording.
func (r *recorder) recordPoll(seconds float64) {
	if !r.isRecording() {
		return
	}
	atomic.AddInt64(&r.delivered, 1)
	r.recordLatency(int64(seconds*1e6 + 0.5))
}

func (r *recorder) recordLatency(micros int64) {
	if micros < bucketCount {
		atomic.AddUint32(&r.buckets[micros], 1)
	} else {
		atomic.AddInt64(&r.overflow, 1)
	}
	for {
		seen := atomic.LoadInt64(&r.maxMicros)
		if micros <= seen || atomic.CompareAndSwapInt64(&r.maxMicros, seen, micros) {
			return
		}
	}
}

// percentiles gives p50, p99 and p99.9 in milliseconds, and the sample count.
func (r *recorder) percentiles() (float64, float64, float64, int64) {
	counts := make([]uint32, bucketCount)
	total := atomic.LoadInt64(&r.overflow)
	for i := range counts {
		counts[i] = atomic.LoadUint32(&r.buckets[i])
		total += int64(counts[i])
	}
	if total == 0 {
		return 0, 0, 0, 0
	}
	at := func(fraction float64) float64 {
		rank := int64(float64(total)*fraction + 0.999999)
		var seen int64
		for i, count := range counts {
			seen += int64(count)
			if seen >= rank {
				return float64(i) / 1000
			}
		}
		return float64(atomic.LoadInt64(&r.maxMicros)) / 1000
	}
	return at(0.5), at(0.99), at(0.999), total
}

// result is tripload's ClientResult, field for field.
type result struct {
	Client                      string   `json:"client"`
	Mode                        string   `json:"mode"`
	PollInterval                *float64 `json:"pollInterval,omitempty"`
	Trips                       int      `json:"trips"`
	Connections                 int      `json:"connections"`
	Rate                        *float64 `json:"rate,omitempty"`
	Seconds                     float64  `json:"seconds"`
	TripsStarted                int64    `json:"tripsStarted"`
	Updates                     int64    `json:"updates"`
	UpdatesPerSecond            float64  `json:"updatesPerSecond"`
	UpdatesReceivedPerSecond    float64  `json:"updatesReceivedPerSecond"`
	CPUSeconds                  float64  `json:"cpuSeconds"`
	CPUSecondsPerMillionUpdates float64  `json:"cpuSecondsPerMillionUpdates"`
	RSSBaselineBytes            int64    `json:"rssBaselineBytes"`
	RSSBytes                    int64    `json:"rssBytes"`
	RSSPerTripBytes             float64  `json:"rssPerTripBytes"`
	LatencyP50Ms                float64  `json:"latencyP50Ms"`
	LatencyP99Ms                float64  `json:"latencyP99Ms"`
	LatencyP999Ms               float64  `json:"latencyP999Ms"`
	LatencyMaxMs                float64  `json:"latencyMaxMs"`
	LatencySamples              int64    `json:"latencySamples"`
	Gaps                        int64    `json:"gaps"`
	Duplicates                  int64    `json:"duplicates"`
	Restarts                    int64    `json:"restarts"`
	Errors                      *int64   `json:"errors,omitempty"`
	StoppedAtMemoryCap          *bool    `json:"stoppedAtMemoryCap,omitempty"`
}

func wallClock() float64 { return float64(time.Now().UnixNano()) / 1e9 }

// cpuSeconds is this process's user plus system CPU time (every thread), as getrusage(RUSAGE_SELF).
func cpuSeconds() float64 {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return 0
	}
	return float64(usage.Utime.Sec) + float64(usage.Utime.Usec)/1e6 + float64(usage.Stime.Sec) +
		float64(usage.Stime.Usec)/1e6
}

// residentBytes is this process's resident memory, from /proc/self/statm.
func residentBytes() int64 {
	text, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(text))
	if len(fields) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}

func progress(format string, arguments ...interface{}) {
	fmt.Fprintf(os.Stderr, format+"\n", arguments...)
}

func tripName(index int) string { return fmt.Sprintf("providers/load/trips/trip-%d", index) }

func consumerHeader() *fe.RequestHeader {
	return &fe.RequestHeader{
		SdkType: fe.RequestHeader_CONSUMER, SdkVersion: "journeysharing-swift/0.1", LanguageCode: "en-US",
		RegionCode: "US",
	}
}

// dial opens one connection with the grpc-swift-2 follower's windows: 8 MiB per stream and connection.
func dial(port int) (*grpc.ClientConn, error) {
	return grpc.Dial(
		fmt.Sprintf("127.0.0.1:%d", port), grpc.WithInsecure(),
		grpc.WithInitialWindowSize(8<<20), grpc.WithInitialConnWindowSize(8<<20))
}

const (
	initialBackoff = 50 * time.Millisecond
	maxBackoff     = time.Second
)

// follow streams trip `index` until its stream ends OK, merging every update into the trip's state.
func follow(ctx context.Context, client js.TripStreamServiceClient, index int, rec *recorder) {
	request := &js.StreamTripRequest{
		Header: consumerHeader(), Name: tripName(index), View: fe.TripView_JOURNEY_SHARING_V1S,
		RouteFormatType: fe.PolylineFormatType_LAT_LNG_LIST_TYPE,
	}
	var state *fe.Trip
	backoff := initialBackoff
	for ctx.Err() == nil {
		stream, err := client.GetTrip(ctx, request, grpc.WaitForReady(true))
		messages := 0
		if err == nil {
			for {
				var update *js.TripUpdate
				update, err = stream.Recv()
				if err != nil {
					break
				}
				receivedAt := wallClock()
				messages++
				state = merge(state, update)
				var sentAt float64
				if sent := update.GetSendTime(); sent != nil {
					sentAt = float64(sent.GetSeconds()) + float64(sent.GetNanos())/1e9
				}
				rec.record(index, update.GetSequence(), sentAt, receivedAt)
			}
		}
		if err == io.EOF || ctx.Err() != nil {
			return // status OK (the trip ended), or the run is over
		}
		atomic.AddInt64(&rec.streamErrors, 1)
		if messages > 0 {
			backoff = initialBackoff
		}
		time.Sleep(time.Duration(float64(backoff) * (0.8 + 0.4*rand.Float64())))
		if backoff *= 2; backoff > maxBackoff {
			backoff = maxBackoff
		}
	}
}

// merge applies `update` to the trip's state with the stream's replace semantics.
func merge(state *fe.Trip, update *js.TripUpdate) *fe.Trip {
	if update.GetFullTrip() || state == nil {
		if update.Trip == nil {
			return &fe.Trip{}
		}
		return update.Trip
	}
	target := state.ProtoReflect()
	fields := target.Descriptor().Fields()
	var source protoreflect.Message
	if update.Trip != nil {
		source = update.Trip.ProtoReflect()
	}
	for _, number := range update.GetUpdatedFields() {
		field := fields.ByNumber(protoreflect.FieldNumber(number))
		if field == nil {
			continue
		}
		if source != nil && source.Has(field) {
			target.Set(field, source.Get(field))
		} else {
			target.Clear(field)
		}
	}
	return state
}

// poll polls trip `index` every `interval` until the run is over.
func poll(ctx context.Context, client fe.TripServiceClient, index int, interval time.Duration, rec *recorder) {
	request := &fe.GetTripRequest{
		Header: consumerHeader(), Name: tripName(index), View: fe.TripView_JOURNEY_SHARING_V1S,
		RouteFormatType: fe.PolylineFormatType_LAT_LNG_LIST_TYPE,
	}
	var state *fe.Trip
	select {
	case <-time.After(time.Duration(rand.Int63n(int64(interval)))):
	case <-ctx.Done():
		return
	}
	for ctx.Err() == nil {
		started := time.Now()
		trip, err := client.GetTrip(ctx, request, grpc.WaitForReady(true))
		if err == nil {
			state = keepUnchanged(state, trip)
			rec.markStarted(index)
			rec.recordPoll(time.Since(started).Seconds())
			// Ask next time only for what changed since this answer.
			if trip.CurrentRouteSegmentVersion != nil {
				request.CurrentRouteSegmentVersion = trip.CurrentRouteSegmentVersion
			}
			if trip.CurrentRouteSegmentTrafficVersion != nil {
				request.CurrentRouteSegmentTrafficVersion = trip.CurrentRouteSegmentTrafficVersion
			}
			if trip.RemainingWaypointsVersion != nil {
				request.RemainingWaypointsVersion = trip.RemainingWaypointsVersion
			}
			if trip.RemainingWaypointsRouteVersion != nil {
				request.RemainingWaypointsRouteVersion = trip.RemainingWaypointsRouteVersion
			}
		} else if ctx.Err() == nil {
			atomic.AddInt64(&rec.streamErrors, 1)
		}
		select {
		case <-time.After(time.Until(started.Add(interval))):
		case <-ctx.Done():
			return
		}
	}
}

// keepUnchanged makes `answer` the trip's state, keeping the held route, waypoints and waypoint paths the
// server left out because their versions had not changed.
func keepUnchanged(state, answer *fe.Trip) *fe.Trip {
	if state == nil {
		return answer
	}
	if len(answer.RemainingWaypoints) == len(state.RemainingWaypoints) {
		for i, waypoint := range answer.RemainingWaypoints {
			held := state.RemainingWaypoints[i]
			if waypoint == nil || held == nil {
				continue
			}
			if waypoint.PathToWaypoint == nil && waypoint.EncodedPathToWaypoint == "" {
				waypoint.PathToWaypoint, waypoint.EncodedPathToWaypoint = held.PathToWaypoint, held.EncodedPathToWaypoint
			}
			if waypoint.TrafficToWaypoint == nil {
				waypoint.TrafficToWaypoint = held.TrafficToWaypoint
			}
		}
	}
	if answer.CurrentRouteSegment == "" && answer.Route == nil {
		answer.CurrentRouteSegment, answer.Route = state.CurrentRouteSegment, state.Route
	}
	if answer.CurrentRouteSegmentTraffic == nil {
		answer.CurrentRouteSegmentTraffic = state.CurrentRouteSegmentTraffic
	}
	if answer.RemainingWaypoints == nil {
		answer.RemainingWaypoints = state.RemainingWaypoints
	}
	return answer
}

func main() {
	kind := flag.String("kind", "grpc-go", "grpc-go (streaming) or grpc-go-poll")
	port := flag.Int("port", 0, "server port on 127.0.0.1")
	trips := flag.Int("trips", 1000, "trips to follow")
	connections := flag.Int("connections", 1, "HTTP/2 connections")
	rate := flag.String("rate", "", "the server's rate per trip (for the record)")
	startTimeout := flag.Float64("start-timeout", 120, "seconds to wait for every trip's first update")
	warmup := flag.Float64("warmup", 3, "warm-up seconds after every trip started")
	duration := flag.Float64("duration", 10, "measured seconds")
	pollInterval := flag.Float64("poll-interval", 5, "seconds between two polls of a trip (grpc-go-poll)")
	maxResidentGiB := flag.Float64("max-resident-gib", 0, "resident GiB at which to stop starting trips (0: no cap)")
	flag.Int("delivery-threads", 2, "ignored (tripload's clients' option)")
	flag.Float64("read-coalescing-ms", 0, "ignored (tripload's clients' option)")
	flag.Parse()
	polling := *kind == "grpc-go-poll"
	if (*kind != "grpc-go" && !polling) || *port <= 0 || *trips < 1 || *connections < 1 {
		fmt.Fprintln(os.Stderr, "usage: tripload-go --kind grpc-go|grpc-go-poll --port N [--trips N] [--connections N] …")
		os.Exit(64)
	}
	var ratePointer *float64
	if value, err := strconv.ParseFloat(*rate, 64); err == nil {
		ratePointer = &value
	}

	rec := newRecorder(*trips)
	baseline := residentBytes()
	conns := make([]*grpc.ClientConn, *connections)
	for i := range conns {
		conn, err := dial(*port)
		if err != nil {
			fmt.Fprintf(os.Stderr, "[%s] cannot connect: %v\n", *kind, err)
			os.Exit(69)
		}
		conns[i] = conn
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var group sync.WaitGroup
	interval := time.Duration(*pollInterval * float64(time.Second))
	for index := 0; index < *trips; index++ {
		conn := conns[index%len(conns)]
		group.Add(1)
		go func(index int) {
			defer group.Done()
			if polling {
				poll(ctx, fe.NewTripServiceClient(conn), index, interval, rec)
			} else {
				follow(ctx, js.NewTripStreamServiceClient(conn), index, rec)
			}
		}(index)
	}

	mode := "stream"
	var pollPointer *float64
	if polling {
		mode, pollPointer = "poll", pollInterval
	}
	begin := time.Now()
	capBytes := int64(*maxResidentGiB * float64(1<<30))
	for atomic.LoadInt64(&rec.tripsStarted) < int64(*trips) && time.Since(begin).Seconds() < *startTimeout {
		time.Sleep(250 * time.Millisecond)
		progress("[%s] starting: %d/%d trips receiving, rss %d MiB", *kind, atomic.LoadInt64(&rec.tripsStarted),
			*trips, residentBytes()>>20)
		if capBytes > 0 && residentBytes() >= capBytes {
			started, rss, stopped := atomic.LoadInt64(&rec.tripsStarted), residentBytes(), true
			progress("[%s] stopped at the %g GiB cap with %d of %d trips receiving", *kind, *maxResidentGiB, started,
				*trips)
			emit(result{
				Client: *kind, Mode: mode, PollInterval: pollPointer, Trips: *trips, Connections: *connections,
				Rate: ratePointer, Seconds: time.Since(begin).Seconds(), TripsStarted: started, CPUSeconds: cpuSeconds(),
				RSSBaselineBytes: baseline, RSSBytes: rss, RSSPerTripBytes: float64(rss-baseline) / float64(*trips),
				StoppedAtMemoryCap: &stopped,
			})
			os.Exit(0)
		}
	}
	started := atomic.LoadInt64(&rec.tripsStarted)
	time.Sleep(time.Duration(*warmup * float64(time.Second)))
	atomic.StoreInt32(&rec.recording, 1)
	cpu0, t0 := cpuSeconds(), time.Now()
	lastCount, lastTime := int64(0), t0
	for time.Since(t0).Seconds() < *duration {
		time.Sleep(time.Second)
		now, count := time.Now(), atomic.LoadInt64(&rec.delivered)
		progress("[%s] %5.1fs  %9.0f updates/s  rss %d MiB  cpu %.2fs", *kind, now.Sub(t0).Seconds(),
			float64(count-lastCount)/now.Sub(lastTime).Seconds(), residentBytes()>>20, cpuSeconds()-cpu0)
		lastCount, lastTime = count, now
	}
	atomic.StoreInt32(&rec.recording, 0)
	seconds, cpu, rss := time.Since(t0).Seconds(), cpuSeconds()-cpu0, residentBytes()
	updates, gaps := atomic.LoadInt64(&rec.delivered), atomic.LoadInt64(&rec.gaps)
	p50, p99, p999, samples := rec.percentiles()
	errors := atomic.LoadInt64(&rec.streamErrors)
	perMillion := 0.0
	if updates > 0 {
		perMillion = cpu / float64(updates+gaps) * 1e6
	}
	emit(result{
		Client: *kind, Mode: mode, PollInterval: pollPointer, Trips: *trips, Connections: *connections,
		Rate: ratePointer, Seconds: seconds, TripsStarted: started, Updates: updates,
		UpdatesPerSecond: float64(updates) / seconds, UpdatesReceivedPerSecond: float64(updates+gaps) / seconds,
		CPUSeconds: cpu, CPUSecondsPerMillionUpdates: perMillion, RSSBaselineBytes: baseline, RSSBytes: rss,
		RSSPerTripBytes: float64(rss-baseline) / float64(*trips), LatencyP50Ms: p50, LatencyP99Ms: p99,
		LatencyP999Ms: p999, LatencyMaxMs: float64(atomic.LoadInt64(&rec.maxMicros)) / 1000,
		LatencySamples: samples, Gaps: gaps, Duplicates: atomic.LoadInt64(&rec.duplicates),
		Restarts: atomic.LoadInt64(&rec.restarts), Errors: &errors,
	})
	// Exit without closing every stream one by one (the server sees the connections close); the figures
	// are taken.
	os.Exit(0)
}

func emit(value result) {
	data, err := json.Marshal(value)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cannot encode the result: %v\n", err)
		os.Exit(70)
	}
	os.Stdout.Write(append([]byte("RESULT "), append(data, '\n')...))
}
