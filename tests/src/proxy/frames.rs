//! Just enough of ZooKeeper's framing to recognise requests and replies in a byte stream.
//!
//! Every frame is a 4-byte big-endian length and a body. A connection's first frame in each
//! direction is the handshake (ConnectRequest / ConnectResponse, no header). Later request
//! bodies start with `xid: i32, type: i32`; later reply bodies with `xid: i32, zxid: i64,
//! err: i32`. Bytes are passed on as they come, except the first few bytes of a frame, which
//! wait until its header is known (a real client sends whole frames, so they never wait long).
//! A stream whose length prefix is implausible (a four-letter word, other protocols) is
//! passed through raw from then on.

use bytes::{Bytes, BytesMut};

/// Frames longer than this are taken as "not ZooKeeper" (the server's own limit is ~1 MB).
const MAX_FRAME: usize = 256 << 20;
/// Length prefix plus the two ints every later frame starts with.
const HEADER: usize = 12;

/// What a piece of the stream is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The start of the connection's first frame.
    Handshake,
    /// The start of a later frame: its xid and, for requests, its opcode.
    Message { xid: i32, opcode: i32 },
    /// The rest of a frame, or bytes of a stream that is not framed as ZooKeeper.
    Continuation,
}

#[derive(Debug)]
enum State {
    /// Collecting the start of a frame (held back until the header is known).
    Header(BytesMut),
    /// Inside a frame's body: this many bytes still belong to it.
    Body(usize),
    /// Not ZooKeeper framing: pass everything.
    Raw,
}

/// Tracks frame boundaries in one direction of a connection.
#[derive(Debug)]
pub(crate) struct FrameTracker {
    state: State,
    seen_handshake: bool,
}

impl Default for FrameTracker {
    fn default() -> Self {
        FrameTracker {
            state: State::Header(BytesMut::new()),
            seen_handshake: false,
        }
    }
}

impl FrameTracker {
    /// Splits `data` into pieces to forward in order, marking where frames start.
    pub(crate) fn split(&mut self, mut data: Bytes) -> Vec<(Bytes, Kind)> {
        let mut pieces = Vec::new();
        while !data.is_empty() {
            match &mut self.state {
                State::Raw => {
                    pieces.push((data.split_to(data.len()), Kind::Continuation));
                }
                State::Body(remaining) => {
                    let n = (*remaining).min(data.len());
                    *remaining -= n;
                    pieces.push((data.split_to(n), Kind::Continuation));
                    if *remaining == 0 {
                        self.state = State::Header(BytesMut::new());
                    }
                }
                State::Header(held) => {
                    let want = if held.len() < 4 { 4 } else { HEADER };
                    let take = (want - held.len()).min(data.len());
                    held.extend_from_slice(&data.split_to(take));
                    if held.len() < 4 {
                        continue;
                    }
                    let len = u32::from_be_bytes([held[0], held[1], held[2], held[3]]) as usize;
                    if len > MAX_FRAME {
                        let held = std::mem::take(held).freeze();
                        self.state = State::Raw;
                        pieces.push((held, Kind::Continuation));
                        continue;
                    }
                    let total = 4 + len;
                    let needed = if self.seen_handshake {
                        HEADER.min(total)
                    } else {
                        4
                    };
                    if held.len() < needed {
                        continue;
                    }
                    // Bytes beyond this frame's header that we took belong to its body.
                    let kind = if self.seen_handshake {
                        let int_at = |at: usize| {
                            held.get(at..at + 4)
                                .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
                                .unwrap_or(0)
                        };
                        Kind::Message {
                            xid: int_at(4),
                            opcode: int_at(8),
                        }
                    } else {
                        self.seen_handshake = true;
                        Kind::Handshake
                    };
                    let held = std::mem::take(held).freeze();
                    let remaining = total.saturating_sub(held.len());
                    if held.len() > total {
                        // A frame shorter than the header: give back what belongs to the next.
                        let mut held = held;
                        let extra = held.split_off(total);
                        let mut rest = BytesMut::from(&extra[..]);
                        rest.extend_from_slice(&data);
                        data = rest.freeze();
                        pieces.push((held, kind));
                        self.state = State::Header(BytesMut::new());
                        continue;
                    }
                    pieces.push((held, kind));
                    self.state = if remaining == 0 {
                        State::Header(BytesMut::new())
                    } else {
                        State::Body(remaining)
                    };
                }
            }
        }
        pieces
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(body: &[u8]) -> Vec<u8> {
        let mut f = (body.len() as i32).to_be_bytes().to_vec();
        f.extend_from_slice(body);
        f
    }

    fn request(xid: i32, opcode: i32, payload: &[u8]) -> Vec<u8> {
        let mut body = xid.to_be_bytes().to_vec();
        body.extend_from_slice(&opcode.to_be_bytes());
        body.extend_from_slice(payload);
        frame(&body)
    }

    /// Feeds `stream` in chunks of `chunk` bytes; returns the frame starts and all bytes.
    fn feed(stream: &[u8], chunk: usize) -> (Vec<Kind>, Vec<u8>) {
        let mut tracker = FrameTracker::default();
        let mut kinds = Vec::new();
        let mut out = Vec::new();
        for part in stream.chunks(chunk) {
            for (bytes, kind) in tracker.split(Bytes::copy_from_slice(part)) {
                if kind != Kind::Continuation {
                    kinds.push(kind);
                }
                out.extend_from_slice(&bytes);
            }
        }
        (kinds, out)
    }

    #[test]
    fn finds_every_frame_start_whatever_the_chunking() {
        let mut stream = frame(&[9; 45]);
        stream.extend(request(7, 1, b"/path"));
        stream.extend(request(-2, 11, b""));
        stream.extend(request(8, 4, b"/other"));
        for chunk in [1, 2, 3, 5, 12, 13, 64, 1000] {
            let (kinds, out) = feed(&stream, chunk);
            assert_eq!(out, stream, "chunk {chunk}");
            assert_eq!(
                kinds,
                vec![
                    Kind::Handshake,
                    Kind::Message { xid: 7, opcode: 1 },
                    Kind::Message {
                        xid: -2,
                        opcode: 11
                    },
                    Kind::Message { xid: 8, opcode: 4 },
                ],
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn frames_shorter_than_a_header_do_not_swallow_the_next() {
        let mut stream = frame(&[]);
        stream.extend(frame(&[1, 2]));
        stream.extend(request(3, 4, b""));
        for chunk in [1, 7, 100] {
            let (kinds, out) = feed(&stream, chunk);
            assert_eq!(out, stream);
            assert_eq!(kinds.len(), 3, "chunk {chunk}: {kinds:?}");
            assert_eq!(kinds[2], Kind::Message { xid: 3, opcode: 4 });
        }
    }

    #[test]
    fn a_four_letter_word_passes_through_raw() {
        let (kinds, out) = feed(b"srvr and more", 4);
        assert!(kinds.is_empty());
        assert_eq!(out, b"srvr and more");
    }

    #[test]
    fn the_start_of_a_frame_waits_for_its_header() {
        let mut tracker = FrameTracker::default();
        assert_eq!(
            tracker.split(Bytes::from(frame(&[0; 4])))[0].1,
            Kind::Handshake
        );
        assert!(tracker
            .split(Bytes::from_static(&[0, 0, 0, 16, 0, 0]))
            .is_empty());
        let pieces = tracker.split(Bytes::from_static(&[0, 5, 0, 0, 0, 0, 1, 2]));
        assert_eq!(pieces[0].1, Kind::Message { xid: 5, opcode: 0 });
        assert_eq!(pieces[0].0.len(), 12);
        assert_eq!(pieces[1].0.len(), 2);
    }
}
