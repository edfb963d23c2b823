//! The frame reader that can read past a frame over the limit: the same limit and errors as
//! `decode_frame`, the head of an oversized frame, and the rest of it dropped as it arrives.

use bytes::{BufMut, Bytes, BytesMut};
use zookeeper_jute::codec::{decode_frame, Frame, FrameReader};
use zookeeper_jute::DecodeError;

/// A frame of `len` payload bytes counting up from 0.
fn frame(len: usize) -> BytesMut {
    let mut buf = BytesMut::new();
    buf.put_i32(len as i32);
    buf.extend((0..len).map(|i| i as u8));
    buf
}

#[test]
fn the_limit_is_decode_frames_to_the_byte() {
    for len in [15, 16, 17] {
        let expected = decode_frame(&mut frame(len), 16);
        for keep_head in [None, Some(4)] {
            let mut reader = FrameReader::new(16);
            let got = reader.next(&mut frame(len), keep_head);
            match (&expected, got) {
                (Ok(Some(payload)), Ok(Some(Frame::Whole(whole)))) => assert_eq!(*payload, whole),
                (Err(e), Err(got)) => {
                    assert_eq!(keep_head, None);
                    assert_eq!(*e, got);
                }
                (
                    Err(DecodeError::FrameTooLarge { len: l, .. }),
                    Ok(Some(Frame::Oversized { len: got, .. })),
                ) => {
                    assert_eq!(keep_head, Some(4));
                    assert_eq!(*l, got);
                }
                (expected, got) => panic!("length {len}: {expected:?} but {got:?}"),
            }
        }
    }
}

#[test]
fn an_oversized_frame_gives_its_head_then_is_dropped_as_it_arrives() {
    let mut reader = FrameReader::new(16);
    let mut src = frame(40);
    let mut rest = src.split_off(6);
    // Two bytes of the head are not enough.
    assert_eq!(reader.next(&mut src, Some(4)), Ok(None));
    assert_eq!(src.len(), 6, "nothing is taken before the head is whole");
    src.extend_from_slice(&rest.split_to(10));
    assert_eq!(
        reader.next(&mut src, Some(4)),
        Ok(Some(Frame::Oversized {
            head: Bytes::from_static(&[0, 1, 2, 3]),
            len: 40
        }))
    );
    assert_eq!(reader.skipping(), 36);
    // What arrived of the payload after the head is dropped at the next call.
    assert_eq!(reader.next(&mut src, Some(4)), Ok(None));
    assert!(src.is_empty());
    assert_eq!(reader.skipping(), 28);
    // The rest, and the next frame in the same read.
    src.extend_from_slice(&rest);
    src.extend_from_slice(&frame(3));
    assert_eq!(
        reader.next(&mut src, None),
        Ok(Some(Frame::Whole(Bytes::from_static(&[0, 1, 2]))))
    );
    assert!(src.is_empty());
    assert_eq!(reader.skipping(), 0);
}

#[test]
fn a_frame_shorter_than_the_head_asked_for_is_the_limits_error() {
    let mut reader = FrameReader::new(2);
    let mut src = frame(3);
    assert_eq!(
        reader.next(&mut src, Some(4)),
        Err(DecodeError::FrameTooLarge { len: 3, max: 2 })
    );
    assert_eq!(src.len(), 7, "an error takes nothing");
}

#[test]
fn a_negative_length_is_an_error_whatever_the_head() {
    let mut src = BytesMut::new();
    src.put_i32(-5);
    assert!(matches!(
        FrameReader::new(16).next(&mut src, Some(4)),
        Err(DecodeError::InvalidLength { len: -5, .. })
    ));
}

#[test]
fn reset_forgets_the_frame_being_dropped() {
    let mut reader = FrameReader::new(16);
    let mut src = frame(1000).split_to(12);
    assert!(matches!(
        reader.next(&mut src, Some(4)),
        Ok(Some(Frame::Oversized { len: 1000, .. }))
    ));
    reader.reset();
    let mut src = frame(2);
    assert_eq!(
        reader.next(&mut src, Some(4)),
        Ok(Some(Frame::Whole(Bytes::from_static(&[0, 1]))))
    );
}
