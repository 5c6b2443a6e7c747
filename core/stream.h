// Streams and events: the one way work is ordered on a device. A Stream runs what is enqueued on it in
// order; an Event marks a point in a stream that the host or another stream can wait for. On the CPU
// backend both are synchronous (the calling thread runs each operation to completion), but callers are
// written as if they were not: they order work by events, never by assuming it is done.
#pragma once

namespace tz {

class Stream {
 public:
  virtual ~Stream() = default;
  Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  // Blocks the host until everything enqueued so far has run (not for the per-step path: use events).
  virtual void synchronize() = 0;
};

class Event {
 public:
  virtual ~Event() = default;
  Event() = default;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  // Marks the current end of `stream`; the event completes when the stream reaches it.
  virtual void record(Stream& stream) = 0;
  // Work enqueued on `stream` after this call starts only once the event has completed; the host does
  // not block.
  virtual void wait(Stream& stream) = 0;
  // Blocks the host until the event has completed.
  virtual void synchronize() = 0;
  // Whether the event has completed (never blocks).
  virtual bool ready() = 0;
  // Milliseconds from `start`'s completion to this event's, on the clock of the streams they were
  // recorded on; both must be timing events of one device (Device::create_timing_event), recorded and
  // completed. Throws for an event made without timing.
  virtual double ms_since(Event& start);
};

}  // namespace tz
