//! The macro behind every numeric constant enum: known values get a variant, any other value
//! is kept as `Unknown(i32)` so decoding a number never fails and re-encoding keeps it.

macro_rules! int_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $value:literal => $text:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )*
            /// A value this crate does not know, kept as sent.
            Unknown(i32),
        }

        impl $name {
            /// The number on the wire.
            #[inline]
            pub const fn as_i32(self) -> i32 {
                match self {
                    $( $name::$variant => $value, )*
                    $name::Unknown(value) => value,
                }
            }

            /// The value for a wire number; `Unknown` for numbers this crate does not know.
            #[inline]
            pub const fn from_i32(value: i32) -> Self {
                match value {
                    $( $value => $name::$variant, )*
                    other => $name::Unknown(other),
                }
            }

            /// The upper-case name ZooKeeper uses for the value, `"UNKNOWN"` for unknown values.
            pub const fn name(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )*
                    $name::Unknown(_) => "UNKNOWN",
                }
            }
        }

        impl From<i32> for $name {
            #[inline]
            fn from(value: i32) -> Self {
                Self::from_i32(value)
            }
        }

        impl From<$name> for i32 {
            #[inline]
            fn from(value: $name) -> i32 {
                value.as_i32()
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                write!(f, "{} ({})", self.name(), self.as_i32())
            }
        }

        impl $crate::jute::Field for $name {
            const MIN_LEN: usize = 4;
            #[inline]
            fn write(&self, buf: &mut ::bytes::BytesMut) {
                $crate::jute::write_i32(buf, self.as_i32());
            }
            #[inline]
            fn wire_len(&self) -> usize {
                4
            }
            #[inline]
            fn read(buf: &mut ::bytes::Bytes, what: &'static str) -> $crate::Result<Self> {
                $crate::jute::read_i32(buf, what).map(Self::from_i32)
            }
        }
    };
}
pub(crate) use int_enum;
