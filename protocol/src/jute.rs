//! Jute primitives: big-endian integers, booleans, length-prefixed buffers and strings,
//! count-prefixed vectors, and the [`Encode`]/[`Decode`] traits every record implements.
//!
//! Readers check `remaining()` before touching the input and check every length or count
//! against the bytes that are actually left before allocating, so a hostile prefix such as a
//! vector of 2^31 elements fails with a [`DecodeError`] instead of allocating.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::error::{DecodeError, Result};

/// A record that can be written in jute form. Encoding cannot fail.
pub trait Encode {
    /// Appends the jute form of `self` to `buf`.
    fn encode(&self, buf: &mut BytesMut);
    /// Exact number of bytes [`Encode::encode`] appends.
    fn encoded_len(&self) -> usize;
}

/// A record that can be read from jute form.
///
/// Decoding consumes the record's bytes from the front of `buf`; `buffer` fields come out as
/// zero-copy slices of it. Bytes after the record are left in `buf`.
pub trait Decode: Sized {
    /// Reads one record from the front of `buf`.
    fn decode(buf: &mut Bytes) -> Result<Self>;
}

/// The value jute writes as the length of a null buffer or string, or the count of a null
/// vector.
pub const NULL_LENGTH: i32 = -1;

/// Fails with [`DecodeError::UnexpectedEof`] unless `buf` holds at least `needed` bytes.
#[inline]
pub fn ensure(buf: &Bytes, needed: usize, what: &'static str) -> Result<()> {
    if buf.remaining() < needed {
        return Err(DecodeError::UnexpectedEof {
            what,
            needed,
            remaining: buf.remaining(),
        });
    }
    Ok(())
}

/// Reads a jute `int`.
#[inline]
pub fn read_i32(buf: &mut Bytes, what: &'static str) -> Result<i32> {
    ensure(buf, 4, what)?;
    Ok(buf.get_i32())
}

/// Reads a jute `long`.
#[inline]
pub fn read_i64(buf: &mut Bytes, what: &'static str) -> Result<i64> {
    ensure(buf, 8, what)?;
    Ok(buf.get_i64())
}

/// Reads a jute `boolean`. Like Java's reader, any non-zero byte is true.
#[inline]
pub fn read_bool(buf: &mut Bytes, what: &'static str) -> Result<bool> {
    ensure(buf, 1, what)?;
    Ok(buf.get_u8() != 0)
}

/// Reads a length prefix: `None` for the null marker −1, an error for other negative values
/// or for a length longer than the remaining input.
#[inline]
fn read_len(buf: &mut Bytes, what: &'static str) -> Result<Option<usize>> {
    let len = read_i32(buf, what)?;
    if len == NULL_LENGTH {
        return Ok(None);
    }
    let len = usize::try_from(len).map_err(|_| DecodeError::InvalidLength {
        what,
        len: len.into(),
    })?;
    ensure(buf, len, what)?;
    Ok(Some(len))
}

/// Reads a jute `buffer` as a zero-copy slice of `buf`; `None` when the buffer is null.
#[inline]
pub fn read_buffer(buf: &mut Bytes, what: &'static str) -> Result<Option<Bytes>> {
    Ok(read_len(buf, what)?.map(|len| buf.split_to(len)))
}

/// Reads a jute `ustring`; `None` when the string is null.
///
/// Standard UTF-8 is accepted, and so is the surrogate-pair form (CESU-8) that Java's
/// `BinaryOutputArchive` writes for characters outside the Basic Multilingual Plane.
pub fn read_string(buf: &mut Bytes, what: &'static str) -> Result<Option<String>> {
    let Some(len) = read_len(buf, what)? else {
        return Ok(None);
    };
    let raw = &buf.chunk()[..len];
    let text = match std::str::from_utf8(raw) {
        Ok(s) => s.to_owned(),
        Err(_) => decode_java_utf8(raw).ok_or(DecodeError::InvalidUtf8 { what })?,
    };
    buf.advance(len);
    Ok(Some(text))
}

/// Decodes UTF-8 in which supplementary characters may appear as two 3-byte encoded UTF-16
/// surrogates, the way Java's jute writer emits them. `None` for anything else that is invalid.
fn decode_java_utf8(mut raw: &[u8]) -> Option<String> {
    let mut out = String::with_capacity(raw.len());
    loop {
        match std::str::from_utf8(raw) {
            Ok(s) => {
                out.push_str(s);
                return Some(out);
            }
            Err(e) => {
                let (valid, rest) = raw.split_at(e.valid_up_to());
                // `valid` was just checked by `from_utf8`.
                out.push_str(std::str::from_utf8(valid).ok()?);
                let pair = rest.get(..6)?;
                let high = surrogate(&pair[..3], 0xA0)?;
                let low = surrogate(&pair[3..], 0xB0)?;
                let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                out.push(char::from_u32(code)?);
                raw = &rest[6..];
            }
        }
    }
}

/// The value of a 3-byte encoded surrogate `ED xx yy` whose second byte has the high nibble
/// `marker` (0xA0 for a high surrogate, 0xB0 for a low one).
fn surrogate(bytes: &[u8], marker: u8) -> Option<u32> {
    let (b0, b1, b2) = (bytes[0], bytes[1], bytes[2]);
    if b0 != 0xED || b1 & 0xF0 != marker || b2 & 0xC0 != 0x80 {
        return None;
    }
    Some(0xD000 | (u32::from(b1 & 0x3F) << 6) | u32::from(b2 & 0x3F))
}

/// Reads a jute `vector` of `count` elements, each read by `read`; `None` when the vector is
/// null. The count is checked against the remaining bytes divided by `min_element_len` before
/// anything is allocated.
pub fn read_vec<T>(
    buf: &mut Bytes,
    what: &'static str,
    min_element_len: usize,
    mut read: impl FnMut(&mut Bytes) -> Result<T>,
) -> Result<Option<Vec<T>>> {
    let count = read_i32(buf, what)?;
    if count == NULL_LENGTH {
        return Ok(None);
    }
    let count = usize::try_from(count).map_err(|_| DecodeError::InvalidLength {
        what,
        len: count.into(),
    })?;
    let max = buf.remaining() / min_element_len.max(1);
    if count > max {
        return Err(DecodeError::LengthTooLarge {
            what,
            len: count,
            max,
        });
    }
    let mut items = Vec::with_capacity(count);
    for _ in 0..count {
        items.push(read(buf)?);
    }
    Ok(Some(items))
}

/// Writes a jute `int`.
#[inline]
pub fn write_i32(buf: &mut BytesMut, value: i32) {
    buf.extend_from_slice(&value.to_be_bytes());
}

/// Writes a jute `long`.
#[inline]
pub fn write_i64(buf: &mut BytesMut, value: i64) {
    buf.extend_from_slice(&value.to_be_bytes());
}

/// Writes a jute `boolean` as 0 or 1.
#[inline]
pub fn write_bool(buf: &mut BytesMut, value: bool) {
    buf.put_u8(u8::from(value));
}

/// Converts a length to its jute `int` form.
///
/// Lengths beyond `i32::MAX` cannot be represented; they can only arise from a buffer far larger
/// than any frame a server accepts, which callers must refuse earlier, so this saturates rather
/// than wrapping into a negative (null-looking) length.
#[inline]
fn wire_len(len: usize) -> i32 {
    i32::try_from(len).unwrap_or(i32::MAX)
}

/// Writes a jute `buffer`; `None` is written as null (length −1).
#[inline]
pub fn write_buffer(buf: &mut BytesMut, value: Option<&[u8]>) {
    match value {
        Some(bytes) => {
            write_i32(buf, wire_len(bytes.len()));
            buf.extend_from_slice(bytes);
        }
        None => write_i32(buf, NULL_LENGTH),
    }
}

/// Writes a jute `ustring` as standard UTF-8; `None` is written as null (length −1).
#[inline]
pub fn write_string(buf: &mut BytesMut, value: Option<&str>) {
    write_buffer(buf, value.map(str::as_bytes));
}

/// Writes a jute `vector`, each element written by `write`.
#[inline]
pub fn write_vec<T>(buf: &mut BytesMut, items: &[T], mut write: impl FnMut(&T, &mut BytesMut)) {
    write_i32(buf, wire_len(items.len()));
    for item in items {
        write(item, buf);
    }
}

/// Wire size of a field type, used by the record macro: how to write, read and size it, and
/// the fewest bytes its encoding can take (the bound for vector counts).
pub(crate) trait Field: Sized {
    /// Fewest bytes an encoding of this type takes.
    const MIN_LEN: usize;
    fn write(&self, buf: &mut BytesMut);
    fn wire_len(&self) -> usize;
    fn read(buf: &mut Bytes, what: &'static str) -> Result<Self>;
}

impl Field for i32 {
    const MIN_LEN: usize = 4;
    #[inline]
    fn write(&self, buf: &mut BytesMut) {
        write_i32(buf, *self);
    }
    #[inline]
    fn wire_len(&self) -> usize {
        4
    }
    #[inline]
    fn read(buf: &mut Bytes, what: &'static str) -> Result<Self> {
        read_i32(buf, what)
    }
}

impl Field for i64 {
    const MIN_LEN: usize = 8;
    #[inline]
    fn write(&self, buf: &mut BytesMut) {
        write_i64(buf, *self);
    }
    #[inline]
    fn wire_len(&self) -> usize {
        8
    }
    #[inline]
    fn read(buf: &mut Bytes, what: &'static str) -> Result<Self> {
        read_i64(buf, what)
    }
}

impl Field for bool {
    const MIN_LEN: usize = 1;
    #[inline]
    fn write(&self, buf: &mut BytesMut) {
        write_bool(buf, *self);
    }
    #[inline]
    fn wire_len(&self) -> usize {
        1
    }
    #[inline]
    fn read(buf: &mut Bytes, what: &'static str) -> Result<Self> {
        read_bool(buf, what)
    }
}

/// A non-nullable string: null on the wire reads as empty.
impl Field for String {
    const MIN_LEN: usize = 4;
    #[inline]
    fn write(&self, buf: &mut BytesMut) {
        write_string(buf, Some(self));
    }
    #[inline]
    fn wire_len(&self) -> usize {
        4 + self.len()
    }
    #[inline]
    fn read(buf: &mut Bytes, what: &'static str) -> Result<Self> {
        Ok(read_string(buf, what)?.unwrap_or_default())
    }
}

impl Field for Option<String> {
    const MIN_LEN: usize = 4;
    #[inline]
    fn write(&self, buf: &mut BytesMut) {
        write_string(buf, self.as_deref());
    }
    #[inline]
    fn wire_len(&self) -> usize {
        4 + self.as_ref().map_or(0, String::len)
    }
    #[inline]
    fn read(buf: &mut Bytes, what: &'static str) -> Result<Self> {
        read_string(buf, what)
    }
}

/// A non-nullable buffer: null on the wire reads as empty.
impl Field for Bytes {
    const MIN_LEN: usize = 4;
    #[inline]
    fn write(&self, buf: &mut BytesMut) {
        write_buffer(buf, Some(self));
    }
    #[inline]
    fn wire_len(&self) -> usize {
        4 + self.len()
    }
    #[inline]
    fn read(buf: &mut Bytes, what: &'static str) -> Result<Self> {
        Ok(read_buffer(buf, what)?.unwrap_or_default())
    }
}

impl Field for Option<Bytes> {
    const MIN_LEN: usize = 4;
    #[inline]
    fn write(&self, buf: &mut BytesMut) {
        write_buffer(buf, self.as_deref());
    }
    #[inline]
    fn wire_len(&self) -> usize {
        4 + self.as_ref().map_or(0, Bytes::len)
    }
    #[inline]
    fn read(buf: &mut Bytes, what: &'static str) -> Result<Self> {
        read_buffer(buf, what)
    }
}

/// A non-nullable vector: null on the wire reads as empty.
impl<T: Field> Field for Vec<T> {
    const MIN_LEN: usize = 4;
    fn write(&self, buf: &mut BytesMut) {
        write_vec(buf, self, T::write);
    }
    fn wire_len(&self) -> usize {
        4 + self.iter().map(T::wire_len).sum::<usize>()
    }
    fn read(buf: &mut Bytes, what: &'static str) -> Result<Self> {
        Ok(read_vec(buf, what, T::MIN_LEN, |b| T::read(b, what))?.unwrap_or_default())
    }
}

/// Declares a jute record: the struct, its [`Encode`] and [`Decode`] impls (fields in
/// declaration order, each error naming `Record.field`), and its `Field` impl so it can be
/// nested in other records and vectors.
macro_rules! record {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* pub $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl $crate::jute::Encode for $name {
            #[inline]
            fn encode(&self, buf: &mut ::bytes::BytesMut) {
                $( $crate::jute::Field::write(&self.$field, buf); )*
            }
            #[inline]
            fn encoded_len(&self) -> usize {
                0 $( + $crate::jute::Field::wire_len(&self.$field) )*
            }
        }

        impl $crate::jute::Decode for $name {
            #[inline]
            #[allow(unused_variables)]
            fn decode(buf: &mut ::bytes::Bytes) -> $crate::Result<Self> {
                Ok(Self {
                    $( $field: $crate::jute::Field::read(
                        buf,
                        concat!(stringify!($name), ".", stringify!($field)),
                    )?, )*
                })
            }
        }

        impl $crate::jute::Field for $name {
            const MIN_LEN: usize = 0 $( + <$ty as $crate::jute::Field>::MIN_LEN )*;
            #[inline]
            fn write(&self, buf: &mut ::bytes::BytesMut) {
                $crate::jute::Encode::encode(self, buf)
            }
            #[inline]
            fn wire_len(&self) -> usize {
                $crate::jute::Encode::encoded_len(self)
            }
            #[inline]
            fn read(buf: &mut ::bytes::Bytes, _what: &'static str) -> $crate::Result<Self> {
                <Self as $crate::jute::Decode>::decode(buf)
            }
        }
    };
}
pub(crate) use record;
