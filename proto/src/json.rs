//! The JSON form of bus messages: prost keeps enum fields as `i32`, so serde would write
//! numbers; these helpers write the proto name (`"JOB_STATE_SUCCEEDED"`) instead, so a message
//! read off a stream by a person or another language says what it means. build.rs attaches
//! them to every enum field of the serde packages.
//!
//! Reading accepts a name or a number. A name this build does not know (a newer producer added
//! a value) reads as 0, the `*_UNSPECIFIED` value, as an unknown field would; a number is kept.

use std::marker::PhantomData;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A prost-generated enum, seen through its inherent name methods.
pub trait ProtoEnum: Sized + Into<i32> + TryFrom<i32> {
    fn proto_name(&self) -> &'static str;
    fn from_proto_name(name: &str) -> Option<Self>;
}

macro_rules! proto_enum {
    ($ty:path) => {
        impl $crate::json::ProtoEnum for $ty {
            fn proto_name(&self) -> &'static str {
                self.as_str_name()
            }
            fn from_proto_name(name: &str) -> Option<Self> {
                Self::from_str_name(name)
            }
        }
    };
}
pub(crate) use proto_enum;

include!(concat!(env!("OUT_DIR"), "/serde_enums.rs"));

/// Reads an enum field: a proto name or a number. A visitor rather than an untagged enum,
/// which would buffer the value and build an error for every miss — this is on the path of
/// every bus message (5,000 load reports a second at 10,000 nodes).
fn read_enum<'de, E: ProtoEnum, D: Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
    d.deserialize_any(NameOrNumber::<E>(PhantomData))
}

struct NameOrNumber<E>(PhantomData<E>);

impl<E: ProtoEnum> serde::de::Visitor<'_> for NameOrNumber<E> {
    type Value = i32;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an enum value's name or number")
    }

    fn visit_i64<Er: serde::de::Error>(self, v: i64) -> Result<i32, Er> {
        i32::try_from(v).map_err(|_| {
            Er::invalid_value(serde::de::Unexpected::Signed(v), &"an enum number in i32 range")
        })
    }

    fn visit_u64<Er: serde::de::Error>(self, v: u64) -> Result<i32, Er> {
        i32::try_from(v).map_err(|_| {
            Er::invalid_value(serde::de::Unexpected::Unsigned(v), &"an enum number in i32 range")
        })
    }

    fn visit_str<Er: serde::de::Error>(self, v: &str) -> Result<i32, Er> {
        Ok(E::from_proto_name(v).map_or(0, Into::into))
    }
}

/// One element of a repeated enum field.
struct ListItem<E>(i32, PhantomData<E>);

impl<'de, E: ProtoEnum> Deserialize<'de> for ListItem<E> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(ListItem(read_enum::<E, D>(d)?, PhantomData))
    }
}

/// For a singular enum field.
pub mod enum_value {
    use super::*;

    pub fn serialize<E: ProtoEnum, S: Serializer>(value: &i32, s: S) -> Result<S::Ok, S::Error> {
        match E::try_from(*value) {
            Ok(known) => s.serialize_str(known.proto_name()),
            // Unknown to this build (newer producer): keep the number rather than lose it.
            Err(_) => s.serialize_i32(*value),
        }
    }

    pub fn deserialize<'de, E: ProtoEnum, D: Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
        read_enum::<E, D>(d)
    }
}

/// For a repeated enum field.
pub mod enum_list {
    use super::*;

    struct Named<E>(i32, PhantomData<E>);

    impl<E: ProtoEnum> Serialize for Named<E> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            enum_value::serialize::<E, S>(&self.0, s)
        }
    }

    pub fn serialize<E: ProtoEnum, S: Serializer>(values: &[i32], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(values.iter().map(|v| Named::<E>(*v, PhantomData)))
    }

    pub fn deserialize<'de, E: ProtoEnum, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<i32>, D::Error> {
        let raw = Vec::<ListItem<E>>::deserialize(d)?;
        Ok(raw.into_iter().map(|item| item.0).collect())
    }
}
