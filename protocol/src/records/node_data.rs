//! `exists` (3), `getData` (4) and `setData` (5).

use bytes::{Buf, Bytes, BytesMut};

use super::Stat;
use crate::jute::{read_buffer, record, write_buffer, Decode, Encode, Field};
use crate::Result;

record! {
    /// Request of `exists`.
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct ExistsRequest {
        /// Node path.
        pub path: String,
        /// Leave a watch (a data watch, or an exist watch if the node is missing).
        pub watch: bool,
    }
}

record! {
    /// Reply of `exists` when the node exists (a missing node is err NONODE, no body).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
    pub struct ExistsResponse {
        /// The node's stat.
        pub stat: Stat,
    }
}

record! {
    /// Request of `getData`.
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct GetDataRequest {
        /// Node path.
        pub path: String,
        /// Leave a data watch.
        pub watch: bool,
    }
}

/// Reply of `getData` (and of `reconfig`). `data` is a zero-copy slice of the frame.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct GetDataResponse {
    /// The node's data; `None` when the node was created with null data.
    pub data: Option<Bytes>,
    /// The node's stat.
    pub stat: Stat,
}

impl Encode for GetDataResponse {
    #[inline]
    fn encode(&self, buf: &mut BytesMut) {
        write_buffer(buf, self.data.as_deref());
        self.stat.encode(buf);
    }

    #[inline]
    fn encoded_len(&self) -> usize {
        4 + self.data.as_ref().map_or(0, Bytes::len) + Stat::LEN
    }
}

impl Decode for GetDataResponse {
    #[inline]
    fn decode(buf: &mut Bytes) -> Result<Self> {
        // Fast path for the usual case, a reply body holding exactly this record: read the Stat
        // from the tail and hand over `buf` itself as the data, so the shared frame's reference
        // count is not touched.
        if let Some((len, stat)) = whole_body_layout(buf) {
            buf.advance(4);
            buf.truncate(len);
            return Ok(GetDataResponse {
                data: Some(std::mem::take(buf)),
                stat,
            });
        }
        let data = read_buffer(buf, "GetDataResponse.data")?;
        let stat = Stat::decode(buf)?;
        Ok(GetDataResponse { data, stat })
    }
}

/// The data length and the Stat when `buf` is exactly one non-null `GetDataResponse`.
#[inline]
fn whole_body_layout(buf: &Bytes) -> Option<(usize, Stat)> {
    let len = usize::try_from(i32::from_be_bytes(*buf.first_chunk::<4>()?)).ok()?;
    if buf.len().checked_sub(4 + Stat::LEN)? != len {
        return None;
    }
    let stat = buf.get(4 + len..)?.first_chunk::<{ Stat::LEN }>()?;
    Some((len, Stat::from_wire(stat)))
}

impl Field for GetDataResponse {
    const MIN_LEN: usize = 4 + Stat::LEN;
    fn write(&self, buf: &mut BytesMut) {
        self.encode(buf);
    }
    fn wire_len(&self) -> usize {
        self.encoded_len()
    }
    fn read(buf: &mut Bytes, _what: &'static str) -> Result<Self> {
        Self::decode(buf)
    }
}

record! {
    /// Request of `setData`.
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct SetDataRequest {
        /// Node path.
        pub path: String,
        /// New data.
        pub data: Option<Bytes>,
        /// Expected data version, −1 for any.
        pub version: i32,
    }
}

record! {
    /// Reply of `setData`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
    pub struct SetDataResponse {
        /// The node's stat after the write.
        pub stat: Stat,
    }
}
